from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime

import pytest

import fivefold
from fivefold.bench.datasets import Doc, Query
from fivefold.bench.policies import (
    CACHE,
    REFERENCE,
    Latency,
    Policy,
    default_policies,
    optimized_config,
    run_policies,
    score_policies,
)
from fivefold.bench.policy_report import (
    baselines_table,
    plan_latency_table,
    policies_from_json,
    policies_to_json,
    policy_table,
)
from fivefold.bench.runner import ingest
from fivefold.bench.scoring import Comparison, metric_specs
from fivefold.config import Config, OptimizerConfig
from fivefold.errors import FivefoldError, InvalidInput
from fivefold.types import OptimizerMode

WHEN = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
CONTENTS = (
    "Ann adopted a beagle puppy from the shelter.",
    "Ann's beagle is not a rescue from Spain.",
    "Bob went hiking in the Alps with his sister.",
    "Bob cooked a curry for the team dinner.",
    "Ann started pottery classes on Tuesdays.",
    "Bob bought a new road bike in June.",
)


def _docs() -> tuple[Doc, ...]:
    return tuple(
        Doc(id=f"d{i}", content=text, namespace="ns", event_at=WHEN, session="s1", speaker=None)
        for i, text in enumerate(CONTENTS)
    )


def _query(query_id: str, text: str, relevant: str) -> Query:
    return Query(
        id=query_id,
        text=text,
        namespace="ns",
        category="1",
        relevant=frozenset({relevant}),
        now=WHEN,
        relevant_sessions=frozenset({"s1"}),
    )


QUERIES = (
    _query("q0", "what dog did Ann adopt?", "d0"),
    _query("q1", "Bob hiking trip", "d2"),
    # A negation: the memory that says "Spain" is demoted by the reference, not without it.
    _query("q2", "Ann's beagle, not Spain", "d0"),
)


@pytest.fixture(scope="module")
def store() -> Iterator[tuple[fivefold.Memory, dict[int, Doc]]]:
    from fivefold.bench.datasets import Dataset

    dataset = Dataset(name="tiny", docs=_docs(), queries=QUERIES, notes=())
    with fivefold.Memory.open(":memory:", embedder=fivefold.HashingEmbedder()) as mem:
        yield mem, ingest(mem, dataset)


def test_the_reference_is_the_optimizer_and_each_policy_changes_one_thing() -> None:
    config = Config()
    policies = default_policies(config)
    by_name = {p.name: p for p in policies}
    assert policies[0].name == REFERENCE
    ref = policies[0].config
    assert ref.optimizer.mode is OptimizerMode.RULE
    assert by_name["balanced"].config == replace(
        ref, optimizer=replace(ref.optimizer, mode=OptimizerMode.OFF)
    )
    assert by_name["no-negation"].config.retrieval.negation_threshold == 1.0
    assert by_name["mmr-on"].config.optimizer == replace(ref.optimizer, mmr=True)
    assert by_name["rewrites-on"].config.optimizer == replace(ref.optimizer, rewrites=True)
    assert by_name["fusion-k60"].config.optimizer == replace(ref.optimizer, fusion_k=60)
    assert by_name["graph-ungated"].config.optimizer.graph_min_specificity == 0.0
    assert by_name[CACHE].repeat
    assert by_name[CACHE].config.optimizer.mode is OptimizerMode.CACHED
    assert "rerank" not in by_name
    with_model = {p.name for p in default_policies(config, rerank_model="/models/ce")}
    assert "rerank" in with_model


def test_a_configured_mode_is_kept_and_toggles_follow_the_config() -> None:
    config = Config(optimizer=OptimizerConfig(mode=OptimizerMode.CACHED, mmr=True, rewrites=True))
    assert optimized_config(config).optimizer.mode is OptimizerMode.CACHED
    names = {p.name for p in default_policies(config)}
    assert {"mmr-off", "rewrites-off"} <= names


@pytest.mark.slow
def test_policies_recall_every_question_and_score_against_the_reference(
    store: tuple[fivefold.Memory, dict[int, Doc]],
) -> None:
    mem, doc_of = store
    policies = default_policies(mem.config)
    runs = run_policies(mem, QUERIES, policies, k_max=10, budget="mid")
    assert [r.policy.name for r in runs] == [p.name for p in policies]
    for run in runs:
        assert len(run.rankings) == len(run.latencies) == len(run.plans) == len(QUERIES)
        assert all(ms > 0.0 for ms in run.latencies)
    by_name = {r.policy.name: r for r in runs}
    # The cache serves each repeat, with the reference's ranking.
    assert by_name[CACHE].cached == (True, True, True)
    assert by_name[CACHE].rankings == by_name[REFERENCE].rankings
    assert set(by_name["balanced"].plans) == {"balanced"}
    # Demotion moved the "Spain" memory down in the reference only.
    spain = next(i for i, d in doc_of.items() if d.id == "d1")
    assert by_name[REFERENCE].rankings[2][-1] == spain
    assert (
        by_name["no-negation"].rankings[2].index(spain)
        < len(by_name["no-negation"].rankings[2]) - 1
    )

    results = score_policies(
        runs,
        docs=doc_of,
        queries=QUERIES,
        session_of={d.id: "s1" for d in _docs()},
        specs=metric_specs(10),
        label="R@10",
        resamples=100,
    )
    scored = {r.name: r for r in results}
    assert scored[REFERENCE].comparison is None
    assert scored[REFERENCE].changed == 0
    assert scored["no-negation"].changed >= 1
    assert scored[CACHE].changed == 0
    assert scored[CACHE].cached == 3
    assert set(scored[CACHE].per_plan) == {"cache"}
    assert sum(lat.n for lat in scored[REFERENCE].per_plan.values()) == 3
    for result in results[1:]:
        assert result.comparison is not None
        assert result.comparison.n == 3
    assert policies_from_json(policies_to_json(results)) == results

    text = policy_table(results, "R@10")
    assert f"`{REFERENCE}`" in text
    assert "(3 served from the cache)" in text
    latency = plan_latency_table(results)
    assert f"`{REFERENCE}`" in latency
    assert "`balanced`" in latency
    assert CACHE not in latency


