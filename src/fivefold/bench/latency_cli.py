"""``fivefold bench latency``: run the latency-and-scale benchmark and report it.

The command prints a markdown report (the tables of BENCHMARKS.md) and can write it, the JSON
of every figure and a PNG plot of latency against corpus size. The report's rendering lives
here, next to its only entry point; ``fivefold.bench.latency`` holds the measurements.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from fivefold.bench.latency import (
    EMBEDDER_ALONE,
    Ingest,
    LatencyReport,
    ModeResult,
    Percentiles,
    SizeResult,
    run_latency,
)
from fivefold.bench.latency_peer import lancedb_available
from fivefold.embed.base import Embedder, HashingEmbedder
from fivefold.types import OptimizerMode

__all__ = ["Target", "latency", "plot", "render_markdown", "targets"]

# Recall p99 targets by corpus size, query embedding included: what an agent's turn can afford.
P99_TARGETS_MS: Mapping[int, float] = {100_000: 20.0, 1_000_000: 50.0}
CACHE_HIT_TARGET_MS = 1.0
INGEST_TARGET_PER_S = 400.0


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    goal: str
    measured: str
    met: bool | None  # None: not measured in this run


def _cells(report: LatencyReport) -> list[tuple[SizeResult, ModeResult]]:
    return [(r, m) for r in report.results for m in r.modes]


def targets(report: LatencyReport) -> list[Target]:
    out = []
    for size, goal in P99_TARGETS_MS.items():
        cells = [(r, m) for r, m in _cells(report) if r.size == size]
        if not cells:
            out.append(Target(f"recall p99 at {size:,}", f"<= {goal:.0f} ms", "not run", None))
        for _, m in cells:
            name = f"recall p99 at {size:,}, optimizer {m.mode}"
            met = m.overall.p99 <= goal
            out.append(Target(name, f"<= {goal:.0f} ms", f"{m.overall.p99:.1f} ms", met))
    # Only the cached mode has a result cache to judge.
    for r, m in (c for c in _cells(report) if c[1].mode == OptimizerMode.CACHED.value):
        cached, total = m.repeat_cached, m.repeat.count
        name = f"cache hit at {r.size:,}"
        if not cached:
            out.append(Target(name, "< 1 ms", f"0/{total} repeats served from cache", False))
            continue
        met = cached == total and m.repeat.p99 < CACHE_HIT_TARGET_MS
        measured = f"p50 {m.repeat.p50:.2f}, p99 {m.repeat.p99:.2f} ms ({cached}/{total} cached)"
        out.append(Target(name, "< 1 ms", measured, met))
    for ingest in (i for i in report.sample if i.mode != EMBEDDER_ALONE):
        met = ingest.per_second >= INGEST_TARGET_PER_S
        name = f"ingest, {ingest.mode}"
        out.append(Target(name, ">= 400 memories/s", f"{ingest.per_second:.0f}/s", met))
    return out


# -- markdown -------------------------------------------------------------------------------------


def _row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    return [_row(header), _row(["---"] * len(header)), *(_row(r) for r in rows), ""]


def _pcts(p: Percentiles | None) -> str:
    if p is None or p.count == 0:
        return "-"
    return f"{p.p50:.1f} / {p.p95:.1f} / {p.p99:.1f} ({p.count})"


def _mb(size: int) -> str:
    return f"{size / 2**20:,.1f}"


def _latency_table(report: LatencyReport) -> list[str]:
    header = ["memories", "optimizer", "p50 ms", "p95 ms", "p99 ms", "mean ms", "max ms"]
    header += ["first recall ms", "index load s", "repeats cached", "identifier found@10"]
    rows = [
        [
            f"{r.size:,}",
            m.mode,
            *(f"{v:.1f}" for v in (m.overall.p50, m.overall.p95, m.overall.p99)),
            f"{m.overall.mean:.1f}",
            f"{m.overall.max:.0f}",
            f"{m.first_recall_ms:.0f}",
            f"{m.index_load_seconds:.1f}",
            f"{m.repeat_cached}/{m.repeat.count}",
            f"{m.identifier_found}/{m.identifier_total}",
        ]
        for r, m in _cells(report)
    ]
    return _table(header, rows)


def _scale_table(results: Sequence[SizeResult]) -> list[str]:
    header = ["memories", "bulk ingest/s (last 10%)", "dense index", "index build s"]
    header += [
        "peak RSS MB (build)",
        "RSS serving MB",
        "dense recall@10 vs exact",
        "disk MB (db + lexical + vindex)",
        "entities / edges",
    ]
    rows = [
        [
            f"{r.size:,}",
            f"{r.build.bulk.per_second:,.0f} ({r.build.bulk.tail_per_second:,.0f})",
            r.build.index_kind,
            f"{r.build.index_build_seconds:.1f}",
            f"{r.peak_rss_mb:,.0f} ({r.build.build_peak_rss_mb:,.0f})",
            f"{r.rss_mb:,.0f}",
            "-" if r.dense_recall is None else f"{r.dense_recall:.3f}",
            _disk(r.disk_bytes),
            f"{r.entities:,} / {r.edges:,}",
        ]
        for r in results
    ]
    return _table(header, rows)


def _disk(parts: Mapping[str, int]) -> str:
    """The total, and the embedded store's parts when it has them (a Postgres store is one
    total: its tables)."""
    total = _mb(parts.get("total", 0))
    if not any(k in parts for k in ("db", "lexical", "vindex")):
        return total
    shown = " + ".join(_mb(parts.get(k, 0)) for k in ("db", "lexical", "vindex"))
    return f"{total} ({shown})"


def _by(
    title: str, report: LatencyReport, pick: Callable[[ModeResult], Mapping[str, Percentiles]]
) -> list[str]:
    cells = _cells(report)
    names = sorted({name for _, m in cells for name in pick(m)})
    header = [title, *(f"{r.size:,} {m.mode}" for r, m in cells)]
    return _table(header, [[n, *(_pcts(pick(m).get(n)) for _, m in cells)] for n in names])


def _ingest_table(sample: Sequence[Ingest]) -> list[str]:
    rows = [[i.mode, f"{i.memories:,}", f"{i.seconds:.1f}", f"{i.per_second:,.0f}"] for i in sample]
    return _table(["write path (batches of 256, fresh store)", "memories", "s", "memories/s"], rows)


def _build_table(results: Sequence[SizeResult]) -> list[str]:
    header = ["memories", "store", "pool embed s", "world s", "bulk ingest s", "load avg (1, 5)"]
    rows = [
        [
            f"{r.size:,}",
            "reused" if r.reused else "built in this run",
            f"{r.build.pool_seconds:.1f}",
            f"{r.build.world_seconds:.1f}",
            f"{r.build.bulk.seconds:,.0f}",
            f"{r.load_average[0]:.1f}, {r.load_average[1]:.1f}",
        ]
        for r in results
    ]
    return _table(header, rows)


def _calls_table(report: LatencyReport) -> list[str]:
    cells = _cells(report)
    names = sorted({name for _, m in cells for name in m.calls})
    header = ["store call", *(f"{r.size:,} {m.mode}" for r, m in cells)]
    rows = [
        [n, *(f"{m.calls.get(n, 0.0):.2f} ({m.call_cpu.get(n, 0.0):.2f} ms)" for _, m in cells)]
        for n in names
    ]
    return _table(header, rows)


FIVEFOLD_COMPUTES = (
    "query parse and plan; up to five retrievers (semantic, lexical, graph, temporal, type) "
    "fused by score weights, with session context, supersession and the read policies; "
    "records of the top 10"
)


def _peer_tables(report: LatencyReport) -> list[str]:
    """Each peer's figures, then fivefold's p50 and p99 over each peer's (the same queries)."""
    sized = [r for r in report.results if r.peers]
    header = ["memories", "system", "vector index", "p50 ms", "p99 ms", "search alone p50 / p99"]
    header += ["CPU ms p50", "identifier found@10", "index build s"]
    rows: list[list[object]] = []
    ratios: list[list[object]] = []
    for r in sized:
        for m in r.modes:
            rows.append(
                [
                    f"{r.size:,}",
                    f"fivefold, optimizer {m.mode}",
                    r.build.index_kind,
                    f"{m.overall.p50:.1f}",
                    f"{m.overall.p99:.1f}",
                    "-",
                    f"{m.cpu['process'].p50:.1f}",
                    f"{m.identifier_found}/{m.identifier_total}",
                    f"{r.build.index_build_seconds:.1f}",
                ]
            )
        for p in r.peers:
            rows.append(
                [
                    f"{r.size:,}",
                    p.system,
                    p.vector_index,
                    f"{p.overall.p50:.1f}",
                    f"{p.overall.p99:.1f}",
                    f"{p.search.p50:.1f} / {p.search.p99:.1f}",
                    f"{p.cpu.p50:.1f}",
                    f"{p.identifier_found}/{p.identifier_total}",
                    f"{p.index_seconds:.1f}",
                ]
            )
            ratios += [
                [
                    f"{r.size:,}",
                    m.mode,
                    f"{p.system}, {p.vector_index}",
                    _ratio(m.overall.p50, p.overall.p50),
                    _ratio(m.overall.p99, p.overall.p99),
                ]
                for m in r.modes
            ]
    if not sized:
        return []
    what = [f"fivefold: {FIVEFOLD_COMPUTES}."]
    what += [f"{p.system}: {p.computes}." for p in sized[0].peers[:1]]
    return [
        "### Side by side with a peer (the same memories, vectors and queries)",
        "",
        " ".join(what) + " Both sides embed each query with the same embedder inside the "
        "timing; `search alone` leaves the peer's embedding out.",
        "",
        *_table(header, rows),
        *_table(["memories", "fivefold optimizer", "against", "p50 ratio", "p99 ratio"], ratios),
    ]


