"""The read path after parsing and planning: run the plan's retrievers,
fuse, then the post-fusion policies in order: importance prior, forced type filter, temporal
post-filter, negation demotion, rewrites (a second semantic pass), cross-encoder rerank, MMR."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from fivefold.config import Config
from fivefold.embed.base import Embedder, Vectors
from fivefold.learn.model import Candidates, LearnedModel, candidate_features
from fivefold.read import history
from fivefold.read.cache import AttributeCache
from fivefold.read.demote import demote
from fivefold.read.favour import dated_within, spoken_by_named, when
from fivefold.read.fuse import Fused, apply_prior, boost, weighted_rrf
from fivefold.read.plan.rules import G, L, S, T, Y
from fivefold.read.query_vectors import QueryVectors
from fivefold.read.rankers import CONVERSATION_PROBE, codes_first, conversation_turns, window_first
from fivefold.read.rerank.base import Reranker
from fivefold.read.rerank.mmr import mmr_order
from fivefold.read.rerank.rewrite import RewriteError, feedback_rewrites, llm_rewrites
from fivefold.read.retrieve import (
    graph_search,
    lexical_search,
    match_confidence,
    semantic_search,
    temporal_search,
    type_list,
)
from fivefold.read.stats import RecallStats
from fivefold.store.protocol import Store
from fivefold.store.records import MemoryAttributes
from fivefold.types import (
    Budget,
    MemoryType,
    ParsedQuery,
    Plan,
    PlanName,
    RetrieverName,
    RetrieverRun,
    Scope,
    Scored,
    Supersession,
    TypeFilterMode,
)

# Fused candidates kept for the post-fusion policies: enough that a memory pushed down by
# demotion or a post-filter is replaced from below, few enough that each policy stays cheap.
POST_FUSION_DEPTH = 200
# Candidates' attributes kept across recalls: about 300 bytes each, 15 MB at the most.
MAX_ATTRIBUTES = 50_000


@dataclass(frozen=True, slots=True)
class Retrieval:
    query: ParsedQuery
    runs: tuple[RetrieverRun, ...]
    ranked: tuple[Fused, ...]
    demoted: frozenset[int]
    attributes: dict[int, MemoryAttributes]
    notes: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)
    # The learned model that ranked (None: the rules).
    model: LearnedModel | None = None
    # Per superseded memory kept in the ranking, the current memory that replaced it.
    replaced: dict[int, int] = field(default_factory=dict)

    @property
    def learned(self) -> bool:
        """A model ranked: its scores are probabilities (confidence reads them so)."""
        return self.model is not None


@dataclass(frozen=True, slots=True)
class Question:
    """What one recall asks of the pipeline: its parsed query, plan and scope, the tenant's
    statistics, how deep each retriever reads, the time "now" means and any forced types."""

    query: ParsedQuery
    plan: Plan
    scope: Scope
    stats: RecallStats
    depth: int
    now: datetime
    forced: tuple[MemoryType, ...] = ()


@dataclass(slots=True)
class _Clock:
    timings: dict[str, float] = field(default_factory=dict)

    def time(self, name: str, start: float) -> float:
        elapsed = (time.perf_counter() - start) * 1000.0
        self.timings[name] = self.timings.get(name, 0.0) + elapsed
        return elapsed


@dataclass(slots=True)
class _State:
    """What one recall accumulates on its way through the pipeline."""

    ask: Question
    query: ParsedQuery  # the ask's, with the rewrites once they are made
    clock: _Clock = field(default_factory=_Clock)
    model: LearnedModel | None = None
    otherwise: LearnedModel | None = None
    include_superseded: bool = True
    ranked_by: LearnedModel | None = None
    vectors: Vectors | None = None
    # The query's embedding while it is being computed (see ``_retrieve``).
    embedding: Future[Vectors | None] | None = None
    # The type filter the semantic and lexical legs ran with (after any widening).
    text_types: tuple[MemoryType, ...] = ()
    runs: list[RetrieverRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Memories' attributes read so far by this recall: the type leg's are fusion's too.
    attributes: dict[int, MemoryAttributes] = field(default_factory=dict)


class ReadPipeline:
    def __init__(
        self, store: Store, embedder: Embedder, config: Config, reranker: Reranker | None = None
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._query_vectors = QueryVectors(embedder)
        self._known = AttributeCache(MAX_ATTRIBUTES)
        self._config = config
        self._reranker = reranker

    def run(
        self,
        question: Question,
        *,
        budget: Budget = Budget.MID,
        model: LearnedModel | None = None,
        otherwise: LearnedModel | None = None,
        include_superseded: bool = True,
    ) -> Retrieval:
        """``model``: learned fusion ranks the candidates instead of the plan's RRF;
        ``otherwise``: what ranks where ``model`` ranks conversation turns only and the
        candidates are not turns (None: the rules)."""
        state = _State(
            question,
            question.query,
            model=model,
            otherwise=otherwise,
            include_superseded=include_superseded,
        )
        self._retrieve(state)
        if question.plan.rewrites:
            self._rewrite(state)
        ranked, attributes = self._fuse(state)
        ranked = self._post_filter(state, ranked, attributes)
        ranked, replaced = history.follow(
            ranked,
            attributes,
            lambda ids: self._attributes(state, ids),
            lambda ids: self._store.reads.replaced(state.ask.scope.namespace, ids),
            past=state.query.asks_past,
            include_superseded=state.include_superseded,
        )
        if not state.query.asks_past and self._config.write.supersede is Supersession.AUTO:
            ranked, moved = history.newer_first(
                ranked, state.attributes, self._store, state.ask.scope
            )
            if moved:
                state.notes.append(f"{moved} newer statement(s) of a change ranked above the older")
        attributes = state.attributes
        start = time.perf_counter()
        ranked, demoted = self._demote(state, ranked)
        state.clock.time("negation", start)
        if question.plan.rerank or budget is Budget.HIGH:
            ranked = self._rerank(state, ranked, asked=budget is Budget.HIGH)
        if question.plan.mmr:
            ranked = self._mmr(state, ranked)
        return Retrieval(
            state.query,
            tuple(state.runs),
            tuple(ranked),
            demoted,
            attributes,
            tuple(state.notes),
            state.clock.timings,
            state.ranked_by,
            replaced,
        )

    # -- retrievers -----------------------------------------------------------------------------
    def _retrieve(self, state: _State) -> None:
        """The legs of the plan. The embedding and the graph and temporal legs start first, on
        threads of their own (the model and the store's own reads leave the GIL, so they run
        on another core while the text legs run here), then the lexical leg (``_semantic_
        lexical``); the embedding is waited for only by the semantic leg. The runs keep the
        order semantic, lexical, type, graph, temporal."""
        wanted = set(state.ask.plan.retrievers)
        focus = state.query.focus
        if S in wanted and focus.strip():
            namespace = state.ask.scope.namespace
            # A query embedded before needs no thread: handing it over costs more than the look-up.
            state.vectors = self._query_vectors.cached(namespace, focus)
            if state.vectors is None:
                state.embedding = _leg_threads().submit(
                    self._embed_query, namespace, focus, state.clock
                )
        others = None
        if G in wanted or T in wanted:
            others = _leg_threads().submit(self._graph_temporal, state, wanted)
        try:
            self._text_legs(state, wanted)
        except BaseException:
            if others is not None:  # the walk is done before the text legs' error is raised
                futures.wait([others])
            raise
        state.runs.extend([] if others is None else others.result())

    def _vectors(self, state: _State) -> Vectors | None:
        """The query's embedding, once it is ready."""
        if state.embedding is not None:
            state.vectors, state.embedding = state.embedding.result(), None
        return state.vectors

    def _graph_temporal(self, state: _State, wanted: set[RetrieverName]) -> list[RetrieverRun]:
        runs: list[RetrieverRun] = []
        store, query = self._store, state.query
        if G in wanted:
            runs.append(
                _timed(
                    state.clock,
                    G,
                    lambda: graph_search(
                        store,
                        state.ask.scope,
                        query.entity_refs,
                        total=state.ask.stats.memories,
                        depth=self._depth(state, G),
                        now=state.ask.now,
                        config=self._config.graph,
                        multi_hop=query.multi_hop,
                        types=state.ask.forced,
                        frontier_cap=state.ask.plan.graph_frontier,
                    ),
                )
            )
        window = query.temporal_window
        events_allowed = not state.ask.forced or MemoryType.EVENT in state.ask.forced
        if T in wanted and window is not None and events_allowed:
            runs.append(
                _timed(
                    state.clock,
                    T,
                    lambda: temporal_search(
                        store.search, state.ask.scope, window, depth=self._depth(state, T)
                    ),
                )
            )
        return runs

    def _depth(self, state: _State, retriever: RetrieverName) -> int:
        return state.ask.plan.depths.get(retriever, state.ask.depth)

    def _text_legs(self, state: _State, wanted: set[RetrieverName]) -> None:
        """Semantic and lexical, type-filtered when a type filter is active, widened (filter
        dropped, both run again) when fewer than ``type_widen_below`` results survive, unless
        the caller forced the types."""
        hinted = state.query.type_hints if Y in wanted else ()
        types = state.ask.forced or hinted
        # Soft type filtering: no pre-filter; the type leg below still favours on-type memories.
        soft = not state.ask.forced and self._config.optimizer.type_filter is TypeFilterMode.SOFT
        prefilter = () if soft else tuple(types)
        state.text_types = prefilter
        legs = self._semantic_lexical(state, wanted, prefilter)
        notes: tuple[str, ...] = ()
        if prefilter and not state.ask.forced:
            found = {item.id for run in legs for item in run.items}
            if len(found) < self._config.retrieval.type_widen_below:
                notes = (f"widened: only {len(found)} results of type {[t.value for t in types]}",)
                state.text_types = ()
                legs = self._semantic_lexical(state, wanted, ())
        if types:
            start = time.perf_counter()
            kinds = None  # the legs admitted only these types: nothing to read
            if set(state.text_types) != set(types):
                ids = [item.id for run in legs for item in run.items]
                kinds = {i: a.type for i, a in self._attributes(state, ids).items()}
            items = type_list([run.items for run in legs], set(types), kinds)
            legs.append(RetrieverRun(Y, items, state.clock.time(Y.value, start), notes))
        state.runs.extend(legs)

    def _semantic_lexical(
        self, state: _State, wanted: set[RetrieverName], types: Sequence[MemoryType]
    ) -> list[RetrieverRun]:
        legs, query = [], state.query
        lexical = None
        if L in wanted:
            hints = [t for hint in query.predicate_hints for t in hint.split()]
            # On a thread of its own, so the semantic leg (after the embedding) runs beside it
            # rather than after it: on Postgres both wait on the server, and their waits
            # would add up. It waits for no other task.
            lexical = _leg_threads().submit(
                _timed,
                state.clock,
                L,
                lambda: lexical_search(
                    self._store.search,
                    state.ask.stats,
                    state.ask.scope,
                    query.terms,
                    hint_terms=hints,
                    depth=self._depth(state, L),
                    types=types,
                    max_term_share=self._config.lexical.max_term_share,
                    weights=self._config.bm25_weights(),
                ),
            )
        try:
            vectors = self._vectors(state) if S in wanted else None
            if vectors is not None:
                legs.append(self._semantic(state, vectors, types))
        except BaseException:
            if lexical is not None:  # done before the semantic leg's error is raised
                futures.wait([lexical])
            raise
        if lexical is not None:
            legs.append(lexical.result())
        return legs

    def _semantic(
        self, state: _State, vectors: Vectors, types: Sequence[MemoryType]
    ) -> RetrieverRun:
        return _timed(
            state.clock,
            S,
            lambda: semantic_search(
                self._store.search,
                state.ask.scope,
                vectors,
                depth=self._depth(state, S),
                types=types,
            ),
        )

    def _embed_query(self, namespace: str, text: str, clock: _Clock) -> Vectors:
        start = time.perf_counter()
        vectors = self._query_vectors.embed(namespace, text)
        clock.time("embed", start)
        return vectors

    def _embed(self, texts: Sequence[str], clock: _Clock) -> Vectors | None:
        texts = [t for t in texts if t.strip()]
        if not texts:
            return None
        start = time.perf_counter()
        vectors = self._embedder.embed(texts)
        clock.time("embed", start)
        return vectors

    # -- rewrites -------------------------------------------------------------------------------
    def _rewrite(self, state: _State) -> None:
        """Second semantic pass over 2-3 rephrasings; each memory keeps its best cosine over
        the original and the rewrites."""
        start = time.perf_counter()
        rewrites = self._rewrites(state)
        state.clock.time("rewrite", start)
        if not rewrites or state.vectors is None:
            return
        extra = self._embed(rewrites, state.clock)
        if extra is None:
            return
        vectors = np.vstack([state.vectors, extra])
        state.vectors = vectors
        state.query = replace(state.query, rewrites=rewrites)
        for position, run in enumerate(state.runs):
            if run.name is S:
                state.runs[position] = self._semantic(state, vectors, state.text_types)

    def _rewrites(self, state: _State) -> tuple[str, ...]:
        config = self._config.rewrite
        focus = state.query.focus
        if config.endpoint:
            try:
                return llm_rewrites(focus, config)
            except RewriteError as exc:
                state.notes.append(f"{exc}; used feedback rewrites")
        first, _ = self._fuse(state)
        top = self._store.reads.get_memories(
            state.ask.scope.namespace, [f.id for f in first[: config.feedback_docs]]
        )
        documents = [top[f.id].content for f in first[: config.feedback_docs] if f.id in top]
        return feedback_rewrites(
            focus, documents, frequencies=state.ask.stats.frequencies, config=config
        )

    def candidates(self, question: Question) -> Candidates:
        """The candidates learned fusion would rank for this recall, with their features (what
        ``Memory.train`` fits on)."""
        state = _State(question, question.query)
        self._retrieve(state)
        fused = self._rule_fused(state)
        attributes = self._store.reads.attributes(state.ask.scope.namespace, [f.id for f in fused])
        return self._candidates(state, fused, attributes)

    # -- fusion and post-fusion policies --------------------------------------------------------
    def _attributes(self, state: _State, ids: Sequence[int]) -> dict[int, MemoryAttributes]:
        """``ids``' attributes (those still stored), each read once per recall."""
        known = state.attributes
        missing = [i for i in ids if i not in known]
        if missing:
            namespace, generation = state.ask.scope.namespace, state.ask.stats.generation
            known.update(self._known.get(namespace, generation, missing))
            missing = [i for i in missing if i not in known]
            if missing:
                found = self._store.reads.attributes(namespace, missing)
                self._known.put(namespace, generation, found)
                known.update(found)
        return {i: known[i] for i in ids if i in known}

    def _rule_fused(self, state: _State) -> list[Fused]:
        fusion = self._config.fusion
        fused = weighted_rrf(
            state.runs,
            state.ask.plan.weights,
            k=state.ask.plan.fusion_k or fusion.k,
            multi_hop_factor=fusion.graph_multi_hop_weight,
        )
        # A memory whose every list gave it confidence 0 (a cosine clipped at 0) has no
        # evidence for it: it is not a result, even when nothing else is.
        return [f for f in fused if f.score > 0.0]

    def _candidates(
        self, state: _State, fused: Sequence[Fused], attributes: Mapping[int, MemoryAttributes]
    ) -> Candidates:
        ids = [f.id for f in fused]
        own: dict[int, float] = {}
        if state.query.terms and ids:
            own = match_confidence(
                self._store.search,
                state.ask.stats,
                state.ask.scope,
                state.query.terms,
                ids,
                max_term_share=self._config.lexical.max_term_share,
                weights=self._config.own_text_weights(),
            )
        return candidate_features(
            state.runs,
            ids,
            attributes,
            spoken=spoken_by_named(state.query, attributes),
            window=state.query.temporal_window,
            own_text=own,
        )

    def _fuse(self, state: _State) -> tuple[list[Fused], dict[int, MemoryAttributes]]:
        start = time.perf_counter()
        fused = self._rule_fused(state)
        model = self._ranker(state, fused)
        if model is not None:
            # The model weighs importance and the speaker itself: no prior or boost after.
            attributes = self._attributes(state, [f.id for f in fused])
            candidates = self._candidates(state, fused, attributes)
            terms = {f.id: f.terms for f in fused}
            ranked = [
                Fused(i, score, terms[i]) for i, score in model.rank(candidates)[:POST_FUSION_DEPTH]
            ]
            if model is state.otherwise and state.ask.plan.name is PlanName.TEMPORAL:
                ranked = window_first(ranked, dated_within(state.query, attributes))
            read = functools.partial(self._store.reads.get_memories, state.ask.scope.namespace)
            ranked = codes_first(ranked, state.query.original, state.runs, read)
            state.ranked_by = model
            state.clock.time("fuse", start)
            return ranked, attributes
        fusion = self._config.fusion
        fused = fused[:POST_FUSION_DEPTH]
        attributes = self._attributes(state, [f.id for f in fused])
        importance = {i: a.importance for i, a in attributes.items()}
        ranked = apply_prior(fused, importance, fusion.importance_floor)
        ranked = boost(ranked, spoken_by_named(state.query, attributes), fusion.speaker_boost)
        ranked = boost(ranked, dated_within(state.query, attributes), fusion.window_boost)
        state.clock.time("fuse", start)
        return ranked, attributes

    def _ranker(self, state: _State, fused: Sequence[Fused]) -> LearnedModel | None:
        """The model that ranks these candidates (None: the rules). A model for conversation
        turns looks at the ten best candidates first (one small read); where most are not
        turns, ``otherwise`` ranks."""
        model = state.model
        if model is None or not model.turns_only:
            return model
        probe = fused[:CONVERSATION_PROBE]
        if not probe or conversation_turns(probe, self._attributes(state, [f.id for f in probe])):
            return model
        ranks = "the rules rank" if state.otherwise is None else "the facts model ranks"
        state.notes.append(f"the candidates are not conversation turns: {ranks}")
        return state.otherwise

    def _post_filter(
        self, state: _State, ranked: list[Fused], attributes: dict[int, MemoryAttributes]
    ) -> list[Fused]:
        if state.ask.forced:
            ranked = [
                f
                for f in ranked
                if f.id in attributes and attributes[f.id].type in state.ask.forced
            ]
        window = state.query.temporal_window
        if state.ask.plan.temporal_post_filter and window is not None:
            inside = [
                f
                for f in ranked
                if f.id in attributes and window.start <= when(attributes[f.id]) <= window.end
            ]
            if inside:
                ranked = inside
            else:
                state.notes.append("temporal post-filter kept nothing; results left unfiltered")
        return ranked

    def _demote(self, state: _State, ranked: list[Fused]) -> tuple[list[Fused], frozenset[int]]:
        return demote(
            self._store,
            state.ask.stats,
            state.ask.scope,
            state.query,
            ranked,
            threshold=self._config.retrieval.negation_threshold,
            max_term_share=self._config.lexical.max_term_share,
            weights=self._config.own_text_weights(),
        )

    def _rerank(self, state: _State, ranked: list[Fused], *, asked: bool) -> list[Fused]:
        """``asked``: the caller's budget asked for it; an exploratory plan's rerank is opt-in
        (``rerank.model_path``), so without a model it passes unremarked."""
        if self._reranker is None:
            if asked:
                state.notes.append(
                    "rerank requested but no cross-encoder is configured (rerank.model_path)"
                )
            return ranked
        start = time.perf_counter()
        depth = self._config.rerank.depth
        head, tail = ranked[:depth], ranked[depth:]
        records = self._store.reads.get_memories(state.ask.scope.namespace, [f.id for f in head])
        scores = self._reranker.score(
            state.query.focus, [records[f.id].content if f.id in records else "" for f in head]
        )
        order = sorted(range(len(head)), key=lambda i: (-scores[i], head[i].id))
        state.clock.time("rerank", start)
        return [head[i] for i in order] + tail

    def _mmr(self, state: _State, ranked: list[Fused]) -> list[Fused]:
        start = time.perf_counter()
        config = self._config.mmr
        head, tail = ranked[: config.depth], ranked[config.depth :]
        vectors = self._store.search.vectors(state.ask.scope.namespace, [f.id for f in head])
        order = mmr_order(
            [f.id for f in head],
            [f.score for f in head],
            vectors,
            lambda_=config.lambda_,
            limit=len(head),
        )
        by_id = {f.id: f for f in head}
        state.clock.time("mmr", start)
        return [by_id[i] for i in order] + tail


@functools.cache
def _leg_threads() -> ThreadPoolExecutor:
    """Where query embeddings, graph walks and lexical searches run while the semantic leg
    queries the store (the model, SQLite and the Postgres driver all release the GIL): a
    recall waits for the longest, not their sum. One pool for the process, made on first use;
    a few concurrent recalls do not queue, and no task waits for another, so a full pool only
    delays."""
    return ThreadPoolExecutor(max_workers=8, thread_name_prefix="fivefold-leg")


def _timed(
    clock: _Clock, name: RetrieverName, run: Callable[[], tuple[Scored, ...]]
) -> RetrieverRun:
    start = time.perf_counter()
    items = run()
    return RetrieverRun(name, items, clock.time(name.value, start))
