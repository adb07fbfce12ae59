"""The latency-and-scale benchmark: build a synthetic store of each size, then time ``recall``.

Per size: ingest throughput (precomputed vectors for the whole corpus; the real embedder on a
sample, once per run), the dense index's build and load times, peak and serving RSS, the store's
size on disk; and per optimizer mode (``off``: the balanced plan; ``cached``: the rule optimizer
behind the result cache), recall latency percentiles per query kind, per set of retrievers that
ran and per plan, and the pipeline's own stage timings. Results are frozen dataclasses with a
JSON form (``LatencyReport.to_json``); ``latency_cli`` renders them as markdown and a plot.

Timing is ``time.perf_counter`` around ``Memory.recall`` with ``k=10, budget="mid"`` and the
corpus's fixed ``now``: the query embedding is inside, as DESIGN §6 asks. Lazy loads (the model,
the dense index, the entity catalog) are paid before the timed queries and reported on their
own. A built store is reused from ``store_dir`` when one of the same size, seed, generator
version and embedder exists there: building a million memories takes a while.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np

from fivefold.bench.synthetic import (
    GENERATOR_VERSION,
    NOW,
    SyntheticCorpus,
    SyntheticMemory,
    SyntheticQuery,
)
from fivefold.config import Config
from fivefold.embed.base import Embedder, Vectors, normalize_rows
from fivefold.memory import Memory
from fivefold.model import OptimizerMode, Scope

__all__ = [
    "BuildInfo",
    "Ingest",
    "LatencyReport",
    "ModeResult",
    "Percentiles",
    "SizeResult",
    "SyntheticVectors",
    "run_latency",
]

POOL_SIZE = 3_000
SAMPLE_BATCH = 256
BULK_BATCH = 2_000
EMBEDDER_ALONE = "embedder alone, no store"
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Percentiles:
    """Milliseconds. Percentiles interpolate linearly (numpy's default): with fewer than 100
    samples p99 is close to the maximum, and ``count`` says how many there were."""

    count: int
    mean: float
    p50: float
    p95: float
    p99: float
    max: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Percentiles:
        if not samples:
            return cls(count=0, mean=0.0, p50=0.0, p95=0.0, p99=0.0, max=0.0)
        p50, p95, p99 = (float(v) for v in np.percentile(samples, [50, 95, 99]))
        mean, top = float(np.mean(samples)), float(np.max(samples))
        return cls(count=len(samples), mean=mean, p50=p50, p95=p95, p99=p99, max=top)


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


@dataclass(frozen=True, slots=True, kw_only=True)
class ModeResult:
    """The timed queries under one optimizer mode: ``off`` runs the balanced plan for every
    query; ``rule`` lets the rule DAG pick; ``cached`` puts the result cache in front of it."""

    mode: str
    index_load_seconds: float
    first_recall_ms: float
    warmup: int
    overall: Percentiles
    by_kind: Mapping[str, Percentiles]
    by_retrievers: Mapping[str, Percentiles]
    by_plan: Mapping[str, Percentiles]
    stages: Mapping[str, Percentiles]
    # the first queries asked again: a result cache would serve these (DESIGN §2, Mode B)
    repeat: Percentiles
    repeat_cached: int
    identifier_found: int
    identifier_total: int
    rss_mb: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SizeResult:
    size: int
    store: str
    reused: bool
    build: BuildInfo
    modes: tuple[ModeResult, ...]
    peak_rss_mb: float
    rss_mb: float
    disk_bytes: Mapping[str, int]
    memories: int
    entities: int
    edges: int
    load_average: tuple[float, float]


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyReport:
    machine: Mapping[str, str]
    started_at: str
    seconds: float
    model_load_ms: float
    sample: tuple[Ingest, ...]
    results: tuple[SizeResult, ...]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Settings:
    embedder: Embedder
    queries: int
    warmup: int
    repeats: int
    seed: int
    store_dir: Path | None
    say: Progress
    config: Config
    modes: tuple[OptimizerMode, ...]


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


# -- the run -------------------------------------------------------------------------------------


def run_latency(
    sizes: Sequence[int],
    *,
    embedder: Embedder,
    queries: int = 300,
    warmup: int = 20,
    repeats: int = 50,
    sample: int = 2_000,
    seed: int = 7,
    store_dir: Path | None = None,
    progress: Progress | None = None,
    config: Config | None = None,
    modes: Sequence[OptimizerMode] = (OptimizerMode.OFF, OptimizerMode.CACHED),
) -> LatencyReport:
    """Build (or reuse) a store of each size and time ``queries`` recalls on it."""
    if not sizes or min(sizes) < 1 or queries < 1 or warmup < 0 or sample < 0 or not modes:
        raise ValueError("sizes, queries and modes are needed; warmup and sample not negative")
    started, clock = datetime.now(UTC), time.perf_counter()
    # Before anything runs: the commit is that of the code about to be measured.
    machine = machine_info(embedder)
    say = progress or (lambda _message: None)
    model_ms = _ms(lambda: embedder.embed(["load the model before anything is timed"]))
    settings = _Settings(
        embedder=embedder,
        queries=queries,
        warmup=warmup,
        repeats=repeats,
        seed=seed,
        store_dir=store_dir,
        say=say,
        config=config or Config(),
        modes=tuple(modes),
    )
    samples = sample_ingest(SyntheticCorpus(sample, seed=seed), embedder, say) if sample else ()
    results = tuple(_run_size(size, settings) for size in sizes)
    return LatencyReport(
        machine=machine,
        started_at=started.isoformat(timespec="seconds"),
        seconds=time.perf_counter() - clock,
        model_load_ms=model_ms,
        sample=samples,
        results=results,
    )


def _run_size(size: int, s: _Settings) -> SizeResult:
    corpus = SyntheticCorpus(size, seed=s.seed)
    with ExitStack() as stack:
        directory = s.store_dir
        if directory is None:
            directory = Path(stack.enter_context(TemporaryDirectory(prefix="fivefold-latency-")))
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / store_name(size, s.seed, s.embedder.name)
        build = read_manifest(path)
        reused = build is not None
        if build is None:
            build = build_store(corpus, path, s.embedder, s.say, config=s.config)
        else:
            s.say(f"{size:,}: reusing the store built {build.built_at} at {path}")
        result = _measure(corpus, path, build, s)
        disk = disk_usage(path)
    return replace(result, reused=reused, disk_bytes=disk, store=str(path) if s.store_dir else "")


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
    return tuple(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", ".vindex"))


def disk_usage(path: Path) -> dict[str, int]:
    wal, shm, vindex = _siblings(path)
    sizes = {
        "db": path.stat().st_size if path.exists() else 0,
        "wal": (wal.stat().st_size if wal.exists() else 0)
        + (shm.stat().st_size if shm.exists() else 0),
        "vindex": sum(f.stat().st_size for f in vindex.rglob("*") if f.is_file())
        if vindex.is_dir()
        else 0,
    }
    sizes["total"] = sum(sizes.values())
    return sizes


# -- building ------------------------------------------------------------------------------------


def build_store(
    corpus: SyntheticCorpus,
    path: Path,
    embedder: Embedder,
    say: Progress,
    *,
    config: Config | None = None,
) -> BuildInfo:
    """World (relations, aliases), then every memory with a precomputed vector, then the dense
    index, then the manifest that marks the store complete."""
    config = config or Config()
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
        index_seconds = _open_index(mem, corpus.namespace, pool[0])
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
    """Every memory, with its precomputed vector; only ``remember_many`` is timed. Ids must
    come out consecutive, so that a query's target index maps to a memory id."""
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
    return _ingest(
        "precomputed vectors, all fields given", corpus.size, timings, BULK_BATCH
    ), first_id


def _ingest(mode: str, count: int, timings: Sequence[float], batch: int) -> Ingest:
    tail = timings[-max(1, len(timings) // 10) :]
    tail_count = min(count, len(tail) * batch) if len(tail) < len(timings) else count
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


def _open_index(mem: Memory, namespace: str, probe: Vectors) -> float:
    """Seconds for the first vector search after opening: it builds the dense index (fresh
    store) or loads it (vectors from SQLite plus the saved HNSW graph)."""
    start = time.perf_counter()
    mem.store.vector_search(Scope(namespace=namespace), probe[None, :], 10)
    return time.perf_counter() - start


# -- measuring -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Timed:
    query: SyntheticQuery
    ms: float
    plan: str
    retrievers: str
    stages: Mapping[str, float]
    hits: tuple[int, ...]
    cached: bool


def _recall(mem: Memory, query: SyntheticQuery) -> _Timed:
    start = time.perf_counter()
    res = mem.recall(query.text, k=10, now=NOW, types=list(query.types) or None, budget="mid")
    ms = (time.perf_counter() - start) * 1000.0
    return _Timed(
        query=query,
        ms=ms,
        plan=res.plan.name.value,
        retrievers="+".join(r.value for r in res.plan.retrievers) or "(none)",
        stages=dict(res.timings),
        hits=tuple(h.memory.id for h in res.hits),
        cached=res.cached,
    )


def _measure(corpus: SyntheticCorpus, path: Path, build: BuildInfo, s: _Settings) -> SizeResult:
    timed = corpus.queries(s.queries)
    asked = {(q.text, q.types) for q in timed}
    # The first recall and the warm-ups must not repeat a timed query: a cache would serve it.
    warm = [
        q for q in corpus.queries(s.warmup + 1, salt="warm-up") if (q.text, q.types) not in asked
    ]
    modes = tuple(_measure_mode(corpus, path, build, s, mode, timed, warm) for mode in s.modes)
    with Memory.open(path, embedder=s.embedder, config=s.config) as mem:
        stats = mem.stats()
    return SizeResult(
        size=corpus.size,
        store="",
        reused=False,
        build=build,
        modes=modes,
        # The kernel updates ru_maxrss lazily, so it can trail a resident size read since.
        peak_rss_mb=max(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
            max(m.rss_mb for m in modes),
        ),
        rss_mb=max(m.rss_mb for m in modes),
        disk_bytes={},
        memories=stats.memories,
        entities=stats.entities,
        edges=stats.edges,
        load_average=_load_average(),
    )


def _measure_mode(
    corpus: SyntheticCorpus,
    path: Path,
    build: BuildInfo,
    s: _Settings,
    mode: OptimizerMode,
    queries: Sequence[SyntheticQuery],
    warm: Sequence[SyntheticQuery],
) -> ModeResult:
    """Open the store as a new process would, load the dense index, recall once (the first
    recall pays the entity catalog and cold pages), warm up, then time every query."""
    config = replace(s.config, optimizer=replace(s.config.optimizer, mode=mode))
    probe = s.embedder.embed(["which vector is closest to this probe?"])[0]
    with Memory.open(path, embedder=s.embedder, config=config) as mem:
        load_seconds = _open_index(mem, corpus.namespace, probe)
        s.say(f"{corpus.size:,}, optimizer {mode.value}: index ready in {load_seconds:.1f} s")
        first = _recall(mem, warm[0]).ms if warm else 0.0
        for query in warm[1:]:
            _recall(mem, query)
        timed, repeated = [], []
        for position, query in enumerate(queries):
            timed.append(_recall(mem, query))
            if position < s.repeats:
                # Asked again at once: the cache's TTL (30 s) is shorter than a whole run.
                repeated.append(_recall(mem, query))
        rss = _current_rss_mb()
    identifiers = [t for t in timed if t.query.target is not None]
    found = sum(build.first_id + (t.query.target or 0) in t.hits for t in identifiers)
    return ModeResult(
        mode=mode.value,
        index_load_seconds=load_seconds,
        first_recall_ms=first,
        warmup=max(len(warm) - 1, 0),
        overall=Percentiles.of([t.ms for t in timed]),
        by_kind=_grouped((t.query.kind.value, t.ms) for t in timed),
        by_retrievers=_grouped((t.retrievers, t.ms) for t in timed),
        by_plan=_grouped((t.plan, t.ms) for t in timed),
        # the pipeline's own timings, over the queries in which each stage ran
        stages=_grouped(pair for t in timed for pair in t.stages.items()),
        repeat=Percentiles.of([t.ms for t in repeated]),
        repeat_cached=sum(t.cached for t in repeated),
        identifier_found=found,
        identifier_total=len(identifiers),
        rss_mb=rss,
    )


def _grouped(pairs: Iterable[tuple[str, float]]) -> dict[str, Percentiles]:
    groups: dict[str, list[float]] = {}
    for name, ms in pairs:
        groups.setdefault(name, []).append(ms)
    return {name: Percentiles.of(groups[name]) for name in sorted(groups)}


def _ms(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000.0


def _current_rss_mb() -> float:
    """Resident memory now (Linux ``/proc``); the peak (``ru_maxrss``) includes the build."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _load_average() -> tuple[float, float]:
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return (0.0, 0.0)
    return (one, five)


def machine_info(embedder: Embedder) -> dict[str, str]:
    import platform
    import sqlite3
    from importlib import metadata

    cpu = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        cpu = next(
            (
                line.split(":", 1)[1].strip()
                for line in cpuinfo.read_text().splitlines()
                if line.startswith("model name")
            ),
            "",
        )
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu or platform.processor(),
        "cores": str(os.cpu_count()),
        "memory": f"{memory:.0f} GiB",
        "sqlite": sqlite3.sqlite_version,
        "embedder": embedder.name,
    }
    info["commit"] = _commit()
    for package in ("fivefold", "numpy", "usearch", "onnxruntime"):
        try:
            info[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            info[package] = "not installed"
    return info


def _commit() -> str:
    """The git commit of the code measured, with "+dirty" for uncommitted changes, when the
    package runs from a checkout (it does in development and CI)."""
    import subprocess

    where = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=where, capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=where,
            capture_output=True,
            text=True,
        )
    except OSError:
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
