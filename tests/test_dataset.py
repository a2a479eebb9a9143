"""CustomDataset: formats, and errors that name file, line and field."""

from __future__ import annotations

import pytest

from harness.dataset import CustomDataset, parse_range
from harness.errors import DatasetError


def rows(path):
    return list(CustomDataset(path).rows())


def written(tmp_path, name, data):
    """``data`` as the file ``name`` in ``tmp_path``."""
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_jsonl_rows_with_line_numbers(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text('{"q": 1}\n\n{"q": 2}\n')
    assert rows(p) == [(1, {"q": 1}), (3, {"q": 2})]


def test_csv_rows(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text('problem,answer\n"What is the capital of France?","Paris"\n')
    assert rows(p) == [(2, {"problem": "What is the capital of France?", "answer": "Paris"})]


def test_bbh_json_examples(tmp_path):
    p = tmp_path / "d.json"
    p.write_text('{"canary": "x", "examples": [{"input": "i", "target": "(A)"}]}')
    assert rows(p) == [(1, {"input": "i", "target": "(A)"})]


def test_malformed_jsonl_line_names_file_and_line(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text('{"q": 1}\n{"q": \n')
    with pytest.raises(DatasetError, match=r"d\.jsonl:2: malformed JSON"):
        rows(p)


def test_non_utf8_bytes_name_the_line(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_bytes(b'{"q": 1}\n{"q": "\xff"}\n')
    with pytest.raises(DatasetError, match=r"d\.jsonl:2: not UTF-8"):
        rows(p)


def test_csv_row_with_extra_values(tmp_path):
    p = tmp_path / "d.csv"
    p.write_text("a,b\n1,2,3\n")
    with pytest.raises(DatasetError, match=r"d\.csv:2"):
        rows(p)


def test_missing_file(tmp_path):
    with pytest.raises(DatasetError, match="not found"):
        rows(tmp_path / "nope.jsonl")


def test_parse_range():
    assert parse_range("[0:20]") == slice(0, 20)
    assert parse_range("[5:]") == slice(5, None)
    assert parse_range(None) == slice(None)


@pytest.mark.parametrize("spec", ["[-100:]", "[0:-5]", "0-20"])
def test_parse_range_rejects_negative_or_malformed_bounds(spec):
    with pytest.raises(ValueError, match="non-negative"):
        parse_range(spec)


@pytest.mark.parametrize("data, message", [
    # After a BOM the bad byte is the 8th character: the BOM is neither counted nor named.
    (b'\xef\xbb\xbf{"q": "\xff"}\n', r"d\.jsonl:1: not UTF-8 \(byte 0xff at column 8\)"),
    # Two-byte characters before the bad byte count once each, as an editor shows them.
    (b'{"q": "\xc3\xa9\xc3\xa9\xff"}\n', r"d\.jsonl:1: not UTF-8 \(byte 0xff at column 10\)"),
    (b'{"q": 1}\n{"q": "\xc3\xa9\xc3\xa9", x}\n',
     r"d\.jsonl:2: malformed JSON: Expecting property name .* at column 13"),
    (b'\xef\xbb\xbf{"q": 1, x}\n', r"d\.jsonl:1: malformed JSON: .* at column 10"),
    # A line cut short: the error is at its end, not at column 1 of a line after it.
    (b'{"q": 1}\n{"q": "abc", "a": 2\n{"q": 3}\n',
     r"d\.jsonl:2: malformed JSON: Expecting ',' delimiter at column 20"),
    (b'{"q": 1}\r\n{"q": "abc", "a": 2\r\n', r"d\.jsonl:2: malformed JSON: .* at column 20"),
], ids=["bom-bad-byte", "multibyte-bad-byte", "multibyte-json", "bom-json", "cut-short",
        "cut-short-crlf"])
def test_malformed_jsonl_names_the_column_an_editor_shows(tmp_path, data, message):
    with pytest.raises(DatasetError, match=message):
        rows(written(tmp_path, "d.jsonl", data))


@pytest.mark.parametrize("data, expected", [
    (b'q,a\n"Paris, France",1\n', [(2, {"q": "Paris, France", "a": "1"})]),
    (b'q,a\n"say ""hi""",1\n', [(2, {"q": 'say "hi"', "a": "1"})]),
    (b'q,a\n"two\nlines",1\n"x",2\n',
     [(2, {"q": "two\nlines", "a": "1"}), (4, {"q": "x", "a": "2"})]),
    (b'\xef\xbb\xbfq,a\nx,1\n', [(2, {"q": "x", "a": "1"})]),
    (b'q,a\r\n"two\r\nlines",1\r\nx,2\r\n',
     [(2, {"q": "two\r\nlines", "a": "1"}), (4, {"q": "x", "a": "2"})]),
    (b'q,a\n\nx,1\n\n\ny,2', [(3, {"q": "x", "a": "1"}), (6, {"q": "y", "a": "2"})]),
    # A quote inside an unquoted field is text, as spreadsheets read it.
    (b'q,a\nsay "hi",1\n', [(2, {"q": 'say "hi"', "a": "1"})]),
], ids=["quoted-comma", "doubled-quote", "quoted-newline", "bom", "crlf", "blank-lines",
        "quote-inside-unquoted"])
def test_well_formed_csv_reads_every_record(tmp_path, data, expected):
    assert rows(written(tmp_path, "d.csv", data)) == expected


@pytest.mark.parametrize("data, message", [
    # The quote opened on line 3 never closes on its line: it closes on line 5, and
    # read leniently lines 3 to 5 would be one sample.
    (b'question,answer\nq0,0\n"q1,1\nq2,2\n"q3",3\nq4,4\n',
     r"d\.csv:3 field 'question': malformed CSV: the quote that opens this field closes "
     r"on line 5, followed by 'q3\",3', not by a comma or the line's end"),
    (b'question,answer\nq0,0\nq1,"1\nq2,2\n',
     r"d\.csv:3 field 'answer': malformed CSV: the quote that opens this field never "
     r"closes"),
    (b'question,answer\n"q0" x,0\n',
     r"d\.csv:2 field 'question': malformed CSV: the quote that opens this field closes "
     r"on line 2, followed by ' x,0', not by a comma"),
    # A field before the broken one that spans lines: the line is the broken field's.
    (b'question,answer\n"q\n0","0\n',
     r"d\.csv:3 field 'answer': malformed CSV: the quote that opens this field never"),
    (b'"question,answer\nq0,0\n',
     r"d\.csv:1: malformed CSV: the quote that opens value 1 never closes"),
], ids=["stray-quote", "unclosed-at-end", "text-after-quote", "after-multiline-field",
        "header"])
def test_broken_csv_quote_names_line_and_field(tmp_path, data, message):
    with pytest.raises(DatasetError, match=message):
        rows(written(tmp_path, "d.csv", data))


@pytest.mark.parametrize("name", ["d.json", "d.jsonl", "d.csv"])
def test_a_utf8_bom_is_read_in_every_format(tmp_path, name):
    body = {"d.json": b'[{"q": "x", "a": "1"}]', "d.jsonl": b'{"q": "x", "a": "1"}\n',
            "d.csv": b"q,a\nx,1\n"}[name]
    assert [row for _, row in rows(written(tmp_path, name, b"\xef\xbb\xbf" + body))] == [
        {"q": "x", "a": "1"}]


def test_json_error_after_a_bom_names_its_line(tmp_path):
    with pytest.raises(DatasetError, match=r"d\.json:2: malformed JSON"):
        rows(written(tmp_path, "d.json", b'\xef\xbb\xbf[{"q": 1},\n {"q": }]'))


def test_csv_field_longer_than_csv_default_limit_reads(tmp_path):
    # csv's default limit is 131,072 characters: a long document is valid CSV, as it is
    # a valid JSONL line.
    big = "lorem ipsum " * 20_000
    data = written(tmp_path, "d.csv", f'q,a\n"{big}",1\nx,2\n'.encode())
    assert rows(data) == [(2, {"q": big, "a": "1"}), (3, {"q": "x", "a": "2"})]


def test_reading_csv_leaves_the_process_csv_field_limit_alone(tmp_path):
    import csv

    before = csv.field_size_limit()
    reader = CustomDataset(written(tmp_path, "d.csv", b"q,a\nx,1\ny,2\n")).rows()
    next(reader)  # suspended between records, as the run reads them
    assert csv.field_size_limit() == before
    reader.close()
