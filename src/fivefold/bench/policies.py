"""The before/after of each read policy on a quality benchmark's store: what each one buys.

The reference is the engine through the rule optimizer as configured. Every other policy changes
one thing: ``balanced`` turns the optimizer off (the optimizer's "before"), the others switch one
post-fusion policy off or on against the reference (negation demotion, MMR, rewrites, the
optimizer's RRF constant, its graph gate, a cross-encoder when one is given). Each question is
recalled by every policy in turn, interleaved, so a burst of load on a shared machine falls on
all of them alike, and over several rounds: a question's latency is its fastest round, which
keeps a stall of the machine (a pause of the embedding call under load) out of the figures,
whose p99 would otherwise be the machine's, not the policy's. The result cache is
measured on an immediate repeat of each question.

The heap built before the timed passes (modules, the store, the model) is frozen with
``gc.freeze()``, as a long-running server does after start-up. Otherwise CPython's full
collections, which scan every live object (numpy, dateparser and onnxruntime among them), take
milliseconds and land on about 1 % of recalls: exactly the p99, whatever the policy.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np

from fivefold.bench.datasets import Doc, Query
from fivefold.bench.scoring import Comparison, MetricSpec, compare, mean, per_question
from fivefold.config import Config, OptimizerConfig, RerankConfig
from fivefold.errors import FivefoldError, InvalidInput
from fivefold.memory import Memory
from fivefold.types import OptimizerMode

__all__ = [
    "CACHE",
    "LEARNED_POLICY",
    "REFERENCE",
    "Latency",
    "Policy",
    "PolicyResult",
    "PolicyRun",
    "default_policies",
    "learned_policy",
    "optimized_config",
    "run_policies",
    "score_policies",
]

REFERENCE = "optimized"
CACHE = "cache-hit"
LEARNED_POLICY = "learned"


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """One way to recall: a configuration, and whether each question is asked twice (the
    second answer recorded: what a result-cache hit returns, and how fast)."""

    name: str
    description: str
    config: Config
    repeat: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyRun:
    """Each question's ranking (memory ids), latency in ms, plan name and whether the result
    came from the cache, in question order."""

    policy: Policy
    rankings: tuple[tuple[int, ...], ...]
    latencies: tuple[float, ...]
    plans: tuple[str, ...]
    cached: tuple[bool, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Latency:
    n: int
    mean: float
    p50: float
    p99: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Latency:
        array = np.asarray(values, dtype=np.float64)
        return cls(
            n=len(values),
            mean=float(array.mean()),
            p50=float(np.percentile(array, 50)),
            p99=float(np.percentile(array, 99)),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyResult:
    """A policy scored: mean per metric, its test against the reference on the significance
    metric (None for the reference), how many questions' top 10 differ from the reference's,
    how many answers came from the cache, and latency overall and per plan."""

    name: str
    description: str
    overall: Mapping[str, float | None]
    comparison: Comparison | None
    changed: int
    cached: int
    latency: Latency
    per_plan: Mapping[str, Latency]


def optimized_config(config: Config) -> Config:
    """``config`` with the rule optimizer on (its mode kept if it is ``rule`` or ``cached``;
    learned fusion is a policy of its own)."""
    mode = config.optimizer.mode
    chosen = mode if mode in (OptimizerMode.RULE, OptimizerMode.CACHED) else OptimizerMode.RULE
    return replace(config, optimizer=replace(config.optimizer, mode=chosen))


def learned_policy(config: Config) -> Policy:
    """Learned fusion with the models the store holds (a benchmark installs each namespace's
    leave-one-out model first: bench/learning.py)."""
    return Policy(
        name=LEARNED_POLICY,
        description="learned fusion, each conversation ranked by a model trained on the others",
        config=replace(config, optimizer=replace(config.optimizer, mode=OptimizerMode.LEARNED)),
    )


def default_policies(config: Config, *, rerank_model: str | None = None) -> tuple[Policy, ...]:
    """The reference first, then one policy per change. A rerank row only with a model."""
    ref = optimized_config(config)
    opt = ref.optimizer

    def tuned(optimizer: OptimizerConfig) -> Config:
        return replace(ref, optimizer=optimizer)

    policies = [
        Policy(name=REFERENCE, description="the rule optimizer as configured", config=ref),
        Policy(
            name="balanced",
            description="optimizer off: every retriever with inputs, score-weighted RRF",
            config=tuned(replace(opt, mode=OptimizerMode.OFF)),
        ),
        Policy(
            name="no-negation",
            description="negation demotion off",
            # Squashed BM25 never exceeds 1.0, so nothing is demoted.
            config=replace(ref, retrieval=replace(ref.retrieval, negation_threshold=1.0)),
        ),
        Policy(
            name="mmr-off" if opt.mmr else "mmr-on",
            description=f"MMR in exploratory plans {'off' if opt.mmr else 'on'}",
            config=tuned(replace(opt, mmr=not opt.mmr)),
        ),
        Policy(
            name="rewrites-off" if opt.rewrites else "rewrites-on",
            description=f"query rewrites {'off' if opt.rewrites else 'on (offline feedback)'}",
            config=tuned(replace(opt, rewrites=not opt.rewrites)),
        ),
        Policy(
            name=f"fusion-k{ref.fusion.k}",
            description=f"the optimizer's plans fused with fusion.k = {ref.fusion.k}, not "
            f"{opt.fusion_k}",
            config=tuned(replace(opt, fusion_k=ref.fusion.k)),
        ),
        Policy(
            name="graph-ungated",
            description="graph leg from every resolved entity, however common",
            config=tuned(replace(opt, graph_min_specificity=0.0)),
        ),
        Policy(
            name=CACHE,
            description="result cache on; each question asked twice, the repeat recorded",
            config=tuned(replace(opt, mode=OptimizerMode.CACHED)),
            repeat=True,
        ),
    ]
    if rerank_model is not None:
        policies.append(
            Policy(
                name="rerank",
                description=f"cross-encoder rerank ({rerank_model}) in exploratory plans",
                config=replace(ref, rerank=replace(ref.rerank, model_path=rerank_model)),
            )
        )
    if ref.rerank.model_path is not None:
        policies.append(
            Policy(
                name="no-rerank",
                description="cross-encoder rerank off",
                config=replace(ref, rerank=RerankConfig(model_path=None)),
            )
        )
    return tuple(policies)


Progress = Callable[[int, int], None]


def run_policies(
    mem: Memory,
    queries: Sequence[Query],
    policies: Sequence[Policy],
    *,
    k_max: int,
    budget: str,
    rounds: int = 1,
    on: Progress | None = None,
) -> tuple[PolicyRun, ...]:
    """Recall every question with every policy, over ``mem``'s store and embedder, ``rounds``
    times; a question's latency is its fastest round (each round has fresh facades, so no
    round is served by an earlier round's result cache)."""
    if rounds < 1:
        raise InvalidInput(f"rounds must be at least 1, got {rounds}")
    # A caller that froze its own heap keeps it frozen: freeze and thaw only what this run did.
    owned = gc.get_freeze_count() == 0
    if owned:
        gc.collect()
        gc.freeze()
    try:
        return _run(mem, queries, policies, k_max=k_max, budget=budget, rounds=rounds, on=on)
    finally:
        if owned:
            gc.unfreeze()


