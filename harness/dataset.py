"""``CustomDataset``: stream rows from ``.jsonl``, ``.csv`` or ``.json`` files.

Rows are read lazily, one at a time, so memory does not grow with the file. Every error
names the file, the line and, where there is one, the field.
"""

from __future__ import annotations

import codecs
import csv
import itertools
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .errors import DatasetError
from .json_encode import loads, lone_surrogate_in

_RANGE = re.compile(r"^\s*\[?\s*(\d*)\s*:\s*(\d*)\s*\]?\s*$")
_FIELD_END = re.compile(r"[,\r\n]")  # where a field without quotes ends
_NO_FIELD_LIMIT = 2**31 - 1  # csv's field limit is a C long: 32 bits on Windows


class CustomDataset:
    """Rows of a local data file; the seed's ``CustomDataset`` (``.jsonl`` and ``.csv``).

    ``.json`` holding a list of objects, or BIG-Bench's ``{"examples": [...]}``, is read
    too. ``path`` may name the file, or a folder with ``file_name`` inside it.
    """

    def __init__(self, path: str | Path, file_name: str | None = None,
                 reader_cfg: Mapping[str, Any] | None = None) -> None:
        self.path = Path(path) / file_name if file_name else Path(path)
        self.reader_cfg = dict(reader_cfg or {})

    def rows(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Yield ``(line_number, row)``; line numbers are 1-based as editors show them."""
        suffix = self.path.suffix.lower()
        if not self.path.is_file():
            raise DatasetError("data file not found", path=str(self.path))
        if suffix == ".jsonl":
            yield from self._jsonl()
        elif suffix == ".csv":
            yield from self._csv()
        elif suffix == ".json":
            yield from self._json()
        else:
            raise DatasetError(f"unsupported data file type {suffix!r} "
                               "(use .jsonl, .csv or .json)", path=str(self.path))

    def _jsonl(self) -> Iterator[tuple[int, dict[str, Any]]]:
        with open(self.path, "rb") as fh:
            for line_no, raw in enumerate(fh, start=1):
                text = _decode(raw, self.path, line_no)
                if not text.strip():
                    continue
                try:
                    # Without its line break, so a line cut short is reported at its
                    # end rather than at column 1 of a line after it.
                    row = loads(text.rstrip("\r\n"))
                except json.JSONDecodeError as exc:
                    raise DatasetError(f"malformed JSON: {exc.msg} at column {exc.colno}",
                                       path=str(self.path), line=line_no) from exc
                if not isinstance(row, dict):
                    raise DatasetError("each line must be a JSON object",
                                       path=str(self.path), line=line_no)
                if "\\u" in text:  # only an escape can write half a character
                    _whole_characters(row, self.path, line_no)
                yield line_no, row

    def _csv(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Rows by the line each record starts on (a quoted field may span lines)."""
        with open(self.path, "rb") as fh:
            # Decode line by line so a bad byte is reported with its line number.
            lines = (_decode(raw, self.path, n) for n, raw in enumerate(fh, start=1))
            # Strict: a stray quote would otherwise swallow the lines up to the next
            # quote into one field, and several records would be read as one.
            reader = csv.reader(_LineFeed(lines), strict=True)
            end = 0  # the last line of the record before
            records = _unlimited(reader)
            header: list[str] | None = None
            try:
                header = next(records, None)
                if header is None:
                    return
                _check_header(header, self.path)
                end = reader.line_num
                for values in records:
                    start, end = end + 1, reader.line_num
                    if values:  # not a blank line
                        yield start, self._csv_row(header, values, start)
            except csv.Error as exc:  # a broken quote, an unquoted line break
                raise self._csv_error(exc, end + 1, reader.line_num, header) from exc

    def _csv_row(self, header: list[str], values: list[str], line: int) -> dict[str, Any]:
        """One record as a row. A spreadsheet leaves out a row's empty last cells: the
        columns a row lacks are None, and validation refuses them where the run reads
        them (the reference, the prompt's fields)."""
        if len(values) > len(header):
            raise DatasetError("row has more values than the header has columns",
                               path=str(self.path), line=line)
        row: dict[str, Any] = dict.fromkeys(header)
        row.update(zip(header, values, strict=False))
        return row

    def _csv_error(self, exc: csv.Error, first: int, last: int,
                   header: list[str] | None) -> DatasetError:
        """The error for the record on lines ``first`` to ``last`` that csv refused with
        ``exc``: a broken quote is named by its field and the line its quote opens on
        (csv's own messages name neither)."""
        with open(self.path, "rb") as fh:
            raws = itertools.islice(fh, first - 1, last)
            text = "".join(_decode(raw, self.path, n) for n, raw in enumerate(raws, first))
        broken = _broken_quote(text)
        if broken is None:
            return DatasetError(f"malformed CSV: {exc}", path=str(self.path), line=first)
        index, opening, closing = broken
        field = header[index] if header is not None and index < len(header) else None
        what = "this field" if field is not None else f"value {index + 1}"

        def line_at(offset: int) -> int:
            return first + text.count("\n", 0, offset)

        if closing is None:
            problem = "never closes: the rest of the file would be read into it"
        else:
            problem = (f"closes on line {line_at(closing)}, followed by "
                       f"{shown(text[closing + 1:].splitlines()[0])}, not by a comma or the "
                       "line's end")
        return DatasetError(f"malformed CSV: the quote that opens {what} {problem} (a '\"' "
                            "inside a quoted field is written '\"\"')", path=str(self.path),
                            line=line_at(opening), field=field)

    def _json(self) -> Iterator[tuple[int, dict[str, Any]]]:
        try:
            # utf-8-sig drops a BOM, as the .jsonl and .csv readers do.
            data = json.loads(self.path.read_bytes().decode("utf-8-sig"))
        except UnicodeDecodeError as exc:
            raise DatasetError(f"not UTF-8 at byte {exc.start}", path=str(self.path)) from exc
        except json.JSONDecodeError as exc:
            raise DatasetError(f"malformed JSON: {exc.msg}", path=str(self.path),
                               line=exc.lineno) from exc
        items = data.get("examples") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise DatasetError("expected a list of objects or {'examples': [...]}",
                               path=str(self.path))
        for i, row in enumerate(items):
            if not isinstance(row, dict):
                raise DatasetError(f"item {i} is not an object", path=str(self.path))
            _whole_characters(row, self.path, i + 1)
            yield i + 1, row


def _unlimited(reader: Iterator[list[str]]) -> Iterator[list[str]]:
    """``reader``'s records, each parsed without csv's field size limit (131,072
    characters; a long document is a valid field, as it is a valid JSONL value).

    The limit is process-wide: it is lifted only while a record is parsed, so whatever
    else in the process reads CSV keeps its own between the records a run reads.
    """
    while True:
        previous = csv.field_size_limit(_NO_FIELD_LIMIT)
        try:
            values = next(reader, None)
        finally:
            csv.field_size_limit(previous)
        if values is None:
            return
        yield values


def _check_header(names: list[str], path: Path) -> None:
    """A column named twice in the header would be read from its last place only (an
    unnamed column, as spreadsheets export empty ones, is never read)."""
    seen = set()
    for name in names:
        if name in seen and name.strip():
            raise DatasetError("the header names this column twice", path=str(path), line=1,
                               field=name)
        seen.add(name)


def _broken_quote(text: str) -> tuple[int, int, int | None] | None:
    """Where the quotes of ``text``, one CSV record, break the rule strict csv holds them
    to: ``(field index, opening quote, closing quote)`` as offsets in ``text``, the closing
    quote None if the text ends inside the field; None if its quotes are sound."""
    index = start = 0
    while start < len(text):
        if text[start] == '"':  # only a quote that starts a field opens one
            close = start + 1
            while (close := text.find('"', close)) >= 0 and text.startswith('"', close + 1):
                close += 2  # a doubled quote is one '"' inside the field
            if close < 0:
                return index, start, None
            if close + 1 < len(text) and text[close + 1] not in ",\r\n":
                return index, start, close
            start = close + 1
        else:
            end = _FIELD_END.search(text, start)
            start = end.start() if end else len(text)
        if not text.startswith(",", start):
            return None
        index, start = index + 1, start + 1
    return None


def shown(value: Any) -> str:
    """``repr(value)``, cut to a length an error message can show."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _whole_characters(row: dict[str, Any], path: Path, line: int) -> None:
    """Raise ``DatasetError`` naming the field of ``row`` that holds half a character: a
    lone surrogate escape (``"\\ud83d"``), which no prompt, key or store can encode."""
    for field, value in row.items():
        if lone_surrogate_in(field) or lone_surrogate_in(value):
            raise DatasetError("half a character (an unpaired surrogate escape such as "
                               "\\ud83d): not text", path=str(path), line=line,
                               field=field)


class _LineFeed:
    """Iterator adapter so ``csv`` reads decoded lines lazily."""

    def __init__(self, lines: Iterator[str]) -> None:
        self._lines = lines

    def __iter__(self) -> _LineFeed:
        return self

    def __next__(self) -> str:
        return next(self._lines)


def _decode(raw: bytes, path: Path, line_no: int) -> str:
    # The BOM is cut off before decoding, so error offsets index the bytes that follow it.
    body = raw[len(codecs.BOM_UTF8):] if line_no == 1 and raw.startswith(codecs.BOM_UTF8) else raw
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Columns count characters, as editors show them (and json's colno does), not bytes.
        column = len(body[:exc.start].decode("utf-8")) + 1
        raise DatasetError(f"not UTF-8 (byte 0x{body[exc.start]:02x} at column {column})",
                           path=str(path), line=line_no) from exc


def find_data_file(path: Path) -> Path | None:
    """``path`` itself, ``path.jsonl``/``path.csv``, or the one data file in folder
    ``path`` (``test.jsonl`` preferred), as OpenCompass paths like ``'opencompass/aime'``
    name a dataset rather than a file."""
    if path.is_file():
        return path
    for suffix in (".jsonl", ".csv"):
        if path.with_name(path.name + suffix).is_file():
            return path.with_name(path.name + suffix)
    if path.is_dir():
        if (path / "test.jsonl").is_file():
            return path / "test.jsonl"
        files = [p for p in path.iterdir() if p.suffix in (".jsonl", ".csv")]
        if len(files) == 1:
            return files[0]
    return None


def parse_range(spec: str | None) -> slice:
    """``reader_cfg['test_range']`` such as ``'[0:20]'`` → ``slice(0, 20)``."""
    if spec is None or spec == "":
        return slice(None)
    if not isinstance(spec, str):
        # OpenCompass reads an integer as "that many rows at random": harness selects
        # by position only, so say how to write that.
        raise ValueError(f"test_range must be a string such as '[0:100]', not {spec!r} "
                         "(rows are selected by position: '[0:N]' is the first N)")
    match = _RANGE.match(spec)
    if not match:
        raise ValueError(f"test_range {spec!r} is not of the form '[start:stop]' "
                         "(non-negative row numbers)")
    start, stop = (int(x) if x else None for x in match.groups())
    return slice(start, stop)