def test_the_timed_passes_leave_the_collector_as_they_found_it(
    store: tuple[fivefold.Memory, dict[int, Doc]], monkeypatch: pytest.MonkeyPatch
) -> None:
    mem, _ = store
    before = gc.get_freeze_count()
    run_policies(mem, QUERIES[:1], default_policies(mem.config)[:1], k_max=3, budget="low")
    assert gc.get_freeze_count() == before
    # A caller's own freeze survives the run: it neither thaws nor refreezes it. (Counting the
    # frozen objects cannot tell: a frozen object freed by its refcount leaves the count.)
    gc.freeze()
    calls: list[str] = []
    monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    try:
        run_policies(mem, QUERIES[:1], default_policies(mem.config)[:1], k_max=3, budget="low")
        assert calls == []
        assert gc.get_freeze_count() > 0
    finally:
        monkeypatch.undo()
        gc.unfreeze()


def test_latency_summary() -> None:
    latency = Latency.of([float(v) for v in range(1, 101)])
    assert latency.n == 100
    assert latency.mean == pytest.approx(50.5)
    assert latency.p50 == pytest.approx(50.5)
    assert latency.p99 == pytest.approx(99.01)


def test_baselines_table_shows_the_optimizer_minus_each_baseline() -> None:
    test = Comparison(
        metric="R@10", mean_diff=0.044, ci_low=0.02, ci_high=0.07, p_value=0.0001, n=9
    )
    text = baselines_table({"bm25": test}, {"bm25": 0.581, "fivefold-optimized": 0.625}, "R@10")
    row = next(line for line in text.splitlines() if "`bm25`" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells == ["`bm25`", "58.1", "62.5", "+4.4* [+2.0, +7.0]", "<0.001"]
    assert baselines_table({}, {}, "R@10") == ""


def test_a_repeat_policy_without_a_cache_records_the_second_answer(
    store: tuple[fivefold.Memory, dict[int, Doc]],
) -> None:
    mem, _ = store
    policy = Policy(name="twice", description="", config=optimized_config(mem.config), repeat=True)
    (run,) = run_policies(mem, QUERIES[:1], [policy], k_max=3, budget="low")
    assert run.cached == (False,)


def test_rounds_time_each_question_with_fresh_facades(
    store: tuple[fivefold.Memory, dict[int, Doc]], monkeypatch: pytest.MonkeyPatch
) -> None:
    mem, _ = store
    cached_config = replace(
        optimized_config(mem.config),
        optimizer=replace(mem.config.optimizer, mode=OptimizerMode.CACHED),
    )
    policy = Policy(name="cached-once", description="", config=cached_config)
    served: list[bool] = []
    recall = fivefold.Memory.recall

    def spy(self: fivefold.Memory, *args: object, **kwargs: object) -> fivefold.RecallResult:
        result = recall(self, *args, **kwargs)  # type: ignore[arg-type]
        served.append(result.cached)
        return result

    monkeypatch.setattr(fivefold.Memory, "recall", spy)
    (run,) = run_policies(mem, QUERIES, [policy], k_max=5, budget="mid", rounds=3)
    assert len(served) == 3 * len(QUERIES)
    assert not any(served)  # a later round is never answered by an earlier round's cache
    assert len(run.latencies) == len(QUERIES)


def test_a_ranking_that_changes_between_rounds_is_an_error(
    store: tuple[fivefold.Memory, dict[int, Doc]], monkeypatch: pytest.MonkeyPatch
) -> None:
    mem, _ = store
    recall = fivefold.Memory.recall
    calls = iter(range(100))

    def flaky(self: fivefold.Memory, *args: object, **kwargs: object) -> fivefold.RecallResult:
        result = recall(self, *args, **kwargs)  # type: ignore[arg-type]
        return replace(result, hits=result.hits[::-1]) if next(calls) == 1 else result

    monkeypatch.setattr(fivefold.Memory, "recall", flaky)
    policy = default_policies(mem.config)[0]
    with pytest.raises(FivefoldError, match="must be deterministic"):
        run_policies(mem, QUERIES[:1], [policy], k_max=5, budget="mid", rounds=2)
    with pytest.raises(InvalidInput, match="rounds"):
        run_policies(mem, QUERIES[:1], [policy], k_max=5, budget="mid", rounds=0)
