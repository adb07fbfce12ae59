"""Render a ``BenchResult``: JSON that round-trips, a markdown report with tables, and PNG plots
of recall@k per system.

Every figure in a table is x100 (recall, nDCG and MRR alike), the scale of the LoCoMo paper.
matplotlib is optional: it is imported only when plots are drawn, through its object-oriented
API (no pyplot, so no global backend or window), and a report without it says why it has no
plots.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from fivefold.bench.metrics import Metric
from fivefold.bench.policies import REFERENCE
from fivefold.bench.policy_report import (
    baselines_table,
    comparison_from_json,
    comparison_to_json,
    plan_latency_table,
    policies_from_json,
    policies_to_json,
    policy_table,
)
from fivefold.bench.runner import (
    BenchResult,
    MetricSpec,
    Setup,
    SystemResult,
    significance_label,
)
from fivefold.bench.systems import ENGINE, FusionSettings, Group
from fivefold.bench.table import delta_cells, diff, mark, p_value, pct, signed, table
from fivefold.errors import InvalidInput

__all__ = [
    "FORMAT",
    "category_table",
    "change_table",
    "coverage_table",
    "from_json",
    "halves_table",
    "headline_table",
    "read_json",
    "render_markdown",
    "summary_table",
    "to_json",
    "write_json",
    "write_plots",
    "write_report",
]

FORMAT = "fivefold-bench-quality/1"
REPORT_FILE = "report.md"
PLOT_FILE = "recall_at_k.png"
BM25_NOTE = (
    '"bm25" is the engine\'s own lexical leg: SQLite FTS5 BM25 (k1 = 1.2, b = 0.75) with porter '
    "stemming and stop words dropped, over content plus the inferred predicate (weighted 4x), "
    "IDF over the whole store; not a separate BM25 library."
)


# --- JSON -------------------------------------------------------------------------------------


def to_json(result: BenchResult) -> dict[str, Any]:
    """A JSON-able dict holding everything in ``result`` (per-question scores included)."""
    setup = result.setup
    return {
        "format": FORMAT,
        "setup": {
            "dataset": setup.dataset,
            "embedder": setup.embedder,
            "docs": setup.docs,
            "questions": setup.questions,
            "k_max": setup.k_max,
            "budget": setup.budget,
            "resamples": setup.resamples,
            "rounds": setup.rounds,
            "fusion": {
                "k": setup.fusion.k,
                "multi_hop_factor": setup.fusion.multi_hop_factor,
                "importance_floor": setup.fusion.importance_floor,
                "speaker_boost": setup.fusion.speaker_boost,
                "window_boost": setup.fusion.window_boost,
            },
        },
        "notes": list(result.notes),
        "categories": dict(result.categories),
        "metrics": [
            {"label": m.label, "metric": m.metric.value, "k": m.k, "session": m.session}
            for m in result.metrics
        ],
        "question_ids": list(result.question_ids),
        "question_categories": list(result.question_categories),
        "systems": [_system_json(s) for s in result.systems],
        "coverage": dict(result.coverage),
        "reproduced": result.reproduced,
        "timings": dict(result.timings),
        "plans": dict(result.plans),
        "policies": policies_to_json(result.policies),
        "optimized_vs": {n: comparison_to_json(c) for n, c in result.optimized_vs.items()},
        "learned_model": result.learned_model,
    }


def _system_json(system: SystemResult) -> dict[str, Any]:
    comparison = system.comparison
    return {
        "name": system.name,
        "group": system.group,
        "description": system.description,
        "overall": dict(system.overall),
        "by_category": {c: dict(v) for c, v in system.by_category.items()},
        "per_question": {m: list(v) for m, v in system.per_question.items()},
        "comparison": comparison_to_json(comparison),
    }


def from_json(data: Mapping[str, Any]) -> BenchResult:
    """The ``BenchResult`` that ``to_json`` wrote; raises ``InvalidInput`` on another format."""
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise InvalidInput(f"not a fivefold quality benchmark result (expected format {FORMAT})")
    try:
        setup = dict(data["setup"])
        setup["fusion"] = FusionSettings(**setup["fusion"])
        return BenchResult(
            setup=Setup(**setup),
            notes=tuple(data["notes"]),
            categories=MappingProxyType(dict(data["categories"])),
            metrics=tuple(
                MetricSpec(**{**m, "metric": Metric(m["metric"])}) for m in data["metrics"]
            ),
            question_ids=tuple(data["question_ids"]),
            question_categories=tuple(data["question_categories"]),
            systems=tuple(_system_from_json(s) for s in data["systems"]),
            coverage=MappingProxyType(dict(data["coverage"])),
            reproduced=int(data["reproduced"]),
            timings=MappingProxyType(dict(data["timings"])),
            plans=MappingProxyType(dict(data.get("plans", {}))),
            policies=policies_from_json(data.get("policies", [])),
            optimized_vs=MappingProxyType(
                {
                    name: c
                    for name, raw in data.get("optimized_vs", {}).items()
                    if (c := comparison_from_json(raw)) is not None
                }
            ),
            learned_model=data.get("learned_model"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput(f"malformed benchmark result: {exc!r}") from exc


def _system_from_json(data: Mapping[str, Any]) -> SystemResult:
    comparison = data["comparison"]
    return SystemResult(
        name=data["name"],
        group=data["group"],
        description=data["description"],
        overall=MappingProxyType(dict(data["overall"])),
        by_category=MappingProxyType(
            {c: MappingProxyType(dict(v)) for c, v in data["by_category"].items()}
        ),
        per_question=MappingProxyType({m: tuple(v) for m, v in data["per_question"].items()}),
        comparison=comparison_from_json(comparison),
    )


def write_json(result: BenchResult, path: str | os.PathLike[str]) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(to_json(result), indent=1) + "\n", encoding="utf-8")
    return target


def read_json(path: str | os.PathLike[str]) -> BenchResult:
    try:
        return from_json(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot read a benchmark result ({exc})") from exc


# --- markdown ---------------------------------------------------------------------------------


def summary_table(result: BenchResult) -> str:
    """Every system on every metric, with its difference from the engine on the significance
    metric; ``*`` marks p < 0.05 (paired bootstrap)."""
    labels = _defined_labels(result)
    sig = significance_label(result.setup.k_max)
    header = ["system", "group", *labels, f"Δ{sig}", "p"]
    rows = [
        [
            f"`{s.name}`",
            s.group,
            *(pct(s.overall[label]) for label in labels),
            *delta_cells(s.comparison),
        ]
        for s in result.systems
    ]
    return table(header, rows)


HEADLINE_LABELS = ("R@5", "R@10", "R@25", "nDCG@10", "MRR")


def headline_table(result: BenchResult) -> str:
    """The figures BENCHMARKS.md quotes: recall@5/10/25, nDCG@10 and MRR over all scored
    questions, the significance metric per category, and the difference from the engine."""
    engine = result.system(ENGINE)
    labels = [label for label in HEADLINE_LABELS if engine.overall.get(label) is not None]
    sig = significance_label(result.setup.k_max)
    categories = list(result.categories) if len(result.categories) > 1 else []
    header = [
        "system",
        *labels,
        *(f"{sig} {result.categories[c]}" for c in categories),
        f"Δ{sig}",
    ]
    rows = [
        [
            f"`{s.name}`",
            *(pct(s.overall[label]) for label in labels),
            *(pct(s.by_category[c][sig]) if c in s.by_category else "-" for c in categories),
            delta_cells(s.comparison)[0],
        ]
        for s in result.systems
    ]
    return table(header, rows)


def halves_table(result: BenchResult) -> str:
    """The significance metric on the first half of the conversations (namespaces, in dataset
    order; the larger half when odd) and on the rest: a setting chosen on one half is reported
    on the other. Empty for a dataset with one namespace."""
    spaces = list(dict.fromkeys(q.split("/", 1)[0] for q in result.question_ids))
    if len(spaces) < 2:
        return ""
    first = set(spaces[: (len(spaces) + 1) // 2])
    sig = significance_label(result.setup.k_max)
    in_first = [q.split("/", 1)[0] in first for q in result.question_ids]

    def mean_of(values: Sequence[float | None], want: bool) -> str:
        chosen = [v for v, f in zip(values, in_first, strict=True) if f is want and v is not None]
        return pct(sum(chosen) / len(chosen)) if chosen else "-"

    names = sorted(first, key=spaces.index)
    rest = [s for s in spaces if s not in first]
    header = ["system", f"{', '.join(names)}", f"{', '.join(rest)}"]
    rows = [
        [f"`{s.name}`", mean_of(s.per_question[sig], True), mean_of(s.per_question[sig], False)]
        for s in result.systems
        if s.group in (Group.ENGINE.value, Group.BASELINE.value)
    ]
    return table(header, rows)


def category_table(result: BenchResult) -> str:
    """The significance metric per category and over all scored questions; empty when there is
    a single category. ``n`` counts the questions that define the metric."""
    if len(result.categories) < 2:
        return ""
    sig = significance_label(result.setup.k_max)
    defined = [
        c
        for c, v in zip(
            result.question_categories, result.system(ENGINE).per_question[sig], strict=True
        )
        if v is not None
    ]
    header = [
        "system",
        *(
            f"{c} {name} (n={defined.count(c)})" if name != c else f"{c} (n={defined.count(c)})"
            for c, name in result.categories.items()
        ),
        f"all (n={len(defined)})",
    ]
    rows = [
        [
            f"`{s.name}`",
            *(pct(s.by_category[c][sig]) if c in s.by_category else "-" for c in result.categories),
            pct(s.overall[sig]) + mark(s.comparison),
        ]
        for s in result.systems
    ]
    return table(header, rows)


def change_table(result: BenchResult) -> str:
    """Ablations and challengers as differences from the engine (points x100)."""
    sig = significance_label(result.setup.k_max)
    engine = result.system(ENGINE)
    others = ("nDCG@10", "MRR", "R@25")
    shown = [label for label in others if engine.overall.get(label) is not None]
    header = ["system", f"Δ{sig} [95% CI]", "p", *(f"Δ{label}" for label in shown)]
    rows = []
    for s in result.systems:
        if s.group not in (Group.ABLATION, Group.CHALLENGER) or s.comparison is None:
            continue
        c = s.comparison
        rows.append(
            [
                f"`{s.name}`",
                f"{signed(c.mean_diff)}{mark(c)} [{signed(c.ci_low)}, {signed(c.ci_high)}]",
                p_value(c.p_value),
                *(signed(diff(s.overall[lb], engine.overall[lb])) for lb in shown),
            ]
        )
    return table(header, rows)


def coverage_table(result: BenchResult) -> str:
    rows = [[f"`{name}`", f"{share * 100:.1f} %"] for name, share in result.coverage.items()]
    return table(["retriever", "ran on (share of questions)"], rows)


def render_markdown(
    result: BenchResult, *, plots: Sequence[str] = (), plot_note: str | None = None
) -> str:
    """The full report: setup, the tables, the plots (file names relative to the report) and
    the notes a reader needs to trust or question the figures."""
    setup = result.setup
    sig = significance_label(setup.k_max)
    parts = [
        f"# Retrieval quality: {setup.dataset}",
        _setup_line(result),
        "## Headline",
        f"All figures x100. Δ{sig} = system minus `fivefold` on per-question {sig}; `*`: "
        f"significant (paired bootstrap, {setup.resamples:,} resamples, p < 0.05).",
        headline_table(result),
        "## Systems",
        f"Every metric, x100: R@k is turn-level recall with partial credit, any@k the share of "
        f"questions with some evidence in the top k, MRR within the top {setup.k_max}, sR@k "
        "session-level recall.",
        summary_table(result),
        *_section(f"## {sig} per category", category_table(result)),
        *_section(f"## {sig} on each half of the conversations", halves_table(result)),
        "## Ablations and fusion challengers against `fivefold`",
        change_table(result),
        *_section(
            "## The optimizer against the plain baselines",
            baselines_table(
                result.optimized_vs,
                {s.name: s.overall.get(sig) for s in result.systems},
                sig,
            ),
        ),
        *_section(
            "## Read policies, before and after",
            _policy_intro(result) + "\n\n" + policy_table(result.policies, sig)
            if result.policies
            else "",
        ),
        *_section("## Recall latency per plan", plan_latency_table(result.policies)),
        "## Retrievers that ran",
        coverage_table(result),
        "## Plots",
        *(f"![recall@k per system]({name})" for name in plots),
        *([plot_note] if plot_note else []),
        "## Systems and notes",
        _descriptions(result),
        _notes(result),
    ]
    return "\n\n".join(part for part in parts if part) + "\n"


def _policy_intro(result: BenchResult) -> str:
    return (
        f"Each policy recalls every question (`recall(k={result.setup.k_max})`, interleaved "
        f"question by question); Δ is against `{REFERENCE}` (the rule optimizer as configured), "
        f"paired bootstrap, {result.setup.resamples:,} resamples. Latency is the whole recall, "
        f"query embedding included, in ms: per question the fastest of {result.setup.rounds} "
        "rounds."
    )


def _section(heading: str, body: str) -> tuple[str, ...]:
    return (heading, body) if body else ()


def _setup_line(result: BenchResult) -> str:
    s = result.setup
    t = result.timings
    cats = ", ".join(f"{c} {n}" if n != c else c for c, n in result.categories.items())
    return (
        f"{s.docs:,} docs, {s.questions:,} questions (categories: {cats}); embedder "
        f"`{s.embedder}`; one `explain(k={s.k_max}, budget={s.budget!r})` per question; fusion "
        f"k={s.fusion.k}, multi-hop factor {s.fusion.multi_hop_factor}, importance floor "
        f"{s.fusion.importance_floor}, speaker boost {s.fusion.speaker_boost}, window boost "
        f"{s.fusion.window_boost}. "
        f"Time: ingest {t['ingest_s']:.1f} s, questions "
        f"{t['queries_s']:.1f} s (explain p50 {t['query_p50_ms']:.1f} ms, p99 "
        f"{t['query_p99_ms']:.1f} ms), scoring {t['scoring_s']:.1f} s, total "
        f"{t['total_s']:.1f} s." + _optimized_line(result)
    )


def _optimized_line(result: BenchResult) -> str:
    """Latency of the balanced plan (recall-equivalent explain) against the optimizer's
    recall, and the optimizer's plan mix."""
    t = result.timings
    if "optimized_p50_ms" not in t or not result.plans:
        return ""
    mix = ", ".join(f"{name} {count}" for name, count in result.plans.items())
    return (
        f" Optimized recall: p50 {t['optimized_p50_ms']:.1f} ms, p99 "
        f"{t['optimized_p99_ms']:.1f} ms, mean {t['optimized_mean_ms']:.1f} ms (balanced "
        f"explain mean {t['query_mean_ms']:.1f} ms); plans: {mix}."
    )


