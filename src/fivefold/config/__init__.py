"""Frozen settings with the seeds' defaults.

The library never reads files or the environment on its own; entry points (the CLI, later the
servers) build a ``Config`` and hand it to ``Memory.open``. Every number here is named after the
seed or DESIGN section that fixes it, so a reader can check it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from fivefold.types import Budget, ColumnWeights, OptimizerMode, RetrieverName, TypeFilterMode


@dataclass(frozen=True, slots=True)
class TemporalConfig:
    """Windows for fuzzy expressions (seed 000): "recently"/"lately" = the last 30 days,
    "a few months ago" = 90 to 30 days ago."""

    recent_days: int = 30
    few_months_from_days: int = 90
    few_months_to_days: int = 30


@dataclass(frozen=True, slots=True)
class LexicalConfig:
    """BM25 column weights. Seed 000 states the intent that a predicate term counts 4x a
    content term (its A/B letters say the opposite; DESIGN follows the intent). With session
    context on, the lexical leg scores the memory's window (which holds its content) in place
    of its content column, so ``content_weight`` weighs own-text matches only: negation,
    learned fusion's own-text feature, and the leg when ``context.window = 0``."""

    predicate_weight: float = 4.0
    content_weight: float = 1.0
    # A query term in more than this share of the store (and in more than 1,000 memories) is
    # left out of the BM25 MATCH when a rarer term is there to match: FTS5 scores every
    # document an OR-ed term matches, and a term in 5 % of the store weighs a quarter of one in
    # 10 memories of 100k. On the 100k synthetic store: lexical p95 47 -> 13 ms. 1.0 keeps all.
    max_term_share: float = 0.05


@dataclass(frozen=True, slots=True)
class WriteConfig:
    """Bounds on one write, so no call holds the write lock for long. A memory links at most
    ``max_entities`` names (the first ones, in the order given or found; a longer list given by
    the caller is refused), and co-mention edges join only the first ``max_comention_entities``
    of them: 2,000 names would otherwise be 2 million edges in one transaction.

    ``durable`` (the embedded store): a write returns once its commit is synced to disk
    (SQLite ``synchronous = FULL``), so a power cut loses no write that returned; False
    (``NORMAL``): a killed process still loses nothing, a power cut or an operating system
    crash can lose the last commits, and a bulk load at 1M memories runs ~10 % faster (one sync
    of ~45 MB of WAL a batch less). A Postgres store follows its server's
    ``synchronous_commit``."""

    max_entities: int = 64
    max_comention_entities: int = 16
    durable: bool = True


@dataclass(frozen=True, slots=True)
class ContextConfig:
    """Session context (``store/context.py``): a memory with a ``session_id`` is indexed with
    its neighbours in the session, up to ``window`` places away (0: no context, 1 or 2).
    ``lexical_weight``: the BM25 weight of a memory's window (its own text with its
    neighbours', one field: BM25F with the neighbours' terms counted 1/2 at distance 1 and 1/4
    at distance 2), read at query time; 0 scores the memory's own columns instead.
    ``vector_*``: the neighbours' weights in the searched embedding, ``own + near x d1 + far x
    d2`` re-normalised. ``window`` and ``vector_*`` apply when a memory is written: a store
    written with others is re-indexed when opened."""

    # The window's term weights are the quality issue's held-out choice; scoring the window
    # alone (no separate content column) beside the predicate was chosen on LoCoMo
    # (BENCHMARKS); vector weights from the held-out experiments.
    window: int = 2
    lexical_weight: float = 1.0
    vector_near: float = 0.25
    vector_far: float = 0.25


