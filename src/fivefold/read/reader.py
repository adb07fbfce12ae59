"""The read side of the facade: validate a recall, parse it (Stage 1), plan it (Stage 2), serve it
from the result cache or run the pipeline, and record metrics."""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable, Sequence
from copy import deepcopy
from dataclasses import dataclass, replace
from importlib import resources
from types import MappingProxyType

import numpy as np

from fivefold.config import Config
from fivefold.embed.base import Embedder
from fivefold.embed.onnx import same_model
from fivefold.errors import InvalidInput
from fivefold.learn.model import Example, LearnedModel
from fivefold.read.args import RecallArgs
from fivefold.read.blas import one_blas_thread
from fivefold.read.cache import ResultCache
from fivefold.read.calibrate import COEFFICIENTS, LEARNED_COEFFICIENTS, confidence, result_features
from fivefold.read.history import SUPERSEDED_WEIGHT
from fivefold.read.metrics import CACHE_PLAN, Metrics, MetricsSnapshot
from fivefold.read.parse.entities import EntityResolver, ordinary_words
from fivefold.read.parse.query import parse_query
from fivefold.read.pipeline import Question, ReadPipeline, Retrieval
from fivefold.read.plan import Features, plan_query
from fivefold.read.rerank.base import Reranker
from fivefold.read.retrieve.graph import specificity
from fivefold.read.roles import resolve
from fivefold.read.stats import RecallStats
from fivefold.store.protocol import Store
from fivefold.store.records import CatalogEntry, Feedback
from fivefold.types import (
    ExplainedHit,
    Explanation,
    Hit,
    LearnedScope,
    OptimizerMode,
    ParsedQuery,
    Plan,
    RecallResult,
    RetrieverName,
    Scope,
)


def _detached(hits: tuple[Hit, ...]) -> tuple[Hit, ...]:
    """``hits`` with metadata of their own: read-only at its top level only, its nested lists
    and objects were the cached result's (a caller who edited one changed later recalls)."""
    return tuple(
        replace(h, memory=replace(h.memory, metadata=MappingProxyType(deepcopy(dict(m)))))
        if (m := h.memory.metadata)
        else h
        for h in hits
    )


# The packaged models learned fusion uses where a namespace has trained none (None: the rules):
# one fit on conversations, for recalls whose candidates are turns, and one fit on agent facts.
DEFAULT_MODEL = "learned_default.json"
FACTS_MODEL = "learned_facts.json"
LEARNED_RANKS = "learned fusion ranks: "  # the plan's reason naming the model that ranks


@dataclass(frozen=True, slots=True)
class _Planned:
    query: ParsedQuery
    plan: Plan
    features: Features
    timings: dict[str, float]


