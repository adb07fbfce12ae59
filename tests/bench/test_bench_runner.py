from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

import fivefold
from fivefold.bench.datasets import Dataset, Doc, Query, load_beir, load_locomo, load_longmemeval
from fivefold.bench.runner import (
    LOCOMO_CATEGORIES,
    BenchResult,
    Comparison,
    ingest,
    limit_dataset,
    metric_specs,
    run_benchmark,
)
from fivefold.bench.systems import ENGINE, Group, System, default_systems
from fivefold.errors import FivefoldError, InvalidInput

DATA = Path(__file__).parent / "data"
WHEN = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def locomo_result() -> BenchResult:
    return run_benchmark(
        load_locomo(DATA / "locomo_tiny.json"),
        embedder=fivefold.HashingEmbedder(),
        categories=LOCOMO_CATEGORIES,
        resamples=200,
    )


def _doc(doc_id: str, content: str, namespace: str = "ns") -> Doc:
    return Doc(
        id=doc_id,
        content=content,
        namespace=namespace,
        event_at=WHEN,
        session=f"{namespace}/s1",
        speaker=None,
    )


def _query(query_id: str, text: str, relevant: set[str], namespace: str = "ns") -> Query:
    return Query(
        id=query_id,
        text=text,
        namespace=namespace,
        category="1",
        relevant=frozenset(relevant),
        now=WHEN,
        relevant_sessions=frozenset({f"{namespace}/s1"}),
    )


def test_locomo_end_to_end_scores_categories_1_to_4_only(locomo_result: BenchResult) -> None:
    result = locomo_result
    # conv-a/q4 is category 5 (adversarial): left out
    assert result.question_ids == ("conv-a/q0", "conv-a/q1", "conv-a/q2", "conv-b/q0")
    assert result.question_categories == ("4", "1", "2", "2")
    assert result.setup.questions == 4
    assert result.setup.docs == 8
    assert result.setup.embedder == "hashing-bow-64"
    # Two conversations: learned fusion is cross-validated, each ranked by the other's model.
    assert [s.name for s in result.systems] == [
        *(s.name for s in default_systems()),
        "fivefold-learned",
    ]
    assert result.learned_model is not None
    assert dict(result.categories) == dict(LOCOMO_CATEGORIES)
    labels = [m.label for m in result.metrics]
    assert labels == ["R@1", "R@5", "R@10", "R@25", "R@50", "any@10", "nDCG@10", "MRR", "sR@10"]
    for system in result.systems:
        assert set(system.per_question) == set(labels)
        assert all(len(v) == 4 for v in system.per_question.values())
        assert set(system.by_category) == {"1", "2", "4"}
        for value in system.overall.values():
            assert value is not None
            assert 0.0 <= value <= 1.0


def test_locomo_runs_every_policy_and_tests_the_optimizer_on_each_baseline(
    locomo_result: BenchResult,
) -> None:
    result = locomo_result
    names = [p.name for p in result.policies]
    assert names[0] == "optimized"
    assert {"balanced", "no-negation", "mmr-on", "fusion-k60", "cache-hit"} <= set(names)
    baselines = {s.name for s in result.systems if s.group == Group.BASELINE.value}
    assert set(result.optimized_vs) == baselines
    optimized = result.system("fivefold-optimized").overall["R@10"]
    assert result.policies[0].overall["R@10"] == optimized
    balanced = next(p for p in result.policies if p.name == "balanced")
    # The balanced policy is the engine's own recall.
    assert balanced.overall["R@10"] == result.system(ENGINE).overall["R@10"]
    assert result.timings["optimized_mean_ms"] == pytest.approx(result.policies[0].latency.mean)


def test_locomo_every_system_is_compared_with_the_engine(locomo_result: BenchResult) -> None:
    engine = locomo_result.system(ENGINE)
    assert engine.comparison is None
    for system in locomo_result.systems[1:]:
        comparison = system.comparison
        assert isinstance(comparison, Comparison)
        assert comparison.metric == "R@10"
        assert comparison.n == 4
        ours = system.overall["R@10"]
        assert ours is not None
        assert engine.overall["R@10"] is not None
        assert comparison.mean_diff == pytest.approx(ours - engine.overall["R@10"])
    # temporal never ran on these questions: alone it finds nothing, a sure loss
    temporal = locomo_result.system("only-temporal")
    assert temporal.overall["R@50"] == 0.0
    assert temporal.comparison is not None
    assert temporal.comparison.significant


def test_locomo_coverage_reproduction_and_timings(locomo_result: BenchResult) -> None:
    # how often the derived fusion matches the engine depends on the engine's post-fusion
    # policies (the systems tests pin the fusion itself); here it must at least be a count
    assert 0 <= locomo_result.reproduced <= 4
    assert set(locomo_result.coverage) == {"semantic", "lexical", "graph", "temporal", "type"}
    assert all(0.0 <= share <= 1.0 for share in locomo_result.coverage.values())
    assert locomo_result.coverage["lexical"] > 0.0
    for key in ("ingest_s", "queries_s", "scoring_s", "total_s", "query_p50_ms", "query_p99_ms"):
        assert locomo_result.timings[key] >= 0.0


def test_ids_map_back_to_the_dataset_docs() -> None:
    dataset = Dataset(
        name="mini",
        docs=(
            _doc("d-alpha", "alpha beta"),
            _doc("d-gamma", "gamma delta"),
            _doc("d-eps", "epsilon zeta"),
        ),
        queries=(_query("q", "gamma", {"d-gamma"}),),
    )
    result = run_benchmark(dataset, embedder=fivefold.HashingEmbedder(), resamples=100)
    bm25 = result.system("bm25")
    assert bm25.per_question["R@1"] == (1.0,)
    assert bm25.per_question["MRR"] == (1.0,)
    assert result.system("only-graph").per_question["R@50"] == (0.0,)
    # one session holds every doc
    assert result.system("dense").per_question["sR@10"] == (1.0,)


