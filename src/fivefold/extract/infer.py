"""Rules that infer a memory's type and predicate when the caller leaves them out:
preference wording -> preference; a dated happening -> event; a named entity defined by what it
is or does -> entity; anything else -> fact."""

from __future__ import annotations

import re
from functools import cache

from fivefold.text import capital_chars
from fivefold.types import MemoryType

_PREFERENCE = re.compile(
    r"\b(prefers?|preferred|preference|likes?|loves?|enjoys?|favou?rite|hates?|dislikes?|"
    r"can't stand|cannot stand|rather|would like|wants?|my default|always uses?|never uses?|"
    r"settings?|configured? to|go-to)\b",
    re.IGNORECASE,
)
# Past-tense happenings that make a sentence an event even without a date in it.
_HAPPENING = re.compile(
    r"\b(went|met|visited|finished|started|attended|shipped|merged|launched|released|"
    r"presented|moved|flew|travel(?:l)?ed|joined|left|quit|bought|booked|hosted|called|"
    r"interviewed|celebrated|graduated|married|won|lost|completed|deployed|reviewed|"
    r"signed|had a|gave a|ran a|took|got back|came back|returned)\b",
    re.IGNORECASE,
)


def _entity_definition(capital: str) -> re.Pattern[str]:
    return re.compile(
        rf"^(?:{capital}[\w'’\-]*)(?:\s+{capital}[\w'’\-]*)*\s+(?:is|are|was|works|leads|"
        r"heads|manages|runs|owns|builds|reports)\b"
    )


_ENTITY_DEFINITION = _entity_definition("[A-Z]")


@cache
def _any_entity_definition() -> re.Pattern[str]:
    """``_ENTITY_DEFINITION`` for text that is not ASCII: "Élodie leads the design team"."""
    return _entity_definition(f"[{capital_chars()}]")


_NOT_A_NAME = re.compile(r"^(?:I|My|Our|The|User|User's|We|This|That|It)\b")
_PREDICATE = re.compile(
    r"\b(?:my|our|the user's|user's|his|her|their)\s+(?P<attr>[a-zA-Z][\w\s\-]{1,40}?)"
    r"(?:\s+(?:is|are|was)|\s*[:=])\s+(?P<value>[\w@#.\-/+:]{2,80})",
    re.IGNORECASE,
)


def infer_type(content: str, *, has_event_date: bool) -> MemoryType:
    if _PREFERENCE.search(content):
        return MemoryType.PREFERENCE
    if has_event_date or _HAPPENING.search(content):
        return MemoryType.EVENT
    stripped = content.strip()
    definition = _ENTITY_DEFINITION if stripped.isascii() else _any_entity_definition()
    if definition.match(stripped) and not _NOT_A_NAME.match(stripped):
        return MemoryType.ENTITY
    return MemoryType.FACT


def infer_predicate(content: str) -> str | None:
    """ "My badge ID is 47821." -> "badge ID is 47821": the short phrase BM25 weighs most."""
    match = _PREDICATE.search(content)
    if match is None:
        return None
    value = match.group("value").rstrip(".,;:")
    return f"{match.group('attr').strip()} is {value}"
