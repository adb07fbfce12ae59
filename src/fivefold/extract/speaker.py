"""Who said or did it: the speaker of a memory, inferred from the "Name: text" convention of
conversation transcripts when the caller does not give one."""

from __future__ import annotations

import re

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
    return None if name.lower() in _LABELS else name
