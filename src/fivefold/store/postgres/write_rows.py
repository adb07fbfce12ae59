"""The rows a Postgres write sends, shaped: a memory's row, a batch's window postings, rows
turned into the arrays a statement unnests, and the NUL check every text passes first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg

from fivefold.embed.base import Vectors
from fivefold.errors import InvalidInput
from fivefold.store.postgres.bags import Bag
from fivefold.store.postgres.packed import Rows, norm_ids
from fivefold.store.records import NewMemory


def no_nul(item: int | None, **texts: str | None) -> None:
    """PostgreSQL text cannot hold a NUL character: refused before anything is written (the
    SQLite backend stores it). ``item``: the position in a batch, named as ``remember_many``
    names it."""
    for name, value in texts.items():
        if value is not None and "\x00" in value:
            raise InvalidInput(
                f"{name} contains a NUL character, which PostgreSQL text cannot store", item=item
            )


@dataclass(frozen=True, slots=True)
class BatchCounts:
    """A batch's memories, their ids and their texts counted (``bags``): own columns
    (predicate, content), windows, and each memory's three lengths in tokens (the predicate's,
    the content's, the window's)."""

    memories: Sequence[NewMemory]
    ids: Sequence[int]
    own: tuple[Bag, Bag]
    windows: Bag
    lengths: np.ndarray


@dataclass(slots=True)
class OlderRows:
    """What a batch changes in the rows before it in its sessions: the parameters of
    ``UPDATE_CONTEXT_AND_SEARCHED`` (their postings go into the transaction's ``Deltas``)."""

    updates: list[tuple[Any, ...]] = field(default_factory=list)


def execute_many(conn: psycopg.Connection, statement: str, params: Sequence[Any]) -> None:
    with conn.cursor() as cur:
        cur.executemany(statement, params)


def as_columns(rows: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
    """Rows as columns: the arrays a statement unnests."""
    return [list(column) for column in zip(*rows, strict=True)]


def window_postings(
    windows: Bag, keep: np.ndarray, memory_ids: np.ndarray, lengths: np.ndarray, codes: np.ndarray
) -> Rows:
    """The window postings of the documents ``keep`` marks (one column: no second)."""
    rows = keep[windows.doc]
    doc = windows.doc[rows]
    norms = norm_ids(lengths)
    return Rows(
        memory_ids[doc],
        windows.term[rows],
        windows.count[rows],
        None,
        norms[doc],
        np.zeros(len(doc), np.int64),
        codes[doc],
    )


def memory_row(
    values: tuple[Any, ...],
    vector: Vectors,
    lengths: list[int],
    text: tuple[str, str],
    searched: Vectors | None,
) -> tuple[Any, ...]:
    """``lengths``: the predicate's, the content's and the window's tokens."""
    embedding = np.asarray(vector, np.float32)
    return (
        *values,  # the id, then ``batch.memory_values``
        [*lengths, 0],
        *text,
        embedding,
        embedding if searched is None else np.asarray(searched, np.float32),
    )


__all__ = ["BatchCounts", "OlderRows", "as_columns", "memory_row", "no_nul", "window_postings"]
