"""Run a retrieval-quality benchmark: ingest a dataset once, ask every question once, score every
system of ``systems`` on the same traces, and test each against the engine.

The store is a throwaway ``":memory:"`` one, filled through the public ``Memory.remember_many``
as a user would; the questions go through ``Memory.explain`` (one call each), whose per-retriever
runs feed the derived systems. Results are frozen dataclasses that ``report`` renders and that
round-trip through JSON.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from fivefold.bench.datasets import Dataset, Doc, Query
from fivefold.bench.learning import cross_validate, namespaces_to_learn
from fivefold.bench.policies import (
    LEARNED_POLICY,
    PolicyResult,
    default_policies,
    learned_policy,
    run_policies,
    score_policies,
)
from fivefold.bench.scoring import (
    Comparison,
    MetricSpec,
    by_category,
    compare,
    mean,
    metric_specs,
    per_question,
    significance_label,
)
from fivefold.bench.systems import (
    ENGINE,
    OPTIMIZED,
    FusionSettings,
    Group,
    System,
    Trace,
    default_systems,
    engine_fusion,
    learned_system,
)
from fivefold.config import Config, ContextConfig
from fivefold.embed.base import Embedder
from fivefold.errors import FivefoldError, InvalidInput
from fivefold.memory import Memory
from fivefold.read.favour import dated_within, spoken_by_named
from fivefold.types import Explanation, OptimizerMode, RetrieverName, RetrieverRun

__all__ = [
    "INGEST_BATCH",
    "LOCOMO_CATEGORIES",
    "BenchResult",
    "Comparison",
    "MetricSpec",
    "Setup",
    "SystemResult",
    "ingest",
    "item_of",
    "limit_dataset",
    "metric_specs",
    "run_benchmark",
    "significance_label",
    "trace_queries",
]

# LoCoMo's category numbers; category 5 (adversarial, no meaningful evidence) is left out.
LOCOMO_CATEGORIES: Mapping[str, str] = MappingProxyType(
    {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}
)
INGEST_BATCH = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemResult:
    """Means per metric label, overall and per category (None where no question defines the
    metric), and the per-question scores in ``BenchResult.question_ids`` order."""

    name: str
    group: str
    description: str
    overall: Mapping[str, float | None]
    by_category: Mapping[str, Mapping[str, float | None]]
    per_question: Mapping[str, tuple[float | None, ...]]
    comparison: Comparison | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Setup:
    """How the run was made, for the report."""

    dataset: str
    embedder: str
    docs: int
    questions: int
    k_max: int
    budget: str
    resamples: int
    fusion: FusionSettings
    # Recalls per question and policy in the policy passes (the fastest is the latency).
    rounds: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchResult:
    """Everything a report needs. ``coverage`` is the share of questions on which each retriever
    ran; ``reproduced`` counts the questions whose engine ranking the derived fusion matches
    exactly (the rest differ by negation demotion or by a pipeline step the derived systems do
    not model); ``timings`` are seconds, except the ``query_*_ms`` latencies."""

    setup: Setup
    notes: tuple[str, ...]
    categories: Mapping[str, str]
    metrics: tuple[MetricSpec, ...]
    question_ids: tuple[str, ...]
    question_categories: tuple[str, ...]
    systems: tuple[SystemResult, ...]
    coverage: Mapping[str, float]
    reproduced: int
    timings: Mapping[str, float]
    # How many questions the optimizer sent to each plan.
    plans: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    # The before/after of each read policy, the reference (the optimizer) first.
    policies: tuple[PolicyResult, ...] = ()
    # The optimizer against each plain baseline, by baseline name.
    optimized_vs: Mapping[str, Comparison] = field(default_factory=lambda: MappingProxyType({}))
    # Learned fusion fit on every namespace's feedback (JSON), when it was cross-validated.
    learned_model: str | None = None

    def system(self, name: str) -> SystemResult:
        found = next((s for s in self.systems if s.name == name), None)
        if found is None:
            raise InvalidInput(f"no system named {name!r} in this result")
        return found


Progress = Callable[[int, int], None]


def run_benchmark(
    dataset: Dataset,
    *,
    embedder: Embedder | None = None,
    config: Config | None = None,
    categories: Mapping[str, str] | None = None,
    k_max: int = 50,
    budget: str = "mid",
    resamples: int = 10_000,
    systems: Sequence[System] | None = None,
    progress: Progress | None = None,
    all_policies: bool = True,
    rerank_model: str | None = None,
    rounds: int = 3,
    db: str | None = None,
) -> BenchResult:
    """Ingest ``dataset``, trace each question once and score every system. ``categories``
    (label by category) selects the questions scored; None scores them all. The optimizer's
    recall runs as the reference policy; ``all_policies`` adds the other policies of
    ``fivefold.bench.policies`` (a rerank row with ``rerank_model``), each timed as the fastest
    of ``rounds`` recalls per question. ``db`` names an empty store for the engine's memories
    (another backend); by default it is a throwaway in-memory SQLite store."""
    queries, chosen = _checked(dataset, categories, systems, k_max)
    learning = systems is None and len(namespaces_to_learn(queries)) >= 2
    marks = [time.perf_counter()]
    given = config or Config()
    # The traced engine is the balanced plan (the optimizer off), whatever the default: the
    # derived systems re-fuse its runs, which only means "fivefold minus one thing" there.
    balanced = replace(given, optimizer=replace(given.optimizer, mode=OptimizerMode.OFF))
    with Memory.open(db or ":memory:", embedder=embedder, config=balanced) as mem:
        if mem.stats().memories:
            raise InvalidInput(f"{mem.store.location} is not empty: give the benchmark a new store")
        doc_of = ingest(mem, dataset)
        marks.append(time.perf_counter())
        traces, latencies = trace_queries(mem, queries, k_max=k_max, budget=budget, on=progress)
        plain = _plain_runs(mem, dataset, queries, doc_of, k_max=k_max, budget=budget)
        traces = [replace(t, plain=p) for t, p in zip(traces, plain, strict=True)]
        policies = default_policies(given, rerank_model=rerank_model)
        chosen_policies = policies if all_policies else policies[:1]
        learned_model = None
        if learning:
            memory_of = {doc.id: memory_id for memory_id, doc in doc_of.items()}
            learned_model = cross_validate(mem, queries, memory_of, k_max=k_max, budget=budget)
            chosen_policies = (chosen_policies[0], learned_policy(given), *chosen_policies[1:])
            chosen = (*chosen, learned_system())
        runs = run_policies(
            mem,
            queries,
            chosen_policies,
            k_max=k_max,
            budget=budget,
            rounds=rounds,
            on=progress,
        )
        embedder_name = mem.store.admin.stats().embedding_model
        settings = FusionSettings.from_config(mem.config.fusion)
    marks.append(time.perf_counter())
    reference = runs[0]
    traces = [
        replace(trace, optimized=ranking, optimized_plan=plan)
        for trace, ranking, plan in zip(traces, reference.rankings, reference.plans, strict=True)
    ]
    learned = next((r for r in runs if r.policy.name == LEARNED_POLICY), None)
    if learned is not None:
        traces = [
            replace(trace, learned=ranking)
            for trace, ranking in zip(traces, learned.rankings, strict=True)
        ]
    specs = metric_specs(k_max)
    label = significance_label(k_max)
    rankings = _rank_all(chosen, traces, settings, docs=doc_of, queries=queries, k_max=k_max)
    results = _score_all(chosen, rankings, queries, dataset.session_of(), specs, resamples)
    scored_policies = score_policies(
        runs,
        docs=doc_of,
        queries=queries,
        session_of=dataset.session_of(),
        specs=specs,
        label=label,
        resamples=resamples,
    )
    marks.append(time.perf_counter())
    labels = dict(categories or {c: c for c in sorted({q.category for q in queries})})
    return BenchResult(
        setup=Setup(
            dataset=dataset.name,
            embedder=embedder_name,
            docs=len(dataset.docs),
            questions=len(queries),
            k_max=k_max,
            budget=budget,
            resamples=resamples,
            fusion=settings,
            rounds=rounds,
        ),
        notes=dataset.notes,
        categories=MappingProxyType(labels),
        metrics=specs,
        question_ids=tuple(q.id for q in queries),
        question_categories=tuple(q.category for q in queries),
        systems=results,
        coverage=_coverage(traces),
        reproduced=sum(engine_fusion(t, settings)[:k_max] == t.engine for t in traces),
        timings=_timings(marks, latencies, reference.latencies),
        plans=_plan_mix(traces),
        policies=scored_policies,
        optimized_vs=_optimized_vs_baselines(results, label, resamples),
        learned_model=None if learned_model is None else learned_model.to_json(),
    )


def _plain_runs(
    mem: Memory,
    dataset: Dataset,
    queries: Sequence[Query],
    doc_of: Mapping[int, Doc],
    *,
    k_max: int,
    budget: str,
) -> list[tuple[RetrieverRun, ...]]:
    """Every question's runs on a second store, with the same embedder, that indexes every
    memory alone (session context off): what the plain baselines rank."""
    config = replace(mem.config, context=ContextConfig(window=0))
    with Memory.open(":memory:", embedder=mem.embedder, config=config) as plain:
        if ingest(plain, dataset) != doc_of:
            raise InvalidInput("the plain store numbered the memories differently")
        traces, _ = trace_queries(plain, queries, k_max=k_max, budget=budget)
    return [trace.runs for trace in traces]


def _optimized_vs_baselines(
    results: Sequence[SystemResult], label: str, resamples: int
) -> Mapping[str, Comparison]:
    """The optimizer against each plain baseline: the test that says whether it earns its keep."""
    optimized = next((s for s in results if s.name == OPTIMIZED), None)
    if optimized is None:
        return MappingProxyType({})
    out: dict[str, Comparison] = {}
    for system in results:
        if system.group != Group.BASELINE.value:
            continue
        test = compare(optimized.per_question[label], system.per_question[label], label, resamples)
        if test is not None:
            out[system.name] = test
    return MappingProxyType(out)


def _plan_mix(traces: Sequence[Trace]) -> Mapping[str, int]:
    counts: dict[str, int] = {}
    for trace in traces:
        if trace.optimized_plan is not None:
            counts[trace.optimized_plan] = counts.get(trace.optimized_plan, 0) + 1
    return MappingProxyType(dict(sorted(counts.items())))


def _checked(
    dataset: Dataset,
    categories: Mapping[str, str] | None,
    systems: Sequence[System] | None,
    k_max: int,
) -> tuple[tuple[Query, ...], tuple[System, ...]]:
    """The questions to score and the systems to score them with, or a clear error."""
    if k_max < 1:
        raise InvalidInput(f"k_max must be at least 1, got {k_max}")
    chosen = tuple(systems or default_systems())
    if not any(s.name == ENGINE for s in chosen):
        raise InvalidInput(f"the systems must include {ENGINE!r}: it is what the tests compare to")
    queries = tuple(q for q in dataset.queries if categories is None or q.category in categories)
    if not queries:
        raise InvalidInput(f"dataset {dataset.name!r} has no question in the scored categories")
    return queries, chosen


def _timings(
    marks: Sequence[float], latencies: Sequence[float], optimized: Sequence[float]
) -> Mapping[str, float]:
    """Seconds per phase from the four time marks (start, ingested, traced, scored), the
    latency of one ``explain`` of the balanced plan, and of one optimized ``recall``, in ms."""
    start, ingested, traced, scored = marks
    return MappingProxyType(
        {
            "ingest_s": ingested - start,
            "queries_s": traced - ingested,
            "scoring_s": scored - traced,
            "total_s": scored - start,
            "query_p50_ms": float(np.percentile(latencies, 50)),
            "query_p99_ms": float(np.percentile(latencies, 99)),
            "query_mean_ms": float(np.mean(latencies)),
            "optimized_p50_ms": float(np.percentile(optimized, 50)),
            "optimized_p99_ms": float(np.percentile(optimized, 99)),
            "optimized_mean_ms": float(np.mean(optimized)),
        }
    )


def ingest(mem: Memory, dataset: Dataset, *, batch_size: int = INGEST_BATCH) -> dict[int, Doc]:
    """Remember every doc, in batches, as a user would: content, dates, namespace and session;
    the type and entities are left to the engine. Returns memory id -> doc."""
    doc_of: dict[int, Doc] = {}
    docs = dataset.docs
    for start in range(0, len(docs), batch_size):
        batch = docs[start : start + batch_size]
        records = mem.remember_many([item_of(doc) for doc in batch])
        doc_of.update((record.id, doc) for record, doc in zip(records, batch, strict=True))
    return doc_of


def item_of(doc: Doc) -> dict[str, Any]:
    """The ``remember_many`` item of a doc: content, dates, namespace and session."""
    item: dict[str, Any] = {"content": doc.content, "namespace": doc.namespace}
    if doc.event_at is not None:
        # A turn was written when it was said: the sources give no other creation time.
        item.update(event_at=doc.event_at, created_at=doc.event_at)
    if doc.session is not None:
        item["session_id"] = doc.session
    return item


def trace_queries(
    mem: Memory,
    queries: Sequence[Query],
    *,
    k_max: int,
    budget: str,
    on: Progress | None = None,
) -> tuple[list[Trace], list[float]]:
    """One ``explain`` per question: its trace and latency in ms."""
    traces: list[Trace] = []
    latencies: list[float] = []
    for done, query in enumerate(queries, start=1):
        args = {"namespace": query.namespace, "now": query.now, "budget": budget}
        start = time.perf_counter()
        explanation = mem.explain(query.text, k=k_max, **args)
        latencies.append((time.perf_counter() - start) * 1000.0)
        traces.append(_trace(mem, query.namespace, explanation))
        if on is not None:
            on(done, len(queries))
    return traces, latencies


def _trace(mem: Memory, namespace: str, explanation: Explanation) -> Trace:
    ids = {item.id for run in explanation.runs for item in run.items}
    attributes = mem.store.reads.attributes(namespace, sorted(ids))
    return Trace(
        runs=explanation.runs,
        weights=explanation.plan.weights,
        importance=MappingProxyType({i: a.importance for i, a in attributes.items()}),
        engine=tuple(hit.id for hit in explanation.hits),
        spoken=frozenset(spoken_by_named(explanation.query, attributes)),
        within=frozenset(dated_within(explanation.query, attributes)),
    )


def _rank_all(
    systems: Sequence[System],
    traces: Sequence[Trace],
    settings: FusionSettings,
    *,
    docs: Mapping[int, Doc],
    queries: Sequence[Query],
    k_max: int,
) -> dict[str, list[tuple[str, ...]]]:
    """System name -> each question's top ``k_max`` doc ids."""
    rankings: dict[str, list[tuple[str, ...]]] = {s.name: [] for s in systems}
    for trace, query in zip(traces, queries, strict=True):
        for system in systems:
            ids = system.rank(trace, settings)[:k_max]
            rankings[system.name].append(_doc_ids(ids, docs, query, system.name))
    return rankings