class Reader:
    def __init__(
        self, store: Store, embedder: Embedder, config: Config, reranker: Reranker | None = None
    ) -> None:
        self._store = store
        self._config = config
        # Learned fusion ranks the candidates of the rule optimizer's plan (its legs, depths and
        # graph gate: as good as every leg's, and as fast as the rules); training asks each
        # recall again the same way.
        self._learning = config.optimizer.mode is OptimizerMode.LEARNED
        self._rules = replace(config, optimizer=replace(config.optimizer, mode=OptimizerMode.RULE))
        # Per namespace, at its generation: the model each user's recalls rank by.
        self._models: dict[str, tuple[int, dict[str | None, LearnedModel | None]]] = {}
        self._per_user = config.learned.scope is LearnedScope.USER
        self._default_model = _packaged_model(DEFAULT_MODEL, turns_only=True)
        # Fit on one embedder's similarities, the facts model means little on another's.
        facts = _packaged_model(FACTS_MODEL, turns_only=False)
        fit_with = None if facts is None else facts.report.get("embedder")
        fits = fit_with is None or same_model(str(fit_with), embedder.name)
        self._facts_model = facts if fits else None
        self._pipeline = ReadPipeline(store, embedder, config, reranker)
        self._cache = ResultCache(
            ttl_seconds=config.cache.ttl_seconds, max_entries=config.cache.max_entries
        )
        self._metrics = Metrics()
        self._resolvers: dict[str, tuple[int, Sequence[CatalogEntry], EntityResolver]] = {}
        self._lock = threading.Lock()

    def recall(self, args: RecallArgs) -> RecallResult:
        started = time.perf_counter()
        caching = self._config.optimizer.mode is OptimizerMode.CACHED
        key = args.cache_key() if caching else ""
        stats = RecallStats(self._store.reads, args.scope.namespace)
        version = stats.generation
        if caching and (hit := self._cache.get(key, version)) is not None:
            elapsed = (time.perf_counter() - started) * 1000.0
            self._metrics.record(CACHE_PLAN, elapsed)
            return RecallResult(
                _detached(hit.hits),
                hit.plan,
                hit.query,
                MappingProxyType({"total": elapsed}),
                cached=True,
                recall_id=args.to_token(),
            )
        with one_blas_thread():
            model = self._model(stats, args.scope.user_id)
            planned = self._plan(args, model, stats)
            retrieval = self._run(args, planned, model, stats)
            result = self._result(args, planned, retrieval, started)
        self._metrics.record(
            planned.plan.name.value, result.timings["total"], retrieval.timings.get("rerank")
        )
        if caching:  # a copy the caller cannot reach
            self._cache.put(key, version, replace(result, hits=_detached(result.hits)))
        return result

    def explain(self, args: RecallArgs) -> Explanation:
        stats = RecallStats(self._store.reads, args.scope.namespace)
        with one_blas_thread():
            model = self._model(stats, args.scope.user_id)
            planned = self._plan(args, model, stats)
            retrieval = self._run(args, planned, model, stats)
        top = retrieval.ranked[: args.k]
        records = self._store.reads.get_memories(args.scope.namespace, [f.id for f in top])
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
            plan=_with_notes(planned.plan, retrieval),
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
        weights = self._config.own_text_weights()
        own = self._store.search.lexical_search(
            scope, retrieval.query.terms, len(found), within=found, weights=weights
        )
        return set(found) - {i for i, _ in own}

    def metrics(self) -> MetricsSnapshot:
        return self._metrics.snapshot(cache_hits=self._cache.hits, cache_misses=self._cache.misses)

    # -- learned fusion -----------------------------------------------------------------------
    def question(self, entry: Feedback) -> Hashable | None:
        """The question a feedback's recall asked: its query and every argument but the time
        it was asked, types in any order and spaces around and between words folded."""
        try:
            args = RecallArgs.from_token(entry.args)
        except InvalidInput:
            return None
        text, forced = " ".join(args.text.split()), tuple(sorted(t.value for t in args.forced))
        return (text, args.k, args.scope, forced, args.budget, args.session)

    def asker(self, entry: Feedback) -> str | None:
        """The user a feedback's recall was asked for (None: the namespace's own recall)."""
        return RecallArgs.from_token(entry.args).scope.user_id

    def examples(self, entries: Sequence[Feedback]) -> list[Example]:
        """Each feedback's recall asked again as learned fusion asks it (the rule optimizer's
        plan), its candidates labelled by the feedback: what ``learned.fit`` trains on."""
        out = []
        for entry in entries:
            args = RecallArgs.from_token(entry.args)
            stats = RecallStats(self._store.reads, args.scope.namespace)
            planned = self._plan(args, None, stats, rules=True)
            candidates = self._pipeline.candidates(self._question(args, planned, stats))
            labels = np.array([entry.labels.get(i, 0.0) for i in candidates.ids])
            out.append(Example(candidates, labels, entry.id))
        return out

    def ranking(self, entry: Feedback, model: LearnedModel | None) -> list[int]:
        """The ids a recall ranks first, by ``model`` or (None) by the rule optimizer."""
        args = RecallArgs.from_token(entry.args)
        stats = RecallStats(self._store.reads, args.scope.namespace)
        planned = self._plan(args, model, stats, rules=True)
        return [f.id for f in self._run(args, planned, model, stats).ranked]

    def _model(self, stats: RecallStats, user_id: str | None) -> LearnedModel | None:
        """With ``learned.scope = "user"`` the user's newest accepted model; else (or without
        one) the namespace's, else the packaged one (learned mode only); read again when the
        namespace's generation moves (a save bumps it)."""
        if not self._learning:
            return None
        user = user_id if self._per_user else None
        namespace, generation = stats.namespace, stats.generation
        with self._lock:
            cached = self._models.get(namespace)
            if cached is not None and cached[0] == generation and user in cached[1]:
                return cached[1][user]
        model = self._saved(namespace, user) if user is not None else None
        model = model or self._saved(namespace, None) or self._default_model
        with self._lock:
            cached = self._models.get(namespace)
            if cached is None or cached[0] != generation:
                cached = (generation, {})
                self._models[namespace] = cached
            cached[1][user] = model
        return model

    def _saved(self, namespace: str, user_id: str | None) -> LearnedModel | None:
        saved = self._store.models.learned_model(namespace, user_id)
        return None if saved is None else LearnedModel.from_json(saved[1], version=saved[0])

    # -- stages ---------------------------------------------------------------------------------
    def _plan(
        self,
        args: RecallArgs,
        model: LearnedModel | None,
        stats: RecallStats,
        *,
        rules: bool = False,
    ) -> _Planned:
        """``model``: learned fusion will rank the plan's candidates. Learned mode, training
        (which asks as it does) and ``rules`` plan by the rule optimizer, whatever the mode."""
        config = self._rules if rules or self._learning else self._config
        scope = args.scope
        start = time.perf_counter()
        text, holders = resolve(args.text, scope, self._store, self._config.own_text_weights())
        parsed = parse_query(
            text,
            now=args.now,
            resolver=self._resolver(stats),
            temporal=self._config.temporal_for(scope.namespace),
            last_session_end=lambda: self._store.reads.last_session_end(scope, args.session),
            visible=None
            if scope.user_id is None and scope.agent_id is None
            else lambda ids: self._store.reads.visible_entities(scope, ids),
        )
        named = [r.entity_id for r in parsed.entity_refs]
        mentions = self._store.reads.entity_frequencies(scope.namespace, named)
        refs = ordinary_words(
            text, parsed.entity_refs, lambda w: stats.frequencies(w)[1], lambda _: mentions
        )
        if len(refs) != len(parsed.entity_refs):
            parsed = replace(parsed, entity_refs=tuple(refs))
        if holders:  # the names are the reader's: the question is the caller's
            parsed = replace(parsed, original=args.text)
        parse_ms = (time.perf_counter() - start) * 1000.0
        total, frequencies = stats.frequencies(parsed.terms)
        entity_ids = [r.entity_id for r in parsed.entity_refs]
        memories = stats.memories
        specific = {e: specificity(memories, mentions.get(e, 0)) for e in entity_ids}
        start = time.perf_counter()
        plan, parsed, features = plan_query(
            parsed,
            total=total,
            frequencies=frequencies,
            specificity=specific,
            config=config,
            forced_types=args.forced,
        )
        if holders:
            plan = replace(plan, reasons=(*plan.reasons, *holders))
        if model is not None:
            plan = replace(plan, reasons=(*plan.reasons, f"{LEARNED_RANKS}{_label(model)}"))
        elif self._learning:
            plan = replace(
                plan, reasons=(*plan.reasons, "no learned model for this namespace: rules rank")
            )
        plan_ms = (time.perf_counter() - start) * 1000.0
        return _Planned(parsed, plan, features, {"parse": parse_ms, "plan": plan_ms})

    def _depth(self, args: RecallArgs) -> int:
        """Candidates per retriever: the budget's, and never fewer than asked for."""
        return max(self._config.retrieval.depth[args.budget], args.k)

    def _run(
        self, args: RecallArgs, planned: _Planned, model: LearnedModel | None, stats: RecallStats
    ) -> Retrieval:
        return self._pipeline.run(
            self._question(args, planned, stats),
            budget=args.budget,
            model=model,
            otherwise=self._facts_model if model is not None and model.turns_only else None,
            include_superseded=args.include_superseded,
        )

    def _question(self, args: RecallArgs, planned: _Planned, stats: RecallStats) -> Question:
        return Question(
            planned.query, planned.plan, args.scope, stats, self._depth(args), args.now, args.forced
        )

    def _result(
        self, args: RecallArgs, planned: _Planned, retrieval: Retrieval, started: float
    ) -> RecallResult:
        top = retrieval.ranked[: args.k]
        records = self._store.reads.get_memories(args.scope.namespace, [f.id for f in top])
        features = result_features([(f.terms, f.score) for f in top])
        coefficients = LEARNED_COEFFICIENTS if retrieval.learned else COEFFICIENTS
        # A superseded memory answers a question about the present less surely.
        stale = {} if retrieval.query.asks_past else retrieval.replaced
        hits = tuple(
            Hit(
                memory=records[f.id],
                score=f.score,
                sources=MappingProxyType({t.retriever.value: t.rank for t in f.terms}),
                confidence=confidence(x, coefficients)
                * (SUPERSEDED_WEIGHT if f.id in stale else 1.0),
            )
            for f, x in zip(top, features, strict=True)
            if f.id in records
        )
        timings = {**planned.timings, **retrieval.timings}
        timings["total"] = (time.perf_counter() - started) * 1000.0
        plan = _with_notes(planned.plan, retrieval)
        return RecallResult(
            hits, plan, retrieval.query, MappingProxyType(timings), recall_id=args.to_token()
        )

    def _resolver(self, stats: RecallStats) -> EntityResolver:
        """Built again only when the names change: after a write (the generation moved) the
        store's catalog is asked, and the same catalog it returns (a store caching it until
        a name changes) keeps the resolver, whose trigram index is costly to build."""
        namespace, generation = stats.namespace, stats.generation
        with self._lock:
            cached = self._resolvers.get(namespace)
            if cached is not None and cached[0] == generation:
                return cached[2]
        entries = self._store.reads.catalog(namespace)
        with self._lock:
            cached = self._resolvers.get(namespace)
            resolver = (
                cached[2]
                if cached is not None and cached[1] is entries
                else EntityResolver(entries)
            )
            self._resolvers[namespace] = (generation, entries, resolver)
        return resolver


