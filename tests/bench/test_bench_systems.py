from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest

from fivefold.bench import systems as systems_module
from fivefold.bench.systems import (
    ENGINE,
    FusionSettings,
    Group,
    System,
    Trace,
    default_systems,
    engine_fusion,
)
from fivefold.config import FusionConfig
from fivefold.types import RetrieverName, RetrieverRun, Scored

SEM, LEX, GRAPH = RetrieverName.SEMANTIC, RetrieverName.LEXICAL, RetrieverName.GRAPH


def _run(name: RetrieverName, *items: Scored) -> RetrieverRun:
    return RetrieverRun(name, items, 0.0)


# Scores worked out by hand (k = 60, w * sqrt(c) / (k + rank)); x 0.85 for importance 0.5,
# x 0.7 for memory 4 (importance 0), x 1.0 for memory 5 (importance 1):
#   1: sem .9@1                        .015552 -> .013219
#   2: sem .8@2 + graph 1.0@1 (0 hops) .030819 -> .026196
#   3: sem .5@3 + lex .9@1             .026776 -> .022760
#   4: lex .6@2                        .012493 -> .008745
#   5: graph .6@2, 1 hop (w 0.8)       .009995 -> .009995
TRACE = Trace(
    runs=(
        _run(SEM, Scored(1, 0.9), Scored(2, 0.8), Scored(3, 0.5)),
        _run(LEX, Scored(3, 0.9), Scored(4, 0.6)),
        _run(GRAPH, Scored(2, 1.0, hops=0), Scored(5, 0.6, hops=1)),
    ),
    weights=MappingProxyType({SEM: 1.0, LEX: 1.0, GRAPH: 1.0}),
    importance=MappingProxyType({4: 0.0, 5: 1.0}),
    engine=(9, 8),
)
SETTINGS = FusionSettings()


def _ranks(trace: Trace = TRACE) -> dict[str, tuple[int, ...]]:
    return {s.name: s.rank(trace, SETTINGS) for s in default_systems()}


def test_public_names() -> None:
    assert sorted(systems_module.__all__) == [
        "ENGINE",
        "FusionSettings",
        "Group",
        "LEARNED",
        "OPTIMIZED",
        "System",
        "Trace",
        "default_systems",
        "engine_fusion",
        "learned_system",
    ]


def test_every_system_of_the_issue_is_there_once_in_group_order() -> None:
    chosen = default_systems()
    names = [s.name for s in chosen]
    assert names == [
        "fivefold",
        "fivefold-optimized",
        "bm25",
        "dense",
        "rrf-dense-bm25",
        "bm25-context",
        "dense-context",
        "only-graph",
        "only-temporal",
        "only-type",
        "minus-semantic",
        "minus-lexical",
        "minus-graph",
        "minus-temporal",
        "minus-type",
        "plain-rrf-all",
        "convex",
        "graph-w0.35",
        "wrrf-k10",
        "wrrf-k30",
        "wrrf-k100",
    ]
    order = list(Group)
    assert [order.index(s.group) for s in chosen] == sorted(order.index(s.group) for s in chosen)


def test_engine_row_is_the_engine_ranking_untouched() -> None:
    assert _ranks()[ENGINE] == (9, 8)


def test_single_lists_keep_their_run_order_and_are_empty_when_not_run() -> None:
    ranks = _ranks()
    assert ranks["bm25"] == (3, 4)
    assert ranks["dense"] == (1, 2, 3)
    assert ranks["only-graph"] == (2, 5)
    assert ranks["only-temporal"] == ()
    assert ranks["only-type"] == ()


def test_plain_rrf_of_dense_and_bm25_ignores_scores_and_importance() -> None:
    # 3: 1/63 + 1/61; 1: 1/61; 2 and 4 tie at 1/62 and break by id
    assert _ranks()["rrf-dense-bm25"] == (3, 1, 2, 4)


def test_engine_fusion_applies_weights_hops_and_the_importance_prior() -> None:
    assert engine_fusion(TRACE, SETTINGS) == (2, 3, 1, 5, 4)
    # without the prior, 4 (.012493) would beat 5 (.009995)
    flat = Trace(runs=TRACE.runs, weights=TRACE.weights, importance={}, engine=())
    assert engine_fusion(flat, SETTINGS) == (2, 3, 1, 4, 5)


