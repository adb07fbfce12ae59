"""LanceDB's hybrid search beside fivefold's recall: the same memories, vectors and queries.

The table holds every memory of the built store: its id, its content and the vector fivefold
stored for it (read back from the store, so both sides search the same space). LanceDB's native
full-text index covers the content; each query is embedded by the same embedder fivefold
recalls with, inside the timing (as fivefold's recall embeds its query), then asked as one
hybrid search: a vector search and a full-text search, fused by LanceDB's RRF reranker, top
10. It is timed twice: with no vector index (an exact scan) and after building an
``IVF_HNSW_SQ`` index with LanceDB's default parameters. Forced types are not passed (LanceDB
has no type column here), so the peer answers a broader question than the typed recalls.

LanceDB is an optional dependency (the ``bench-peers`` extra), imported only when asked for.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import numpy as np

from fivefold.bench.latency_store import Progress
from fivefold.bench.percentiles import Percentiles
from fivefold.bench.synthetic import SyntheticCorpus, SyntheticQuery
from fivefold.config import Config
from fivefold.embed.base import Embedder, Vectors
from fivefold.memory import Memory

__all__ = ["LANCEDB_COMPUTES", "PeerResult", "lancedb_available", "run_lancedb"]

LANCEDB_COMPUTES = (
    "dense (cosine) and full-text (BM25, native index) search, fused by RRF (k=60), top 10; "
    "no type filter"
)
VECTOR_INDEX = "IVF_HNSW_SQ"
RRF_K = 60
BATCH = 20_000


@dataclass(frozen=True, slots=True, kw_only=True)
class PeerResult:
    """One peer's timed queries: ``overall`` with the query embedding, ``search`` without it;
    ``cpu`` the process's CPU milliseconds per query (every thread)."""

    system: str
    vector_index: str
    computes: str
    load_seconds: float
    index_seconds: float
    overall: Percentiles
    search: Percentiles
    cpu: Percentiles
    identifier_found: int
    identifier_total: int


def lancedb_available() -> bool:
    try:
        importlib.import_module("lancedb")
    except ImportError:
        return False
    return True


def run_lancedb(
    corpus: SyntheticCorpus,
    store: Path | str,
    *,
    first_id: int,
    embedder: Embedder,
    config: Config,
    queries: Sequence[SyntheticQuery],
    warm: Sequence[SyntheticQuery],
    say: Progress,
) -> tuple[PeerResult, ...]:
    """The corpus in a LanceDB table in a temporary folder, timed without and with its vector
    index."""
    # Imported by name: the package type-checks and runs without the optional peer.
    lancedb = importlib.import_module("lancedb")
    rerankers = importlib.import_module("lancedb.rerankers")
    system = f"lancedb {metadata.version('lancedb')}"
    with TemporaryDirectory(prefix="fivefold-lancedb-") as folder:
        start = time.perf_counter()
        table = _load(
            lancedb.connect(folder), corpus, store, first_id=first_id, mem_args=(embedder, config)
        )
        table.create_fts_index("content", use_tantivy=False)
        load_seconds = time.perf_counter() - start
        say(f"{corpus.size:,}, {system}: table and full-text index in {load_seconds:.1f} s")
        reranker = rerankers.RRFReranker(K=RRF_K)
        timing = _Timing(table, reranker, embedder, first_id)
        flat = timing.run(queries, warm)
        start = time.perf_counter()
        table.create_index(metric="cosine", index_type=VECTOR_INDEX, vector_column_name="vector")
        index_seconds = time.perf_counter() - start
        say(f"{corpus.size:,}, {system}: {VECTOR_INDEX} index in {index_seconds:.1f} s")
        indexed = timing.run(queries, warm)
    return (
        _result(system, "none (exact scan)", flat, load_seconds=load_seconds, index_seconds=0.0),
        _result(
            system, VECTOR_INDEX, indexed, load_seconds=load_seconds, index_seconds=index_seconds
        ),
    )


