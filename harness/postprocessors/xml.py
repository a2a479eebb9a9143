"""``specific-xml-tag``: the content of the last ``<tag>…</tag>`` in a reply."""

from __future__ import annotations

import re
from typing import Any

from ._commit import Candidate, commit
from ._registry import POSTPROCESSORS
from ._text import prepare


@POSTPROCESSORS.register("specific-xml-tag", "xml_tag_postprocessor")
def xml_tag_postprocessor(text: Any, tag: str = "answer", strict: bool = True) -> str:
    """The stripped content of the last ``<tag>…</tag>`` (tag name case-insensitive).

    ``tag`` may be given bare (``'answer'``) or with brackets (``'<answer>'``, the
    OpenCompass spelling); the opening tag may carry attributes. Tags inside
    ``<think>`` do not count. With ``strict`` (default), several tags with different
    contents are a failure unless the model visibly corrects itself between them;
    ``strict=False`` simply takes the last. OpenCompass returns ``'NO ANSWER FOUND'``
    when there is no tag; we return '' so the failure is counted as one.
    """
    reply = prepare(text)
    name = re.escape(str(tag).strip().strip("<>/").strip())
    if not reply or not name:
        return ""
    if not re.search(rf"</{name}\s*>", reply, re.IGNORECASE):
        return ""  # also spares the lazy match below a rescan from every opening tag
    pattern = re.compile(rf"<{name}(?:\s[^>]*)?>(.*?)</{name}\s*>", re.IGNORECASE | re.DOTALL)
    found = [Candidate(m.start(), m.end(), m.group(1).strip()) for m in pattern.finditer(reply)]
    if not found:
        return ""
    if not strict:
        return found[-1].value
    same = lambda a, b: " ".join(a.split()) == " ".join(b.split())  # noqa: E731
    return commit(found, reply, same) or ""