@dataclass(frozen=True, slots=True)
class GraphConfig:
    """Hop scores and edge priors of seed 000 / DESIGN §2."""

    hop_scores: tuple[float, ...] = (1.0, 0.6, 0.35, 0.15)
    structural_prior: float = 1.0
    semantic_prior: float = 0.9
    lifecycle_prior: float = 1.0
    expired_freshness: float = 0.3
    max_hops: int = 2
    multi_hop_max_hops: int = 3
    # Below this resolution confidence every candidate entity is a traversal root.
    ambiguous_below: float = 0.7
    # Scale each entity's score by its specificity, ln(N/df)/ln(N): a speaker named in half
    # the memories is weak evidence (DESIGN §2). Off = DESIGN's bare formula, where such an
    # entity floods the list with hop-0 memories at confidence 1.0 (LoCoMo: -10.9 R@10).
    rarity_weighting: bool = True
    # New entities kept per hop: a hub (a speaker named in half the corpus) must not drag the
    # whole graph into the next hop. 16 cost the balanced plan 1.5 points of R@10 on LoCoMo
    # (it walks from hubs); the optimizer's plans, which do not, use optimizer.graph_frontier.
    frontier_cap: int = 64


@dataclass(frozen=True, slots=True)
class FusionConfig:
    """Score-weighted RRF (seed 000): ``w * sqrt(c) / (k + rank)``."""

    k: int = 60
    weights: Mapping[RetrieverName, float] = field(
        default_factory=lambda: MappingProxyType(
            {
                RetrieverName.SEMANTIC: 1.0,
                RetrieverName.LEXICAL: 1.0,
                RetrieverName.GRAPH: 1.0,
                RetrieverName.TEMPORAL: 1.0,
                RetrieverName.TYPE: 1.0,
            }
        )
    )
    graph_multi_hop_weight: float = 0.8
    temporal_speculative_weight: float = 0.5
    # final = fused * (importance_floor + (1 - importance_floor) * importance)  (seed 002)
    importance_floor: float = 0.7
    # A memory spoken by a person the query names scores x (1 + speaker_boost): "what did
    # Caroline say about ..." prefers Caroline's own turns. 0 turns it off. LoCoMo: chosen on
    # four of the seven conversations; R@10 on the other three 69.9 -> 70.7 (BENCHMARKS).
    speaker_boost: float = 1.0
    # A memory dated inside the query's time window scores x (1 + window_boost): the window
    # as a soft boost for the legs that do not filter by it ("what changed since we last
    # talked?": the semantic and lexical legs' finds inside the window first). Learned fusion
    # weighs it as a feature of its own instead. LoCoMo, rules: 0.5 -> R@10 -0.1, 1.0 -> -0.4;
    # the demo's "since we last talked" answer first with either (BENCHMARKS).
    window_boost: float = 0.5


@dataclass(frozen=True, slots=True)
class RetrievalConfig:
    """Candidate depth per retriever for each recall budget, and the type filter's widening."""

    depth: Mapping[Budget, int] = field(
        default_factory=lambda: MappingProxyType(
            {Budget.LOW: 50, Budget.MID: 100, Budget.HIGH: 200}
        )
    )
    type_widen_below: int = 5
    negation_threshold: float = 0.6


@dataclass(frozen=True, slots=True)
class IndexConfig:
    """Exact numpy search below this many vectors in a namespace, HNSW (usearch) above it."""

    hnsw_threshold: int = 20_000
    hnsw_connectivity: int = 16
    hnsw_expansion_add: int = 128
    hnsw_expansion_search: int = 64


