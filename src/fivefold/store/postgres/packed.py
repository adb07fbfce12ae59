"""Posting lists as the Postgres backend keeps them: packed, a row per part of a list.

A (namespace, field, term) list is kept in rows of ``postings``, each holding the postings of
memories of one chunk of ``CHUNK`` consecutive ids, packed (``DTYPES``), keyed by the smallest
id it holds (``part``), and a search reads each list as one value, packed already. A row per
posting writes and deletes an order of magnitude more rows (the windows of older turns are
written again as their sessions grow), most of the server's time in a bulk write, and packing
a long list at read time costs a search milliseconds.

New memories' postings are new parts (``parts``: no row is read). A memory whose postings
change (its window rewritten when its session grows, a memory forgotten) has the parts of its
chunk rewritten at the end of the transaction (``Rewrites``): every part of each (term, chunk)
it is in, read, merged into one and written back. Two transactions merging one list wait for
each other on its row of ``term_stats``, locked first (``context_rows.Deltas.flush``): the
second reads the parts the first wrote. A part added by a transaction that did not merge is a
row of its own, which a merge neither sees nor deletes until it is committed.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import psycopg

from fivefold.store.postgres import schema
from fivefold.store.shared.tokens import NORMS, Counted

__all__ = [
    "CHUNK",
    "DTYPES",
    "TYPES",
    "Rewrites",
    "copy_parts",
    "decode",
    "norm_id",
    "parts",
    "type_code",
]

# Ids of a part: one chunk. Larger chunks are fewer rows to write and read; a merge rewrites a
# whole chunk's part of each list it touches (a common term's, ~19 KB at this size).
CHUNK_BITS = schema.CHUNK_BITS
CHUNK = 1 << CHUNK_BITS

# A posting's memory type, by its position here (appended to, never reordered: stored).
TYPES = ("fact", "preference", "event", "entity")
# A posting: memory id, term frequency in the field's columns, the memory's length in each as
# tantivy keeps it (its position in ``NORMS``: one byte) and its type. The window field has no
# second column (``tokens.window``).
DTYPES = {
    schema.OWN: np.dtype(
        [
            ("id", "<i8"),
            ("first", "<f4"),
            ("second", "<f4"),
            ("norm1", "u1"),
            ("norm2", "u1"),
            ("type", "u1"),
        ]
    ),
    schema.CONTEXT: np.dtype([("id", "<i8"), ("first", "<f4"), ("norm1", "u1"), ("type", "u1")]),
}
NORM_VALUES = np.asarray(NORMS, dtype=np.float64)  # a norm id's length
NORMS_ARRAY = np.asarray(NORMS, dtype=np.int64)
NO_TYPE = 255  # a type not in ``TYPES`` (a row changed by hand): no type-filtered read finds it


def type_code(name: str) -> int:
    return TYPES.index(name) if name in TYPES else NO_TYPE


def norm_id(length: int) -> int:
    """A column's length as tantivy keeps it: its ``NORMS`` position (``tokens.field_norm``)."""
    return bisect.bisect_right(NORMS, length) - 1


def decode(kind: int, packed: bytes | memoryview | None) -> np.ndarray:
    return np.frombuffer(packed or b"", dtype=DTYPES[kind])


Entry = tuple[int, Counted, int]  # memory id, its field's counts, its type's code


@dataclass(frozen=True, slots=True)
class Grouped:
    """Postings sorted by group, then id: ``group`` gives each one's position in ``keys``,
    its (term, chunk)."""

    postings: np.ndarray
    group: np.ndarray
    keys: list[tuple[str, int]]

    def documents(self) -> dict[str, tuple[int, int]]:
        """Per term, the memories holding it in each column (one posting each: a memory is in
        one chunk)."""
        count = len(self.keys)
        first = np.bincount(self.group, self.postings["first"] > 0, minlength=count)
        second: np.ndarray = np.zeros(count)
        if "second" in (self.postings.dtype.names or ()):
            second = np.bincount(self.group, self.postings["second"] > 0, minlength=count)
        out: dict[str, tuple[int, int]] = {}
        for (term, _), n1, n2 in zip(self.keys, first.tolist(), second.tolist(), strict=True):
            held = out.get(term, (0, 0))
            out[term] = (held[0] + int(n1), held[1] + int(n2))
        return out

    def rows(self) -> list[tuple[str, int, np.ndarray]]:
        """(term, part, postings) per group: the part is its first id."""
        if not len(self.postings):
            return []
        group = self.group
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        ends = np.r_[starts[1:], len(group)].tolist()
        firsts = self.postings["id"][starts].tolist()
        keys = [self.keys[g] for g in group[starts].tolist()]
        return [
            (key[0], first, self.postings[start:end])
            for key, first, start, end in zip(keys, firsts, starts.tolist(), ends, strict=True)
        ]