@dataclass(frozen=True, slots=True)
class _Run:
    overall: Percentiles
    search: Percentiles
    cpu: Percentiles
    found: int
    total: int


def _result(
    system: str, index: str, run: _Run, *, load_seconds: float, index_seconds: float
) -> PeerResult:
    return PeerResult(
        system=system,
        vector_index=index,
        computes=LANCEDB_COMPUTES,
        load_seconds=load_seconds,
        index_seconds=index_seconds,
        overall=run.overall,
        search=run.search,
        cpu=run.cpu,
        identifier_found=run.found,
        identifier_total=run.total,
    )


def _load(
    db: Any,
    corpus: SyntheticCorpus,
    store: Path | str,
    *,
    first_id: int,
    mem_args: tuple[Embedder, Config],
) -> Any:
    pa = importlib.import_module("pyarrow")
    dim = mem_args[0].dim
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("content", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ]
    )
    table = db.create_table("memories", schema=schema, mode="overwrite")
    for ids, texts, vectors in _rows(corpus, store, first_id=first_id, mem_args=mem_args):
        flat = pa.array(vectors.reshape(-1), type=pa.float32())
        table.add(
            pa.table(
                {
                    "id": pa.array(ids, type=pa.int64()),
                    "content": pa.array(texts, type=pa.string()),
                    "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
                },
                schema=schema,
            )
        )
    return table


def _rows(
    corpus: SyntheticCorpus,
    store: Path | str,
    *,
    first_id: int,
    mem_args: tuple[Embedder, Config],
) -> Iterator[tuple[list[int], list[str], Vectors]]:
    """Batches of (ids, contents, the vectors the store holds for them)."""
    embedder, config = mem_args
    with Memory.open(store, embedder=embedder, config=config) as mem:
        for start in range(0, corpus.size, BATCH):
            batch = list(corpus.memories(start, min(start + BATCH, corpus.size)))
            ids = [first_id + m.index for m in batch]
            stored = mem.store.search.vectors(corpus.namespace, ids)
            if len(stored) != len(ids):
                raise RuntimeError("the store lacks vectors of the corpus: is it the one built?")
            vectors = np.stack([stored[i] for i in ids]).astype(np.float32, copy=False)
            yield ids, [m.content for m in batch], vectors


class _Timing:
    def __init__(self, table: Any, reranker: Any, embedder: Embedder, first_id: int) -> None:
        self._table = table
        self._reranker = reranker
        self._embedder = embedder
        self._first_id = first_id

    def _ask(self, query: SyntheticQuery) -> tuple[float, float, float, list[int]]:
        """Wall ms with the embedding, wall ms of the search alone, CPU ms, ids best first."""
        cpu, start = time.process_time(), time.perf_counter()
        vector = self._embedder.embed([query.text])[0]
        embedded = time.perf_counter()
        found = (
            self._table.search(
                query_type="hybrid", vector_column_name="vector", fts_columns="content"
            )
            .vector(vector)
            .text(query.text)
            .limit(10)
            .rerank(self._reranker)
            .to_arrow()
        )
        ids = [int(i) for i in found.column("id").to_pylist()]
        end = time.perf_counter()
        return (
            (end - start) * 1000.0,
            (end - embedded) * 1000.0,
            (time.process_time() - cpu) * 1000.0,
            ids,
        )

    def run(self, queries: Sequence[SyntheticQuery], warm: Sequence[SyntheticQuery]) -> _Run:
        for query in warm:
            self._ask(query)
        asked = [(q, self._ask(q)) for q in queries]
        targets = [(q, a) for q, a in asked if q.target is not None]
        return _Run(
            overall=Percentiles.of([a[0] for _, a in asked]),
            search=Percentiles.of([a[1] for _, a in asked]),
            cpu=Percentiles.of([a[2] for _, a in asked]),
            found=sum(self._first_id + (q.target or 0) in a[3] for q, a in targets),
            total=len(targets),
        )
