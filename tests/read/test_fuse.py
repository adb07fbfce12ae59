"""Fusion: score-weighted RRF, its challengers and the importance prior (pure functions)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fivefold.read.fuse import Fused, apply_prior, convex, plain_rrf, weighted_rrf
from fivefold.types import RetrieverName, RetrieverRun, Scored

SEM, LEX, GRAPH, TEMP, TYPE = (
    RetrieverName.SEMANTIC,
    RetrieverName.LEXICAL,
    RetrieverName.GRAPH,
    RetrieverName.TEMPORAL,
    RetrieverName.TYPE,
)


def run(name: RetrieverName, *items: tuple[int, float] | tuple[int, float, int]) -> RetrieverRun:
    return RetrieverRun(name, tuple(Scored(*item) for item in items), 0.0)


def scores(fused: Sequence[Fused]) -> dict[int, float]:
    return {f.id: f.score for f in fused}


def test_weighted_rrf_exact_values() -> None:
    runs = [run(SEM, (1, 1.0), (2, 0.25)), run(LEX, (2, 1.0), (3, 0.64))]
    fused = weighted_rrf(runs, {SEM: 1.0, LEX: 2.0}, k=60)
    assert [f.id for f in fused] == [2, 3, 1]
    assert scores(fused) == pytest.approx(
        {
            1: 1.0 * math.sqrt(1.0) / (60 + 1),
            2: 1.0 * math.sqrt(0.25) / (60 + 2) + 2.0 * math.sqrt(1.0) / (60 + 1),
            3: 2.0 * math.sqrt(0.64) / (60 + 2),
        }
    )
    (two,) = [f for f in fused if f.id == 2]
    assert [(t.retriever, t.rank, t.confidence, t.weight) for t in two.terms] == [
        (SEM, 2, 0.25, 1.0),
        (LEX, 1, 1.0, 2.0),
    ]
    assert sum(t.contribution for t in two.terms) == two.score


def test_weighted_rrf_k_and_missing_weight() -> None:
    fused = weighted_rrf([run(TEMP, (7, 1.0), (8, 1.0))], {}, k=10)
    assert scores(fused) == pytest.approx({7: 1.0 / 11, 8: 1.0 / 12})


def test_multi_hop_graph_items_are_weighted_08() -> None:
    graph = run(GRAPH, (5, 1.0, 0), (6, 1.0, 1), (7, 0.36, 2), (8, 1.0))
    fused = weighted_rrf([graph], {GRAPH: 2.0}, k=60)
    assert scores(fused) == pytest.approx(
        {
            5: 2.0 / 61,
            6: 2.0 * 0.8 / 62,
            7: 2.0 * 0.8 * 0.6 / 63,
            8: 2.0 / 64,
        }
    )
    weights = {t.retriever: t.weight for f in fused if f.id == 6 for t in f.terms}
    assert weights == {GRAPH: pytest.approx(1.6)}
    custom = weighted_rrf([graph], {GRAPH: 1.0}, k=60, multi_hop_factor=0.35)
    assert scores(custom)[6] == pytest.approx(0.35 / 62)


def test_plain_rrf_exact_values_ignore_confidence_and_weights() -> None:
    runs = [run(SEM, (1, 0.01), (2, 1.0)), run(LEX, (2, 0.5), (3, 0.9))]
    fused = plain_rrf(runs, k=60)
    assert [f.id for f in fused] == [2, 1, 3]
    assert scores(fused) == pytest.approx({1: 1 / 61, 2: 1 / 62 + 1 / 61, 3: 1 / 62})


def test_convex_exact_values() -> None:
    runs = [run(SEM, (1, 0.9), (2, 0.5), (3, 0.1)), run(LEX, (2, 0.7), (4, 0.7))]
    fused = convex(runs, {SEM: 1.0, LEX: 3.0})
    # min-max per list; a list with one distinct value normalizes to 1.0; weights sum to 1.
    assert scores(fused) == pytest.approx({1: 0.25, 2: 0.25 * 0.5 + 0.75, 3: 0.0, 4: 0.75})
    assert [f.id for f in fused] == [2, 4, 1, 3]


@pytest.mark.parametrize(
    "fuse", [plain_rrf, lambda r: weighted_rrf(r, {}), lambda r: convex(r, {})]
)
def test_no_runs_or_empty_runs_fuse_to_nothing(
    fuse: Callable[[Sequence[RetrieverRun]], list[Fused]],
) -> None:
    assert fuse([]) == []
    assert fuse([run(SEM), run(LEX)]) == []


@pytest.mark.parametrize(
    ("importance", "factor"), [(0.0, 0.7), (1.0, 1.0), (0.5, 0.85), (None, 0.85)]
)
def test_apply_prior_scales_by_importance(importance: float | None, factor: float) -> None:
    fused = [Fused(1, 0.02, ())]
    prior = {} if importance is None else {1: importance}
    (result,) = apply_prior(fused, prior, 0.7)
    assert result.score == pytest.approx(0.02 * factor)


def test_apply_prior_reorders() -> None:
    fused = [Fused(1, 0.030, ()), Fused(2, 0.025, ()), Fused(3, 0.025, ())]
    result = apply_prior(fused, {1: 0.0, 2: 1.0, 3: 1.0}, 0.7)
    assert [f.id for f in result] == [2, 3, 1]
    assert scores(result) == pytest.approx({1: 0.021, 2: 0.025, 3: 0.025})


# -- properties ---------------------------------------------------------------------------------

NAMES = list(RetrieverName)
confidences = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@st.composite
def ranked_runs(
    draw: st.DrawFn, *, min_confidence: float = 0.0, hops: bool = True, max_runs: int = 5
) -> list[RetrieverRun]:
    """Runs with distinct names, each a list of distinct ids ranked by confidence, as every
    retriever returns them."""
    names = draw(st.permutations(NAMES))[: draw(st.integers(1, max_runs))]
    out = []
    for name in names:
        ids = draw(st.lists(st.integers(1, 30), unique=True, max_size=12))
        values = sorted(
            (draw(st.floats(min_value=min_confidence, max_value=1.0)) for _ in ids), reverse=True
        )
        hop_values = [draw(st.none() | st.integers(0, 3)) if hops else None for _ in ids]
        items = tuple(Scored(i, c, h) for i, c, h in zip(ids, values, hop_values, strict=True))
        out.append(RetrieverRun(name, items, 0.0))
    return out


weight_maps = st.dictionaries(
    st.sampled_from(NAMES), st.floats(min_value=0.0, max_value=3.0), max_size=5
)


@pytest.mark.slow
@given(ranked_runs(), weight_maps)
def test_scores_are_non_negative_and_order_is_deterministic(
    runs: list[RetrieverRun], weights: dict[RetrieverName, float]
) -> None:
    fused = weighted_rrf(runs, weights)
    assert all(f.score >= 0.0 for f in fused)
    assert [(-f.score, f.id) for f in fused] == sorted((-f.score, f.id) for f in fused)
    assert fused == weighted_rrf(runs, weights)
    assert {f.id for f in fused} == {s.id for r in runs for s in r.items}
    for f in fused:
        assert f.score == sum(t.contribution for t in f.terms)


@pytest.mark.slow
@given(ranked_runs(), weight_maps)
def test_order_does_not_depend_on_run_order(
    runs: list[RetrieverRun], weights: dict[RetrieverName, float]
) -> None:
    forward = scores(weighted_rrf(runs, weights))
    backward = scores(weighted_rrf(runs[::-1], weights))
    assert forward == pytest.approx(backward)


@pytest.mark.slow
@given(ranked_runs(max_runs=4), ranked_runs(max_runs=1), weight_maps)
def test_adding_a_list_never_lowers_a_score(
    runs: list[RetrieverRun], extra: list[RetrieverRun], weights: dict[RetrieverName, float]
) -> None:
    before = scores(weighted_rrf(runs, weights))
    after = scores(weighted_rrf([*runs, *extra], weights))
    assert all(after[i] >= score for i, score in before.items())
    plain_before, plain_after = scores(plain_rrf(runs)), scores(plain_rrf([*runs, *extra]))
    assert all(plain_after[i] >= score for i, score in plain_before.items())


@given(ranked_runs(min_confidence=0.01, hops=False), st.floats(0.1, 3.0), st.integers(1, 30))
def test_first_in_every_list_is_first(runs: list[RetrieverRun], weight: float, top: int) -> None:
    lifted = []
    for r in runs:
        rest = tuple(s for s in r.items if s.id != top)
        best = max((s.confidence for s in rest), default=1.0)
        lifted.append(RetrieverRun(r.name, (Scored(top, best), *rest), 0.0))
    weights = dict.fromkeys(NAMES, weight)
    assert weighted_rrf(lifted, weights)[0].id == top
    assert plain_rrf(lifted)[0].id == top


@given(
    st.lists(st.integers(1, 1000), unique=True, min_size=1, max_size=30),
    st.floats(min_value=0.01, max_value=1.0),
    st.sampled_from(NAMES),
    st.floats(min_value=0.1, max_value=3.0),
)
def test_single_list_with_equal_confidences_keeps_its_order(
    ids: list[int], confidence: float, name: RetrieverName, weight: float
) -> None:
    single = RetrieverRun(name, tuple(Scored(i, confidence) for i in ids), 0.0)
    assert [f.id for f in weighted_rrf([single], {name: weight})] == ids
    assert [f.id for f in plain_rrf([single])] == ids


@pytest.mark.slow
@given(ranked_runs(), weight_maps)
def test_convex_scores_are_within_unit_interval(
    runs: list[RetrieverRun], weights: dict[RetrieverName, float]
) -> None:
    fused = convex(runs, weights)
    assert all(-1e-9 <= f.score <= 1.0 + 1e-9 for f in fused)
    assert [(-f.score, f.id) for f in fused] == sorted((-f.score, f.id) for f in fused)


@given(
    st.lists(
        st.tuples(st.integers(1, 50), st.floats(0.0, 1.0), confidences), unique_by=lambda t: t[0]
    ),
    st.floats(0.0, 1.0),
)
def test_apply_prior_bounds_and_order(rows: list[tuple[int, float, float]], floor: float) -> None:
    fused = [Fused(i, score, ()) for i, score, _ in rows]
    importance = {i: imp for i, _, imp in rows}
    result = apply_prior(fused, importance, floor)
    assert [(-f.score, f.id) for f in result] == sorted((-f.score, f.id) for f in result)
    original = {i: score for i, score, _ in rows}
    for f in result:
        assert floor * original[f.id] - 1e-12 <= f.score <= original[f.id] + 1e-12
