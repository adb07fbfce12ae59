"""The read side of the facade: validate a recall, parse it (Stage 1), plan it (Stage 2), serve it
from the result cache or run the pipeline, and record metrics."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from fivefold import validate
from fivefold.cache import ResultCache
from fivefold.calibrate import confidence, result_features
from fivefold.config import Config
from fivefold.embed.base import Embedder
from fivefold.errors import InvalidInput
from fivefold.metrics import CACHE_PLAN, Metrics, MetricsSnapshot
from fivefold.model import (
    Budget,
    ExplainedHit,
    Explanation,
    Hit,
    MemoryType,
    OptimizerMode,
    ParsedQuery,
    Plan,
    RecallResult,
    RetrieverName,
    Scope,
)
from fivefold.parse.entities import EntityResolver
from fivefold.parse.query import parse_query
from fivefold.pipeline import ReadPipeline, Retrieval
from fivefold.plan import Features, plan_query
from fivefold.rerank.cross_encoder import load_reranker
from fivefold.retrieve.graph import specificity
from fivefold.store.base import Store
from fivefold.text import normalize_query


@dataclass(frozen=True, slots=True)
class RecallArgs:
    """One recall's arguments, validated."""

    text: str
    k: int
    scope: Scope
    now: datetime
    now_given: bool
    forced: tuple[MemoryType, ...]
    budget: Budget
    session: str | None

    @classmethod
    def of(cls, query: object, k: object, **kwargs: Any) -> RecallArgs:
        given_now = validate.when(kwargs.pop("now", None), "now")
        args = cls(
            text=validate.text(query, "query"),
            k=validate.top_k(k),
            scope=validate.scope(
                kwargs.pop("namespace", "default"),
                kwargs.pop("user_id", None),
                kwargs.pop("agent_id", None),
            ),
            now=given_now or datetime.now(UTC),
            now_given=given_now is not None,
            forced=validate.memory_types(kwargs.pop("types", None)),
            budget=validate.budget(kwargs.pop("budget", "mid")),
            session=validate.optional_text(kwargs.pop("session_id", None), "session_id"),
        )
        if kwargs:
            raise InvalidInput(f"unknown argument(s) {sorted(kwargs)}")
        return args

    def cache_key(self) -> str:
        scope = self.scope
        return ResultCache.key(
            normalize_query(self.text),
            scope.namespace,
            scope.user_id,
            scope.agent_id,
            self.k,
            [t.value for t in self.forced],
            self.budget.value,
            self.session,
            self.now.isoformat() if self.now_given else None,
        )


@dataclass(frozen=True, slots=True)
class _Planned:
    query: ParsedQuery
    plan: Plan
    features: Features
    timings: dict[str, float]


