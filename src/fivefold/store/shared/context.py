"""Session context: a memory of a session knows its neighbours.

A conversation turn indexed alone has lost the context its meaning lives in ("Yes! Last Friday."
answers the turn before it). So each memory that has a ``session_id`` carries, as derived
columns, the text of its session neighbours at distance 1 (``context_near``) and 2
(``context_far``), and a searched embedding smoothed with its neighbours' (``own + sum_d w_d x
neighbours at distance d``, re-normalised). The lexical index scores a memory's *window*: its
own text and its neighbours' as one field, each term counted ``WINDOW_REPEATS`` times by where
it stands (BM25F with weights 1, 1/2, 1/4; a memory without neighbours has its own text
alone). Neighbours are the memories of the same namespace, user, agent and session in write
order (id order), so context never crosses a scope. Memories without a session get none:
consecutive writes of unrelated facts are not a conversation. A memory's own content never
changes; only these derived columns do, when a neighbour is written or forgotten.

The rules live here, once; each backend supplies its rows through ``ContextRows``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from fivefold.embed.base import Vectors

MAX_WINDOW = 2  # distance 1 and 2 have columns of their own; a whole session ranked worse
# How many times a term of the memory's own text, of a neighbour at distance 1 and at distance
# 2 counts in its window (tantivy has no term-frequency weights; repeats are the same thing):
# BM25F with weights 1, 1/2, 1/4, chosen on held-out recalls. A window is its own text counted
# 4 times and more: over the same terms BM25 then saturates sooner (tantivy's k1 of 1.2 over
# 4x the counts is k1 0.3 over these), which ranked better (BENCHMARKS.md).
WINDOW_REPEATS = (4, 2, 1)

Group = tuple[str, str, str, str]  # namespace, user ('' none), agent ('' none), session
Neighbour = tuple[int, str, Vectors]  # id, content, own embedding


@dataclass(frozen=True, slots=True)
class Smoothing:
    """How far a memory's context reaches (0: no context; at most ``MAX_WINDOW``) and the
    weights of the neighbours at distance 1 and 2 in the searched embedding (0 = off)."""

    window: int
    near: float
    far: float

    @property
    def active(self) -> bool:
        return self.window > 0 and (self.near > 0.0 or self.far > 0.0)

    @property
    def tag(self) -> str:
        """Stored with the rows: a store opened with other settings re-smooths them."""
        return f"{self.window},{self.near!r},{self.far!r}"


class ContextRows(Protocol):
    """What the context rules need of a backend, inside its write transaction."""

    def group_of(self, memory_id: int) -> Group | None: ...

    def neighbours(
        self, group: Group, memory_id: int, window: int
    ) -> tuple[list[Neighbour], list[Neighbour]]:
        """The ``window`` memories before and after ``memory_id``, nearest first."""
        ...

    def context_of(self, memory_id: int) -> tuple[str, str]: ...

    def set_context(
        self, group: Group, memory_id: int, old: tuple[str, str], new: tuple[str, str]
    ) -> None:
        """Store the new context text and re-index it (``old`` is what the index holds)."""
        ...

    def own_vector(self, memory_id: int) -> Vectors: ...

    def set_searched(self, memory_id: int, vector: Vectors | None) -> None:
        """The vector the dense leg searches (None: the memory's own)."""
        ...


@dataclass(slots=True)
class SessionRow:
    """A row as the rules read it: own text, own embedding, the context it holds now."""

    content: str
    embedding: Vectors
    context: tuple[str, str]


class BatchRows:
    """``ContextRows`` over rows held in memory, for writing a batch: per session, its newest
    ``2 x window`` rows before the batch (what refreshing the ``window`` before the new ones
    reads) and the batch's own rows. The rules run on these without a statement each, and what
    they decide waits in ``contexts`` (changed context text) and ``searched`` (the searched
    vector of every memory refreshed) for the backend to write at once; a new memory is then
    written once, with its final context."""

    def __init__(self) -> None:
        self._group: dict[int, Group] = {}
        self._order: dict[Group, list[int]] = {}
        self._at: dict[int, int] = {}  # id -> its place in its group's order
        self._whole: dict[Group, bool] = {}
        self._rows: dict[int, SessionRow] = {}
        self.contexts: dict[int, tuple[str, str]] = {}
        self.searched: dict[int, Vectors | None] = {}
        self.was: dict[int, tuple[str, str]] = {}  # a changed context as it was read

    def add(self, group: Group, rows: Sequence[tuple[int, SessionRow]], *, whole: bool) -> None:
        """Rows of ``group`` in id order, after any added before; ``whole``: the first added
        is the session's first memory."""
        order = self._order.setdefault(group, [])
        self._whole.setdefault(group, whole)
        for memory_id, row in rows:
            self._at[memory_id] = len(order)
            order.append(memory_id)
            self._group[memory_id] = group
            self._rows[memory_id] = row

    def group_of(self, memory_id: int) -> Group | None:
        return self._group.get(memory_id)

    def neighbours(
        self, group: Group, memory_id: int, window: int
    ) -> tuple[list[Neighbour], list[Neighbour]]:
        order = self._order[group]
        at = self._at[memory_id]
        if at < window and not self._whole[group]:
            raise RuntimeError(f"memory {memory_id}: its session's earlier rows were not read")
        before = [order[i] for i in range(at - 1, max(at - window, 0) - 1, -1)]
        after = order[at + 1 : at + 1 + window]
        return [self._neighbour(i) for i in before], [self._neighbour(i) for i in after]

    def _neighbour(self, memory_id: int) -> Neighbour:
        row = self._rows[memory_id]
        return (memory_id, row.content, row.embedding)

    def context_of(self, memory_id: int) -> tuple[str, str]:
        return self._rows[memory_id].context

    def content_of(self, memory_id: int) -> str:
        return self._rows[memory_id].content

    def set_context(
        self, group: Group, memory_id: int, old: tuple[str, str], new: tuple[str, str]
    ) -> None:
        self.was.setdefault(memory_id, old)
        self._rows[memory_id].context = new
        self.contexts[memory_id] = new

    def own_vector(self, memory_id: int) -> Vectors:
        return self._rows[memory_id].embedding

    def set_searched(self, memory_id: int, vector: Vectors | None) -> None:
        self.searched[memory_id] = vector


def group_from_row(row: Sequence[Any] | None) -> Group | None:
    """A memory's (namespace, user, agent, session) row as its group (None: no session)."""
    if row is None or row[3] is None:
        return None
    return (str(row[0]), str(row[1]), str(row[2]), str(row[3]))


def neighbour_rows(
    rows: Iterable[Sequence[Any]], vector: Callable[[Any], Vectors]
) -> list[Neighbour]:
    """(id, content, stored embedding) rows as neighbours, each embedding read by ``vector``."""
    return [(int(i), str(c), vector(v)) for i, c, v in rows]


def affected_by_insert(
    rows: ContextRows, group: Group, new_ids: Sequence[int], window: int
) -> list[int]:
    """New memories are the newest of their session: they and the ``window`` before them
    change."""
    before, _ = rows.neighbours(group, min(new_ids), window)
    return [int(row[0]) for row in before] + list(new_ids)


def around(rows: ContextRows, memory_id: int) -> list[int]:
    """The memories whose context holds ``memory_id`` (to refresh once it is gone)."""
    group = rows.group_of(memory_id)
    if group is None:
        return []
    before, after = rows.neighbours(group, memory_id, MAX_WINDOW)
    return [int(r[0]) for r in (*before, *after)]


def refresh(rows: ContextRows, ids: Iterable[int], smoothing: Smoothing) -> dict[int, Vectors]:
    """Recompute the context of each memory in ``ids``; return the searched embedding of each
    that has one, for the dense index."""
    searched: dict[int, Vectors] = {}
    jobs: list[tuple[int, Vectors, list[Neighbour], list[Neighbour]]] = []

    def smooth() -> None:
        vectors = smoothed([(own, near, far) for _, own, near, far in jobs], smoothing)
        for (memory_id, *_), vector in zip(jobs, vectors, strict=True):
            rows.set_searched(memory_id, vector)
            if vector is not None:
                searched[memory_id] = vector
        jobs.clear()

    for memory_id in dict.fromkeys(ids):
        group = rows.group_of(memory_id)
        if group is None:
            continue
        before, after = rows.neighbours(group, memory_id, smoothing.window)
        at: dict[int, list[Neighbour]] = {1: [], 2: []}  # distance -> neighbours
        for side in (before, after):
            for distance, row in enumerate(side, start=1):
                at[distance].append(row)
        new = ("\n".join(str(r[1]) for r in at[1]), "\n".join(str(r[1]) for r in at[2]))
        old = rows.context_of(memory_id)
        if old != new:
            rows.set_context(group, memory_id, old, new)
        jobs.append((memory_id, rows.own_vector(memory_id), at[1], at[2]))
        if len(jobs) == SMOOTH_CHUNK:  # a whole store's rebuild passes every memory
            smooth()
    smooth()
    return searched


SMOOTH_CHUNK = 4_096  # memories smoothed in one pass (float64 rows: 12 MB at 384 dimensions)


def smoothed(
    jobs: Sequence[tuple[Vectors, Sequence[Neighbour], Sequence[Neighbour]]], smoothing: Smoothing
) -> list[Vectors | None]:
    """Each (own, near, far)'s searched embedding: ``own + near x d1 + far x d2`` (summed in
    float64 in that order, neighbour by neighbour), normalised; None without neighbours (or
    smoothing). The sums run over the whole batch at once (a memory at a time, numpy's
    per-call cost dominates). The vectors returned are rows of one array."""
    out: list[Vectors | None] = [None] * len(jobs)
    live = [k for k, (_, near, far) in enumerate(jobs) if near or far]
    if not smoothing.active or not live:
        return out
    # The most neighbours first: each (side, slot)'s rows are then mostly a leading run of
    # ``total``, added in place as a slice (gathering and scattering them by index would be
    # most of this function). Each row's sum is the same, in the same order.
    live.sort(key=lambda k: (-len(jobs[k][1]), -len(jobs[k][2])))
    total = np.array([jobs[k][0] for k in live], dtype=np.float64)
    for weight, side in ((smoothing.near, 1), (smoothing.far, 2)):
        for slot in range(max(len(jobs[k][side]) for k in live)):
            held = [n for n, k in enumerate(live) if len(jobs[k][side]) > slot]
            rows = np.array([jobs[live[n]][side][slot][2] for n in held], dtype=np.float64)
            rows *= weight
            if held[-1] == len(held) - 1:  # the first len(held) rows
                total[: len(held)] += rows
            else:
                total[held] += rows
    # A row's norm as ``np.linalg.norm`` takes a vector's: its dot with itself (``vecdot``
    # calls the same dot a row at a time).
    norms = np.sqrt(np.vecdot(total, total))
    kept = norms != 0.0
    # Divided in place (a row without a norm is left, and never returned): the masked copies
    # of ``total[kept]`` take several times as long.
    np.divide(total, norms[:, None], out=total, where=kept[:, None])
    unit = total.astype(np.float32)
    for n, k in enumerate(live):
        if kept[n]:
            out[k] = unit[n]
    return out


__all__ = [
    "MAX_WINDOW",
    "WINDOW_REPEATS",
    "BatchRows",
    "ContextRows",
    "Group",
    "SessionRow",
    "Smoothing",
    "affected_by_insert",
    "around",
    "refresh",
    "smoothed",
]
