"""Value types shared by every layer: frozen, slotted dataclasses and string enums.

Nothing in here does I/O. Layers pass these objects to each other instead of dicts, so a field
renamed in one place is a type error everywhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Any


class MemoryType(StrEnum):
    FACT = "fact"
    PREFERENCE = "preference"
    EVENT = "event"
    ENTITY = "entity"


class RetrieverName(StrEnum):
    SEMANTIC = "semantic"
    LEXICAL = "lexical"
    GRAPH = "graph"
    TEMPORAL = "temporal"
    TYPE = "type"


class PlanName(StrEnum):
    PRECISE = "precise"
    ENTITY_CENTRIC = "entity_centric"
    TEMPORAL = "temporal"
    PRECISION = "precision"
    EXPLORATORY = "exploratory"
    BALANCED = "balanced"


class EdgeKind(StrEnum):
    """Structural edges are org charts and memberships; semantic edges are co-mentions and
    inferred associations; lifecycle edges end (``valid_to``) and fade once they have."""

    STRUCTURAL = "structural"
    SEMANTIC = "semantic"
    LIFECYCLE = "lifecycle"


class OptimizerMode(StrEnum):
    """``rule``: the rule DAG picks a plan per query (Mode A). ``cached``: the same, with the
    result cache in front (Mode B). ``off``: every recall runs the balanced plan (the baseline
    the benchmark compares the optimizer against). ``learned``: every retriever with inputs
    runs and a model trained on feedback ranks their candidates (Mode C, ``learned.py``); the
    rules answer where no model is trained."""

    RULE = "rule"
    CACHED = "cached"
    OFF = "off"
    LEARNED = "learned"


class LearnedScope(StrEnum):
    """Whose feedback a learned model is fit on and whose recalls it ranks. ``namespace``: one
    model for every user of the namespace, accepted only if it beats the rules for users whose
    feedback it was not fit on. ``user``: each user a model of their own, fit on their
    feedback alone; a user without one is ranked by the namespace's model, or the rules."""

    NAMESPACE = "namespace"
    USER = "user"


class TypeFilterMode(StrEnum):
    """How the optimizer's type hints act. ``hard``: a pre-filter on the semantic and
    lexical legs (widened below 5 results). ``soft``: no pre-filter; the type leg only adds
    fusion weight to on-type memories. ``off``: hints are reported but not used."""

    HARD = "hard"
    SOFT = "soft"
    OFF = "off"


class Dedup(StrEnum):
    """``exact``: a memory that repeats a stored one exactly (same text after whitespace and
    case folding, same scope, nothing new) writes nothing; ``off``: every write is stored."""

    EXACT = "exact"
    OFF = "off"


class Supersession(StrEnum):
    """``auto``: a new memory that gives a new value for what an older one of its scope states
    supersedes it (and explicit ``supersedes=``); ``off``: only what the caller says."""

    AUTO = "auto"
    OFF = "off"


class Budget(StrEnum):
    LOW = "low"
    MID = "mid"
    HIGH = "high"


class Resolution(StrEnum):
    """How a name in a query was matched to an entity, strongest first."""

    EXACT = "exact"
    ALIAS = "alias"
    PARTIAL = "partial"
    FUZZY = "fuzzy"


@dataclass(frozen=True, slots=True)
class Scope:
    """Who may see a memory. ``namespace`` is the tenant wall; ``user_id`` and ``agent_id``
    narrow it when set. ``None`` in a recall scope means "do not filter on this field"."""

    namespace: str = "default"
    user_id: str | None = None
    agent_id: str | None = None

    def admits(self, namespace: str, user_id: str | None, agent_id: str | None) -> bool:
        """Whether a memory written with these scope fields is visible in this scope."""
        return (
            namespace == self.namespace
            and self.user_id in (None, user_id)
            and self.agent_id in (None, agent_id)
        )


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    id: int
    content: str
    type: MemoryType
    predicate: str | None
    event_at: datetime | None
    created_at: datetime
    entities: tuple[str, ...]
    importance: float
    namespace: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    speaker: str | None = None
    # Its history: how often it was said (an exact repeat writes nothing new) and when last;
    # the memory that superseded it and from when (None: it is current).
    seen: int = 1
    last_seen_at: datetime | None = None
    superseded_by: int | None = None
    valid_to: datetime | None = None
    # False when ``remember`` found it already stored (an exact repeat): nothing was written.
    # A fact of the call, not of the memory: records of one memory compare equal either way.
    created: bool = field(default=True, compare=False)