def _ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}" if theirs > 0 else "-"


def _met(met: bool | None) -> str:
    return {True: "met", False: "**not met**", None: "n/a"}[met]


def render_markdown(report: LatencyReport) -> str:
    """The report as markdown, headed by ``###`` sections so it nests under a ``##``. Latency
    cells read ``p50 / p95 / p99 (queries)`` in milliseconds."""
    m = report.machine
    lines = [
        f"Run {report.started_at}, {report.seconds / 60:.1f} min, commit {m.get('commit')}. "
        f"Machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('memory')}; "
        f"{m.get('platform')}; Python {m.get('python')}, SQLite {m.get('sqlite')}, numpy "
        f"{m.get('numpy')}, usearch {m.get('usearch')}, onnxruntime {m.get('onnxruntime')}. "
        f"Embedder: {m.get('embedder')} (model load {report.model_load_ms:,.0f} ms, not in "
        "any figure below).",
        "",
        "### Recall latency (k=10, budget=mid, query embedding included)",
        "",
        *_latency_table(report),
        "### Scale: ingest, index, memory, disk",
        "",
        *_scale_table(report.results),
        "### Latency and ingest targets",
        "",
        *_table(
            ["target", "goal", "measured", "met"],
            [[t.name, t.goal, t.measured, _met(t.met)] for t in targets(report)],
        ),
    ]
    if report.sample:
        lines += [
            "### Ingest with the embedder in the write path",
            "",
            *_ingest_table(report.sample),
        ]
    lines += _peer_tables(report)
    lines += ["### By plan (ms)", "", *_by("plan", report, lambda m: m.by_plan)]
    lines += ["### By retrievers that ran (ms)", ""]
    lines += _by("retrievers", report, lambda m: m.by_retrievers)
    lines += ["### By query kind (ms)", "", *_by("query kind", report, lambda m: m.by_kind)]
    lines += ["### Pipeline stages (ms, over the queries that ran each stage)", ""]
    lines += _by("stage", report, lambda m: m.stages)
    lines += ["### Recall CPU (ms per recall; store calls per recall)", ""]
    lines += _by("cost", report, lambda m: m.cpu)
    lines += ["### Recall CPU of the queries asked again (ms per recall)", ""]
    lines += _by("cost", report, lambda m: m.repeat_cpu)
    lines += ["### Store calls per recall (mean calls, and their mean CPU ms)", ""]
    lines += _calls_table(report)
    lines += ["### Build", "", *_build_table(report.results)]
    return "\n".join(lines)


