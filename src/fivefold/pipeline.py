"""The read path after parsing and planning: run the plan's retrievers, fuse, apply the
importance prior and negation demotion, cut to k (DESIGN §2 steps 3-4)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from fivefold.config import Config
from fivefold.embed.base import Embedder, Vectors
from fivefold.fuse import Fused, apply_prior, weighted_rrf
from fivefold.model import (
    MemoryType,
    ParsedQuery,
    Plan,
    RetrieverName,
    RetrieverRun,
    Scope,
    Scored,
)
from fivefold.retrieve import (
    graph_search,
    lexical_search,
    match_confidence,
    semantic_search,
    temporal_search,
    type_list,
)
from fivefold.store.base import MemoryAttributes, Store

# Fused candidates considered for the prior and the negation check: enough that a memory
# pushed down by demotion is replaced from below, few enough that the check stays cheap.
POST_FUSION_DEPTH = 200


@dataclass(frozen=True, slots=True)
class Retrieval:
    runs: tuple[RetrieverRun, ...]
    ranked: tuple[Fused, ...]
    demoted: frozenset[int]
    attributes: dict[int, MemoryAttributes]
    timings: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class _Clock:
    timings: dict[str, float] = field(default_factory=dict)

    def time(self, name: str, start: float) -> float:
        elapsed = (time.perf_counter() - start) * 1000.0
        self.timings[name] = self.timings.get(name, 0.0) + elapsed
        return elapsed


class ReadPipeline:
    def __init__(self, store: Store, embedder: Embedder, config: Config) -> None:
        self._store = store
        self._embedder = embedder
        self._config = config

    def run(
        self,
        query: ParsedQuery,
        plan: Plan,
        scope: Scope,
        *,
        depth: int,
        now: datetime,
        forced_types: Sequence[MemoryType] = (),
    ) -> Retrieval:
        clock = _Clock()
        runs = self._retrieve(query, plan, scope, depth, now, forced_types, clock)
        start = time.perf_counter()
        fused = weighted_rrf(
            runs,
            plan.weights,
            k=self._config.fusion.k,
            multi_hop_factor=self._config.fusion.graph_multi_hop_weight,
        )
        # A memory whose every list gave it confidence 0 (a cosine clipped at 0) has no
        # evidence for it: it is not a result, even when nothing else is.
        fused = [f for f in fused if f.score > 0.0][:POST_FUSION_DEPTH]
        attributes = self._store.attributes([f.id for f in fused])
        if forced_types:
            fused = [
                f for f in fused if f.id in attributes and attributes[f.id].type in forced_types
            ]
        importance = {i: a.importance for i, a in attributes.items()}
        ranked = apply_prior(fused, importance, self._config.fusion.importance_floor)
        clock.time("fuse", start)
        start = time.perf_counter()
        ranked, demoted = self._demote(ranked, query.negations, scope)
        clock.time("negation", start)
        return Retrieval(tuple(runs), tuple(ranked), demoted, attributes, clock.timings)

    # -- retrievers -----------------------------------------------------------------------------
    def _retrieve(
        self,
        query: ParsedQuery,
        plan: Plan,
        scope: Scope,
        depth: int,
        now: datetime,
        forced_types: Sequence[MemoryType],
        clock: _Clock,
    ) -> list[RetrieverRun]:
        wanted = set(plan.retrievers)
        runs: list[RetrieverRun] = []
        vectors = self._embed(query, clock) if RetrieverName.SEMANTIC in wanted else None
        types = tuple(forced_types) or (query.type_hints if RetrieverName.TYPE in wanted else ())
        runs.extend(
            self._text_legs(query, scope, vectors, depth, types, forced_types, wanted, clock)
        )
        if RetrieverName.GRAPH in wanted:
            runs.append(
                _timed(
                    clock,
                    RetrieverName.GRAPH,
                    lambda: graph_search(
                        self._store,
                        scope,
                        query.entity_refs,
                        depth=depth,
                        now=now,
                        config=self._config.graph,
                        multi_hop=query.multi_hop,
                        types=forced_types,
                    ),
                )
            )
        window = query.temporal_window
        events_allowed = not forced_types or MemoryType.EVENT in forced_types
        if RetrieverName.TEMPORAL in wanted and window is not None and events_allowed:
            runs.append(
                _timed(
                    clock,
                    RetrieverName.TEMPORAL,
                    lambda: temporal_search(self._store, scope, window, depth=depth),
                )
            )
        return runs

    def _text_legs(
        self,
        query: ParsedQuery,
        scope: Scope,
        vectors: Vectors | None,
        depth: int,
        types: Sequence[MemoryType],
        forced_types: Sequence[MemoryType],
        wanted: set[RetrieverName],
        clock: _Clock,
    ) -> list[RetrieverRun]:
        """Semantic and lexical, type-filtered when a type filter is active, widened (filter
        dropped, both run again) when fewer than ``type_widen_below`` results survive, unless
        the caller forced the types."""
        legs = self._semantic_lexical(query, scope, vectors, depth, types, wanted, clock)
        notes: tuple[str, ...] = ()
        if types and not forced_types:
            found = {item.id for run in legs for item in run.items}
            if len(found) < self._config.retrieval.type_widen_below:
                notes = (f"widened: only {len(found)} results of type {list(types)}",)
                legs = self._semantic_lexical(query, scope, vectors, depth, (), wanted, clock)
        if types:
            start = time.perf_counter()
            ids = [item.id for run in legs for item in run.items]
            kinds = {i: a.type for i, a in self._store.attributes(ids).items()}
            items = type_list([run.items for run in legs], set(types), kinds)
            elapsed = clock.time(RetrieverName.TYPE.value, start)
            legs.append(RetrieverRun(RetrieverName.TYPE, items, elapsed, notes))
        return legs

    def _semantic_lexical(
        self,
        query: ParsedQuery,
        scope: Scope,
        vectors: Vectors | None,
        depth: int,
        types: Sequence[MemoryType],
        wanted: set[RetrieverName],
        clock: _Clock,
    ) -> list[RetrieverRun]:
        legs = []
        if RetrieverName.SEMANTIC in wanted and vectors is not None:
            legs.append(
                _timed(
                    clock,
                    RetrieverName.SEMANTIC,
                    lambda: semantic_search(self._store, scope, vectors, depth=depth, types=types),
                )
            )
        if RetrieverName.LEXICAL in wanted:
            hint_terms = [t for hint in query.predicate_hints for t in hint.split()]
            legs.append(
                _timed(
                    clock,
                    RetrieverName.LEXICAL,
                    lambda: lexical_search(
                        self._store,
                        scope,
                        query.terms,
                        hint_terms=hint_terms,
                        depth=depth,
                        types=types,
                    ),
                )
            )
        return legs

    def _embed(self, query: ParsedQuery, clock: _Clock) -> Vectors | None:
        texts = [t for t in (query.focus, *query.rewrites) if t.strip()]
        if not texts:
            return None
        start = time.perf_counter()
        vectors = self._embedder.embed(texts)
        clock.time("embed", start)
        return vectors

    # -- after fusion ---------------------------------------------------------------------------
    def _demote(
        self, ranked: list[Fused], negations: Sequence[str], scope: Scope
    ) -> tuple[list[Fused], frozenset[int]]:
        """Move memories that match a negated phrase (squashed BM25 above the threshold) to the
        bottom, keeping their order; a memory matching several negations sinks further."""
        if not negations or not ranked:
            return ranked, frozenset()
        ids = [f.id for f in ranked]
        threshold = self._config.retrieval.negation_threshold
        strikes: dict[int, int] = {}
        for phrase in negations:
            confidence = match_confidence(self._store, scope, phrase.split(), ids)
            for memory_id, value in confidence.items():
                if value > threshold:
                    strikes[memory_id] = strikes.get(memory_id, 0) + 1
        order = {f.id: position for position, f in enumerate(ranked)}
        result = sorted(ranked, key=lambda f: (strikes.get(f.id, 0), order[f.id]))
        return result, frozenset(strikes)


def _timed(
    clock: _Clock, name: RetrieverName, run: Callable[[], tuple[Scored, ...]]
) -> RetrieverRun:
    start = time.perf_counter()
    items = run()
    return RetrieverRun(name, items, clock.time(name.value, start))
