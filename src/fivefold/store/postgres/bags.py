"""A bulk write's term counts as arrays: each text's terms as ids of a term dictionary, a line
counted once (a token never spans a line break: a text's counts are its lines'), a batch's texts
summed, weighted and grouped by numpy instead of a ``Counter`` per text (counting and summing
the windows of a batch and of the turns before it is a large share of a bulk write's Python).

A ``Bag`` holds (document, term, count) rows and the dictionary its term ids are of; ``Bags``
makes them from texts. The counts are ``Tokenizer.count``'s and ``tokens.window``'s: the same
terms, the same numbers.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fivefold.store.shared.context import WINDOW_REPEATS
from fivefold.store.shared.tokens import Tokenizer

__all__ = ["Bag", "Bags", "paired"]

LINE_COST = 1_000  # bytes a remembered line takes beside its characters: its arrays and entry


@dataclass(frozen=True, slots=True)
class Bag:
    """(document, term, count) rows: ``doc`` a position in what was counted, ``term`` a
    position in ``names``."""

    doc: np.ndarray
    term: np.ndarray
    count: np.ndarray
    names: list[str]

    def summed(self, docs: np.ndarray, weights: np.ndarray) -> Bag:
        """Rows moved to document ``docs[doc]`` and weighted ``weights[doc]``, then one per
        (document, term), ordered by document then term."""
        if not len(self.doc):
            return self
        width = int(self.term.max()) + 1
        key = docs[self.doc] * width + self.term
        unique, slot = np.unique(key, return_inverse=True)
        count = np.bincount(slot, weights=self.count * weights[self.doc], minlength=len(unique))
        return Bag(unique // width, unique % width, count.astype(np.int64), self.names)

    def lengths(self, docs: int) -> np.ndarray:
        """Each document's token count."""
        return np.bincount(self.doc, weights=self.count, minlength=docs).astype(np.int64)


class Bags:
    """Texts counted into ``Bag`` rows, shared by a store's writing threads (locked). Lines are
    remembered up to ``limit`` bytes as estimated (``LINE_COST`` and its characters a line),
    then forgotten all at once, and the dictionary with them once it holds ``max_terms``: a
    new one then starts (bags made before keep theirs)."""

    def __init__(
        self, tokenizer: Tokenizer, limit: int = 64 << 20, max_terms: int = 1 << 20
    ) -> None:
        self._tokenizer = tokenizer
        self._limit = limit
        self._max_terms = max_terms
        self._lock = threading.Lock()
        self._lines: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._size = 0
        self._ids: dict[str, int] = {}
        self._names: list[str] = []

    def count(self, texts: Sequence[str]) -> Bag:
        """Each text's terms and counts (its document: its position in ``texts``)."""
        lines = {line for text in texts if text for line in text.split("\n")}
        with self._lock:
            fresh = [line for line in lines if line not in self._lines]
        found = dict(zip(fresh, self._tokenizer.count([(t, "") for t in fresh]), strict=True))
        with self._lock:
            size = sum(len(line) + LINE_COST for line in fresh)
            if self._size + size > self._limit or len(self._ids) > self._max_terms:
                self._lines, self._size = {}, 0
                if len(self._ids) > self._max_terms:
                    self._ids, self._names = {}, []
            # Lines another thread's reset dropped since the first look are counted here.
            missing = [line for line in lines if line not in self._lines and line not in found]
            if missing:
                counted = self._tokenizer.count([(t, "") for t in missing])
                found.update(zip(missing, counted, strict=True))
            ids, names = self._ids, self._names
            mine: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # this call's lines
            for line in lines:
                known = self._lines.get(line)
                if known is not None:
                    mine[line] = known
                    continue
                row = []
                for term in found[line].first:
                    at = ids.get(term)
                    if at is None:
                        at = ids[term] = len(names)
                        names.append(term)
                    row.append(at)
                counts = np.fromiter(found[line].first.values(), np.int64, count=len(row))
                mine[line] = (np.asarray(row, np.int64), counts)
                # A batch with more lines than the limit is counted without remembering them.
                if size <= self._limit:
                    self._lines[line] = mine[line]
                    self._size += len(line) + LINE_COST
            docs: list[int] = []
            terms_of: list[np.ndarray] = []
            counts_of: list[np.ndarray] = []
            for doc, text in enumerate(texts):
                if text:
                    for line in text.split("\n"):
                        found_terms, found_counts = mine[line]
                        docs.append(doc)
                        terms_of.append(found_terms)
                        counts_of.append(found_counts)
        if not docs:
            empty = np.empty(0, np.int64)
            return Bag(empty, empty, empty, names)
        sizes = np.fromiter((len(t) for t in terms_of), np.int64, count=len(terms_of))
        return Bag(
            np.repeat(np.asarray(docs, np.int64), sizes),
            np.concatenate(terms_of),
            np.concatenate(counts_of),
            names,
        )

    def columns(self, texts: Sequence[tuple[str, str]]) -> tuple[Bag, Bag]:
        """Each document's two columns (``Tokenizer.count``'s documents), summed per term."""
        n = len(texts)
        both = self.count([a for a, _ in texts] + [b for _, b in texts])
        first = both.doc < n
        one = np.ones(n, np.int64)
        docs = np.arange(n, dtype=np.int64)
        return (
            _rows(both, first).summed(docs, one),
            _rows(both, ~first, shift=n).summed(docs, one),
        )

    def windows(self, texts: Sequence[tuple[str, str, str]]) -> Bag:
        """Each document's window from its (content, near, far) text (``tokens.window``): a
        term counted ``WINDOW_REPEATS`` times by where it stands, summed."""
        n = len(texts)
        found = self.count([t for triple in zip(*texts, strict=True) for t in triple] if n else [])
        # Counted in the order contents, nears, fars: document d of part p is p * n + d.
        docs = np.tile(np.arange(n, dtype=np.int64), 3)
        weights = np.repeat(np.asarray(WINDOW_REPEATS, np.int64), n)
        return found.summed(docs, weights)


def paired(first: Bag, second: Bag) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Two columns' rows (of one ``Bags.columns``) as one row per (document, term): document,
    term, and its count in each column."""
    doc = np.concatenate([first.doc, second.doc])
    term = np.concatenate([first.term, second.term])
    if not len(doc):
        return doc, term, term, term
    width = int(term.max()) + 1
    unique, slot = np.unique(doc * width + term, return_inverse=True)
    count = np.concatenate([first.count, second.count])
    column = np.r_[np.zeros(len(first.doc), bool), np.ones(len(second.doc), bool)]
    one = np.bincount(slot, weights=np.where(column, 0, count), minlength=len(unique))
    two = np.bincount(slot, weights=np.where(column, count, 0), minlength=len(unique))
    return unique // width, unique % width, one.astype(np.int64), two.astype(np.int64)


def _rows(bag: Bag, keep: np.ndarray, *, shift: int = 0) -> Bag:
    return Bag(bag.doc[keep] - shift, bag.term[keep], bag.count[keep], bag.names)
