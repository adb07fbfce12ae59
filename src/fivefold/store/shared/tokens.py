"""What a term is, for every backend: tokens exactly as FTS5 makes them.

Both backends must rank with the same BM25, so they must agree on what a term is: Unicode 6.1
word characters and combining marks, case-folded, diacritics removed, Porter-stemmed ("porter
unicode61 remove_diacritics 2 categories 'L* N* Co M*'"), of text cut into words by
``text.index_text`` first (as the query's words are). Rather than re-implement that tokenizer
(and drift from it), the text goes through FTS5 itself: an in-memory table in a transaction
that is rolled back, read through an ``fts5vocab`` 'instance' table, which lists every token
occurrence of every column.
"""

from __future__ import annotations

import bisect
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from fivefold.store.shared.context import WINDOW_REPEATS
from fivefold.text import index_text

# Both backends count their terms with ``Tokenizer`` below, which runs this one. Combining marks
# are word characters (``categories``): FTS5's default splits a word at each, so Devanagari,
# Tamil and Thai words fell apart into their consonants (काल, कुल and किला were all "क ल").
# Changing what a term is changes every index holding such text: a schema migration brings the
# memories holding text that is not ASCII up to date (SQLite schema 7, Postgres 8).
TOKENIZE = "porter unicode61 remove_diacritics 2 categories 'L* N* Co M*'"
# A token is indexed by its first 255 characters (Lucene's default bound), in every column and
# query alike: a base64 blob in a memory is one token, and Postgres cannot key a B-tree row
# past 2,704 bytes (255 characters are at most 1,020 in UTF-8, beside a 512-byte namespace).
MAX_TOKEN_CHARS = 255
_TERM = f"substr(term, 1, {MAX_TOKEN_CHARS})"


@dataclass(frozen=True, slots=True)
class Counted:
    """Term frequencies of a document's two columns and its length in tokens."""

    first: Counter[str]
    second: Counter[str]

    @property
    def length(self) -> int:
        return self.first_length + self.second_length

    @property
    def first_length(self) -> int:
        return sum(self.first.values())

    @property
    def second_length(self) -> int:
        return sum(self.second.values())

    @property
    def terms(self) -> set[str]:
        return set(self.first) | set(self.second)


class Tokenizer:
    """Thread-safe; one in-memory SQLite connection behind a lock."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        tokenize = TOKENIZE.replace("'", "''")
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(a, b, tokenize='{tokenize}')")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        self._lock = threading.Lock()

    def count(self, documents: Sequence[tuple[str, str]]) -> list[Counted]:
        """Each document's two columns, counted."""
        out = [Counted(Counter(), Counter()) for _ in documents]
        if not documents:
            return out
        rows = [(i, index_text(a), index_text(b)) for i, (a, b) in enumerate(documents)]
        with self._indexed("INSERT INTO t (rowid, a, b) VALUES (?, ?, ?)", rows) as conn:
            for doc, column, term in conn.execute(f"SELECT doc, col, {_TERM} FROM v"):
                counted = out[int(doc)]
                (counted.first if column == "a" else counted.second)[str(term)] += 1
        return out

    def windows(self, texts: Sequence[tuple[str, str, str]]) -> list[Counted]:
        """Each memory's window from its (content, near, far) text, as one column: a term
        counted ``context.WINDOW_REPEATS`` times by where it stands, as the embedded index
        repeats it."""
        counted = self.count([pair for c, n, f in texts for pair in ((c, n), (f, ""))])
        return [
            window(counted[2 * at].first, counted[2 * at].second, counted[2 * at + 1].first)
            for at in range(len(texts))
        ]

    def join_each(self, texts: Sequence[str]) -> list[str]:
        """Each text's tokens, space-separated, grouped by term (an index that keeps no
        positions needs nothing more; joined in SQL: no Python object per token)."""
        out = [""] * len(texts)
        if not texts:
            return out
        rows = [(i, index_text(text)) for i, text in enumerate(texts)]
        with self._indexed("INSERT INTO t (rowid, a) VALUES (?, ?)", rows) as conn:
            joined = conn.execute(f"SELECT doc, group_concat({_TERM}, ' ') FROM v GROUP BY doc")
            for doc, tokens in joined:
                out[int(doc)] = str(tokens)
        return out

    @contextmanager
    def _indexed(
        self, insert: str, rows: Sequence[tuple[Any, ...]]
    ) -> Iterator[sqlite3.Connection]:
        """The connection, its table holding ``rows`` while the caller reads their tokens (the
        vocabulary table), and empty again after."""
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(insert, rows)
                yield self._conn
            finally:
                self._conn.execute("ROLLBACK")

    def terms(self, text: str) -> tuple[str, ...]:
        """A query term's tokens, in order (usually one)."""
        return _query_tokens(self, text)


def window(own: Counter[str], near: Counter[str], far: Counter[str]) -> Counted:
    """A memory's window from the term counts of its content and of its context at distance 1
    and 2, as one column (the second is empty)."""
    mine, *around = WINDOW_REPEATS
    # As ``out[term] += repeats * n`` over the three, in the same key order: without
    # ``Counter.__missing__`` and ``+=``'s two lookups (a posting each in a bulk write).
    out: Counter[str] = Counter({term: mine * n for term, n in own.items()})
    get = out.get
    for counter, repeats in zip((near, far), around, strict=True):
        for term, n in counter.items():
            out[term] = get(term, 0) + repeats * n
    return Counted(out, Counter())


def _norm_table() -> tuple[int, ...]:
    """Tantivy's (and Lucene's) 256 field lengths: exact to 40, then eight steps of each power
    of two from 2 on (42, 44, ... 56, 60, ... 88, 96, ...)."""
    table, step = list(range(41)), 2
    while len(table) < 256:
        last = table[-1]
        table.extend(last + step * i for i in range(1, 9))
        step *= 2
    return tuple(table[:256])


NORMS = _norm_table()


def field_norm(length: int) -> int:
    """A field's length as BM25 sees it: the largest of ``NORMS`` not above it (tantivy keeps
    one byte per document and field), so the PostgreSQL backend scores with the lengths the
    embedded store's index does."""
    return NORMS[bisect.bisect_right(NORMS, length) - 1]


@lru_cache(maxsize=50_000)
def _query_tokens(tokenizer: Tokenizer, text: str) -> tuple[str, ...]:
    counted = tokenizer.count([(text, "")])[0]
    return tuple(sorted(counted.first))


__all__ = [
    "MAX_TOKEN_CHARS",
    "NORMS",
    "TOKENIZE",
    "Counted",
    "Tokenizer",
    "field_norm",
    "window",
]