def _label(model: LearnedModel) -> str:
    if model.turns_only:
        return "the packaged model (trained on LoCoMo conversations; for conversation turns)"
    if model.version == 0:
        return "the packaged facts model (trained on agent facts; for memories that are not turns)"
    user = model.report.get("user_id")
    return f"model v{model.version}" + ("" if user is None else f" of user {user!r}")


def _packaged_model(name: str, *, turns_only: bool) -> LearnedModel | None:
    """A model that ships with fivefold (``DEFAULT_MODEL``: trained on the public LoCoMo
    conversations; ``FACTS_MODEL``: on the dev users of the agent-facts benchmark), if this
    build carries it."""
    try:
        text = resources.files("fivefold").joinpath(name).read_text()
    except (FileNotFoundError, OSError):
        return None
    model = LearnedModel.from_json(text, version=0)
    return None if model is None else replace(model, turns_only=turns_only)


def _with_notes(plan: Plan, retrieval: Retrieval) -> Plan:
    """The plan's reasons, then the retrieval's notes. The model chosen is named as ranking
    only if it ranked: where the candidates are not conversation turns the conversation model
    gives way to the facts model (named instead) or the rules (none named); the retrieval's
    note says which."""
    reasons = tuple(r for r in plan.reasons if not r.startswith(LEARNED_RANKS))
    if retrieval.model is not None:
        reasons = (*reasons, f"{LEARNED_RANKS}{_label(retrieval.model)}")
    if not retrieval.notes and reasons == plan.reasons:
        return plan
    return replace(plan, reasons=(*reasons, *retrieval.notes))
