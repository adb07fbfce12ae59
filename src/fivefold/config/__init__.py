"""Frozen settings and their defaults.

The library never reads files or the environment on its own; entry points (the CLI, later the
servers) build a ``Config`` and hand it to ``Memory.open``. A default that is a choice says
beside it why it is what it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from fivefold.config.rules import (
    InvalidSetting,
    check_fields,
    constraint_broken,
    provider_broken,
)
from fivefold.types import (
    Budget,
    ColumnWeights,
    Dedup,
    LearnedScope,
    OptimizerMode,
    RetrieverName,
    Supersession,
    TypeFilterMode,
)


@dataclass(frozen=True, slots=True)
class TemporalConfig:
    """Windows for fuzzy expressions: "recently"/"lately" = the last 30 days,
    "a few months ago" = 90 to 30 days ago."""

    recent_days: int = 30
    few_months_from_days: int = 90
    few_months_to_days: int = 30

    def __post_init__(self) -> None:
        check_fields(self, "temporal")


@dataclass(frozen=True, slots=True)
class LexicalConfig:
    """BM25 column weights. A predicate term counts 4x a content term: the predicate names
    the relation a memory states, a sharper signal than any one word of its text. With session
    context on, the lexical leg scores the memory's window (which holds its content) in place
    of its content column, so ``content_weight`` weighs own-text matches only: negation,
    learned fusion's own-text feature, and the leg when ``context.window = 0``."""

    predicate_weight: float = 4.0
    content_weight: float = 1.0
    # A query term in more than this share of the store (and in more than 1,000 memories) is
    # left out of the BM25 MATCH when a rarer term is there to match: FTS5 scores every
    # document an OR-ed term matches, and a term in 5 % of the store weighs a quarter of one in
    # 10 memories of 100k. 1.0 keeps all.
    max_term_share: float = 0.05

    def __post_init__(self) -> None:
        check_fields(self, "lexical")


@dataclass(frozen=True, slots=True)
class WriteConfig:
    """Bounds on one write, so no call holds the write lock for long. A memory links at most
    ``max_entities`` names (the first ones, in the order given or found; a longer list given by
    the caller is refused), and co-mention edges join only the first ``max_comention_entities``
    of them: 2,000 names would otherwise be 2 million edges in one transaction.

    ``durable`` (the embedded store): a write returns once its commit is synced to disk
    (SQLite ``synchronous = FULL``), so a power cut loses no write that returned; False
    (``NORMAL``): a killed process still loses nothing, a power cut or an operating system
    crash can lose the last commits, and a bulk load runs faster (one sync of the WAL a batch
    less). A Postgres store follows its server's ``synchronous_commit``.

    ``dedup``: an exact repeat of a stored memory (``Dedup``) writes nothing and is counted as
    seen again. ``supersede``: a memory that gives a new value for what an older memory of its
    scope states marks it superseded (``Supersession``)."""

    max_entities: int = 64
    max_comention_entities: int = 16
    durable: bool = True
    dedup: Dedup = Dedup.EXACT
    supersede: Supersession = Supersession.AUTO

    def __post_init__(self) -> None:
        check_fields(self, "write")


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

    # Chosen on held-out recalls (BENCHMARKS.md). The window is scored alone beside the
    # predicate: it holds the memory's own text, which a content column would count twice.
    window: int = 2
    lexical_weight: float = 1.0
    vector_near: float = 0.25
    vector_far: float = 0.25

    def __post_init__(self) -> None:
        check_fields(self, "context")


@dataclass(frozen=True, slots=True)
class GraphConfig:
    """Hop scores and edge priors of the graph walk."""

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
    # the memories is weak evidence. Off = the bare formula, where such an entity floods the
    # list with hop-0 memories at confidence 1.0.
    rarity_weighting: bool = True
    # New entities kept per hop: a hub (a speaker named in half the corpus) must not drag the
    # whole graph into the next hop. A tighter cap costs the balanced plan recall (it walks
    # from hubs); the optimizer's plans, which do not, use optimizer.graph_frontier.
    frontier_cap: int = 64

    def __post_init__(self) -> None:
        check_fields(self, "graph")