def test_candidates_without_evidence_are_dropped_as_the_engine_does() -> None:
    trace = Trace(
        runs=(_run(SEM, Scored(1, 0.4), Scored(2, 0.0)), _run(LEX, Scored(3, 0.0))),
        weights={},
        importance={},
        engine=(),
    )
    ranks = _ranks(trace)
    assert engine_fusion(trace, SETTINGS) == (1,)
    assert ranks["minus-lexical"] == (1,)
    # plain RRF ignores confidences, and a single list keeps its whole order
    assert ranks["plain-rrf-all"] == (1, 3, 2)
    assert ranks["dense"] == (1, 2)


def test_ablations_drop_exactly_one_run() -> None:
    ranks = _ranks()
    assert ranks["minus-graph"] == (3, 1, 2, 4)
    assert ranks["minus-semantic"] == (2, 3, 5, 4)
    assert ranks["minus-lexical"] == (2, 1, 5, 3)
    # a retriever that did not run changes nothing
    assert ranks["minus-temporal"] == ranks["minus-type"] == (2, 3, 1, 5, 4)


def test_fusion_challengers() -> None:
    ranks = _ranks()
    # graph weight 0.35: 2 falls to .017139, below 3 (.022760); 5 sinks to the bottom
    assert ranks["graph-w0.35"] == (3, 2, 1, 4, 5)
    # plain RRF: 5 (1/62 x 1.0) climbs above 1 (1/61 x 0.85)
    assert ranks["plain-rrf-all"] == (2, 3, 5, 1, 4)
    # convex, each run weighted 1/3: 2 = 0.75/3 + 1/3; 1 and 3 tie at 1/3; 4 and 5 score 0
    # (the bottom of their min-max normalized lists) and, as in the engine, are dropped
    assert ranks["convex"] == (2, 1, 3)


def test_rrf_constant_k_is_the_one_asked_for() -> None:
    # A tops one list; B is 20th in two. 1/(k+1) > 2/(k+20) only while k < 18.
    fillers = [Scored(100 + i, 1.0) for i in range(19)]
    trace = Trace(
        runs=(
            _run(SEM, Scored(1, 1.0), *fillers[:18], Scored(2, 1.0)),
            _run(LEX, *(Scored(200 + i, 1.0) for i in range(19)), Scored(2, 1.0)),
        ),
        weights={},
        importance={},
        engine=(),
    )
    ranks = _ranks(trace)
    assert ranks["wrrf-k10"][0] == 1
    assert ranks["wrrf-k30"][0] == 2
    assert ranks["wrrf-k100"][0] == 2
    assert engine_fusion(trace, SETTINGS)[0] == 2
    assert engine_fusion(trace, FusionSettings(k=5))[0] == 1


def test_settings_follow_the_engine_config() -> None:
    settings = FusionSettings.from_config(
        FusionConfig(
            k=20,
            graph_multi_hop_weight=0.5,
            importance_floor=0.9,
            speaker_boost=0.4,
            window_boost=0.2,
        )
    )
    assert settings == FusionSettings(
        k=20, multi_hop_factor=0.5, importance_floor=0.9, speaker_boost=0.4, window_boost=0.2
    )
    # multi-hop factor 0.5 and floor 0.9: 4 -> .011244, 5 -> .006247 (was .008745 < .009995)
    assert engine_fusion(TRACE, settings)[-2:] == (4, 5)


@pytest.mark.parametrize("system", default_systems(), ids=lambda s: s.name)
def test_systems_are_pure_and_never_repeat_an_id(system: System) -> None:
    first = system.rank(TRACE, SETTINGS)
    assert system.rank(TRACE, SETTINGS) == first
    assert len(set(first)) == len(first)


def test_optimized_system_ranks_by_the_optimized_recall() -> None:
    ranks = _ranks(replace(TRACE, optimized=(5, 4), optimized_plan="precision"))
    assert ranks["fivefold-optimized"] == (5, 4)
    assert _ranks()["fivefold-optimized"] == ()


def test_plain_baselines_rank_the_runs_of_the_store_without_context() -> None:
    lexical = next(run for run in TRACE.runs if run.name is RetrieverName.LEXICAL)
    plain = replace(lexical, items=tuple(reversed(lexical.items)))
    trace = replace(TRACE, plain=(plain,))
    ranks = _ranks(trace)
    assert ranks["bm25"] == tuple(item.id for item in plain.items)
    assert ranks["bm25-context"] == tuple(item.id for item in lexical.items)
    assert ranks["dense"] == ()  # no semantic run on the plain side
    assert _ranks()["bm25"] == _ranks()["bm25-context"]  # untraced: the one store's runs
