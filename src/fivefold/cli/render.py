"""How the CLI shows results: rich tables for people, plain dicts for ``--json``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.table import Table

from fivefold.read.metrics import CACHE_PLAN, LatencySummary, MetricsSnapshot
from fivefold.types import Explanation, MemoryRecord, ParsedQuery, Plan, RecallResult, StoreStats


def record_json(record: MemoryRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "content": record.content,
        "type": record.type.value,
        "predicate": record.predicate,
        "event_at": record.event_at.isoformat() if record.event_at else None,
        "created_at": record.created_at.isoformat(),
        "entities": list(record.entities),
        "importance": record.importance,
        "namespace": record.namespace,
        "user_id": record.user_id,
        "agent_id": record.agent_id,
        "session_id": record.session_id,
        "metadata": dict(record.metadata),
        "superseded_by": record.superseded_by,
        "valid_to": record.valid_to.isoformat() if record.valid_to else None,
    }


def superseded_note(record: MemoryRecord) -> str | None:
    """ "superseded by #n (date)" of a memory something replaced; None of a current one."""
    if record.superseded_by is None:
        return None
    since = f" ({record.valid_to.date().isoformat()})" if record.valid_to else ""
    return f"superseded by #{record.superseded_by}{since}"


def plan_json(plan: Plan) -> dict[str, Any]:
    return {
        "name": plan.name.value,
        "retrievers": [r.value for r in plan.retrievers],
        "weights": {r.value: w for r, w in plan.weights.items()},
        "rerank": plan.rerank,
        "mmr": plan.mmr,
        # null: fusion.k and graph.frontier_cap (the balanced plan); the optimizer sets its own.
        "fusion_k": plan.fusion_k,
        "graph_frontier": plan.graph_frontier,
        "reasons": list(plan.reasons),
    }


def query_json(query: ParsedQuery) -> dict[str, Any]:
    window = query.temporal_window
    return {
        "original": query.original,
        "terms": list(query.terms),
        "rewrites": list(query.rewrites),
        "entity_refs": [
            {"text": r.text, "name": r.name, "confidence": r.confidence, "how": r.resolution.value}
            for r in query.entity_refs
        ],
        "temporal_window": None
        if window is None
        else {
            "start": window.start.isoformat(),
            "end": window.end.isoformat(),
            "expression": window.expression,
        },
        "predicate_hints": list(query.predicate_hints),
        "type_hints": [t.value for t in query.type_hints],
        "negations": list(query.negations),
        "specificity": query.specificity,
    }


def result_json(result: RecallResult) -> dict[str, Any]:
    return {
        "hits": [
            {
                "score": h.score,
                "confidence": h.confidence,
                "sources": dict(h.sources),
                "memory": record_json(h.memory),
            }
            for h in result.hits
        ],
        "plan": plan_json(result.plan),
        "query": query_json(result.query),
        "timings_ms": dict(result.timings),
        "cached": result.cached,
        "dropped": result.dropped,
        "recall_id": result.recall_id,
    }


def explanation_json(explanation: Explanation) -> dict[str, Any]:
    return {
        "query": query_json(explanation.query),
        "features": dict(explanation.features),
        "plan": plan_json(explanation.plan),
        "retrievers": {
            run.name.value: {
                "elapsed_ms": run.elapsed_ms,
                "notes": list(run.notes),
                "items": [{"id": s.id, "confidence": s.confidence} for s in run.items],
            }
            for run in explanation.runs
        },
        "hits": [
            {**asdict(h), "terms": [{**asdict(t), "retriever": t.retriever.value} for t in h.terms]}
            for h in explanation.hits
        ],
        "timings_ms": dict(explanation.timings),
    }


def print_plan(console: Console, plan: Plan) -> None:
    names = ", ".join(f"{r.value} x{plan.weights.get(r, 1.0):g}" for r in plan.retrievers)
    console.print(f"[bold]plan[/bold] {plan.name.value}: {names}")
    for reason in plan.reasons:
        console.print(f"  [dim]{reason}[/dim]")


def print_hits(console: Console, result: RecallResult) -> None:
    print_plan(console, result.plan)
    table = Table(show_lines=False)
    for column in ("#", "score", "id", "type", "memory", "sources"):
        table.add_column(column)
    for rank, hit in enumerate(result.hits, start=1):
        sources = " ".join(f"{name}:{r}" for name, r in hit.sources.items())
        table.add_row(
            str(rank),
            f"{hit.score:.4f}",
            str(hit.memory.id),
            hit.memory.type.value,
            _noted(hit.memory.content, superseded_note(hit.memory)),
            sources,
        )
    console.print(table)
    total = result.timings.get("total", 0.0)
    hits = f"{len(result.hits)} hit{'s' * (len(result.hits) != 1)}"
    console.print(f"[dim]{hits} in {total:.1f} ms[/dim]")
    # Printed whole (no wrapping): it is what `fivefold feedback` takes.
    console.print(f"[dim]recall_id[/dim] {result.recall_id}", soft_wrap=True)


def _noted(content: str, note: str | None) -> str:
    # Not in square brackets: rich would read those as a style.
    return content if note is None else f"{content} · {note}"


def print_explanation(
    console: Console,
    explanation: Explanation,
    records: Mapping[int, MemoryRecord] | None = None,
) -> None:
    """``records``: the hits' memories by id, for what superseded them."""
    records = records or {}
    query = query_json(explanation.query)
    console.print(f"[bold]query[/bold] {query['original']!r}")
    for key in ("terms", "entity_refs", "temporal_window", "predicate_hints", "negations"):
        console.print(f"  {key}: {query[key]}")
    print_plan(console, explanation.plan)
    for run in explanation.runs:
        table = Table(title=f"{run.name.value} ({run.elapsed_ms:.1f} ms) {' '.join(run.notes)}")
        table.add_column("rank")
        table.add_column("id")
        table.add_column("confidence")
        for rank, item in enumerate(run.items[:10], start=1):
            table.add_row(str(rank), str(item.id), f"{item.confidence:.3f}")
        console.print(table)
    fusion = Table(title="fusion: w * sqrt(c) / (k + rank), then x (0.7 + 0.3 x importance)")
    for column in ("id", "memory", "terms", "fused", "importance", "final"):
        fusion.add_column(column)
    for hit in explanation.hits:
        terms = "\n".join(
            f"{t.retriever.value}: {t.weight:g}*sqrt({t.confidence:.2f})/(k+{t.rank})"
            f" = {t.contribution:.4f}"
            for t in hit.terms
        )
        fusion.add_row(
            str(hit.id),
            _noted(hit.content, superseded_note(records[hit.id]) if hit.id in records else None)
            + (" [demoted]" if hit.demoted else "")
            + (" [matched through its session context]" if hit.via_context else ""),
            terms,
            f"{hit.fused:.4f}",
            f"{hit.importance:.2f}",
            f"{hit.final:.4f}",
        )
    console.print(fusion)