@dataclass(frozen=True, slots=True)
class FusionConfig:
    """Score-weighted RRF: ``w * sqrt(c) / (k + rank)``, so a retriever's confidence counts
    beside its rank."""

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
    # final = fused * (importance_floor + (1 - importance_floor) * importance): importance
    # tilts the order, and an unimportant memory keeps most of its score.
    importance_floor: float = 0.7
    # A memory spoken by a person the query names scores x (1 + speaker_boost): "what did
    # Caroline say about ..." prefers Caroline's own turns. 0 turns it off. Chosen on
    # held-out conversations (BENCHMARKS.md).
    speaker_boost: float = 1.0
    # A memory dated inside the query's time window scores x (1 + window_boost): the window
    # as a soft boost for the legs that do not filter by it ("what changed since we last
    # talked?": the semantic and lexical legs' finds inside the window first). Learned fusion
    # weighs it as a feature of its own instead. 0.5 is enough to put such answers first and
    # costs other questions less than a larger boost (BENCHMARKS.md).
    window_boost: float = 0.5

    def __post_init__(self) -> None:
        check_fields(self, "fusion")


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

    def __post_init__(self) -> None:
        check_fields(self, "retrieval")


class GraphVectors(StrEnum):
    """How the embedded store's HNSW graph holds its vectors. ``i8``: a byte per dimension,
    its candidates re-scored exactly from the index's half-precision copy; ``f16``: two bytes
    per dimension, re-scored the same way."""

    I8 = "i8"
    F16 = "f16"


@dataclass(frozen=True, slots=True)
class IndexConfig:
    """Exact numpy search below this many vectors in a namespace, HNSW (usearch) above it."""

    hnsw_threshold: int = 20_000
    hnsw_connectivity: int = 16
    hnsw_expansion_add: int = 128
    # Where the 10th and 11th neighbours differ by a thousandth in cosine (the latency
    # benchmark's 100k store), a search of 64 found 90 % of the exact top 10, 128 found 96 % and
    # 256 found 98 %, with i8 or f16 alike. A recall asks for its depth (100 at "mid", twice
    # that re-scored), so it searched 200 wide already.
    hnsw_expansion_search: int = 256
    # Bytes: at a million memories an f16 graph beside the index's own copy of the vectors
    # holds about 1.8 GB, an i8 one 1.4 GB. Re-scored from the copy, the i8 graph found as
    # many of the exact top 10 as the f16 one (BENCHMARKS.md).
    hnsw_vectors: GraphVectors = GraphVectors.I8

    def __post_init__(self) -> None:
        check_fields(self, "index")


