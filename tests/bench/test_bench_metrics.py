from __future__ import annotations

import math
from typing import Any

import ir_measures
import numpy as np
import pytest
from ir_measures import RR, R, Success, nDCG

from fivefold.bench import metrics
from fivefold.bench.metrics import (
    Mean,
    Metric,
    mrr,
    ndcg,
    recall,
    recall_all,
    recall_any,
    score,
    session_ranking,
    session_score,
    summarize,
)
from fivefold.errors import InvalidInput

CUTOFFS = (1, 2, 3, 5, 10, 20, 50)


def test_public_names() -> None:
    assert sorted(metrics.__all__) == [
        "Mean",
        "Metric",
        "Summary",
        "mrr",
        "ndcg",
        "recall",
        "recall_all",
        "recall_any",
        "score",
        "session_ranking",
        "session_score",
        "summarize",
    ]


def _random_runs(
    seed: int, queries: int
) -> tuple[dict[str, list[str]], dict[str, set[str]], dict[str, set[str]]]:
    """Rankings, relevant sets and judged-but-not-relevant sets over small random corpora, sized
    so that every cutoff sometimes exceeds the ranking, the relevant set, or both."""
    rng = np.random.default_rng(seed)
    rankings: dict[str, list[str]] = {}
    relevant: dict[str, set[str]] = {}
    judged_out: dict[str, set[str]] = {}
    for number in range(queries):
        query = f"q{number}"
        corpus = [f"d{i}" for i in rng.permutation(int(rng.integers(2, 60)))]
        n_relevant = int(rng.integers(1, min(len(corpus), 12) + 1))
        relevant[query] = set(corpus[:n_relevant])
        judged_out[query] = set(corpus[n_relevant : n_relevant + int(rng.integers(0, 4))])
        ranked = list(rng.permutation(corpus))[: int(rng.integers(1, len(corpus) + 1))]
        rankings[query] = [str(doc) for doc in ranked]
    return rankings, relevant, judged_out


def test_metrics_match_trec_eval_via_ir_measures() -> None:
    rankings, relevant, judged_out = _random_runs(seed=20240601, queries=400)
    qrels = {
        query: {**dict.fromkeys(judged_out[query], 0), **dict.fromkeys(relevant[query], 1)}
        for query in relevant
    }
    # distinct descending scores, so trec_eval's tie-breaking never reorders a ranking
    run = {
        query: {doc: float(len(ranked) - rank) for rank, doc in enumerate(ranked)}
        for query, ranked in rankings.items()
    }
    measures: list[Any] = [RR]
    for k in CUTOFFS:
        measures += [R @ k, Success @ k, nDCG @ k, RR @ k]
    reference = {
        (m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)
    }
    assert len(reference) == len(rankings) * len(measures)
    for query, ranked in rankings.items():
        rel = relevant[query]
        assert mrr(ranked, rel) == pytest.approx(reference[query, "RR"], abs=1e-9)
        for k in CUTOFFS:
            expected_recall = reference[query, f"R@{k}"]
            assert recall(ranked, rel, k) == pytest.approx(expected_recall, abs=1e-9)
            assert recall_any(ranked, rel, k) == reference[query, f"Success@{k}"]
            assert recall_all(ranked, rel, k) == (1.0 if expected_recall == 1.0 else 0.0)
            assert ndcg(ranked, rel, k) == pytest.approx(reference[query, f"nDCG@{k}"], abs=1e-9)
            assert mrr(ranked, rel, k) == pytest.approx(reference[query, f"RR@{k}"], abs=1e-9)


def test_metrics_by_hand() -> None:
    ranked = ["a", "x", "b", "y"]
    relevant = {"a", "b", "c"}
    assert recall(ranked, relevant, 1) == pytest.approx(1 / 3)
    assert recall(ranked, relevant, 3) == pytest.approx(2 / 3)
    assert recall_any(["x", "a"], relevant, 1) == 0.0
    assert recall_any(["x", "a"], relevant, 2) == 1.0
    assert recall_all(ranked, {"a", "b"}, 2) == 0.0
    assert recall_all(ranked, {"a", "b"}, 3) == 1.0
    ideal_3 = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg(ranked, relevant, 3) == pytest.approx((1 + 1 / math.log2(4)) / ideal_3)
    # ideal over min(k, |relevant|): one relevant doc at rank 2 scores 1/log2(3)
    assert ndcg(["x", "a"], {"a"}, 10) == pytest.approx(1 / math.log2(3))
    assert mrr(ranked, {"b"}) == pytest.approx(1 / 3)
    assert mrr(ranked, {"b"}, 2) == 0.0
    assert mrr([], {"b"}) == 0.0
    assert recall([], {"b"}, 5) == 0.0