def grouped(kind: int, entries: Iterable[Entry]) -> Grouped:
    """The postings of ``entries`` in field ``kind``, grouped by term and chunk. Gathered a
    memory at a time into columns (a Python call per posting would be most of a bulk write's
    packing), grouped by numpy."""
    wide = kind == schema.OWN
    terms: list[str] = []
    first: list[int] = []
    second: list[int] = []
    counts: list[int] = []
    heads: list[tuple[int, int, int, int]] = []  # memory id, norm ids, type code
    for memory_id, counted, code in entries:
        if wide:
            one, two = counted.first.get, counted.second.get
            both = counted.first.keys() | counted.second.keys()
            terms.extend(both)
            first.extend([one(t, 0) for t in both])
            second.extend([two(t, 0) for t in both])
            counts.append(len(both))
        else:  # a window: one column
            terms.extend(counted.first)
            first.extend(counted.first.values())
            counts.append(len(counted.first))
        heads.append(
            (memory_id, norm_id(counted.first_length), norm_id(counted.second_length), code)
        )
    if not terms:
        return Grouped(np.empty(0, DTYPES[kind]), np.empty(0, np.int64), [])
    index: dict[str, int] = {}
    codes = np.asarray([index.setdefault(t, len(index)) for t in terms], dtype=np.int64)
    head = np.asarray(heads, dtype=np.int64).repeat(np.asarray(counts, dtype=np.int64), axis=0)
    return pack(
        kind,
        Rows(
            head[:, 0],
            codes,
            np.asarray(first),
            np.asarray(second) if wide else None,
            head[:, 1],
            head[:, 2],
            head[:, 3],
        ),
        list(index),
    )


@dataclass(frozen=True, slots=True)
class Rows:
    """Postings as columns, a row each: memory id, term (a position in a list of names),
    frequency in each column, norm ids and type code."""

    id: np.ndarray
    term: np.ndarray
    first: np.ndarray
    second: np.ndarray | None  # the window field has none
    norm1: np.ndarray
    norm2: np.ndarray
    type: np.ndarray

    def take(self, keep: np.ndarray) -> Rows:
        return Rows(
            self.id[keep],
            self.term[keep],
            self.first[keep],
            None if self.second is None else self.second[keep],
            self.norm1[keep],
            self.norm2[keep],
            self.type[keep],
        )


def pack(kind: int, rows: Rows, names: Sequence[str]) -> Grouped:
    """``rows`` packed (``DTYPES``) and grouped by term and chunk, ascending ids in each."""
    if not len(rows.id):
        return Grouped(np.empty(0, DTYPES[kind]), np.empty(0, np.int64), [])
    packed = np.empty(len(rows.id), dtype=DTYPES[kind])
    packed["id"] = rows.id
    packed["first"] = rows.first
    packed["norm1"] = rows.norm1
    packed["type"] = rows.type
    if kind == schema.OWN:
        packed["second"] = rows.second if rows.second is not None else 0
        packed["norm2"] = rows.norm2
    chunk = rows.id >> CHUNK_BITS
    # One group per (term, chunk): numbered by their first posting in this order.
    order = np.lexsort((rows.id, chunk, rows.term))
    packed, term, chunk = packed[order], rows.term[order], chunk[order]
    new = np.r_[True, (term[1:] != term[:-1]) | (chunk[1:] != chunk[:-1])]
    keys = [(names[c], k) for c, k in zip(term[new].tolist(), chunk[new].tolist(), strict=True)]
    return Grouped(packed, np.cumsum(new) - 1, keys)


def norm_ids(lengths: np.ndarray) -> np.ndarray:
    """``norm_id`` of each length."""
    return np.searchsorted(NORMS_ARRAY, lengths, side="right") - 1


def parts(kind: int, entries: Iterable[Entry]) -> list[tuple[str, int, np.ndarray]]:
    """The postings of ``entries`` in field ``kind`` as (term, part, postings): one per term
    and chunk, ascending ids in each."""
    return grouped(kind, entries).rows()


def copy_parts(
    conn: psycopg.Connection, namespace: str, kind: int, rows: Sequence[tuple[str, int, np.ndarray]]
) -> None:
    """Part rows of field ``kind`` of one namespace, streamed by COPY (binary: the postings as
    they are packed)."""
    if not rows:
        return
    with conn.cursor() as cur, cur.copy(schema.COPY_POSTINGS) as copy:
        copy.set_types(["text", "int2", "text", "int8", "bytea"])
        for term, part, postings in rows:
            copy.write_row((namespace, kind, term, part, postings.tobytes()))


