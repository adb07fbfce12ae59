"""The dense index: an in-memory copy of one namespace's vectors, derived from SQLite.

SQLite holds the vectors (the source of truth); this index follows it through the change log
(``vector_sync``), so a crash or another process's write costs a catch-up, never data. Below
``hnsw_threshold`` vectors the search is exact (one matrix product on float32); above it the
copy is kept in half precision and an HNSW graph (usearch, its vectors in one byte or two per
dimension, ``hnsw_vectors``) proposes twice k candidates, re-scored exactly from the copy; when
a scope or type filter leaves too few of its candidates, it is asked for more (as many as
should hold k admitted ones), or, for a small admitted subset, the subset is searched exactly.
A saved graph is written atomically with a checksum and ignored if either fails.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from fivefold.config import IndexConfig
from fivefold.embed.base import Vectors

Ids = npt.NDArray[np.int64]
# Below this many admitted vectors a filtered search scans them exactly (one gather and product,
# cheap at this size) rather than widening the HNSW search.
EXACT_SUBSET = 4_096
# A saved graph's description names how it was built: graphs saved before builds were single-
# threaded (no "build") may hold unreachable nodes (``_hnsw_add``) and are built again.
GRAPH_BUILD = "one-thread"
# Rows per step of a build or of an exact scan over a half-precision copy: each step widens
# them to float32, so a step's copy stays small (96 MB at 384 dimensions).
STEP = 65_536
# What graphs saved before their build settings were recorded were built with (the defaults,
# unchanged since the first release).
SAVED_BEFORE_SETTINGS = {"connectivity": 16, "expansion_add": 128}


class _Codes:
    """Small integer codes for scope strings, so filters are vectorized comparisons."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}

    def code(self, value: str) -> int:
        return self._codes.setdefault(value, len(self._codes))

    def lookup(self, value: str) -> int:
        return self._codes.get(value, -1)


