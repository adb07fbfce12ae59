"""The latency-and-scale benchmark: build a synthetic store of each size, then time ``recall``.

Per size: ingest throughput (precomputed vectors for the whole corpus; the real embedder on a
sample, once per run), the dense index's build and load times, peak and serving RSS, the store's
size on disk; and per optimizer mode (``off``: the balanced plan; ``cached``: the rule optimizer
behind the result cache), recall latency percentiles per query kind, per set of retrievers that
ran and per plan, and the pipeline's own stage timings. Results are frozen dataclasses with a
JSON form (``LatencyReport.to_json``); ``latency_cli`` renders them as markdown and a plot.

Timing is ``time.perf_counter`` around ``Memory.recall`` with ``k=10, budget="mid"`` and the
corpus's fixed ``now``: the query embedding is inside, as a caller waits for it. Lazy loads (the
model, the dense index, the entity catalog) are paid before the timed queries and reported on
their own; the heap they leave is then frozen (``gc.freeze()``), as ``fivefold serve`` freezes
it after start-up. A built store is reused from ``store_dir`` when one of the same size, seed,
generator version and embedder exists there: building a million memories takes a while.
Building, the cache of built stores and ingest throughput are in ``latency_store``.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from tempfile import TemporaryDirectory

from fivefold.bench.latency_peer import PeerResult, run_lancedb
from fivefold.bench.latency_profile import Profile, RecallCost, costed, profiled
from fivefold.bench.latency_recall import dense_recall
from fivefold.bench.latency_store import (
    EMBEDDER_ALONE,
    BuildInfo,
    Ingest,
    Progress,
    SyntheticVectors,
    build_store,
    disk_usage,
    open_index,
    read_manifest,
    sample_ingest,
    store_name,
)

# The store's half of the benchmark lives in ``latency_store``; its public names are re-exported
# here, where callers have always imported them from.
from fivefold.bench.percentiles import Percentiles
from fivefold.bench.synthetic import NOW, SyntheticCorpus, SyntheticQuery
from fivefold.config import Config
from fivefold.embed.base import Embedder
from fivefold.memory import Memory
from fivefold.types import OptimizerMode, RecallResult

__all__ = [
    "EMBEDDER_ALONE",
    "Answer",
    "BuildInfo",
    "Ingest",
    "LatencyReport",
    "ModeResult",
    "Percentiles",
    "SizeResult",
    "SyntheticVectors",
    "read_manifest",
    "run_latency",
    "store_name",
]


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
    # the first queries asked again: a result cache would serve these (Mode B)
    repeat: Percentiles
    repeat_cached: int
    identifier_found: int
    identifier_total: int
    rss_mb: float
    # CPU milliseconds per timed recall: the process's (every thread), and its parts (store
    # calls, query embeddings, the rest), with the store calls a recall makes ("store calls")
    cpu: Mapping[str, Percentiles]
    # the same for the first queries asked again (``repeat``)
    repeat_cpu: Mapping[str, Percentiles]
    # mean calls per timed recall, by store method, and their mean CPU milliseconds
    calls: Mapping[str, float]
    call_cpu: Mapping[str, float]
    # per timed query, its text, forced types and the ids it returned, best first
    answers: tuple[Answer, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    text: str
    types: tuple[str, ...]
    hits: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SizeResult:
    size: int
    store: str
    reused: bool
    build: BuildInfo
    modes: tuple[ModeResult, ...]
    peak_rss_mb: float
    rss_mb: float
    # the dense leg's recall@10 against exact search over the timed queries (None: a store
    # named by a URL, whose index this benchmark does not configure)
    dense_recall: float | None
    disk_bytes: Mapping[str, int]
    memories: int
    entities: int
    edges: int
    load_average: tuple[float, float]
    # the same memories and queries in a peer's hybrid search (``--peer``), when asked for
    peers: tuple[PeerResult, ...] = ()


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
    db: str | None = None
    peer: str | None = None


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
    db: str | None = None,
    peer: str | None = None,
) -> LatencyReport:
    """Build (or reuse) a store of each size and time ``queries`` recalls on it. ``db`` (one
    size only) builds it in that empty store instead, e.g. a ``postgresql://`` URL; ``peer``
    ("lancedb") times that system's hybrid search on the same memories and queries."""
    if not sizes or min(sizes) < 1 or queries < 1 or warmup < 0 or sample < 0 or not modes:
        raise ValueError("sizes, queries and modes are needed; warmup and sample not negative")
    if db is not None and len(sizes) != 1:
        raise ValueError("a store given by --db holds one size: give one")
    if peer not in (None, "lancedb"):
        raise ValueError(f"unknown peer {peer!r}: the one known is lancedb")
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
        db=db,
        peer=peer,
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
    if s.db is not None:
        return _run_in(s.db, corpus, s)
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


def _run_in(db: str, corpus: SyntheticCorpus, s: _Settings) -> SizeResult:
    """Build and time in a store named by a URL (always built: no manifest to reuse)."""
    built = build_store(corpus, db, s.embedder, s.say, config=s.config)
    result = _measure(corpus, db, built, s)
    with Memory.open(db, embedder=s.embedder, config=s.config) as mem:
        stats = mem.stats()
    return replace(result, disk_bytes={"total": stats.size_bytes}, store=stats.location)


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
    cost: RecallCost


