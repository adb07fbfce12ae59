"""Stage 1 of the read path: text -> ``ParsedQuery`` (DESIGN §2).

Temporal window, entity refs with resolution confidence, negations, predicate hints and the
positive BM25 terms. No type hints: only the optimizer (Stage 2) sets those.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime

from fivefold.config import TemporalConfig
from fivefold.model import ParsedQuery
from fivefold.parse.entities import EntityResolver
from fivefold.parse.negation import find_negations
from fivefold.parse.temporal import find_window
from fivefold.text import STOP_WORDS, content_terms

_POSSESSOR = r"(?:my|our|your|the user's|user's|his|her|their)"
_HINT_AFTER_POSSESSOR = re.compile(
    rf"\b{_POSSESSOR}\s+((?:[^\W\d_][\w\-]*\s+){{0,2}}[^\W\d_][\w\-]*)", re.IGNORECASE
)
_HINT_AFTER_NAME = re.compile(r"\b[^\W\d_][\w\-]*['’]s\s+([^\W\d_][\w\-]*)", re.IGNORECASE)
_HINT_STOP = frozenset({"for", "of", "in", "on", "at", "with", "about", "from", "to", "and", "or"})
_MULTI_HOP = re.compile(
    r"\b(?:who also|also knows?|friends? of|connected to|linked to|through|via)\b|"
    r"['’]s\s+\w+['’]s\b",
    re.IGNORECASE,
)
MAX_QUERY_CHARS = 4_000


def parse_query(
    text: str,
    *,
    now: datetime,
    resolver: EntityResolver,
    temporal: TemporalConfig,
    last_session_end: datetime | None = None,
    visible: Callable[[Sequence[int]], set[int]] | None = None,
) -> ParsedQuery:
    """Parse a query. Text beyond ``MAX_QUERY_CHARS`` is ignored: a 100 KB paste is not a
    question, and every stage below is at least linear in its length. ``visible`` keeps only
    the entity refs the caller's scope may know of."""
    text = text[:MAX_QUERY_CHARS]
    negations, positive = find_negations(text)
    window = find_window(text, now=now, config=temporal, last_session_end=last_session_end)
    refs = resolver.resolve(positive)
    if visible is not None and refs:
        shown = visible([r.entity_id for r in refs])
        refs = [r for r in refs if r.entity_id in shown]
    hints = predicate_hints(positive)
    negated_terms = {t for phrase in negations for t in phrase.split()}
    terms = tuple(t for t in content_terms(positive) if t not in negated_terms)
    return ParsedQuery(
        original=text,
        focus=positive,
        terms=terms,
        entity_refs=tuple(refs),
        temporal_window=window,
        predicate_hints=tuple(hints),
        negations=tuple(negations),
        multi_hop=bool(_MULTI_HOP.search(positive)),
    )


def predicate_hints(text: str) -> list[str]:
    """Short attribute phrases the query asks about: "what's my badge ID?" -> "badge id",
    "who is Sarah's manager?" -> "manager"."""
    hints: dict[str, None] = {}
    for pattern in (_HINT_AFTER_POSSESSOR, _HINT_AFTER_NAME):
        for match in pattern.finditer(text):
            words = []
            for word in match.group(1).lower().split():
                if word in _HINT_STOP:
                    break
                if word not in STOP_WORDS:
                    words.append(word)
            if words:
                hints.setdefault(" ".join(words), None)
    return list(hints)