class NamespaceIndex:
    def __init__(self, dim: int, config: IndexConfig, generation: int = 0) -> None:
        self.dim = dim
        self.config = config
        self.generation = generation
        self._n = 0
        self._ids: Ids = np.zeros(0, dtype=np.int64)
        self._vecs: Vectors = np.zeros((0, dim), dtype=np.float32)
        self._user: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self._agent: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self._type: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self._alive = np.zeros(0, dtype=bool)
        self._pos: dict[int, int] = {}
        self._users, self._agents, self._types = _Codes(), _Codes(), _Codes()
        self._hnsw: object | None = None
        self.hnsw_dirty = False
        # The last vector_log entry this index reflects (vector_sync).
        self.log_seq = 0

    def __len__(self) -> int:
        return len(self._pos)

    def ids(self) -> set[int]:
        return set(self._pos)

    @property
    def uses_hnsw(self) -> bool:
        return self._hnsw is not None

    def add(
        self,
        ids: Sequence[int],
        vectors: Vectors,
        users: Sequence[str],
        agents: Sequence[str],
        types: Sequence[str],
        *,
        auto_hnsw: bool = True,
    ) -> None:
        count = len(ids)
        if count == 0:
            return
        self.reserve(self._n + count)
        sl = slice(self._n, self._n + count)
        self._ids[sl] = np.asarray(ids, dtype=np.int64)
        self._vecs[sl] = vectors
        self._user[sl] = [self._users.code(u) for u in users]
        self._agent[sl] = [self._agents.code(a) for a in agents]
        self._type[sl] = [self._types.code(t) for t in types]
        self._alive[sl] = True
        for offset, memory_id in enumerate(ids):
            self._pos[int(memory_id)] = self._n + offset
        self._n += count
        if self._hnsw is not None:
            self._hnsw_add(np.asarray(ids, dtype=np.uint64), vectors)
        elif auto_hnsw and len(self._pos) >= self.config.hnsw_threshold:
            self.build_hnsw()

    def remove(self, memory_id: int) -> bool:
        pos = self._pos.pop(memory_id, None)
        if pos is None:
            return False
        self._alive[pos] = False
        if self._hnsw is not None:
            self._hnsw.remove(memory_id)  # type: ignore[attr-defined]
            self.hnsw_dirty = True
        return True

    def compact(self) -> None:
        """Hold the copy in half precision from now on: the graph's candidates are re-scored
        from it, and at a million memories float32 would take 1.5 GB."""
        self._vecs = self._vecs.astype(np.float16)

    def reserve(self, size: int) -> None:
        """Room for ``size`` vectors; growing doubles, so it is rare but copies everything."""
        if size <= len(self._ids):
            return
        capacity = max(size, 2 * len(self._ids), 1024)
        self._ids = _grow(self._ids, capacity)
        self._vecs = _grow(self._vecs, capacity)
        self._user = _grow(self._user, capacity)
        self._agent = _grow(self._agent, capacity)
        self._type = _grow(self._type, capacity)
        self._alive = _grow(self._alive, capacity)

    # -- HNSW ----------------------------------------------------------------------------------
    def build_hnsw(self) -> None:
        if self._vecs.dtype != np.float16:
            self.compact()
        index_class = _usearch_index()
        cfg = self.config
        graph = index_class(
            ndim=self.dim,
            metric="ip",
            dtype=cfg.hnsw_vectors.value,
            connectivity=cfg.hnsw_connectivity,
            expansion_add=cfg.hnsw_expansion_add,
            expansion_search=cfg.hnsw_expansion_search,
        )
        live = np.nonzero(self._alive[: self._n])[0]
        self._hnsw = graph
        for start in range(0, len(live), STEP):
            rows = live[start : start + STEP]
            self._hnsw_add(self._ids[rows].astype(np.uint64), self._vecs[rows])

    def _hnsw_add(self, keys: npt.NDArray[np.uint64], vectors: Vectors) -> None:
        # One thread: usearch's concurrent add() can leave a node stored but unreachable by any
        # search (unum-cloud/USearch#735, open), a memory that is never found. One thread
        # leaves none, at about twice the build time.
        wide = np.ascontiguousarray(vectors, dtype=np.float32)
        self._hnsw.add(keys, wide, threads=1)  # type: ignore[union-attr]
        self.hnsw_dirty = True

    def save_hnsw(self, path: Path, store_id: str) -> None:
        """The graph, then its description (store, log position, checksum), each written to a
        temporary file and renamed into place: a crash leaves the old pair or a graph whose
        checksum does not match, which loading refuses."""
        if self._hnsw is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        # A name of its own: several processes may save the same namespace's graph at once
        # (the last rename wins; a graph paired with another's description fails its checksum).
        unique = f"{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        staging = path.with_name(f"{path.name}.{unique}")
        meta_staging = path.with_name(f"{path.stem}.json.{unique}")
        try:
            self._hnsw.save(str(staging))  # type: ignore[attr-defined]
            _fsync(staging)
            digest = _checksum(staging)
            os.replace(staging, path)
            meta = {
                "store": store_id,
                "log_seq": self.log_seq,
                "count": len(self._pos),
                "blake2b": digest,
                "build": GRAPH_BUILD,
                "vectors": self.config.hnsw_vectors.value,
                **self._build_settings(),
            }
            meta_staging.write_text(json.dumps(meta), encoding="utf-8")
            _fsync(meta_staging)
            os.replace(meta_staging, path.with_suffix(".json"))
        except BaseException:
            # A failed save (a full disk) leaves no partial file behind: each one would take
            # the space a later save needs.
            for left in (staging, meta_staging):
                with contextlib.suppress(OSError):
                    left.unlink(missing_ok=True)
            raise
        self.hnsw_dirty = False

    def hnsw_size(self) -> int:
        """The bytes a save of the graph writes (0 without one)."""
        return 0 if self._hnsw is None else int(self._hnsw.serialized_length)  # type: ignore[attr-defined]

    def load_hnsw(self, path: Path, store_id: str, *, any_build: bool = False) -> int | None:
        """Adopt a graph this store saved, if its checksum holds (and it was built on one
        thread, unless ``any_build``); return the log position it reflects (None: not
        adopted)."""
        meta_path = path.with_suffix(".json")
        if not (path.is_file() and meta_path.is_file()):
            return None
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if not store_id or meta.get("store") != store_id:
                return None
            if meta.get("build") != GRAPH_BUILD and not any_build:
                return None  # built by several threads: it may hold unreachable nodes
            # Graphs saved before the setting existed hold f16.
            if meta.get("vectors", "f16") != self.config.hnsw_vectors.value and not any_build:
                return None
            # A graph built with other settings than the configured ones is built again: a
            # changed connectivity or expansion is asked for to get another graph.
            built = {k: meta.get(k, v) for k, v in SAVED_BEFORE_SETTINGS.items()}
            if built != self._build_settings() and not any_build:
                return None
            if meta.get("blake2b") != _checksum(path):
                return None  # damaged or half-written: never search a graph we cannot trust
            graph = _usearch_index().restore(str(path))
        except (OSError, ValueError, RuntimeError):
            return None
        if graph is None:
            return None
        # A saved graph keeps neither expansion factor: restored, it would search with
        # usearch's defaults, not the configured ones.
        graph.expansion_add = self.config.hnsw_expansion_add
        graph.expansion_search = self.config.hnsw_expansion_search
        self._hnsw = graph
        if self._vecs.dtype != np.float16:
            self.compact()
        return int(meta.get("log_seq", -1))

    def _build_settings(self) -> dict[str, int]:
        return {
            "connectivity": self.config.hnsw_connectivity,
            "expansion_add": self.config.hnsw_expansion_add,
        }

    def patch_hnsw(self, changes: dict[int, bool]) -> None:
        """Bring an adopted graph up to the arrays: re-add every memory the log names."""
        graph: Any = self._hnsw
        keys = np.asarray(list(changes), dtype=np.uint64)
        if len(keys):
            graph.remove(keys)
        live = [m for m, deleted in changes.items() if not deleted and m in self._pos]
        if live:
            rows = [self._pos[m] for m in live]
            self._hnsw_add(np.asarray(live, dtype=np.uint64), self._vecs[rows])
        self.hnsw_dirty = True

    def hnsw_consistent(self) -> bool:
        return self._hnsw is not None and len(self._hnsw) == len(self._pos)  # type: ignore[arg-type]

    def drop_hnsw(self) -> None:
        self._hnsw = None

    # -- search --------------------------------------------------------------------------------
    def search(
        self,
        queries: Vectors,
        k: int,
        *,
        user: str | None,
        agent: str | None,
        types: Sequence[str] = (),
    ) -> list[list[tuple[int, float]]]:
        if self._n == 0 or k <= 0:
            return [[] for _ in range(len(queries))]
        mask = self._mask(user, agent, types)
        filtered = user is not None or agent is not None or bool(types)
        if self._hnsw is not None:
            return [self._search_hnsw(q, k, mask, filtered) for q in queries]
        return self._search_exact(queries, k, mask)

    def _mask(
        self, user: str | None, agent: str | None, types: Sequence[str]
    ) -> npt.NDArray[np.bool_]:
        mask = self._alive[: self._n].copy()
        if user is not None:
            mask &= self._user[: self._n] == self._users.lookup(user)
        if agent is not None:
            mask &= self._agent[: self._n] == self._agents.lookup(agent)
        if types:
            # One comparison per type: np.isin sorts, ten times slower for a few codes.
            kinds = self._type[: self._n]
            of_type = np.zeros(self._n, dtype=bool)
            for code in {self._types.lookup(t) for t in types}:
                of_type |= kinds == code
            mask &= of_type
        return mask

    def _search_exact(
        self, queries: Vectors, k: int, mask: npt.NDArray[np.bool_]
    ) -> list[list[tuple[int, float]]]:
        rows = np.nonzero(mask)[0]
        if len(rows) == 0:
            return [[] for _ in range(len(queries))]
        if self._vecs.dtype == np.float16:
            return [self._scan_half(q, k, rows) for q in queries]
        # A full-matrix product is faster than gathering rows unless the filter is selective.
        if len(rows) * 2 < self._n:
            sims = self._vecs[rows] @ queries.T
            ids = self._ids[rows]
        else:
            sims = self._vecs[: self._n] @ queries.T
            sims[~mask] = -np.inf
            ids = self._ids[: self._n]
        return [_top_k(ids, sims[:, j], min(k, len(rows))) for j in range(len(queries))]

    def _scan_half(self, query: Vectors, k: int, rows: Ids) -> list[tuple[int, float]]:
        """Exact top k of ``rows`` from the half-precision copy, a step at a time (one float32
        copy of them all would be as large as the copy it spares)."""
        best_ids: list[Ids] = []
        best_sims: list[npt.NDArray[np.float32]] = []
        for start in range(0, len(rows), STEP):
            part = rows[start : start + STEP]
            sims = self._vecs[part].astype(np.float32) @ query
            top = _top_k(self._ids[part], sims, min(k, len(part)))
            best_ids.append(np.array([i for i, _ in top], dtype=np.int64))
            best_sims.append(np.array([s for _, s in top], dtype=np.float32))
        ids, sims = np.concatenate(best_ids), np.concatenate(best_sims)
        return _top_k(ids, sims, min(k, len(ids)))

    def _search_hnsw(
        self, query: Vectors, k: int, mask: npt.NDArray[np.bool_], filtered: bool
    ) -> list[tuple[int, float]]:
        total = len(self._pos)
        admitted = int(np.count_nonzero(mask)) if filtered else total
        wanted = min(total, k * 4 if filtered else 2 * k)
        while True:
            matches = self._hnsw.search(query, wanted)  # type: ignore[union-attr]
            rows = self._admitted(matches.keys, mask)
            found = len(rows)
            if found >= k or not filtered or wanted >= total:
                # The graph's order is approximate (its vectors are coarser than the copy's):
                # its candidates, at least twice k, are ranked by their exact cosines.
                sims = self._vecs[rows].astype(np.float32) @ query
                return _top_k(self._ids[rows], sims, min(k, found))
            # The filter removed too many of HNSW's candidates. Ask for half as many again as
            # the share admitted so far says should hold k, at most four times as many (none
            # admitted: as many as the filter's share of the whole index says, twice over),
            # while that stays well below the whole index; else the admitted subset is small
            # enough for an exact scan (a third of 1M memories is not: gathering their vectors
            # alone takes longer than any HNSW search). The four times: the share admitted
            # grows away from a query whose nearest memories are of other types ("when did I
            # last meet Sarah?", nearest her facts), so its first share would ask for far too
            # many.
            if found:
                wanted = min(total, -(-3 * wanted * k // (2 * found)), 4 * wanted)
            else:
                wanted = min(total, max(wanted * 4, 2 * k * total // max(admitted, 1)))
            if admitted <= EXACT_SUBSET or wanted * 4 > total:
                return self._search_exact(query[None, :], k, mask)[0]

    def _admitted(self, keys: npt.NDArray[np.uint64], mask: npt.NDArray[np.bool_]) -> Ids:
        """The rows of HNSW's matches that are in this index and admitted by ``mask``
        (vectorized: a Python loop over a few thousand matches costs a millisecond)."""
        get = self._pos.get
        rows = np.array([get(key, -1) for key in keys.tolist()], dtype=np.int64)
        keep = rows >= 0
        keep[keep] = mask[rows[keep]]
        return rows[keep]


def _checksum(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fsync(path: Path) -> None:
    with path.open("rb") as handle:
        os.fsync(handle.fileno())


def _usearch_index() -> Any:
    """usearch's Index class, imported after onnxruntime: with usearch 2.26 and onnxruntime
    1.31, loading onnxruntime after usearch segfaults the process (libstdc++ symbol clash), and
    the embedder loads onnxruntime lazily, possibly after the first HNSW index is built."""
    with contextlib.suppress(ImportError):  # a hard dependency; only the order matters here
        import onnxruntime  # noqa: F401
    from usearch.index import Index

    return Index


def _top_k(ids: Ids, sims: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
    if k <= 0:
        return []
    part = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
    # Sort by similarity descending, then id ascending, so equal scores are deterministic.
    order = np.lexsort((ids[part], -sims[part]))
    chosen = part[order]
    return [(int(ids[i]), float(sims[i])) for i in chosen if np.isfinite(sims[i])]


G = TypeVar("G", bound=np.generic)


def _grow(array: npt.NDArray[G], capacity: int) -> npt.NDArray[G]:
    shape = (capacity, *array.shape[1:])
    grown = np.zeros(shape, dtype=array.dtype)
    grown[: len(array)] = array
    return grown