class Reader:
    def __init__(self, store: Store, embedder: Embedder, config: Config) -> None:
        self._store = store
        self._config = config
        reranker = load_reranker(config.rerank.model_path, max_tokens=config.rerank.max_tokens)
        self._pipeline = ReadPipeline(store, embedder, config, reranker)
        self._cache = ResultCache(
            ttl_seconds=config.cache.ttl_seconds, max_entries=config.cache.max_entries
        )
        self._metrics = Metrics()
        self._resolvers: dict[str, tuple[int, EntityResolver]] = {}
        self._lock = threading.Lock()

    def recall(self, args: RecallArgs) -> RecallResult:
        started = time.perf_counter()
        caching = self._config.optimizer.mode is OptimizerMode.CACHED
        key = args.cache_key() if caching else ""
        version = self._store.namespace_generation(args.scope.namespace) if caching else 0
        if caching and (hit := self._cache.get(key, version)) is not None:
            elapsed = (time.perf_counter() - started) * 1000.0
            self._metrics.record(CACHE_PLAN, elapsed)
            return RecallResult(
                hit.hits, hit.plan, hit.query, MappingProxyType({"total": elapsed}), cached=True
            )
        planned = self._plan(args)
        retrieval = self._run(args, planned)
        result = self._result(args, planned, retrieval, started)
        self._metrics.record(
            planned.plan.name.value, result.timings["total"], retrieval.timings.get("rerank")
        )
        if caching:
            self._cache.put(key, version, result)
        return result

    def explain(self, args: RecallArgs) -> Explanation:
        planned = self._plan(args)
        retrieval = self._run(args, planned)
        top = retrieval.ranked[: args.k]
        records = self._store.get_memories(args.scope.namespace, [f.id for f in top])
        via_context = self._context_only(args.scope, retrieval, [f.id for f in top])
        default = self._config.default_importance
        hits = tuple(
            ExplainedHit(
                id=f.id,
                content=records[f.id].content if f.id in records else "",
                fused=sum(t.contribution for t in f.terms),
                importance=retrieval.attributes[f.id].importance
                if f.id in retrieval.attributes
                else default,
                final=f.score,
                demoted=f.id in retrieval.demoted,
                terms=f.terms,
                via_context=f.id in via_context,
            )
            for f in top
        )
        return Explanation(
            query=retrieval.query,
            features=MappingProxyType(planned.features.as_dict()),
            plan=_with_notes(planned.plan, retrieval.notes),
            runs=retrieval.runs,
            hits=hits,
            timings=MappingProxyType({**planned.timings, **retrieval.timings}),
        )

    def _context_only(self, scope: Scope, retrieval: Retrieval, ids: list[int]) -> set[int]:
        """Hits the lexical leg found whose own text matches none of the query's terms."""
        lexical = {
            item.id
            for run in retrieval.runs
            if run.name is RetrieverName.LEXICAL
            for item in run.items
        }
        found = [i for i in ids if i in lexical]
        if not found or not retrieval.query.terms:
            return set()
        weights = self._config.bm25_weights().own_only()
        own = self._store.lexical_search(
            scope, retrieval.query.terms, len(found), within=found, weights=weights
        )
        return set(found) - {i for i, _ in own}

    def metrics(self) -> MetricsSnapshot:
        return self._metrics.snapshot(cache_hits=self._cache.hits, cache_misses=self._cache.misses)

    # -- stages ---------------------------------------------------------------------------------
    def _plan(self, args: RecallArgs) -> _Planned:
        scope = args.scope
        start = time.perf_counter()
        parsed = parse_query(
            args.text,
            now=args.now,
            resolver=self._resolver(scope.namespace),
            temporal=self._config.temporal_for(scope.namespace),
            last_session_end=self._store.last_session_end(scope, args.session),
            visible=None
            if scope.user_id is None and scope.agent_id is None
            else lambda ids: self._store.visible_entities(scope, ids),
        )
        parse_ms = (time.perf_counter() - start) * 1000.0
        total, frequencies = self._store.term_document_frequencies(scope.namespace, parsed.terms)
        entity_ids = [r.entity_id for r in parsed.entity_refs]
        mentions = self._store.entity_frequencies(scope.namespace, entity_ids)
        memories = self._store.memory_count(scope.namespace)
        specific = {e: specificity(memories, mentions.get(e, 0)) for e in entity_ids}
        start = time.perf_counter()
        plan, parsed, features = plan_query(
            parsed,
            total=total,
            frequencies=frequencies,
            specificity=specific,
            config=self._config,
            forced_types=args.forced,
        )
        plan_ms = (time.perf_counter() - start) * 1000.0
        return _Planned(parsed, plan, features, {"parse": parse_ms, "plan": plan_ms})

    def _run(self, args: RecallArgs, planned: _Planned) -> Retrieval:
        depth = self._config.retrieval.depth[args.budget]
        return self._pipeline.run(
            planned.query,
            planned.plan,
            args.scope,
            depth=max(depth, args.k),
            now=args.now,
            forced_types=args.forced,
            budget=args.budget,
        )

    def _result(
        self, args: RecallArgs, planned: _Planned, retrieval: Retrieval, started: float
    ) -> RecallResult:
        top = retrieval.ranked[: args.k]
        records = self._store.get_memories(args.scope.namespace, [f.id for f in top])
        features = result_features([(f.terms, f.score) for f in top])
        hits = tuple(
            Hit(
                memory=records[f.id],
                score=f.score,
                sources=MappingProxyType({t.retriever.value: t.rank for t in f.terms}),
                confidence=confidence(x),
            )
            for f, x in zip(top, features, strict=True)
            if f.id in records
        )
        timings = {**planned.timings, **retrieval.timings}
        timings["total"] = (time.perf_counter() - started) * 1000.0
        plan = _with_notes(planned.plan, retrieval.notes)
        return RecallResult(hits, plan, retrieval.query, MappingProxyType(timings))

    def _resolver(self, namespace: str) -> EntityResolver:
        generation = self._store.namespace_generation(namespace)
        with self._lock:
            cached = self._resolvers.get(namespace)
            if cached is not None and cached[0] == generation:
                return cached[1]
        resolver = EntityResolver(self._store.catalog(namespace))
        with self._lock:
            self._resolvers[namespace] = (generation, resolver)
        return resolver


def _with_notes(plan: Plan, notes: tuple[str, ...]) -> Plan:
    if not notes:
        return plan
    return replace(plan, reasons=(*plan.reasons, *notes))