@dataclass(frozen=True, slots=True)
class OptimizerConfig:
    """Rule DAG thresholds (seed 004's read_pipeline.optimizer.rule block) and plan knobs."""

    # Learned fusion over the rule optimizer's plans by default: with the packaged model (for
    # conversation turns) it beats the rules on LoCoMo by 2.9 points of R@10 held out (76.5
    # against 73.6, each conversation ranked by a model that never saw it); on other memories,
    # until a namespace trains its own model, the rules rank, as in "rule" mode.
    mode: OptimizerMode = OptimizerMode.LEARNED
    precise_threshold: float = 0.8
    exploratory_threshold: float = 0.4
    entity_confidence_min: float = 0.85
    # DESIGN rule 4: lexical rarity >= 0.8 promotes the precision plan.
    precision_rarity: float = 0.8
    # Seed 004: entity-centric queries that ask for an attribute ("Sarah's manager") skip the
    # embedding call (graph + BM25 are pure SQL), at or above this specificity. Off by default:
    # on LoCoMo skipping cost 3 points of R@10 on the 230 entity-centric questions, to save
    # one ~4 ms embedding call.
    skip_embedding_for_attributes: bool = False
    entity_skip_embedding_min: float = 0.45
    # Seed 004 weighs the graph 2.0 in entity-centric plans; on LoCoMo that cost 9-11 points
    # of R@10 on the 230 questions routed there against 1.0 (the equal weight of DESIGN).
    entity_graph_weight: float = 1.0
    # An entity anchors the entity-centric plan only if it is specific: ln(N/df)/ln(N) at least
    # this. A speaker named in half the memories resolves with confidence 1.0 but anchors
    # nothing (LoCoMo: routing such questions entity-centric cost 20 points of R@10).
    entity_anchor_min_specificity: float = 0.3
    # Outside entity-centric plans the graph leg runs only if some query entity is at least
    # this specific: a walk from a name that every other memory carries ranks half the store
    # on rank alone (LoCoMo: ungated cost 2.0 points of R@10 and 1.5 ms a recall).
    graph_min_specificity: float = 0.3
    # The RRF constant of the optimizer's plans. DESIGN's k = 60 (the balanced plan) spreads
    # rank 1 and rank 50 only 1.8x, so a rank-1 BM25 hit for an identifier is buried under
    # memories both text legs found somewhere. On LoCoMo k = 60 in these plans cost 4.7 points
    # of R@10 (p < 0.001); k = 10 also won on either half of its conversations.
    fusion_k: int = 10
    # Entities kept per hop of the graph walk in the optimizer's plans (graph.frontier_cap is
    # the balanced plan's). Its plans walk only from specific entities, where 16 changed LoCoMo
    # R@10 by -0.1 (n.s.) and cut the graph leg of the 100k synthetic store's entity questions
    # from 26 to 8 ms at the median.
    graph_frontier: int = 16
    precise_semantic_depth: int = 20
    # Feature quantization step: plans are chosen on a quantized feature vector.
    quantum: float = 0.05
    # Rewrites cost a second fusion and an embedding call (~110 ms on LoCoMo) for +0.5 R@10
    # there, so they are opt-in.
    rewrites: bool = False
    # MMR diversity in exploratory plans (DESIGN; mmr.lambda sets how much). Opt-in: on LoCoMo
    # it changed 651 of 1,039 top-10s for -0.2 points of R@10 (n.s.) and 0.5 ms a recall.
    mmr: bool = False
    # DESIGN's hard pre-filter on types the engine inferred cost 1.4 points of R@10 on LoCoMo's
    # exploratory questions (soft: 0.75; off: +0.5 against the balanced plan): off by default.
    type_filter: TypeFilterMode = TypeFilterMode.OFF


@dataclass(frozen=True, slots=True)
class LearnedConfig:
    """Training learned fusion (``Memory.train``): how many recalls with feedback a namespace
    needs (seed 004: 30 examples before a learned plan is trusted), which of them are held out
    to compare the model with the rules (every ``holdout_every``-th), and the ridge penalty."""

    min_feedback: int = 30
    holdout_every: int = 5
    l2: float = 1.0


@dataclass(frozen=True, slots=True)
class CacheConfig:
    """Result cache (Mode B, seed 004): TTL 30 s, 1,000 entries, LRU."""

    ttl_seconds: float = 30.0
    max_entries: int = 1000