def _descriptions(result: BenchResult) -> str:
    return "\n".join(f"- `{s.name}` ({s.group}): {s.description}" for s in result.systems)


def _notes(result: BenchResult) -> str:
    n = len(result.question_ids)
    notes = [
        BM25_NOTE,
        "Derived systems (every row but `fivefold`) are computed from the same `explain` runs "
        "with `fivefold.read.fuse`; they skip negation demotion. Fusing all runs as the engine "
        "does "
        f"reproduced its ranking exactly on {result.reproduced} of {n} questions.",
        "Significance: two-sided paired bootstrap on per-question scores, seed 0, not corrected "
        "for the number of systems compared.",
        *_baseline_warnings(result),
        *result.notes,
    ]
    return "\n".join(f"- {note}" for note in notes)


def _baseline_warnings(result: BenchResult) -> list[str]:
    """The plain baselines are the engine's own legs: a plan that skips a leg leaves its
    baseline empty on that question, which understates the baseline."""
    legs = (("semantic", "`dense`"), ("lexical", "`bm25`"))
    return [
        f"WARNING: the plan did not run the {leg} leg on {(1 - share) * 100:.1f} % of the "
        f"questions; {baseline} (and `rrf-dense-bm25`) is empty or partial there, so it is "
        "understated."
        for leg, baseline in legs
        if (share := result.coverage.get(leg, 0.0)) < 1.0
    ]