def print_stats(console: Console, stats: StoreStats) -> None:
    table = Table(title=f"fivefold store {stats.location}")
    table.add_column("what")
    table.add_column("value")
    table.add_row("memories", str(stats.memories))
    table.add_row("entities", str(stats.entities))
    table.add_row("edges", str(stats.edges))
    table.add_row("embedding model", stats.embedding_model)
    table.add_row("size on disk", f"{stats.size_bytes / 1e6:.1f} MB")
    for part, size in stats.parts.items():
        table.add_row(f"  {part}", f"{size / 1e6:.1f} MB")
    for namespace, count in stats.namespaces.items():
        table.add_row(f"namespace {namespace}", str(count))
    for mtype, count in stats.types.items():
        table.add_row(f"type {mtype}", str(count))
    console.print(table)


# The pseudo-plan under which the reader records recalls served from the result cache.


def metrics_json(snapshot: MetricsSnapshot) -> dict[str, Any]:
    return {"scope": "this process", **asdict(snapshot)}


def print_metrics(console: Console, snapshot: MetricsSnapshot) -> None:
    """Plans selected with their latency, cache hit rate and rerank latency. They are kept in
    memory, so they cover this process only: one CLI command is one process."""
    if not snapshot.recalls:
        console.print(
            "[dim]recall metrics cover this process only, which has run no recall yet (each "
            "CLI command is its own process; `fivefold demo` prints them after its queries)[/dim]"
        )
        return
    table = Table(title=f"recall metrics of this process ({snapshot.recalls} recalls)")
    for column in ("plan", "recalls", "share", "p50 ms", "p99 ms", "mean ms"):
        table.add_column(column)
    for plan, count in sorted(snapshot.plans.items(), key=lambda item: (-item[1], item[0])):
        latency = snapshot.latency.get(plan)
        table.add_row(
            "served from cache" if plan == CACHE_PLAN else plan,
            str(count),
            f"{count / snapshot.recalls:.0%}",
            *(_latency_cells(latency) if latency else ("", "", "")),
        )
    console.print(table)
    lookups = snapshot.cache_hits + snapshot.cache_misses
    if lookups:
        console.print(
            f"cache hit rate {snapshot.cache_hit_rate:.0%} "
            f"({snapshot.cache_hits} of {lookups} lookups)"
        )
    else:
        console.print('cache: no lookups (the cache runs when optimizer.mode = "cached")')
    if snapshot.rerank is None:
        console.print("rerank: none ran")
    else:
        p50, p99, mean = _latency_cells(snapshot.rerank)
        console.print(
            f"rerank: {snapshot.rerank.count} runs, p50 {p50} ms, p99 {p99} ms, mean {mean} ms"
        )


def _latency_cells(latency: LatencySummary) -> tuple[str, str, str]:
    return f"{latency.p50_ms:.1f}", f"{latency.p99_ms:.1f}", f"{latency.mean_ms:.1f}"