@dataclass(frozen=True, slots=True)
class OptimizerConfig:
    """Rule DAG thresholds (``read/plan/rules.py``) and plan knobs."""

    # Learned fusion over the rule optimizer's plans by default: with the packaged models (one
    # for conversation turns, one for other memories) it ranks better than the rules on
    # conversations and users it never saw (BENCHMARKS.md), until a namespace trains its own.
    mode: OptimizerMode = OptimizerMode.LEARNED
    precise_threshold: float = 0.8
    exploratory_threshold: float = 0.4
    entity_confidence_min: float = 0.85
    # Rule 4 of the plan DAG: lexical rarity >= 0.8 (a rare term, such as an identifier)
    # promotes the precision plan.
    precision_rarity: float = 0.8
    # Entity-centric queries that ask for an attribute ("Sarah's manager") may skip the
    # embedding call (graph + BM25 are pure SQL), at or above this specificity. Off by default:
    # skipping loses recall on those questions to save one cheap embedding call.
    skip_embedding_for_attributes: bool = False
    entity_skip_embedding_min: float = 0.45
    # The graph weighs the same as the other legs in entity-centric plans: weighing it more
    # lost recall on the questions routed there.
    entity_graph_weight: float = 1.0
    # An entity anchors the entity-centric plan only if it is specific: ln(N/df)/ln(N) at least
    # this. A speaker named in half the memories resolves with confidence 1.0 but anchors
    # nothing: the walk from it reaches half the store.
    entity_anchor_min_specificity: float = 0.3
    # Outside entity-centric plans the graph leg runs only if some query entity is at least
    # this specific: a walk from a name that every other memory carries ranks half the store
    # on rank alone, which costs recall and time.
    graph_min_specificity: float = 0.3
    # The RRF constant of the optimizer's plans. k = 60 (the balanced plan's) spreads rank 1
    # and rank 50 only 1.8x, so a rank-1 BM25 hit for an identifier is buried under memories
    # both text legs found somewhere; k = 10 keeps a leg's top hits on top.
    fusion_k: int = 10
    # Entities kept per hop of the graph walk in the optimizer's plans (graph.frontier_cap is
    # the balanced plan's). Its plans walk only from specific entities, where a tighter cap
    # loses no recall and keeps the graph leg fast on a large store.
    graph_frontier: int = 16
    precise_semantic_depth: int = 20
    # Feature quantization step: plans are chosen on a quantized feature vector.
    quantum: float = 0.05
    # Rewrites cost a second fusion and an embedding call for a small gain in recall, so they
    # are opt-in.
    rewrites: bool = False
    # MMR diversity in exploratory plans (mmr.lambda sets how much). Opt-in: it reorders most
    # top-10s without a gain in recall, and costs time.
    mmr: bool = False
    # Filtering on types the engine inferred (hard drops, soft demotes) punishes a wrong guess
    # and lost recall on exploratory questions: off by default.
    type_filter: TypeFilterMode = TypeFilterMode.OFF

    def __post_init__(self) -> None:
        check_fields(self, "optimizer")


@dataclass(frozen=True, slots=True)
class LearnedConfig:
    """Training learned fusion (``Memory.train``): how many recalls with feedback a model
    needs (30 examples before a learned plan is trusted), how many parts are held out in turn
    to compare the model with the rules (``holdout_every``: of the users, or of one user's
    recalls), the ridge penalty, whose model it is (``scope``) and the most of a namespace
    model's training recalls any one user may give (``max_user_share``)."""

    min_feedback: int = 30
    holdout_every: int = 5
    l2: float = 1.0
    scope: LearnedScope = LearnedScope.NAMESPACE
    # A third: with three users or more, two others together always outweigh any one, so one
    # user's feedback never sets the model alone; with two, each gives half at most.
    max_user_share: float = 1 / 3

    def __post_init__(self) -> None:
        check_fields(self, "learned")


@dataclass(frozen=True, slots=True)
class CacheConfig:
    """Result cache (Mode B): TTL 30 s, 1,000 entries, LRU."""

    ttl_seconds: float = 30.0
    max_entries: int = 1000

    def __post_init__(self) -> None:
        check_fields(self, "cache")


class RerankProvider(StrEnum):
    """What scores the rerank: a local cross-encoder folder, or a ``/rerank`` endpoint of the
    shape Cohere, Jina and the servers that copy them answer."""

    ONNX = "onnx"
    HTTP = "http"


@dataclass(frozen=True, slots=True)
class RerankConfig:
    """Rerank of the top ``depth`` fused candidates (20-50: the model pays for every candidate
    it reads), for exploratory plans and budget "high". No model ships. ``onnx``:
    ``model_path`` names a local directory (ONNX + tokenizer.json); none: no rerank. ``http``:
    ``POST {url}/rerank`` with ``model``; the API key is read from the environment variable
    named by ``api_key_env`` (none: no key is sent)."""

    provider: RerankProvider = RerankProvider.ONNX
    model_path: str | None = None
    depth: int = 30
    max_tokens: int = 256
    url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    # Shorter than an embedding endpoint's: a recall waits on it, and one request is one recall.
    timeout_s: float = 10.0
    # Retries of a request answered 429 or 5xx, or not answered in time, with backoff.
    retries: int = 2

    def __post_init__(self) -> None:
        check_fields(self, "rerank")
        broken = provider_broken(self, "rerank")
        if broken is not None:
            raise InvalidSetting(*broken)