# --- plots and files --------------------------------------------------------------------------


def write_plots(result: BenchResult, directory: str | os.PathLike[str]) -> tuple[Path | None, str]:
    """Draw recall@k per system into ``directory``. Returns the PNG path (None when matplotlib
    is not installed) and a note for the report."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None, "No plots: matplotlib is not installed (`pip install matplotlib`)."
    specs = [m for m in result.metrics if m.metric is Metric.RECALL and not m.session]
    cutoffs = [m.k for m in specs]
    figure = Figure(figsize=(12, 5), layout="constrained")
    panels = figure.subplots(1, 2, sharey=True)
    groups = (
        (Group.ENGINE, Group.BASELINE, Group.CHALLENGER),
        (Group.ENGINE, Group.ALONE, Group.ABLATION),
    )
    titles = ("engine, baselines and fusion challengers", "retrievers alone and ablations")
    for axes, wanted, title in zip(panels, groups, titles, strict=True):
        for s in (s for s in result.systems if s.group in wanted):
            values = [s.overall[m.label] for m in specs]
            points = [(k, v * 100) for k, v in zip(cutoffs, values, strict=True) if v is not None]
            style = "-" if s.group in (Group.ENGINE, Group.BASELINE) else "--"
            width = 2.5 if s.name == ENGINE else 1.2
            axes.plot(*zip(*points, strict=True), style, marker="o", lw=width, label=s.name)
        axes.set_xscale("log")
        axes.set_xticks(cutoffs, [str(k) for k in cutoffs])
        axes.set_xlabel("k")
        axes.set_title(title)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=7)
    panels[0].set_ylabel("recall@k (partial credit) x100")
    figure.suptitle(f"{result.setup.dataset}: recall@k, {result.setup.questions} questions")
    target = Path(directory) / PLOT_FILE
    figure.savefig(target, dpi=110)
    return target, ""


def write_report(result: BenchResult, directory: str | os.PathLike[str]) -> Path:
    """Write ``report.md`` and its plot into ``directory`` (created if missing)."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    plot, note = write_plots(result, folder)
    plots = [plot.name] if plot is not None else []
    target = folder / REPORT_FILE
    target.write_text(render_markdown(result, plots=plots, plot_note=note), encoding="utf-8")
    return target


# --- cells ------------------------------------------------------------------------------------


def _defined_labels(result: BenchResult) -> list[str]:
    """Metric labels that at least one question defines (BEIR has no sessions, for example)."""
    engine = result.system(ENGINE)
    return [m.label for m in result.metrics if engine.overall.get(m.label) is not None]