def _recall(mem: Memory, query: SyntheticQuery, profile: Profile) -> _Timed:
    def ask() -> RecallResult:
        types = list(query.types) or None
        return mem.recall(query.text, k=10, now=NOW, types=types, budget="mid")

    start = time.perf_counter()
    res, cost = costed(ask, profile)
    ms = (time.perf_counter() - start) * 1000.0
    return _Timed(
        query=query,
        ms=ms,
        plan=res.plan.name.value,
        retrievers="+".join(r.value for r in res.plan.retrievers) or "(none)",
        stages=dict(res.timings),
        hits=tuple(h.memory.id for h in res.hits),
        cached=res.cached,
        cost=cost,
    )


def _measure(
    corpus: SyntheticCorpus, path: Path | str, build: BuildInfo, s: _Settings
) -> SizeResult:
    timed = corpus.queries(s.queries)
    asked = {(q.text, q.types) for q in timed}
    # The first recall and the warm-ups must not repeat a timed query: a cache would serve it.
    warm = [
        q for q in corpus.queries(s.warmup + 1, salt="warm-up") if (q.text, q.types) not in asked
    ]
    modes = tuple(_measure_mode(corpus, path, build, s, mode, timed, warm) for mode in s.modes)
    # Read before the recall check, whose exact search holds every vector in float32.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    recall = None
    if isinstance(path, Path):
        s.say(f"{corpus.size:,}: the dense leg's recall@10 against exact search")
        recall = dense_recall(
            path,
            namespace=corpus.namespace,
            queries=[(q.text, tuple(q.types)) for q in timed],
            embedder=s.embedder,
            config=s.config,
        )
    peers = _peers(corpus, path, build, s, timed, warm) if s.peer else ()
    with Memory.open(path, embedder=s.embedder, config=s.config) as mem:
        stats = mem.stats()
    return SizeResult(
        size=corpus.size,
        store="",
        reused=False,
        build=build,
        modes=modes,
        # The kernel updates ru_maxrss lazily, so it can trail a resident size read since.
        peak_rss_mb=max(peak, max(m.rss_mb for m in modes)),
        rss_mb=max(m.rss_mb for m in modes),
        dense_recall=recall,
        disk_bytes={},
        memories=stats.memories,
        entities=stats.entities,
        edges=stats.edges,
        load_average=_load_average(),
        peers=peers,
    )


def _peers(
    corpus: SyntheticCorpus,
    path: Path | str,
    build: BuildInfo,
    s: _Settings,
    timed: Sequence[SyntheticQuery],
    warm: Sequence[SyntheticQuery],
) -> tuple[PeerResult, ...]:
    return run_lancedb(
        corpus,
        path,
        first_id=build.first_id,
        embedder=s.embedder,
        config=s.config,
        queries=timed,
        warm=warm,
        say=s.say,
    )


def _measure_mode(
    corpus: SyntheticCorpus,
    path: Path | str,
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
    with Memory.open(path, embedder=s.embedder, config=config) as opened:
        load_seconds = open_index(opened, corpus.namespace, probe)
        s.say(f"{corpus.size:,}, optimizer {mode.value}: index ready in {load_seconds:.1f} s")
        mem, profile = profiled(opened, config)
        first = _recall(mem, warm[0], profile).ms if warm else 0.0
        for query in warm[1:]:
            _recall(mem, query, profile)
        # What exists after the warm-up (the model, the indexes) is never scanned by the
        # collector again, as ``fivefold serve`` does after start-up: a full collection over it
        # costs milliseconds whenever it happens to fall inside a recall.
        gc.collect()
        gc.freeze()
        timed, repeated = [], []
        for position, query in enumerate(queries):
            timed.append(_recall(mem, query, profile))
            if position < s.repeats:
                # Asked again at once: the cache's TTL (30 s) is shorter than a whole run.
                repeated.append(_recall(mem, query, profile))
        rss = _current_rss_mb()
    gc.unfreeze()
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
        cpu=_cpu([t.cost for t in timed]),
        repeat_cpu=_cpu([t.cost for t in repeated]),
        calls=_calls([t.cost.calls for t in timed]),
        call_cpu=_calls([t.cost.call_cpu_ms for t in timed]),
        answers=tuple(
            Answer(text=t.query.text, types=tuple(t.query.types), hits=t.hits) for t in timed
        ),
    )


def _cpu(costs: Sequence[RecallCost]) -> dict[str, Percentiles]:
    return {
        "process": Percentiles.of([c.cpu_ms for c in costs]),
        "store": Percentiles.of([c.store_cpu_ms for c in costs]),
        "embed": Percentiles.of([c.embed_cpu_ms for c in costs]),
        "other": Percentiles.of([c.other_cpu_ms for c in costs]),
        "store calls": Percentiles.of([float(c.store_calls) for c in costs]),
        "embeds": Percentiles.of([float(c.embeds) for c in costs]),
    }


def _calls(per_recall: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Each name's mean over the recalls (a recall without it counts 0)."""
    totals: dict[str, float] = {}
    for values in per_recall:
        for name, value in values.items():
            totals[name] = totals.get(name, 0.0) + value
    return {name: totals[name] / max(len(per_recall), 1) for name in sorted(totals)}


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