@dataclass
class Rewrites:
    """The postings a transaction removes and adds for memories written before it, per
    (namespace, field): merged into the lists' parts at its end. A memory's postings are
    removed whole (every term of its field: a posting of it in a part read goes), and a memory
    rewritten twice in one transaction (a context refreshed again) keeps the postings it was
    given last."""

    # The (term, chunk) groups whose parts are read and merged, and the memories whose postings
    # in them go.
    groups: dict[tuple[str, int], set[tuple[str, int]]] = field(default_factory=dict)
    removed: dict[tuple[str, int], set[int]] = field(default_factory=dict)
    added: dict[tuple[str, int], dict[int, tuple[Counted, int]]] = field(default_factory=dict)
    packed: dict[tuple[str, int], list[Grouped]] = field(default_factory=dict)  # ``replace``'s

    def remove(self, namespace: str, kind: int, memory_id: int, counted: Counted) -> None:
        """A memory's postings in field ``kind``, as ``counted`` made them, to go."""
        chunk = memory_id >> CHUNK_BITS
        self.groups.setdefault((namespace, kind), set()).update(
            [(term, chunk) for term in counted.terms]
        )
        self.removed.setdefault((namespace, kind), set()).add(memory_id)
        self.added.get((namespace, kind), {}).pop(memory_id, None)

    def add(self, namespace: str, kind: int, memory_id: int, counted: Counted, mtype: str) -> None:
        """A memory's postings in field ``kind`` from ``counted``, merged into its chunk's."""
        table = self.added.setdefault((namespace, kind), {})
        table[memory_id] = (counted, type_code(mtype))

    def replace(
        self,
        namespace: str,
        kind: int,
        memory_ids: Iterable[int],
        groups: Iterable[tuple[str, int]],
        fresh: Grouped,
    ) -> None:
        """Memories' postings in field ``kind`` replaced at once, packed already (a bulk
        write's older turns): the (term, chunk) groups their postings are in now, and
        ``fresh``, theirs from now on. For memories nothing else in the transaction changes."""
        self.groups.setdefault((namespace, kind), set()).update(groups)
        self.removed.setdefault((namespace, kind), set()).update(memory_ids)
        self.packed.setdefault((namespace, kind), []).append(fresh)

    def touch(self, namespace: str, kind: int, term: str, chunk: int) -> None:
        """A list's parts of a chunk to be merged into one, their postings as they are."""
        self.groups.setdefault((namespace, kind), set()).add((term, chunk))

    def terms(self, namespace: str, kind: int) -> set[str]:
        """The terms whose lists this transaction merges in a field of a namespace."""
        found = {term for term, _ in self.groups.get((namespace, kind), ())}
        for counted, _ in self.added.get((namespace, kind), {}).values():
            found |= counted.terms
        for fresh in self.packed.get((namespace, kind), []):
            found.update(term for term, _ in fresh.keys)
        return found

    def keys(self) -> list[tuple[str, int]]:
        return sorted(set(self.groups) | set(self.added) | set(self.packed))

    def flush(self, conn: psycopg.Connection) -> None:
        """Merge every list part touched, a statement per (namespace, field) to read and one to
        delete, one COPY to write: the parts of each (term, chunk) read, the postings of the
        memories removed dropped, the ones added put in, one part written back. The caller
        holds the lists' ``term_stats`` rows."""
        for namespace, kind in self.keys():
            removed = self.removed.get((namespace, kind), set())
            added = self.added.get((namespace, kind), {})
            fresh = [grouped(kind, [(i, c, code) for i, (c, code) in sorted(added.items())])]
            fresh += self.packed.get((namespace, kind), [])
            wanted = sorted(
                self.groups.get((namespace, kind), set()).union(*(f.keys for f in fresh))
            )
            if not wanted:
                continue
            found = conn.execute(
                schema.READ_PARTS,
                {
                    "ns": namespace,
                    "field": kind,
                    "terms": [t for t, _ in wanted],
                    "chunks": [c for _, c in wanted],
                },
                binary=True,
            ).fetchall()
            dtype = DTYPES[kind]
            old = np.frombuffer(b"".join(bytes(r[2]) for r in found), dtype=dtype)
            sizes = [len(r[2]) // dtype.itemsize for r in found]
            group = np.repeat(np.asarray([int(r[0]) - 1 for r in found], np.int64), sizes)
            if removed:
                gone = np.fromiter(removed, dtype=np.int64, count=len(removed))
                keep = ~np.isin(old["id"], gone)
                old, group = old[keep], group[keep]
            position = {key: n for n, key in enumerate(wanted)}
            for new in fresh:
                if new.keys:
                    at = np.asarray([position[key] for key in new.keys], dtype=np.int64)
                    old = np.concatenate([old, new.postings])
                    group = np.concatenate([group, at[new.group]])
            order = np.lexsort((old["id"], group))
            merged = Grouped(old[order], group[order], wanted)
            if found:
                conn.execute(schema.DELETE_PARTS, (namespace, [str(r[1]) for r in found]))
            copy_parts(conn, namespace, kind, merged.rows())
        self.groups, self.removed, self.added, self.packed = {}, {}, {}, {}
