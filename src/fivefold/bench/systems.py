"""The systems a quality benchmark compares, each a pure function of one recall's trace.

One ``Memory.explain`` call per question yields every retriever's ranked list (the runs), the
plan's weights and the engine's own final ranking. Every other system is derived from those runs
with the fusion functions of ``fivefold.read.fuse``, so all systems see the same embeddings, the
same BM25 index and the same candidates, and differ only in what the benchmark means to measure:

- ``fivefold``: the engine with the optimizer off, i.e. the balanced plan (its final ranking,
  negation demotion included); ``fivefold-optimized``: the engine through the rule optimizer;
- baselines: plain BM25 (the lexical leg alone), plain dense (the semantic leg alone) and plain
  RRF of the two (k = 60, Cormack et al.), on a second store that indexes every memory alone
  (no session context), as a generic hybrid search library would; the two legs with the
  session context are reported alone (``bm25-context``, ``dense-context``);
- each other retriever alone (graph, temporal, type): its own run order, empty when it did not
  run for a question;
- ablations: the engine's fusion (score-weighted RRF and the importance prior) over every run but
  one;
- the fusion challengers: plain RRF over all runs, the convex combination, graph
  weight 0.35, and other RRF constants k.

Derived fusions skip negation demotion, which needs the store; ``engine_fusion`` reproduces the
engine's ranking from the runs, and the runner counts the questions where it does not, so a report
says when the derived systems stop being "fivefold minus one thing".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import partial

from fivefold.config import FusionConfig
from fivefold.read.fuse import Fused, apply_prior, boost, convex, plain_rrf, weighted_rrf
from fivefold.types import RetrieverName, RetrieverRun

__all__ = [
    "ENGINE",
    "LEARNED",
    "OPTIMIZED",
    "FusionSettings",
    "Group",
    "System",
    "Trace",
    "default_systems",
    "engine_fusion",
    "learned_system",
]

ENGINE = "fivefold"
OPTIMIZED = "fivefold-optimized"
LEARNED = "fivefold-learned"
PLAIN_RRF_K = 60
CHALLENGER_GRAPH_WEIGHT = 0.35
CHALLENGER_KS = (10, 30, 100)


class Group(StrEnum):
    """Why a system is in the table; reports print the groups in this order."""

    ENGINE = "engine"
    BASELINE = "baseline"
    ALONE = "alone"
    ABLATION = "ablation"
    CHALLENGER = "challenger"


@dataclass(frozen=True, slots=True, kw_only=True)
class Trace:
    """What one recall decided, as ``explain`` reports it: the runs in the order they ran, the
    plan's fusion weights, each candidate's importance, and the engine's final ranking."""

    runs: tuple[RetrieverRun, ...]
    weights: Mapping[RetrieverName, float]
    importance: Mapping[int, float]
    engine: tuple[int, ...]
    # The same question recalled through the query optimizer (rule mode), when benchmarked.
    optimized: tuple[int, ...] | None = None
    optimized_plan: str | None = None
    # The same question recalled with learned fusion, by a model that never saw its
    # conversation (bench/learning.py), when benchmarked.
    learned: tuple[int, ...] | None = None
    # The same question on a store that indexes every memory alone (no session context): the
    # plain baselines, as a generic hybrid search library would index the turns.
    plain: tuple[RetrieverRun, ...] = ()
    # Candidates spoken by a person the question names (the engine's speaker boost), and
    # those dated inside its time window (the window boost).
    spoken: frozenset[int] = frozenset()
    within: frozenset[int] = frozenset()

    def run(self, name: RetrieverName) -> RetrieverRun | None:
        return next((run for run in self.runs if run.name is name), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class FusionSettings:
    """The engine's fusion constants (``FusionConfig``), copied so systems stay pure."""

    k: int = 60
    multi_hop_factor: float = 0.8
    importance_floor: float = 0.7
    speaker_boost: float = 0.0
    window_boost: float = 0.0

    @classmethod
    def from_config(cls, fusion: FusionConfig) -> FusionSettings:
        return cls(
            k=fusion.k,
            multi_hop_factor=fusion.graph_multi_hop_weight,
            importance_floor=fusion.importance_floor,
            speaker_boost=fusion.speaker_boost,
            window_boost=fusion.window_boost,
        )


Ranker = Callable[[Trace, FusionSettings], tuple[int, ...]]


@dataclass(frozen=True, slots=True, kw_only=True)
class System:
    name: str
    group: Group
    description: str
    rank: Ranker


def engine_fusion(
    trace: Trace,
    settings: FusionSettings,
    *,
    without: RetrieverName | None = None,
    k: int | None = None,
    weights: Mapping[RetrieverName, float] | None = None,
) -> tuple[int, ...]:
    """The engine's fusion (score-weighted RRF, candidates without evidence dropped, then the
    importance prior) over the runs, less ``without``, with ``k`` or ``weights`` swapped in."""
    runs = [run for run in trace.runs if run.name is not without]
    fused = weighted_rrf(
        runs,
        trace.weights if weights is None else weights,
        k=settings.k if k is None else k,
        multi_hop_factor=settings.multi_hop_factor,
    )
    return _prior(fused, trace, settings)


def default_systems() -> tuple[System, ...]:
    """Every system of the benchmark, in report order; names are unique."""
    return (
        System(
            name=ENGINE,
            group=Group.ENGINE,
            description="the engine with the optimizer off: the balanced plan, score-weighted RRF",
            rank=_engine,
        ),
        System(
            name=OPTIMIZED,
            group=Group.ENGINE,
            description="the engine with the rule optimizer (plans per query, its own ranking)",
            rank=_optimized,
        ),
        *_baselines(),
        *(_alone(name) for name in _OTHER_RETRIEVERS),
        *(_ablation(name) for name in RetrieverName),
        *_challengers(),
    )


def _optimized(trace: Trace, settings: FusionSettings) -> tuple[int, ...]:
    return trace.optimized if trace.optimized is not None else ()


def learned_system() -> System:
    """Learned fusion, each question ranked by a model that never saw its namespace."""
    return System(
        name=LEARNED,
        group=Group.ENGINE,
        description="the engine with learned fusion, leave one namespace (conversation) out",
        rank=_learned,
    )


def _learned(trace: Trace, settings: FusionSettings) -> tuple[int, ...]:
    return trace.learned if trace.learned is not None else ()


# Semantic and lexical alone are the plain dense and plain BM25 baselines.
_OTHER_RETRIEVERS = (RetrieverName.GRAPH, RetrieverName.TEMPORAL, RetrieverName.TYPE)


def _baselines() -> tuple[System, ...]:
    return (
        System(
            name="bm25",
            group=Group.BASELINE,
            description="plain BM25: the lexical leg alone, every memory indexed alone "
            "(FTS5 BM25, porter, stop words)",
            rank=partial(_plain_rank, name=RetrieverName.LEXICAL),
        ),
        System(
            name="dense",
            group=Group.BASELINE,
            description="plain dense: the semantic leg alone, every memory indexed alone "
            "(cosine, all-MiniLM-L6-v2)",
            rank=partial(_plain_rank, name=RetrieverName.SEMANTIC),
        ),
        System(
            name="rrf-dense-bm25",
            group=Group.BASELINE,
            description=f"plain RRF (k={PLAIN_RRF_K}) of plain dense and plain BM25",
            rank=_plain_pair,
        ),
        System(
            name="bm25-context",
            group=Group.ALONE,
            description="the lexical leg alone, with the session context",
            rank=partial(_alone_rank, name=RetrieverName.LEXICAL),
        ),
        System(
            name="dense-context",
            group=Group.ALONE,
            description="the semantic leg alone, with the session context",
            rank=partial(_alone_rank, name=RetrieverName.SEMANTIC),
        ),
    )


def _plain_rank(trace: Trace, settings: FusionSettings, *, name: RetrieverName) -> tuple[int, ...]:
    """A leg alone on the store without session context (the main store's when not traced)."""
    runs = trace.plain or trace.runs
    run = next((r for r in runs if r.name is name), None)
    return () if run is None else tuple(item.id for item in run.items)


def _alone(name: RetrieverName) -> System:
    return System(
        name=f"only-{name.value}",
        group=Group.ALONE,
        description=f"the {name.value} retriever alone (empty where it did not run)",
        rank=partial(_alone_rank, name=name),
    )


def _ablation(name: RetrieverName) -> System:
    return System(
        name=f"minus-{name.value}",
        group=Group.ABLATION,
        description=f"the engine's fusion over every run but {name.value}",
        rank=partial(_fusion_rank, without=name),
    )


def _challengers() -> tuple[System, ...]:
    return (
        System(
            name="plain-rrf-all",
            group=Group.CHALLENGER,
            description=f"plain RRF (k={PLAIN_RRF_K}) of every run, confidences ignored",
            rank=_plain_all,
        ),
        System(
            name="convex",
            group=Group.CHALLENGER,
            description="convex combination of min-max normalized confidences",
            rank=_convex,
        ),
        System(
            name=f"graph-w{CHALLENGER_GRAPH_WEIGHT}",
            group=Group.CHALLENGER,
            description=f"weighted RRF with the graph weight {CHALLENGER_GRAPH_WEIGHT}",
            rank=_graph_weight,
        ),
        *(
            System(
                name=f"wrrf-k{k}",
                group=Group.CHALLENGER,
                description=f"weighted RRF with k={k} instead of the configured k",
                rank=partial(_fusion_rank, k=k),
            )
            for k in CHALLENGER_KS
        ),
    )


# --- rankers ----------------------------------------------------------------------------------


def _engine(trace: Trace, settings: FusionSettings) -> tuple[int, ...]:
    return trace.engine


def _alone_rank(trace: Trace, settings: FusionSettings, *, name: RetrieverName) -> tuple[int, ...]:
    run = trace.run(name)
    return () if run is None else tuple(item.id for item in run.items)


def _fusion_rank(
    trace: Trace,
    settings: FusionSettings,
    *,
    without: RetrieverName | None = None,
    k: int | None = None,
) -> tuple[int, ...]:
    return engine_fusion(trace, settings, without=without, k=k)


def _plain_pair(trace: Trace, settings: FusionSettings) -> tuple[int, ...]:
    plain = trace.plain or trace.runs
    runs = [run for name in _PAIR for run in plain if run.name is name]
    return _ids(plain_rrf(runs, k=PLAIN_RRF_K))


_PAIR = (RetrieverName.SEMANTIC, RetrieverName.LEXICAL)


def _plain_all(trace: Trace, settings: FusionSettings) -> tuple[int, ...]:
    return _prior(plain_rrf(trace.runs, k=PLAIN_RRF_K), trace, settings)


def _convex(trace: Trace, settings: FusionSettings) -> tuple[int, ...]:
    return _prior(convex(trace.runs, trace.weights), trace, settings)


def _graph_weight(trace: Trace, settings: FusionSettings) -> tuple[int, ...]:
    weights = {**trace.weights, RetrieverName.GRAPH: CHALLENGER_GRAPH_WEIGHT}
    return engine_fusion(trace, settings, weights=weights)


def _prior(fused: Sequence[Fused], trace: Trace, settings: FusionSettings) -> tuple[int, ...]:
    """What the engine does after fusing: drop candidates with a fused score of 0 (no evidence
    for them), then apply the importance prior, the speaker boost and the window boost.
    Challengers replace the fusion step only, so a difference from the engine is the
    fusion's."""
    evidenced = [f for f in fused if f.score > 0.0]
    prior = apply_prior(evidenced, trace.importance, settings.importance_floor)
    spoken = boost(prior, trace.spoken, settings.speaker_boost)
    return _ids(boost(spoken, trace.within, settings.window_boost))


def _ids(fused: Sequence[Fused]) -> tuple[int, ...]:
    return tuple(f.id for f in fused)