@dataclass(frozen=True, slots=True)
class MMRConfig:
    """Maximal marginal relevance: ``lambda * relevance - (1 - lambda) * redundancy``."""

    lambda_: float = 0.7
    depth: int = 50

    def __post_init__(self) -> None:
        check_fields(self, "mmr")


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

    def __post_init__(self) -> None:
        check_fields(self, "rewrite")


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
    # One worker: on two cores a second serves no more (BENCHMARKS.md), each holds its own
    # model and index, and a write in one makes the other reload its dense index. More workers
    # pay off with more cores.
    workers: int = 1
    # Requests a worker runs at once on its threads (the rest wait in its event loop).
    threads: int = 2
    max_body_bytes: int = 1_048_576
    max_k: int = 100
    max_batch: int = 1000
    # Word pieces a worker's local model embeds at once across its requests (texts times
    # padded length of the batches running): two of the model's largest batches.
    max_inflight_tokens: int = 8192
    metrics: MetricsAccess = MetricsAccess.AUTO

    def __post_init__(self) -> None:
        check_fields(self, "serve")


class EmbedProvider(StrEnum):
    """Where embeddings come from: the packaged model, a local ONNX folder, an
    OpenAI-compatible ``/embeddings`` endpoint (vLLM, Ollama, LM Studio, OpenAI), or a local
    sentence-transformers folder (the ``st`` extra: torch)."""

    MINILM = "minilm"
    ONNX = "onnx"
    OPENAI = "openai"
    SENTENCE_TRANSFORMERS = "sentence-transformers"


class Pooling(StrEnum):
    """How a local ONNX model's token vectors become one: their mean over real tokens (the
    sentence-transformers recipe of most models) or the first token's (BGE, E5 with CLS)."""

    MEAN = "mean"
    CLS = "cls"


@dataclass(frozen=True, slots=True)
class EmbedConfig:
    """The embedding model. A store records the model it was built with and refuses another
    (``fivefold reembed`` moves it). ``minilm`` is the packaged int8 MiniLM, offline.
    ``onnx``: ``path`` names a folder with a ``*.onnx`` model and its ``tokenizer.json``
    (``dim`` is read from the model). ``openai``: ``POST {url}/embeddings`` with ``model``,
    vectors of ``dim`` numbers; the API key is read from the environment variable named by
    ``api_key_env`` (none: no key is sent, as a local server needs none).
    ``sentence-transformers``: ``path`` names a model folder as ``SentenceTransformer.save``
    writes it (``dim`` is read from the model)."""

    provider: EmbedProvider = EmbedProvider.MINILM
    path: str | None = None
    pooling: Pooling = Pooling.MEAN
    # The packaged model's limit; a model trained on longer texts can take more.
    max_tokens: int = 256
    url: str | None = None
    model: str | None = None
    # The openai provider's, to check every answer by; an onnx model's is read from it.
    dim: int = 0
    api_key_env: str | None = None
    batch_size: int = 64
    timeout_s: float = 30.0
    # Retries of a request answered 429 or 5xx, or not answered in time, with backoff.
    retries: int = 3

    def __post_init__(self) -> None:
        check_fields(self, "embed")
        broken = provider_broken(self, "embed")
        if broken is not None:
            raise InvalidSetting(*broken)


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
    embed: EmbedConfig = field(default_factory=EmbedConfig)
    default_importance: float = 0.5

    def __post_init__(self) -> None:
        check_fields(self, "")
        for name, window in self.namespace_temporal.items():
            if (
                not isinstance(name, str)
                or not name.strip()
                or not isinstance(window, TemporalConfig)
            ):
                raise InvalidSetting(
                    "temporal.namespaces",
                    "expected a non-empty name -> TemporalConfig per namespace",
                )
        broken = constraint_broken(self)
        if broken is not None:
            raise InvalidSetting(*broken)

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
