"""Stage 1 of the read path: text -> ``ParsedQuery``.

Temporal window, entity refs with resolution confidence, negations, predicate hints and the
positive BM25 terms. No type hints: only the optimizer (Stage 2) sets those.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from fivefold.config import TemporalConfig
from fivefold.read.parse.entities import EntityResolver
from fivefold.read.parse.negation import find_negations
from fivefold.read.parse.temporal import find_window
from fivefold.read.parse.time_span import SessionEnd
from fivefold.text import STOP_WORDS, content_terms, with_marks
from fivefold.types import EntityRef, ParsedQuery, TimeWindow

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
# BM25 terms kept per query: a pasted paragraph is not a question, and FTS5 cost grows per term.
MAX_TERMS = 64
# "Did I finish the OAuth PR?" asks about a recent completion: it reads as a window over the
# last `recent_days` (fuzzy precision), not as "ever".
_COMPLETION = re.compile(
    r"\b(?:did|have|has)\s+(?:i|we)\s+(?:already\s+|ever\s+)?(?:finish|finished|complete|"
    r"completed|ship|shipped|merge|merged|close|closed|submit|submitted|deploy|deployed|fix|"
    r"fixed|send|sent|finali[sz]e|finali[sz]ed|wrap|wrapped)\b",
    re.IGNORECASE,
)
IMPLIED_PRECISION = 0.3
# What asks for a value that held before, rather than the one that holds now: a cue, or a
# question in the past tense ("what was my title?", "where did we live?").
_PAST = re.compile(
    r"\b(?:before|used\s+to|previous(?:ly)?|former(?:ly)?|old|originally|at\s+first|"
    r"back\s+then|prior\s+to|no\s+longer|any\s*more|earlier|until|was|were|did|had)\b",
    re.IGNORECASE,
)
# A weekday alone names a recurring day ("covers on a Saturday"), not a time gone by.
_WEEKDAY = re.compile(r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?", re.IGNORECASE)
# A negated clause's entity demotes the memories naming it when resolved this surely.
NEGATED_ENTITY_MIN = 0.85
_COMPARATIVE = re.compile(r"\b(?:more|most|less|least)\s+(?:recent(?:ly)?|lately)\b", re.IGNORECASE)
# A window that ended this long before ``now`` is in the past.
PAST_WINDOW_DAYS = 1


def parse_query(
    text: str,
    *,
    now: datetime,
    resolver: EntityResolver,
    temporal: TemporalConfig,
    last_session_end: SessionEnd = None,
    visible: Callable[[Sequence[int]], set[int]] | None = None,
) -> ParsedQuery:
    """Parse a query. Text beyond ``MAX_QUERY_CHARS`` is ignored: a 100 KB paste is not a
    question, and every stage below is at least linear in its length. ``visible`` keeps only
    the entity refs the caller's scope may know of."""
    text = text[:MAX_QUERY_CHARS]
    negations, positive = find_negations(text)
    # "Which did I adopt more recently, Susie or Seraphim?" compares two dates; it selects no
    # window (a 30-day one removed the answer, adopted two years ago).
    windowed = _COMPARATIVE.sub(" ", text)
    window = find_window(windowed, now=now, config=temporal, last_session_end=last_session_end)
    if window is None:
        window = implied_window(positive, now=now, config=temporal)
    refs = resolver.resolve(positive, visible)
    negated: list[EntityRef] = []
    if negations:  # what the whole text names and its kept part does not
        kept = {r.entity_id for r in refs}
        negated = [r for r in resolver.resolve(text, visible) if r.entity_id not in kept]
    hints = predicate_hints(positive)
    negated_terms = {t for phrase in negations for t in phrase.split()}
    # Time words ("last Tuesday") select a window; as BM25 terms they would only match
    # memories that happen to say "Tuesday".
    time_words = set(content_terms(window.expression)) if window is not None else set()
    terms = tuple(
        t for t in content_terms(positive) if t not in negated_terms and t not in time_words
    )[:MAX_TERMS]
    return ParsedQuery(
        original=text,
        focus=positive,
        terms=terms,
        entity_refs=tuple(refs),
        temporal_window=window,
        predicate_hints=tuple(hints),
        negations=tuple(negations),
        negated_entities=tuple(r for r in negated if r.confidence >= NEGATED_ENTITY_MIN),
        multi_hop=bool(_MULTI_HOP.search(positive)),
        asks_past=asks_past(text, window, now),
    )


def asks_past(text: str, window: TimeWindow | None, now: datetime) -> bool:
    """Whether a question asks what held before: a past cue, or a window that has ended."""
    if _PAST.search(text):
        return True
    if window is None or _WEEKDAY.fullmatch(window.expression.strip()):
        return False
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    end = window.end if window.end.tzinfo is not None else window.end.replace(tzinfo=UTC)
    return now - end > timedelta(days=PAST_WINDOW_DAYS)  # no overflow at the calendar's ends


def implied_window(text: str, *, now: datetime, config: TemporalConfig) -> TimeWindow | None:
    match = _COMPLETION.search(text)
    if match is None:
        return None
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    start = now - timedelta(days=config.recent_days)
    return TimeWindow(start, now, match.group(0), IMPLIED_PRECISION)


def predicate_hints(text: str) -> list[str]:
    """Short attribute phrases the query asks about: "what's my badge ID?" -> "badge id",
    "who is Sarah's manager?" -> "manager"."""
    hints: dict[str, None] = {}
    for pattern in (_HINT_AFTER_POSSESSOR, _HINT_AFTER_NAME):
        for match in (pattern if text.isascii() else with_marks(pattern)).finditer(text):
            words = []
            for word in match.group(1).lower().split():
                if word in _HINT_STOP:
                    break
                if word not in STOP_WORDS:
                    words.append(word)
            if words:
                hints.setdefault(" ".join(words), None)
    return list(hints)