# -- plot -----------------------------------------------------------------------------------------


def plot(report: LatencyReport, path: Path) -> bool:
    """p50 and p99 of recall against corpus size (log-log), with the p99 targets. Returns
    False, writing nothing, when matplotlib is not installed (it is optional)."""
    try:
        # Imported by name so that the package type-checks and runs without matplotlib.
        matplotlib = importlib.import_module("matplotlib")
    except ImportError:
        return False
    matplotlib.use("Agg")  # no display: write files only
    pyplot = importlib.import_module("matplotlib.pyplot")
    results = sorted(report.results, key=lambda r: r.size)
    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    for mode in dict.fromkeys(m.mode for r in results for m in r.modes):
        chosen = [(r.size, m.overall) for r in results for m in r.modes if m.mode == mode]
        for stat, style in (("p50", "o-"), ("p99", "s--")):
            values = [getattr(p, stat) for _, p in chosen]
            axes.plot([size for size, _ in chosen], values, style, label=f"{stat}, {mode}")
    axes.scatter(
        list(P99_TARGETS_MS), list(P99_TARGETS_MS.values()), marker="x", color="red", zorder=3
    )
    axes.plot([], [], "rx", label="p99 target")
    axes.set(xscale="log", yscale="log", xlabel="memories in the store", ylabel="ms")
    axes.set_title("fivefold recall latency (k=10, budget=mid, query embedding included)")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    pyplot.close(figure)
    return True


# -- command --------------------------------------------------------------------------------------