@dataclass(frozen=True, slots=True)
class Entity:
    id: int
    namespace: str
    name: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Edge:
    id: int
    namespace: str
    source: str
    relation: str
    target: str
    kind: EdgeKind
    confidence: float
    valid_from: datetime | None
    valid_to: datetime | None
    memory_id: int | None = None


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A closed interval ``[start, end]`` of timezone-aware datetimes parsed from text.

    ``precision`` says how narrow the expression was (1.0 a single day, lower for weeks,
    months, years and fuzzy phrases); the optimizer reads it as the temporal feature.
    """

    start: datetime
    end: datetime
    expression: str
    precision: float


@dataclass(frozen=True, slots=True)
class EntityRef:
    """A name in the query resolved to an entity of the store, with how sure we are."""

    text: str
    entity_id: int
    name: str
    confidence: float
    resolution: Resolution


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """Stage 1's reading of a query. ``focus`` is the text with negated clauses removed (what
    the embedding sees); ``terms`` are its BM25 terms; ``type_hints`` and ``specificity`` are
    filled by the optimizer, never by the parser."""

    original: str
    focus: str = ""
    terms: tuple[str, ...] = ()
    rewrites: tuple[str, ...] = ()
    entity_refs: tuple[EntityRef, ...] = ()
    temporal_window: TimeWindow | None = None
    predicate_hints: tuple[str, ...] = ()
    type_hints: tuple[MemoryType, ...] = ()
    negations: tuple[str, ...] = ()
    # The entities the negated clauses name: memories about them are demoted too.
    negated_entities: tuple[EntityRef, ...] = ()
    specificity: float = 0.0
    multi_hop: bool = False
    # It asks about the past ("before", "used to", "my old ...", a window that has ended):
    # a statement superseded since may answer it.
    asks_past: bool = False


@dataclass(frozen=True, slots=True)
class Scored:
    """One entry of a retriever's ranked list: the currency every retriever pays in.

    ``hops`` is set by the graph retriever only (0 for a memory that names a query entity);
    fusion weighs direct and multi-hop graph evidence differently.
    """

    id: int
    confidence: float
    hops: int | None = None


@dataclass(frozen=True, slots=True)
class RetrieverRun:
    name: RetrieverName
    items: tuple[Scored, ...]
    elapsed_ms: float
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Plan:
    """What one recall runs. ``depths`` overrides the budget's candidate depth per retriever
    (the precise plan's "semantic top 20"); ``fusion_k`` the RRF constant of ``fusion.k``;
    ``graph_frontier`` the graph walk's ``graph.frontier_cap``."""

    name: PlanName
    retrievers: tuple[RetrieverName, ...]
    weights: Mapping[RetrieverName, float]
    rerank: bool = False
    mmr: bool = False
    rewrites: bool = False
    temporal_post_filter: bool = False
    reasons: tuple[str, ...] = ()
    depths: Mapping[RetrieverName, int] = field(default_factory=lambda: MappingProxyType({}))
    fusion_k: int | None = None
    # Entities kept per hop of the graph walk; None: graph.frontier_cap.
    graph_frontier: int | None = None


@dataclass(frozen=True, slots=True)
class FusionTerm:
    retriever: RetrieverName
    rank: int
    confidence: float
    weight: float
    contribution: float


@dataclass(frozen=True, slots=True)
class Hit:
    memory: MemoryRecord
    score: float
    sources: Mapping[str, int]
    # Calibrated estimate in [0, 1] that this memory answers the query (fivefold.read.calibrate).
    confidence: float = 0.0


@dataclass(frozen=True, slots=True)
class RecallResult:
    hits: tuple[Hit, ...]
    plan: Plan
    query: ParsedQuery
    timings: Mapping[str, float]
    cached: bool = False
    # Hits left out because their confidence was below ``min_confidence``: "nothing stored
    # matches" (0 hits, 0 dropped) and "nothing cleared the bar" (0 hits, n dropped) differ.
    dropped: int = 0
    # The handle ``Memory.feedback`` takes: the recall itself, encoded (any process can use it).
    recall_id: str = ""


@dataclass(frozen=True, slots=True)
class ExplainedHit:
    id: int
    content: str
    fused: float
    importance: float
    final: float
    demoted: bool
    terms: tuple[FusionTerm, ...]
    # The lexical leg matched it only through its session neighbours' text, not its own.
    via_context: bool = False


@dataclass(frozen=True, slots=True)
class Explanation:
    query: ParsedQuery
    features: Mapping[str, float]
    plan: Plan
    runs: tuple[RetrieverRun, ...]
    hits: tuple[ExplainedHit, ...]
    timings: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Counts (of one namespace when asked for one) and the store's size on disk, in all
    (``size_bytes``) and by part (``parts``: SQLite's database file with its WAL, the lexical
    index folder and the dense index folder; Postgres: its tables with their indexes)."""

    memories: int
    entities: int
    edges: int
    namespaces: Mapping[str, int]
    types: Mapping[str, int]
    embedding_model: str
    size_bytes: int
    location: str
    parts: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TrainReport:
    """What ``Memory.train`` did: on how many recalls it fit, recall@10 of the new model and of
    the rules on the held-out ones, and whether it was accepted (it ranks from now on) or not
    (the rules, or the model before it, keep ranking).

    ``user_id``: whose model it is (None: the namespace's). ``users``: how many users' feedback
    it was fit on; ``held_out_users``: how many were held out in turn, each scored by a model
    fit on the others' (0: held out by recall, one user's feedback alone), recall@10 then the
    mean over those users. ``capped``: recalls left out so that no user gives more than
    ``learned.max_user_share``. ``note``: why a model that beat the rules was not accepted.
    ``per_user``: with ``learned.scope = "user"``, each user's report (the fields above add them
    up, and average their recall@10)."""

    namespace: str
    recalls: int
    held_out: int
    model_recall: float
    rules_recall: float
    accepted: bool
    version: int
    user_id: str | None = None
    users: int = 1
    held_out_users: int = 0
    capped: int = 0
    note: str = ""
    per_user: tuple[TrainReport, ...] = ()


@dataclass(frozen=True, slots=True)
class Finding:
    """One part of a store as ``fivefold doctor`` found it (and, with repair, left it)."""

    part: str
    ok: bool
    detail: str
    repaired: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ColumnWeights:
    """BM25 weights of a memory's own columns and of its ``window``: its own text with its
    session neighbours' (``store/context.py``, ``WINDOW_REPEATS``), scored as one field (0
    leaves it out). The lexical retriever chooses them; every backend applies them the same
    way."""

    predicate: float
    content: float
    context: float = 0.0