@pytest.mark.parametrize("metric", list(Metric))
def test_score_dispatches_to_the_named_metric(metric: Metric) -> None:
    direct = {
        Metric.RECALL: recall,
        Metric.RECALL_ANY: recall_any,
        Metric.RECALL_ALL: recall_all,
        Metric.NDCG: ndcg,
        Metric.MRR: mrr,
    }[metric]
    rankings, relevant, _ = _random_runs(seed=7, queries=50)
    for query, ranked in rankings.items():
        assert score(metric, ranked, relevant[query], k=5) == direct(ranked, relevant[query], 5)


def test_session_ranking_keeps_first_occurrence() -> None:
    session_of = {"t1": "s1", "t2": "s2", "t3": "s1", "t4": "s3", "t5": "s2"}
    assert session_ranking(["t3", "t2", "t1", "t5", "t4"], session_of) == ["s1", "s2", "s3"]
    ranked = ["t1", "t3", "t2", "t4"]
    assert session_score(Metric.RECALL, ranked, {"s2"}, session_of=session_of, k=2) == 1.0
    assert recall(ranked, {"t2"}, 2) == 0.0
    assert session_score(Metric.MRR, ranked, {"s3"}, session_of=session_of, k=3) == pytest.approx(
        1 / 3
    )
    with pytest.raises(InvalidInput, match="doc id 'zz' has no session"):
        session_ranking(["t1", "zz"], session_of)


def _longmemeval_turn2session(
    ranked: list[str], correct: set[str], session_of: dict[str, str], k: int
) -> tuple[float, float]:
    """LongMemEval's own turn-to-session recall (src/retrieval/eval_utils.py), restated: widen
    the cutoff over turns until it covers k distinct sessions, then score the sessions in it."""
    sessions = [session_of[doc] for doc in ranked]
    effective_k = k
    while effective_k <= len(sessions) and len(set(sessions[:effective_k])) < k:
        effective_k += 1
    recalled = set(sessions[:effective_k])
    return float(any(s in recalled for s in correct)), float(all(s in recalled for s in correct))


def test_session_level_recall_matches_longmemeval_turn2session() -> None:
    rng = np.random.default_rng(11)
    for _ in range(300):
        n_turns = int(rng.integers(1, 40))
        session_of = {f"t{i}": f"s{int(rng.integers(0, 8))}" for i in range(n_turns)}
        ranked = [f"t{i}" for i in rng.permutation(n_turns)]
        sessions = sorted(set(session_of.values()))
        correct = {str(s) for s in rng.choice(sessions, size=int(rng.integers(1, 3)))}
        for k in (1, 3, 5, 10):
            expected = _longmemeval_turn2session(ranked, correct, session_of, k)
            ours = tuple(
                session_score(metric, ranked, correct, session_of=session_of, k=k)
                for metric in (Metric.RECALL_ANY, Metric.RECALL_ALL)
            )
            assert ours == expected


@pytest.mark.parametrize(
    ("ranked", "relevant", "k", "message"),
    [
        (["a"], {"a"}, 0, "positive integer"),
        (["a"], {"a"}, True, "positive integer"),
        (["a"], set(), 3, "relevant set is empty"),
        (["a", "b", "a"], {"a"}, 3, "repeats an id"),
    ],
)
def test_metric_arguments_are_checked(
    ranked: list[str], relevant: set[str], k: int, message: str
) -> None:
    for metric in Metric:
        with pytest.raises(InvalidInput, match=message):
            score(metric, ranked, relevant, k=k)


def test_summarize_overall_and_per_category() -> None:
    summary = summarize([1.0, 0.0, 0.5, 1.0], ["2", "1", "2", "10"])
    assert summary.overall == Mean(value=0.625, n=4)
    assert list(summary.by_category) == ["1", "10", "2"]
    assert summary.by_category["2"] == Mean(value=0.75, n=2)
    assert summary.by_category["1"] == Mean(value=0.0, n=1)
    with pytest.raises(TypeError):
        summary.by_category["3"] = Mean(value=0.0, n=0)  # type: ignore[index]
    with pytest.raises(InvalidInput, match="2 scores but 1 categories"):
        summarize([1.0, 0.0], ["a"])
    with pytest.raises(InvalidInput, match="no scores"):
        summarize([], [])
    with pytest.raises(InvalidInput, match="finite"):
        summarize([math.nan], ["a"])
