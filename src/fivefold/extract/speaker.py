"""Who said or did it: the speaker of a memory, inferred from the "Name: text" convention of
conversation transcripts when the caller does not give one."""

from __future__ import annotations

import re

from fivefold.validate import MAX_NAME_BYTES, MAX_SCOPE_CHARS

# One to three capitalised words, then a colon and text: "Caroline: I went to ...".
_LEADING_NAME = re.compile(r"^\s*([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}):\s+\S")
# Labels written like a speaker that are not one ("Note: ...", "Update: ...").
_LABELS = frozenset(
    {
        "a", "answer", "error", "fwd", "fyi", "important", "note", "ps", "q", "question", "re",
        "reminder", "subject", "summary", "tip", "todo", "update", "warning",
    }
)  # fmt: skip


def infer_speaker(content: str) -> str | None:
    match = _LEADING_NAME.match(content)
    if match is None:
        return None
    name = match.group(1)
    if len(name) > MAX_SCOPE_CHARS or len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return None  # a given speaker that long is refused; a run of letters is no name
    return None if name.lower() in _LABELS else name
