"""The policy half of a quality report: the optimizer against each plain baseline, the
before/after table of every read policy, and latency per plan; with their JSON round trip."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from types import MappingProxyType
from typing import Any

from fivefold.bench.policies import CACHE, REFERENCE, Latency, PolicyResult
from fivefold.bench.scoring import Comparison
from fivefold.bench.table import mark, p_value, pct, signed, table

__all__ = [
    "baselines_table",
    "comparison_from_json",
    "comparison_to_json",
    "plan_latency_table",
    "policies_from_json",
    "policies_to_json",
    "policy_table",
]

# Policies whose latency per plan the report shows: the optimizer and its "before".
PLAN_LATENCY_POLICIES = (REFERENCE, "balanced")


# --- JSON -------------------------------------------------------------------------------------


def comparison_to_json(comparison: Comparison | None) -> dict[str, Any] | None:
    return None if comparison is None else asdict(comparison)


def comparison_from_json(data: Mapping[str, Any] | None) -> Comparison | None:
    return None if data is None else Comparison(**data)


def policies_to_json(policies: Sequence[PolicyResult]) -> list[dict[str, Any]]:
    return [
        {
            "name": p.name,
            "description": p.description,
            "overall": dict(p.overall),
            "comparison": comparison_to_json(p.comparison),
            "changed": p.changed,
            "cached": p.cached,
            "latency": asdict(p.latency),
            "per_plan": {plan: asdict(latency) for plan, latency in p.per_plan.items()},
        }
        for p in policies
    ]


def policies_from_json(data: Sequence[Mapping[str, Any]]) -> tuple[PolicyResult, ...]:
    return tuple(
        PolicyResult(
            name=p["name"],
            description=p["description"],
            overall=MappingProxyType(dict(p["overall"])),
            comparison=comparison_from_json(p["comparison"]),
            changed=int(p["changed"]),
            cached=int(p["cached"]),
            latency=Latency(**p["latency"]),
            per_plan=MappingProxyType(
                {plan: Latency(**latency) for plan, latency in p["per_plan"].items()}
            ),
        )
        for p in data
    )


# --- markdown ---------------------------------------------------------------------------------


def baselines_table(
    optimized: Mapping[str, Comparison], recall: Mapping[str, float | None], label: str
) -> str:
    """The optimizer minus each plain baseline on ``label``; ``recall`` holds each system's
    mean, the optimizer's under ``"fivefold-optimized"``."""
    if not optimized:
        return ""
    rows = [
        [
            f"`{name}`",
            pct(recall.get(name)),
            pct(recall.get("fivefold-optimized")),
            f"{signed(c.mean_diff)}{mark(c)} [{signed(c.ci_low)}, {signed(c.ci_high)}]",
            p_value(c.p_value),
        ]
        for name, c in optimized.items()
    ]
    return table(["baseline", label, f"optimized {label}", "Δ [95% CI]", "p"], rows)


def policy_table(policies: Sequence[PolicyResult], label: str) -> str:
    """Every policy: quality, its difference from the reference, the questions whose top 10
    changed, and recall latency (ms)."""
    if not policies:
        return ""
    header = [
        "policy",
        label,
        f"Δ{label} [95% CI]",
        "p",
        "top-10 changed",
        "mean ms",
        "p50 ms",
        "p99 ms",
        "what changes",
    ]
    rows = []
    for p in policies:
        c = p.comparison
        delta = (
            ""
            if c is None
            else f"{signed(c.mean_diff)}{mark(c)} [{signed(c.ci_low)}, {signed(c.ci_high)}]"
        )
        what = p.description + (f" ({p.cached:,} served from the cache)" if p.cached else "")
        rows.append(
            [
                f"`{p.name}`",
                pct(p.overall.get(label)),
                delta,
                "" if c is None else p_value(c.p_value),
                f"{p.changed:,}",
                f"{p.latency.mean:.1f}",
                f"{p.latency.p50:.2f}" if p.name == CACHE else f"{p.latency.p50:.1f}",
                f"{p.latency.p99:.1f}",
                what,
            ]
        )
    return table(header, rows)


def plan_latency_table(policies: Sequence[PolicyResult]) -> str:
    """Recall latency per plan for the optimizer and the balanced plan."""
    rows = [
        [
            f"`{p.name}`",
            plan,
            f"{latency.n:,}",
            f"{latency.mean:.1f}",
            f"{latency.p50:.1f}",
            f"{latency.p99:.1f}",
        ]
        for p in policies
        if p.name in PLAN_LATENCY_POLICIES
        for plan, latency in p.per_plan.items()
    ]
    if not rows:
        return ""
    return table(["policy", "plan", "questions", "mean ms", "p50 ms", "p99 ms"], rows)
