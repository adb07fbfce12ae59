"""Query-side entity resolution: the cascade exact name -> alias -> partial name -> trigram fuzzy.

Confidences: an exact canonical name 1.0, an alias 0.95, one word of a longer name 0.9 when it
names a single entity (split evenly when it names several, so an ambiguous "Sarah" falls below
the 0.7 line and the graph traverses from every candidate), a fuzzy match 0.8 x similarity (so a
typo never reaches the 0.85 the entity-centric plan requires).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from fivefold.store.records import CatalogEntry
from fivefold.text import (
    COMMON_WORDS,
    STOP_WORDS,
    dictionary_words,
    normalize_name,
    trigram_similarity,
    trigrams,
)
from fivefold.text import (
    words as word_spans,
)
from fivefold.types import EntityRef, Resolution

T = TypeVar("T")

EXACT, ALIAS, PARTIAL, FUZZY_SCALE = 1.0, 0.95, 0.9, 0.8
FUZZY_MIN_SIMILARITY = 0.45
MAX_SPAN = 4
# A word shared by this many entity names ("project", "team") is a category, not a name.
GENERIC_WORD_ENTITIES = 3
FUZZY_CANDIDATES = 20  # names sharing the most trigrams with the word, compared in full


Visible = Callable[[Sequence[int]], set[int]]


class _Shown:
    """Which entities a resolution may use: all of them, or those ``visible`` keeps, asked
    once an entity within one resolution."""

    def __init__(self, visible: Visible | None) -> None:
        self._visible = visible
        self._known: dict[int, bool] = {}

    def of(self, ids: Sequence[int]) -> list[int]:
        """``ids`` shown, in their order."""
        if self._visible is None or not ids:
            return list(ids)
        unknown = [i for i in dict.fromkeys(ids) if i not in self._known]
        if unknown:
            kept = self._visible(unknown)
            self._known.update((i, i in kept) for i in unknown)
        return [i for i in ids if self._known[i]]

    def first(self, items: Sequence[T], n: int, entity: Callable[[T], int]) -> list[T]:
        """The first ``n`` of ``items`` whose entity is shown, asking about ``n`` of them,
        then twice as many each time (a few questions however few are shown)."""
        out: list[T] = []
        start, size = 0, n
        while start < len(items) and len(out) < n:
            chunk = items[start : start + size]
            kept = set(self.of([entity(item) for item in chunk]))
            out.extend(item for item in chunk if entity(item) in kept)
            start, size = start + size, size * 2
        return out[:n]


@dataclass(frozen=True, slots=True)
class _Word:
    key: str
    capitalized: bool
    start: int
    end: int
    opening: bool = False  # the query's or a sentence's first word: its capital says nothing


class EntityResolver:
    """Built once per catalog snapshot; resolving a query is then dictionary lookups."""

    def __init__(self, entries: Sequence[CatalogEntry]) -> None:
        self._exact: dict[str, list[CatalogEntry]] = defaultdict(list)
        self._alias: dict[str, list[CatalogEntry]] = defaultdict(list)
        self._parts: dict[str, set[int]] = defaultdict(set)
        self._names: dict[int, str] = {}
        self._grams: dict[str, set[int]] = defaultdict(set)
        self._keys: list[CatalogEntry] = list(entries)
        for index, entry in enumerate(entries):
            (self._alias if entry.is_alias else self._exact)[entry.key].append(entry)
            if not entry.is_alias:
                self._names[entry.entity_id] = entry.name
            words = entry.key.split()
            if len(words) > 1:
                for word in words:
                    if word not in STOP_WORDS and len(word) >= 3:
                        self._parts[word].add(entry.entity_id)
            for gram in trigrams(entry.key):
                self._grams[gram].add(index)

    def resolve(self, query: str, visible: Visible | None = None) -> list[EntityRef]:
        """``visible``: of the entity ids given, those the caller's scope may know of. Every
        stage of the cascade sees those alone, so an entity only another user named neither
        answers a name (and ends the cascade before the caller's own would) nor splits a
        partial match's confidence: resolution never tells one user what another wrote."""
        shown = _Shown(visible)
        # Each word keyed as an entity's name is (``normalize_name``): folded, it may be two
        # words ("½" -> "1 2") or none (a lone mark).
        words = [
            _Word(key, m.group(0)[0].isupper(), m.start(), m.end(), not _cased(query, m.start()))
            for m in word_spans(query)
            if (key := normalize_name(m.group(0)))
        ]
        used = [False] * len(words)
        refs: dict[int, EntityRef] = {}
        for size in range(MAX_SPAN, 0, -1):
            for i in range(len(words) - size + 1):
                if any(used[i : i + size]):
                    continue
                span = words[i : i + size]
                found = self._lookup(span, query, shown)
                if found:
                    used[i : i + size] = [True] * size
                    for ref in found:
                        if (
                            ref.entity_id not in refs
                            or refs[ref.entity_id].confidence < ref.confidence
                        ):
                            refs[ref.entity_id] = ref
        return sorted(refs.values(), key=lambda r: (-r.confidence, r.entity_id))

    def _lookup(self, span: Sequence[_Word], query: str, shown: _Shown) -> list[EntityRef]:
        key = " ".join(w.key for w in span)
        text = query[span[0].start : span[-1].end]
        common = key in STOP_WORDS or key in COMMON_WORDS
        if len(span) == 1 and common and (not span[0].capitalized or span[0].opening):
            return []
        if len(span) == 1 and not span[0].capitalized and _ordinary_here(query, span[0], key):
            return []
        for table, confidence, how in (
            (self._exact, EXACT, Resolution.EXACT),
            (self._alias, ALIAS, Resolution.ALIAS),
        ):
            ids = shown.of([e.entity_id for e in table.get(key, ())])
            if ids:
                return [self._ref(text, i, confidence, how) for i in ids]
        if len(span) == 1:
            return self._partial_or_fuzzy(span[0], text, shown)
        return []

    def _partial_or_fuzzy(self, word: _Word, text: str, shown: _Shown) -> list[EntityRef]:
        # Up to the first that make the word generic: more are never asked about.
        named = sorted(self._parts.get(word.key, set()))
        owners = shown.first(named, GENERIC_WORD_ENTITIES, lambda entity_id: entity_id)
        if owners and len(owners) < GENERIC_WORD_ENTITIES:
            confidence = PARTIAL / len(owners)
            return [
                self._ref(text, entity_id, confidence, Resolution.PARTIAL) for entity_id in owners
            ]
        if owners or not word.capitalized or len(word.key) < 4 or word.key in STOP_WORDS:
            return []
        return self._fuzzy(word.key, text, shown)

    def _fuzzy(self, key: str, text: str, shown: _Shown) -> list[EntityRef]:
        counts: dict[int, int] = defaultdict(int)
        for gram in trigrams(key):
            for index in self._grams.get(gram, ()):
                counts[index] += 1
        ranked = [index for index, _ in sorted(counts.items(), key=lambda kv: -kv[1])]
        best: tuple[float, int] | None = None
        for index in shown.first(ranked, FUZZY_CANDIDATES, lambda i: self._keys[i].entity_id):
            entry = self._keys[index]
            candidates = [entry.key, *entry.key.split()]
            similarity = max(trigram_similarity(key, c) for c in candidates)
            if best is None or similarity > best[0]:
                best = (similarity, entry.entity_id)
        if best is None or best[0] < FUZZY_MIN_SIMILARITY:
            return []
        return [self._ref(text, best[1], FUZZY_SCALE * best[0], Resolution.FUZZY)]

    def _ref(self, text: str, entity_id: int, confidence: float, how: Resolution) -> EntityRef:
        return EntityRef(
            text=text,
            entity_id=entity_id,
            name=self._names.get(entity_id, text),
            confidence=round(confidence, 4),
            resolution=how,
        )


# After a subject ("when I go in"), a count ("how many times") or "a" ("a compass"), a
# lowercase word the dictionary knows is a verb or a common noun: a name there is capitalized.
# After "the" or "my" it may be a name typed in lowercase ("the berlin office").
_ORDINARY_BEFORE = re.compile(r"\b(?:i|we|you|they|he|she|many|few|a|an)\s+$", re.IGNORECASE)


def _ordinary_here(query: str, word: _Word, key: str) -> bool:
    return key in dictionary_words() and bool(
        _ORDINARY_BEFORE.search(query[max(0, word.start - 8) : word.start])
    )


_OPENING = re.compile(r"(?:^|[.!?:;\n]\s*|[\"“(]\s*)$")


def _cased(query: str, start: int) -> bool:
    """Whether a capital at ``start`` says anything: not where every word is capitalized (the
    query's first word, a sentence's)."""
    return not _OPENING.search(query[max(0, start - 8) : start])


# A word used this many times more often than the entity it spells is mentioned (plus one) is
# an ordinary word in the store's own text ("go", "will", "times"), not the name.
ORDINARY_RATIO = 2


def ordinary_words(
    query: str,
    refs: Sequence[EntityRef],
    frequencies: Callable[[Sequence[str]], dict[str, int]],
    mentions: Callable[[Sequence[int]], dict[int, int]],
) -> list[EntityRef]:
    """``refs`` without those a common word made, where neither its case nor the store says
    it is a name: a single word, in lower case or opening the query, that the dictionary
    knows and that the store's memories use far more often than they name the entity."""
    suspects = [r for r in refs if _uncased_word(query, r.text)]
    if not suspects:
        return list(refs)
    words = sorted({r.text.lower() for r in suspects})
    counts = frequencies(words)
    named = mentions(sorted({r.entity_id for r in suspects}))
    dropped = {
        r.entity_id
        for r in suspects
        if counts.get(r.text.lower(), 0) > _allowed(r, named.get(r.entity_id, 0))
    }
    return [r for r in refs if r.entity_id not in dropped or r not in suspects]


def _allowed(ref: EntityRef, mentions: int) -> int:
    """How often the store may use the word for it still to be the name. One word of a longer
    name ("family" of "Family Day") is the name only where the store uses it for nothing else."""
    if ref.resolution is Resolution.PARTIAL:
        return mentions
    return ORDINARY_RATIO * mentions + 1


def _uncased_word(query: str, text: str) -> bool:
    if " " in text or text.lower() not in dictionary_words():
        return False
    at = query.find(text)
    return text.islower() or (at >= 0 and not _cased(query, at))