def _run(
    mem: Memory,
    queries: Sequence[Query],
    policies: Sequence[Policy],
    *,
    k_max: int,
    budget: str,
    rounds: int,
    on: Progress | None,
) -> tuple[PolicyRun, ...]:
    facades = [[Memory(mem.store, mem.embedder, p.config) for p in policies] for _ in range(rounds)]
    rankings: list[list[tuple[int, ...]]] = [[] for _ in policies]
    latencies: list[list[float]] = [[] for _ in policies]
    plans: list[list[str]] = [[] for _ in policies]
    cached: list[list[bool]] = [[] for _ in policies]
    for done, query in enumerate(queries, start=1):
        fastest = [math.inf] * len(policies)
        for round_, row in enumerate(facades):
            for i, (policy, facade) in enumerate(zip(policies, row, strict=True)):
                for _ in range(2 if policy.repeat else 1):
                    start = time.perf_counter()
                    result = facade.recall(
                        query.text, k_max, namespace=query.namespace, now=query.now, budget=budget
                    )
                    elapsed = (time.perf_counter() - start) * 1000.0
                fastest[i] = min(fastest[i], elapsed)
                ranking = tuple(hit.memory.id for hit in result.hits)
                if round_ == 0:
                    rankings[i].append(ranking)
                    plans[i].append(result.plan.name.value)
                    cached[i].append(result.cached)
                elif ranking != rankings[i][-1]:
                    raise FivefoldError(
                        f"policy {policy.name!r} ranked question {query.id!r} differently in "
                        f"round {round_ + 1}: recall must be deterministic"
                    )
        for i, ms in enumerate(fastest):
            latencies[i].append(ms)
        if on is not None:
            on(done, len(queries))
    return tuple(
        PolicyRun(
            policy=policy,
            rankings=tuple(rankings[i]),
            latencies=tuple(latencies[i]),
            plans=tuple(plans[i]),
            cached=tuple(cached[i]),
        )
        for i, policy in enumerate(policies)
    )


def score_policies(
    runs: Sequence[PolicyRun],
    *,
    docs: Mapping[int, Doc],
    queries: Sequence[Query],
    session_of: Mapping[str, str],
    specs: Sequence[MetricSpec],
    label: str,
    resamples: int,
) -> tuple[PolicyResult, ...]:
    """Score each run and test it against the first (the reference) on ``label``."""
    scored = [
        per_question(
            [tuple(docs[i].id for i in ranking) for ranking in run.rankings],
            queries,
            session_of,
            specs,
        )
        for run in runs
    ]
    reference, top = scored[0], [r[:10] for r in runs[0].rankings]
    results = []
    for position, (run, scores) in enumerate(zip(runs, scored, strict=True)):
        by_plan: dict[str, list[float]] = {}
        for plan, ms in zip(run.plans, run.latencies, strict=True):
            by_plan.setdefault("cache" if run.policy.repeat else plan, []).append(ms)
        results.append(
            PolicyResult(
                name=run.policy.name,
                description=run.policy.description,
                overall=MappingProxyType({m: mean(v) for m, v in scores.items()}),
                comparison=None
                if position == 0
                else compare(scores[label], reference[label], label, resamples),
                changed=sum(r[:10] != t for r, t in zip(run.rankings, top, strict=True)),
                cached=sum(run.cached),
                latency=Latency.of(run.latencies),
                per_plan=MappingProxyType(
                    {plan: Latency.of(ms) for plan, ms in sorted(by_plan.items())}
                ),
            )
        )
    return tuple(results)