@dataclass(frozen=True, slots=True)
class RerankConfig:
    """Cross-encoder rerank over the top ``depth`` fused candidates (DESIGN: 20-50), for
    exploratory plans and budget "high". No model ships; ``model_path`` names a local
    directory (ONNX + tokenizer.json, or a sentence-transformers model)."""

    model_path: str | None = None
    depth: int = 30
    max_tokens: int = 256


@dataclass(frozen=True, slots=True)
class MMRConfig:
    """Maximal marginal relevance: ``lambda * relevance - (1 - lambda) * redundancy``."""

    lambda_: float = 0.7
    depth: int = 50


@dataclass(frozen=True, slots=True)
class RewriteConfig:
    """Query rewrites for specificity < 0.8: offline pseudo-relevance feedback by default, or
    an OpenAI-compatible chat endpoint when ``endpoint`` is set."""

    count: int = 3
    feedback_docs: int = 3
    terms_per_rewrite: int = 4
    endpoint: str | None = None
    model: str | None = None
    # Filled by entry points (the CLI reads FIVEFOLD_LLM_API_KEY); the library reads no env.
    api_key: str | None = field(default=None, repr=False)
    timeout_seconds: float = 5.0


class MetricsAccess(StrEnum):
    """Who reads ``/metrics``: the whole server's counts (every tenant's writes and recalls
    over time, failed keys, the store's size), so not any tenant. ``auto``: served on a server
    without keys (loopback only), not on one with keys."""

    AUTO = "auto"
    OPEN = "open"  # without a key, on a server with keys too: keep tenants from reaching it
    OFF = "off"


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """``fivefold serve``: where it listens and what one request may ask. API keys are not
    settings: they live in the same file's ``[[keys]]`` tables (``fivefold keys``)."""

    host: str = "127.0.0.1"
    port: int = 8420
    # One worker: on the 2-vCPU bench machine two workers served no more (84 against 83
    # requests/s, BENCHMARKS.md), each holds its own model and index, and a write in one makes
    # the other reload its dense index. More workers pay off with more cores.
    workers: int = 1
    # Requests a worker runs at once on its threads (the rest wait in its event loop).
    threads: int = 2
    max_body_bytes: int = 1_048_576
    max_k: int = 100
    max_batch: int = 1000
    metrics: MetricsAccess = MetricsAccess.AUTO


@dataclass(frozen=True, slots=True)
class Config:
    temporal: TemporalConfig = field(default_factory=TemporalConfig)
    namespace_temporal: Mapping[str, TemporalConfig] = field(
        default_factory=lambda: MappingProxyType({})
    )
    lexical: LexicalConfig = field(default_factory=LexicalConfig)
    context: ContextConfig = field(default_factory=ContextConfig)
    write: WriteConfig = field(default_factory=WriteConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    fusion: FusionConfig = field(default_factory=FusionConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    learned: LearnedConfig = field(default_factory=LearnedConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    mmr: MMRConfig = field(default_factory=MMRConfig)
    rewrite: RewriteConfig = field(default_factory=RewriteConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)
    default_importance: float = 0.5

    def temporal_for(self, namespace: str) -> TemporalConfig:
        return self.namespace_temporal.get(namespace, self.temporal)

    def bm25_weights(self) -> ColumnWeights:
        """The lexical leg's column weights: the predicate and the memory's window where
        memories carry context (``context.window`` > 0: the window holds the memory's own
        text, so its content column is not scored again), else predicate and content."""
        if self.context.window > 0 and self.context.lexical_weight > 0.0:
            return ColumnWeights(
                predicate=self.lexical.predicate_weight,
                content=0.0,
                context=self.context.lexical_weight,
            )
        return self.own_text_weights()

    def own_text_weights(self) -> ColumnWeights:
        """A memory's own columns only: what it says, not what its session neighbours say
        (negation, and whether a hit matched through its context)."""
        return ColumnWeights(
            predicate=self.lexical.predicate_weight, content=self.lexical.content_weight
        )
