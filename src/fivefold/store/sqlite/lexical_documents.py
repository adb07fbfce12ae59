"""What the embedded store's tantivy indexes hold: their schema, and a namespace's documents
made from its rows (``lexical.py`` says what a document holds and how the indexes stay in
step)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence

import tantivy

from fivefold.store.shared.context import WINDOW_REPEATS
from fivefold.store.shared.tokens import Tokenizer
from fivefold.store.sqlite import schema
from fivefold.store.sqlite.schema import BY_ID

TEXT_FIELDS = ("predicate", "content", "window")
BUILD_BATCH = 20_000
LINE_CACHE = 8_000_000  # characters of lines whose tokens are remembered (tens of MB at most)


def tantivy_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    for field in TEXT_FIELDS:
        builder.add_text_field(field, tokenizer_name="whitespace", index_option="freq")
    builder.add_unsigned_field("id", indexed=True, fast=True)
    for field in ("user", "agent", "type"):
        builder.add_text_field(field, tokenizer_name="raw", index_option="basic")
    return builder.build()


def window_tokens(content: str, near: str, far: str) -> str:
    """A window's text from the tokens of its three parts (space-separated), each part
    repeated as ``WINDOW_REPEATS`` says; ``Tokenizer.windows`` counts the same for Postgres."""
    parts = zip((content, near, far), WINDOW_REPEATS, strict=True)
    return " ".join(part for part, repeats in parts for _ in range(repeats) if part)


def exact(value: str) -> str:
    # The raw tokenizer would make '' (no user) an empty term; a prefix keeps it a real one.
    return "=" + value


class Documents:
    """Documents of a store's rows, their lines tokenized once while remembered."""

    def __init__(self, conn: sqlite3.Connection, tokenizer: Tokenizer) -> None:
        self._conn = conn
        self._tokenizer = tokenizer
        self._lines: dict[str, str] = {}  # see _line_tokens
        self._line_chars = 0  # the characters of the lines in it

    def of(self, namespace: str, ids: Sequence[int] | None) -> Iterator[tantivy.Document]:
        """Documents of the namespace's rows (of ``ids`` only, when given), tokenized in
        batches."""
        if ids is None:
            cursor = self._conn.execute(
                f"{schema.SELECT_LEXICAL_COLUMNS} WHERE namespace = ?", (namespace,)
            )
        elif ids:
            cursor = self._conn.execute(
                f"{schema.SELECT_LEXICAL_COLUMNS} WHERE {BY_ID}", (namespace, json.dumps(ids))
            )
        else:
            return
        while rows := cursor.fetchmany(BUILD_BATCH):
            tokens = self._line_tokens(
                [line for row in rows for text in row[4:8] for line in str(text).split("\n")]
            )
            for row in rows:
                document = tantivy.Document()
                document.add_unsigned("id", int(row[0]))
                # Token order does not matter to BM25 (no positions are indexed).
                predicate, content, near, far = (
                    " ".join(t for t in map(tokens.get, str(text).split("\n")) if t)
                    for text in row[4:8]
                )
                window = window_tokens(content, near, far)
                for field, joined in zip(TEXT_FIELDS, (predicate, content, window), strict=True):
                    if joined:
                        document.add_text(field, joined)
                document.add_text("user", exact(str(row[1])))
                document.add_text("agent", exact(str(row[2])))
                document.add_text("type", exact(str(row[3])))
                yield document

    def _line_tokens(self, lines: Sequence[str]) -> dict[str, str]:
        """Each line's tokens, space-separated. A line is tokenized once while it is remembered
        here: a turn's text is also up to four of its neighbours' context, indexed in later
        batches."""
        fresh = list(dict.fromkeys(line for line in lines if line not in self._lines))
        size = sum(len(line) for line in fresh)
        if self._line_chars + size > LINE_CACHE:
            self._lines.clear()
            fresh = list(dict.fromkeys(lines))
            size = sum(len(line) for line in fresh)
            self._line_chars = 0
        self._lines.update(zip(fresh, self._tokenizer.join_each(fresh), strict=True))
        self._line_chars += size
        out = {line: self._lines[line] for line in lines}
        if self._line_chars > LINE_CACHE:  # one batch's own lines are more than it keeps
            self._lines.clear()
            self._line_chars = 0
        return out


__all__ = ["BUILD_BATCH", "TEXT_FIELDS", "Documents", "exact", "tantivy_schema", "window_tokens"]
