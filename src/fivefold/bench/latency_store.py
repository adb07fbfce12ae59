"""Building the latency benchmark's stores, and finding a built one again.

A store of a million memories takes a while to build, so each is built once into ``store_dir``
under a name keyed by size, seed, generator version and embedder, with a manifest
(``BuildInfo``) that marks it complete and records how it was built. Ingest throughput is
measured while building (every memory with a precomputed vector from ``SyntheticVectors``) and
on a small sample through the real embedder. Kept apart from ``latency``, which times
``recall`` on these stores: what is built, and how it is cached, changes for other reasons than
what is measured on it.
"""

from __future__ import annotations

import json
import re
import resource
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np

from fivefold.bench.synthetic import GENERATOR_VERSION, SyntheticCorpus, SyntheticMemory
from fivefold.config import Config
from fivefold.embed.base import Embedder, Vectors, normalize_rows
from fivefold.memory import Memory
from fivefold.read.retrieve.lexical import DEFAULT_WEIGHTS
from fivefold.types import Scope

__all__ = [
    "EMBEDDER_ALONE",
    "BuildInfo",
    "Ingest",
    "Progress",
    "SyntheticVectors",
    "build_store",
    "disk_usage",
    "index_kind",
    "open_index",
    "read_manifest",
    "sample_ingest",
    "store_name",
]

POOL_SIZE = 3_000
SAMPLE_BATCH = 256
BULK_BATCH = 2_000
EMBEDDER_ALONE = "embedder alone, no store"
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Ingest:
    """``remember_many`` throughput; ``tail_per_second`` is the rate over the last tenth of the
    batches, where the store is nearly full."""

    mode: str
    memories: int
    seconds: float
    per_second: float
    tail_per_second: float


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildInfo:
    """How a store was built; saved beside it, so a reused store still reports its build."""

    size: int
    seed: int
    generator_version: int
    embedder: str
    built_at: str
    pool_size: int
    pool_seconds: float
    relations: int
    aliases: int
    world_seconds: float
    bulk: Ingest
    index_kind: str
    index_build_seconds: float
    first_id: int
    # peak RSS of the building process (0.0: not recorded, by builds before this field)
    build_peak_rss_mb: float = 0.0


class SyntheticVectors:
    """Vectors for memories that are not embedded one by one.

    Embedding a million texts with the real model takes ~40 minutes on two cores, so a pool (the
    first ``len(pool)`` memories of the corpus) is embedded for real and every later memory gets
    the pool vector of a memory of its own template plus seeded Gaussian noise of norm
    ``noise`` (cosine ~0.9 to its base), renormalized. The space keeps the model's structure
    (clusters by template and topic), so HNSW works as hard as on real data; queries are still
    embedded live by the real model.
    """

    BLOCK = 4096

    def __init__(self, corpus: SyntheticCorpus, pool: Vectors, *, noise: float = 0.5) -> None:
        if len(pool) == 0:
            raise ValueError("the vector pool is empty")
        self._pool = normalize_rows(pool)
        self._seed = corpus.seed
        self._sigma = noise / float(np.sqrt(self._pool.shape[1]))
        by_template: dict[str, list[int]] = {}
        for memory in corpus.memories(0, len(pool)):
            by_template.setdefault(memory.template, []).append(memory.index)
        self._by_template = by_template
        self._block: tuple[int, Vectors] | None = None

    def rows(self, memories: Sequence[SyntheticMemory]) -> Vectors:
        """One unit vector per memory, a pure function of (seed, pool, memory index)."""
        out = np.empty((len(memories), self._pool.shape[1]), dtype=np.float32)
        everyone = range(len(self._pool))
        for row, memory in enumerate(memories):
            if memory.index < len(self._pool):
                out[row] = self._pool[memory.index]
                continue
            members = self._by_template.get(memory.template) or everyone
            # Knuth's multiplicative hash spreads consecutive memories over the members.
            base = members[(memory.index * 2654435761) % len(members)]
            out[row] = self._pool[base] + self._noise(memory.index)
        return normalize_rows(out)

    def _noise(self, index: int) -> Vectors:
        # Noise comes in fixed blocks seeded by (seed, block), so a row's vector does not
        # depend on the batch size it was generated in.
        block, offset = divmod(index, self.BLOCK)
        if self._block is None or self._block[0] != block:
            rng = np.random.default_rng([self._seed, block])
            dim = self._pool.shape[1]
            noise = rng.standard_normal((self.BLOCK, dim), dtype=np.float32) * self._sigma
            self._block = (block, noise)
        row: Vectors = self._block[1][offset]
        return row