def _doc_ids(
    ids: Sequence[int], docs: Mapping[int, Doc], query: Query, system: str
) -> tuple[str, ...]:
    """Dataset doc ids of ``ids``. A memory the benchmark did not store, or one from another
    namespace, is a bug worth stopping for: averaged in, it would look like an ordinary miss."""
    out = []
    for memory_id in ids:
        doc = docs.get(memory_id)
        if doc is None or doc.namespace != query.namespace:
            where = "never stored" if doc is None else f"stored in namespace {doc.namespace!r}"
            raise FivefoldError(
                f"system {system!r} returned memory {memory_id} for question {query.id!r} "
                f"(namespace {query.namespace!r}), {where}"
            )
        out.append(doc.id)
    return tuple(out)


# --- scoring ----------------------------------------------------------------------------------


def _score_all(
    systems: Sequence[System],
    rankings: Mapping[str, Sequence[tuple[str, ...]]],
    queries: Sequence[Query],
    session_of: Mapping[str, str],
    specs: Sequence[MetricSpec],
    resamples: int,
) -> tuple[SystemResult, ...]:
    scores = {s.name: per_question(rankings[s.name], queries, session_of, specs) for s in systems}
    label = significance_label(max(spec.k for spec in specs))
    categories = [q.category for q in queries]
    return tuple(
        SystemResult(
            name=s.name,
            group=s.group.value,
            description=s.description,
            overall=MappingProxyType({m: mean(v) for m, v in scores[s.name].items()}),
            by_category=by_category(scores[s.name], categories),
            per_question=MappingProxyType(scores[s.name]),
            comparison=None
            if s.name == ENGINE
            else compare(scores[s.name][label], scores[ENGINE][label], label, resamples),
        )
        for s in systems
    )


def _coverage(traces: Sequence[Trace]) -> Mapping[str, float]:
    counts = {name.value: 0 for name in RetrieverName}
    for trace in traces:
        for run in trace.runs:
            counts[run.name.value] += 1
    return MappingProxyType({name: n / len(traces) for name, n in counts.items()})


# --- smaller runs -----------------------------------------------------------------------------


def limit_dataset(dataset: Dataset, limit: int) -> Dataset:
    """The first ``limit`` namespaces (LoCoMo conversations, LongMemEval questions) with their
    docs and questions; for a single-namespace dataset (BEIR), its first ``limit`` questions
    over the whole corpus."""
    if limit < 1:
        raise InvalidInput(f"limit must be at least 1, got {limit}")
    namespaces = list(dict.fromkeys(q.namespace for q in dataset.queries))
    if len(namespaces) == 1:
        return replace(dataset, queries=dataset.queries[:limit])
    kept = set(namespaces[:limit])
    return replace(
        dataset,
        docs=tuple(d for d in dataset.docs if d.namespace in kept),
        queries=tuple(q for q in dataset.queries if q.namespace in kept),
    )
