"""Who said or did it: the speaker of a memory, inferred from the "Name: text" convention of
conversation transcripts when the caller does not give one."""

from __future__ import annotations

import re
from functools import cache

from fivefold.text import capital_chars
from fivefold.validate import MAX_NAME_BYTES, MAX_SCOPE_CHARS


def _leading_name(capital: str) -> re.Pattern[str]:
    """One to three capitalised words, then a colon and text: "Caroline: I went to ..."."""
    return re.compile(rf"^\s*({capital}[\w.'-]*(?: {capital}[\w.'-]*){{0,2}}):\s+\S")


_LEADING_NAME = _leading_name("[A-Z]")


@cache
def _any_leading_name() -> re.Pattern[str]:
    """``_LEADING_NAME`` for text that is not ASCII: any Latin capital opens a word ("Élodie:
    ...")."""
    return _leading_name(f"[{capital_chars()}]")


# Labels written like a speaker that are not one ("Note: ...", "Update: ...").
_LABELS = frozenset(
    {
        "a", "answer", "error", "fwd", "fyi", "important", "note", "ps", "q", "question", "re",
        "reminder", "subject", "summary", "tip", "todo", "update", "warning",
    }
)  # fmt: skip


def infer_speaker(content: str) -> str | None:
    leading = _LEADING_NAME if content.isascii() else _any_leading_name()
    match = leading.match(content)
    if match is None:
        return None
    name = match.group(1)
    if len(name) > MAX_SCOPE_CHARS or len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return None  # a given speaker that long is refused; a run of letters is no name
    return None if name.lower() in _LABELS else name