@pytest.mark.slow
def test_a_memory_from_another_namespace_stops_the_run() -> None:
    dataset = Dataset(
        name="two",
        docs=(_doc("a1", "alpha", "a"), _doc("b1", "beta", "b")),
        queries=(_query("qa", "alpha", {"a1"}, "a"), _query("qb", "beta", {"b1"}, "b")),
    )
    # memory ids 1 and 2 are a1 and b1; a system that returns both leaks across namespaces
    leaky = System(name="leaky", group=Group.BASELINE, description="", rank=lambda t, s: (1, 2))
    engine = default_systems()[0]
    with pytest.raises(FivefoldError, match="namespace"):
        run_benchmark(dataset, embedder=fivefold.HashingEmbedder(), systems=(engine, leaky))


def test_systems_must_include_the_engine_and_questions_must_remain() -> None:
    dataset = load_locomo(DATA / "locomo_tiny.json")
    with pytest.raises(InvalidInput, match="fivefold"):
        run_benchmark(dataset, embedder=fivefold.HashingEmbedder(), systems=default_systems()[1:])
    with pytest.raises(InvalidInput, match="no question"):
        run_benchmark(dataset, embedder=fivefold.HashingEmbedder(), categories={"9": "none"})
    with pytest.raises(InvalidInput, match="k_max"):
        run_benchmark(dataset, embedder=fivefold.HashingEmbedder(), k_max=0)


@pytest.mark.slow
def test_k_max_caps_every_list_and_the_cutoffs() -> None:
    assert [m.label for m in metric_specs(5)] == ["R@1", "R@5", "any@5", "nDCG@5", "MRR", "sR@5"]
    assert [m.label for m in metric_specs(7)][:3] == ["R@1", "R@5", "R@7"]
    dataset = Dataset(
        name="deep",
        docs=tuple(_doc(f"d{i}", f"shared words item{i}") for i in range(12)),
        queries=(_query("q", "shared words", {"d11"}),),
    )
    result = run_benchmark(dataset, embedder=fivefold.HashingEmbedder(), k_max=3, resamples=100)
    # d11 ties with every other doc on BM25 and loses the tie on id: never in a top 3
    assert result.system("bm25").per_question["R@3"] == (0.0,)
    assert result.system("bm25").per_question["MRR"] == (0.0,)


@pytest.mark.slow
def test_longmemeval_session_only_questions_score_at_session_level() -> None:
    dataset = load_longmemeval(DATA / "longmemeval_tiny.json")
    result = run_benchmark(dataset, embedder=fivefold.HashingEmbedder(), resamples=100)
    assert "q-asst" in result.question_ids
    position = result.question_ids.index("q-asst")
    dense = result.system("dense")
    assert dense.per_question["R@10"][position] is None
    assert dense.per_question["sR@10"][position] is not None
    # the comparison pairs only the questions that define turn-level recall
    assert dense.comparison is not None
    assert dense.comparison.n == len(result.question_ids) - 1


@pytest.mark.slow
def test_beir_has_no_session_metrics() -> None:
    result = run_benchmark(
        load_beir(DATA / "beir_tiny"), embedder=fivefold.HashingEmbedder(), resamples=100
    )
    assert result.question_ids == ("q1", "q2")
    assert result.system(ENGINE).overall["sR@10"] is None
    assert result.system(ENGINE).overall["R@10"] is not None


def test_ingest_stores_what_a_user_would(hashing_mem: fivefold.Memory) -> None:
    dataset = load_locomo(DATA / "locomo_tiny.json")
    docs = ingest(hashing_mem, dataset, batch_size=3)
    assert sorted(d.id for d in docs.values()) == sorted(d.id for d in dataset.docs)
    for memory_id, doc in docs.items():
        record = hashing_mem.get(memory_id, namespace=doc.namespace)
        assert record.content == doc.content
        assert record.namespace == doc.namespace
        assert record.session_id == doc.session
        assert record.created_at == doc.event_at


def test_limit_keeps_whole_namespaces_or_the_first_questions() -> None:
    locomo = limit_dataset(load_locomo(DATA / "locomo_tiny.json"), 1)
    assert {d.namespace for d in locomo.docs} == {"conv-a"}
    assert {q.namespace for q in locomo.queries} == {"conv-a"}
    beir = load_beir(DATA / "beir_tiny")
    limited = limit_dataset(beir, 1)
    assert [q.id for q in limited.queries] == ["q1"]
    assert limited.docs == beir.docs
    with pytest.raises(InvalidInput):
        limit_dataset(beir, 0)


@pytest.mark.slow
def test_the_engine_ranks_the_same_on_postgres(locomo_result: BenchResult, pg_url: str) -> None:
    """``--db``: the same benchmark with the engine's memories on another backend."""
    on_postgres = run_benchmark(
        load_locomo(DATA / "locomo_tiny.json"),
        embedder=fivefold.HashingEmbedder(),
        categories=LOCOMO_CATEGORIES,
        resamples=200,
        db=pg_url,
    )
    for here, there in zip(locomo_result.systems, on_postgres.systems, strict=True):
        assert here.name == there.name
        assert dict(here.per_question) == dict(there.per_question), here.name
    with pytest.raises(InvalidInput, match="not empty"):
        run_benchmark(
            load_locomo(DATA / "locomo_tiny.json"),
            embedder=fivefold.HashingEmbedder(),
            db=pg_url,
            resamples=200,
        )