def _sizes(_ctx: click.Context, _param: click.Parameter, value: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in value.split(",") if part.strip()]
    except ValueError as exc:
        raise click.BadParameter(f"{value!r}: give sizes like 10000,100000") from exc
    if not sizes or min(sizes) < 1:
        raise click.BadParameter("give at least one positive size")
    return sizes


def _modes(_ctx: click.Context, _param: click.Parameter, value: str) -> list[OptimizerMode]:
    try:
        modes = [OptimizerMode(part.strip()) for part in value.split(",") if part.strip()]
    except ValueError as exc:
        choices = ", ".join(m.value for m in OptimizerMode)
        raise click.BadParameter(f"{value!r}: choose from {choices}") from exc
    if not modes:
        raise click.BadParameter("give at least one optimizer mode")
    return list(dict.fromkeys(modes))


def _embedder(name: str, threads: int | None) -> Embedder:
    if name == "hashing":
        return HashingEmbedder()
    from fivefold.embed.minilm import MiniLMEmbedder

    return MiniLMEmbedder(threads=threads)


@click.command("latency")
@click.option(
    "--sizes",
    default="2000",
    show_default=True,
    callback=_sizes,
    help="Comma-separated corpus sizes, e.g. 10000,100000,1000000.",
)
@click.option(
    "--queries",
    default=300,
    show_default=True,
    type=click.IntRange(min=1),
    help="Timed recalls per size.",
)
@click.option(
    "--warmup",
    default=20,
    show_default=True,
    type=click.IntRange(min=0),
    help="Untimed recalls first (other queries than the timed ones).",
)
@click.option(
    "--sample",
    default=2000,
    show_default=True,
    type=click.IntRange(min=0),
    help="Memories written through the embedder to measure ingest (0: skip).",
)
@click.option(
    "--store-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep built stores here and reuse them (keyed by size, seed, generator "
    "version and embedder); default: a temporary directory, deleted after.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write every figure as JSON to this file.",
)
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write latency.md, latency.json and latency.png (needs matplotlib) here.",
)
@click.option(
    "--optimizer",
    "modes",
    default="off,rule,cached",
    show_default=True,
    callback=_modes,
    help="Optimizer modes to time, comma-separated: off (the balanced plan), rule, "
    "cached (rule plus the result cache).",
)
@click.option("--seed", default=7, show_default=True, type=int, help="Corpus seed.")
@click.option(
    "--db",
    help="Build the (one) size in this empty store instead of a file: e.g. a postgresql:// "
    "URL, to time the Postgres backend.",
)
@click.option(
    "--peer",
    type=click.Choice(["lancedb"]),
    help="Also time this system's hybrid search on the same memories, vectors and queries, "
    "without and with its vector index, and report fivefold's p50 and p99 over its "
    "(needs the bench-peers extra).",
)
@click.option(
    "--embedder",
    "embedder_name",
    type=click.Choice(["minilm", "hashing"]),
    default="minilm",
    show_default=True,
    help="hashing: the fast test double, for smoke runs only (not semantic).",
)
@click.option(
    "--embed-threads",
    type=click.IntRange(min=1),
    help="ONNX threads of the embedding model (default: its own choice); 1, as "
    "`fivefold serve` runs it, counts all of an embedding's CPU time in the profile.",
)
def latency(
    sizes: list[int],
    queries: int,
    warmup: int,
    sample: int,
    store_dir: Path | None,
    json_path: Path | None,
    report_dir: Path | None,
    modes: list[OptimizerMode],
    seed: int,
    db: str | None,
    embedder_name: str,
    embed_threads: int | None,
    peer: str | None,
) -> None:  # fmt: skip
    """Recall latency and ingest throughput on synthetic stores of the given sizes."""
    if peer == "lancedb" and not lancedb_available():
        raise click.UsageError("--peer lancedb needs lancedb: pip install 'fivefold[bench-peers]'")
    report = run_latency(
        sizes,
        embedder=_embedder(embedder_name, embed_threads),
        queries=queries,
        warmup=warmup,
        sample=sample,
        seed=seed,
        store_dir=store_dir,
        modes=modes,
        progress=lambda message: click.echo(message, err=True),
        db=db,
        peer=peer,
    )
    markdown = render_markdown(report)
    click.echo(markdown)
    if json_path is not None:
        json_path.write_text(report.to_json(), encoding="utf-8")
    if report_dir is not None:
        report_dir.mkdir(parents=True, exist_ok=True)
        (report_dir / "latency.md").write_text(markdown + "\n", encoding="utf-8")
        (report_dir / "latency.json").write_text(report.to_json(), encoding="utf-8")
        if not plot(report, report_dir / "latency.png"):
            click.echo("matplotlib is not installed: no plot written", err=True)