# -- the store on disk ---------------------------------------------------------------------------


def store_name(size: int, seed: int, embedder: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", embedder)[:48].strip("-")
    return f"latency-n{size}-s{seed}-g{GENERATOR_VERSION}-{slug}.db"


def _manifest(path: Path) -> Path:
    return path.with_name(path.name + ".build.json")


def read_manifest(path: Path) -> BuildInfo | None:
    """The build record of a complete store at ``path``; None if there is none (a build that
    died halfway leaves no manifest, so it is rebuilt)."""
    manifest = _manifest(path)
    if not (path.is_file() and manifest.is_file()):
        return None
    data = json.loads(manifest.read_text(encoding="utf-8"))
    return BuildInfo(**{**data, "bulk": Ingest(**data["bulk"])})


def _remove_store(path: Path) -> None:
    for leftover in (path, *_siblings(path), _manifest(path)):
        if leftover.is_dir():
            shutil.rmtree(leftover)
        elif leftover.exists():
            leftover.unlink()


def _siblings(path: Path) -> tuple[Path, ...]:
    suffixes = ("-wal", "-shm", ".lexical", ".vindex")
    return tuple(path.with_name(path.name + suffix) for suffix in suffixes)


def disk_usage(path: Path) -> dict[str, int]:
    wal, shm, lexical, vindex = _siblings(path)
    sizes = {
        "db": path.stat().st_size if path.exists() else 0,
        "wal": (wal.stat().st_size if wal.exists() else 0)
        + (shm.stat().st_size if shm.exists() else 0),
        "lexical": _folder_bytes(lexical),
        "vindex": _folder_bytes(vindex),
    }
    sizes["total"] = sum(sizes.values())
    return sizes


def _folder_bytes(folder: Path) -> int:
    if not folder.is_dir():
        return 0
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


# -- building ------------------------------------------------------------------------------------


def build_store(
    corpus: SyntheticCorpus,
    path: Path | str,
    embedder: Embedder,
    say: Progress,
    *,
    config: Config | None = None,
) -> BuildInfo:
    """World (relations, aliases), then every memory with a precomputed vector, then the dense
    index, then the manifest that marks the store complete (a file store only: a store named
    by a URL must be empty and is built each time)."""
    config = config or Config()
    if isinstance(path, Path):
        _remove_store(path)
    pool_size = min(POOL_SIZE, corpus.size)
    say(f"{corpus.size:,}: embedding a pool of {pool_size:,} texts with {embedder.name}")
    start = time.perf_counter()
    pool = embedder.embed([m.embed_text() for m in corpus.memories(0, pool_size)])
    pool_seconds = time.perf_counter() - start
    vectors = SyntheticVectors(corpus, pool)
    with Memory.open(path, embedder=embedder, config=config) as mem:
        start = time.perf_counter()
        relations, aliases = _add_world(mem, corpus)
        world_seconds = time.perf_counter() - start
        bulk, first_id = _bulk_ingest(mem, corpus, vectors, say)
    say(f"{corpus.size:,}: building the dense index")
    with Memory.open(path, embedder=embedder, config=config) as mem:
        index_seconds = open_index(mem, corpus.namespace, pool[0])
    info = BuildInfo(
        size=corpus.size,
        seed=corpus.seed,
        generator_version=GENERATOR_VERSION,
        embedder=embedder.name,
        built_at=datetime.now(UTC).isoformat(timespec="seconds"),
        pool_size=pool_size,
        pool_seconds=pool_seconds,
        relations=relations,
        aliases=aliases,
        world_seconds=world_seconds,
        bulk=bulk,
        index_kind=index_kind(corpus.size, config),
        index_build_seconds=index_seconds,
        first_id=first_id,
        build_peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    )
    if isinstance(path, Path):
        staging = _manifest(path).with_suffix(".tmp")
        staging.write_text(json.dumps(asdict(info), indent=2), encoding="utf-8")
        staging.replace(_manifest(path))
    return info


def index_kind(size: int, config: Config) -> str:
    return "hnsw" if size >= config.index.hnsw_threshold else "exact"


def _add_world(mem: Memory, corpus: SyntheticCorpus) -> tuple[int, int]:
    relations = corpus.relations()
    for r in relations:
        mem.relate(
            r.source,
            r.relation,
            r.target,
            kind=r.kind,
            confidence=r.confidence,
            valid_from=r.valid_from,
            valid_to=r.valid_to,
            namespace=corpus.namespace,
            record=False,
        )
    aliases = corpus.aliases()
    for a in aliases:
        mem.alias(a.name, a.alias, namespace=corpus.namespace)
    return len(relations), len(aliases)


def _bulk_ingest(
    mem: Memory, corpus: SyntheticCorpus, vectors: SyntheticVectors, say: Progress
) -> tuple[Ingest, int]:
    """Every memory, with its precomputed vector; only ``remember_many`` and the lexical
    index's last catch-up are timed. Ids must come out consecutive, so that a query's target
    index maps to a memory id."""
    timings: list[float] = []
    first_id = 0
    for start in range(0, corpus.size, BULK_BATCH):
        batch = list(corpus.memories(start, start + BULK_BATCH))
        rows = vectors.rows(batch)
        items = [m.item(corpus.namespace) | {"vector": v} for m, v in zip(batch, rows, strict=True)]
        began = time.perf_counter()
        records = mem.remember_many(items)
        timings.append(time.perf_counter() - began)
        first_id = first_id or records[0].id
        if records[0].id != first_id + start or records[-1].id != first_id + start + len(batch) - 1:
            raise RuntimeError("memory ids are not consecutive: is another writer on the store?")
        if len(timings) % 50 == 0:
            say(f"{corpus.size:,}: {start + len(batch):,} memories in {sum(timings):.0f} s")
    # Writers bring the lexical index up to date every few batches: what the last ones left
    # waiting is part of the ingest (a lexical statistic reads the index once it is current).
    began = time.perf_counter()
    mem.store.reads.term_document_frequencies(corpus.namespace, ["ingest"])
    timings[-1] += time.perf_counter() - began
    return _ingest(
        "precomputed vectors, all fields given", corpus.size, timings, BULK_BATCH
    ), first_id


def _ingest(mode: str, count: int, timings: Sequence[float], batch: int) -> Ingest:
    tail = timings[-max(1, len(timings) // 10) :]
    # Every batch before the tail is full; the last one may not be.
    tail_count = count - batch * (len(timings) - len(tail))
    seconds = sum(timings)
    return Ingest(
        mode=mode,
        memories=count,
        seconds=seconds,
        per_second=count / seconds if seconds else 0.0,
        tail_per_second=tail_count / sum(tail) if sum(tail) else 0.0,
    )


def sample_ingest(corpus: SyntheticCorpus, embedder: Embedder, say: Progress) -> tuple[Ingest, ...]:
    """The default write path with the embedder in it, into a fresh store: once with every field
    given, once with text and dates only (the engine infers type, entities and predicate); and
    the embedder alone on the same texts, so the store's share of the cost shows."""
    texts = [m.embed_text() for m in corpus.memories()]
    timings = []
    for start in range(0, len(texts), SAMPLE_BATCH):
        began = time.perf_counter()
        embedder.embed(texts[start : start + SAMPLE_BATCH])
        timings.append(time.perf_counter() - began)
    out = [_ingest(EMBEDDER_ALONE, corpus.size, timings, SAMPLE_BATCH)]
    for inferred, mode in ((False, "embedder, all fields given"), (True, "embedder, text only")):
        say(f"sample: {corpus.size:,} memories, {mode}")
        timings = []
        with (
            TemporaryDirectory(prefix="fivefold-sample-") as tmp,
            Memory.open(Path(tmp) / "sample.db", embedder=embedder) as mem,
        ):
            for start in range(0, corpus.size, SAMPLE_BATCH):
                batch = corpus.memories(start, start + SAMPLE_BATCH)
                items = [m.item(corpus.namespace, inferred=inferred) for m in batch]
                began = time.perf_counter()
                mem.remember_many(items)
                timings.append(time.perf_counter() - began)
        out.append(_ingest(mode, corpus.size, timings, SAMPLE_BATCH))
    return tuple(out)


def open_index(mem: Memory, namespace: str, probe: Vectors) -> float:
    """Seconds for the first vector and lexical searches after opening: they build the dense
    index (fresh store) or load it (vectors from SQLite plus the saved HNSW graph), and open
    the lexical index; on Postgres they build pgvector's HNSW index on a store just loaded
    and read the probe's posting lists."""
    start = time.perf_counter()
    mem.store.search.vector_search(Scope(namespace=namespace), probe[None, :], 10)
    mem.store.search.lexical_search(
        Scope(namespace=namespace), ["index"], 10, weights=DEFAULT_WEIGHTS
    )
    return time.perf_counter() - start
