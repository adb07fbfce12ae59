"""What each setting of the TOML file means, one sentence a key, keyed by its dotted name.

The configuration reference of the docs is generated from this table and the defaults of
``fivefold.config``; a test fails when a setting has no entry here, or an entry names no setting.
A table keyed by retriever or budget (``fusion.weights``, ``retrieval.depth``) has one entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["MEANINGS"]

MEANINGS: Mapping[str, str] = MappingProxyType(
    {
        "default_importance": "Importance (0 to 1) of a memory written without one; the "
        "fusion score is multiplied by the importance prior built from it.",
        # [temporal]
        "temporal.recent_days": '"recently" and "lately" in a query mean the last this many days.',
        "temporal.few_months_from_days": '"a few months ago" starts this many days before now.',
        "temporal.few_months_to_days": '"a few months ago" ends this many days before now.',
        "temporal.namespaces": "A table per namespace (`[temporal.namespaces.NAME]`) with the "
        "same keys, overriding `[temporal]` for that namespace; keys it leaves out come from "
        "`[temporal]`.",
        # [lexical]
        "lexical.predicate_weight": "BM25 weight of the predicate field: a predicate term counts "
        "this many times a content term.",
        "lexical.content_weight": "BM25 weight of a memory's own text; with session context on, "
        "used for own-text matches only (negation, learned fusion's own-text feature), or for "
        "the leg itself when `context.window = 0`.",
        "lexical.max_term_share": "A query term in more than this share of a store (and in more "
        "than 1,000 memories) is left out of the BM25 query when a rarer term remains; 1.0 keeps "
        "every term.",
        # [context]
        "context.window": "Session neighbours a memory with a `session_id` is indexed with, up "
        "to this many places away in write order (0, 1 or 2; 0 indexes every memory alone).",
        "context.lexical_weight": "BM25 weight of a memory's window (its text with its "
        "neighbours', theirs counted 1/2 at distance 1 and 1/4 at distance 2); 0 scores the "
        "memory's own columns instead.",
        "context.vector_near": "Weight of the neighbours at distance 1 in the searched "
        "embedding (own + near x d1 + far x d2, normalised); a change re-indexes the store on "
        "open.",
        "context.vector_far": "Weight of the neighbours at distance 2 in the searched embedding.",
        # [write]
        "write.max_entities": "Names one memory links at most; a longer `entities=` list given "
        "by the caller is refused.",
        "write.max_comention_entities": "Co-mention edges join only the first this many names of "
        "a memory.",
        "write.durable": "SQLite syncs each commit to disk (`synchronous = FULL`), so a power cut "
        "loses no write that returned; false: a killed process still loses none, a power cut can "
        "lose the last commits, and bulk loads run faster. Postgres follows its server's "
        "`synchronous_commit`.",
        "write.dedup": '"exact": a write that repeats a stored memory of its scope exactly '
        "(whitespace and case folded, nothing new) writes nothing and is counted as seen again; "
        'conversation turns are always stored. "off" stores every write.',
        "write.supersede": '"auto": a memory that gives a new value for what a current memory '
        'of its scope states marks the older one superseded (nothing is deleted). "off": only '
        "when the caller says so (`supersedes=`, `supersede`).",
        # [graph]
        "graph.hop_scores": "Score of a memory reached at 0, 1, 2 and 3 hops from a query entity.",
        "graph.structural_prior": "Prior of a structural edge (reports_to, part_of, ...) in the "
        "walk.",
        "graph.semantic_prior": "Prior of a semantic edge (co-mentions, inferred associations) "
        "in the walk.",
        "graph.lifecycle_prior": "Prior of a lifecycle edge (with validity dates) in the walk.",
        "graph.expired_freshness": "Factor on a lifecycle edge after its `valid_to`.",
        "graph.max_hops": "Hops the walk takes from a query entity.",
        "graph.multi_hop_max_hops": "Hops the walk takes for a query read as multi-hop.",
        "graph.ambiguous_below": "Below this resolution confidence every candidate entity of a "
        "name is a root of the walk, each weighted by its confidence.",
        "graph.rarity_weighting": "Scale each entity's score by its specificity "
        "ln(N/df)/ln(N), so a name most memories carry is weak evidence.",
        "graph.frontier_cap": "New entities kept per hop of the balanced plan's walk (the "
        "optimizer's plans use `optimizer.graph_frontier`).",
        # [fusion]
        "fusion.k": 'The RRF constant of the balanced plan (`optimizer.mode = "off"`): each '
        "term is w x sqrt(confidence) / (k + rank).",
        "fusion.weights": "A table, `[fusion.weights]`: the weight w of each retriever's terms "
        "(`semantic`, `lexical`, `graph`, `temporal`, `type`); a retriever left out keeps its "
        "default.",
        "fusion.graph_multi_hop_weight": "Factor on the weight of a graph hit reached over one "
        "hop or more.",
        "fusion.temporal_speculative_weight": "Accepted and validated; no ranking reads it today.",
        "fusion.importance_floor": "The importance prior is floor + (1 - floor) x importance: "
        "an unimportant memory keeps this share of its score.",
        "fusion.speaker_boost": "A memory spoken by a person the query names scores x (1 + "
        "this); 0 turns it off.",
        "fusion.window_boost": "A memory dated inside the query's time window scores x (1 + "
        "this); 0 turns it off.",
        # [retrieval]
        "retrieval.depth": "A table, `[retrieval.depth]`: candidates each retriever returns, by "
        "recall budget (`low`, `mid`, `high`).",
        "retrieval.type_widen_below": "The type filter run on the optimizer's hints is widened "
        "when fewer than this many results survive it.",
        "retrieval.negation_threshold": "A memory whose own text matches a negated phrase of the "
        "query with a squashed BM25 score above this is moved to the bottom.",
        # [index]
        "index.hnsw_threshold": "Exact numpy search below this many vectors in a namespace, an "
        "HNSW graph (usearch; pgvector on Postgres) above it.",
        "index.hnsw_connectivity": "HNSW connectivity (M) of the embedded store's graph.",
        "index.hnsw_expansion_add": "HNSW expansion factor when adding to the embedded store's "
        "graph.",
        "index.hnsw_expansion_search": "HNSW expansion factor when searching the embedded "
        "store's graph.",
        "index.hnsw_vectors": '"i8" (default): the embedded store\'s HNSW graph holds a byte '
        'per dimension; "f16": two. Either way its candidates are re-scored from the index\'s '
        "half-precision copy of the vectors; below `index.hnsw_threshold` nothing changes "
        "(exact search on float32).",
        # [optimizer]
        "optimizer.mode": '"learned" (default): a namespace\'s trained model ranks, else a '
        "packaged one: the conversation model where most candidates are conversation turns, "
        "the facts model elsewhere (under the embedder it was fit with, else the rules); "
        '"rule": the rule optimizer picks a plan per query; "cached": the rules behind a result '
        'cache; "off": the balanced plan (every retriever, equal weights, `fusion.k`) for '
        "every query.",
        "optimizer.precise_threshold": "Query specificity at or above which the precise plan is "
        "chosen.",
        "optimizer.exploratory_threshold": "Query specificity below which the exploratory plan "
        "is chosen.",
        "optimizer.entity_confidence_min": "Entity resolution confidence above which a query "
        "may take the entity-centric plan.",
        "optimizer.precision_rarity": "Lexical rarity (a rare term such as an identifier) at or "
        "above which the precision plan is chosen.",
        "optimizer.skip_embedding_for_attributes": "Let entity-centric queries that ask for an "
        "attribute skip the embedding call (graph and BM25 only).",
        "optimizer.entity_skip_embedding_min": "Specificity at or above which "
        "`skip_embedding_for_attributes` applies.",
        "optimizer.entity_graph_weight": "Weight of the graph leg in entity-centric plans.",
        "optimizer.entity_anchor_min_specificity": "An entity anchors the entity-centric plan "
        "only if its specificity ln(N/df)/ln(N) is at least this.",
        "optimizer.graph_min_specificity": "Outside entity-centric plans the graph leg runs "
        "only if some query entity is at least this specific.",
        "optimizer.fusion_k": "The RRF constant of the optimizer's plans (`fusion.k` is the "
        "balanced plan's).",
        "optimizer.graph_frontier": "New entities kept per hop of the graph walk in the "
        "optimizer's plans.",
        "optimizer.precise_semantic_depth": "Candidates of the semantic leg in the precise plan.",
        "optimizer.quantum": "Plans are chosen on the query's features rounded to this step.",
        "optimizer.rewrites": "Run query rewrites in exploratory plans (opt-in: a second fusion "
        "and an embedding call).",
        "optimizer.mmr": "Reorder exploratory plans' results for diversity with MMR (opt-in).",
        "optimizer.type_filter": 'Filter on the types the optimizer infers from the query: "off" '
        '(default), "hard" (drop other types) or "soft" (demote them). A `types=` given by the '
        "caller always filters.",
        # [learned]
        "learned.min_feedback": "Distinct recalls with feedback a model needs before "
        "`train` fits it.",
        "learned.holdout_every": "Parts held out in turn to compare the model with the rules: "
        "of the users (each part ranked by a model fit on the others' feedback), or every "
        "this-many-th recall of one user's or the namespace's own feedback.",
        "learned.l2": "Ridge penalty of the logistic regression.",
        "learned.scope": '"namespace" (default): one model ranks every user of the namespace, '
        'accepted only if it beats the rules for users it was not fit on; "user": a model per '
        "user, fit on that user's feedback alone.",
        "learned.max_user_share": "The most of a namespace model's training recalls any one "
        "user may give (never below an equal share); a user past it keeps their newest.",
        # [cache]
        "cache.ttl_seconds": 'Seconds a cached result lives (`optimizer.mode = "cached"`); any '
        "write in the namespace invalidates it sooner.",
        "cache.max_entries": "Results the cache keeps (least recently used out); 0 disables it.",
        # [rerank]
        "rerank.provider": '"onnx" (default): a local cross-encoder folder (`model_path`); '
        '"http": a Cohere/Jina-style `/rerank` endpoint.',
        "rerank.model_path": "onnx: a local cross-encoder folder (ONNX + tokenizer.json), "
        'relative to the config file; "" (default): no rerank. No model ships with fivefold.',
        "rerank.depth": "Fused candidates the cross-encoder rescores.",
        "rerank.max_tokens": "onnx: tokens of query and memory the cross-encoder reads.",
        "rerank.url": "http: the API's base URL; fivefold posts to `{url}/rerank`.",
        "rerank.model": "http: the model named in each request.",
        "rerank.api_key_env": "http: the environment variable that holds the API key, read "
        "when the store is opened (unset: an error); none: no key is sent.",
        "rerank.timeout_s": "http: seconds to wait for an answer before trying again.",
        "rerank.retries": "http: retries of a request answered 429 or 5xx or not answered in "
        "time; then the recall fails with a RerankerError.",
        # [mmr]
        "mmr.lambda": "MMR's trade-off: lambda x relevance - (1 - lambda) x redundancy.",
        "mmr.depth": "Candidates MMR reorders.",
        # [rewrite]
        "rewrite.count": "Rewrites made of one query.",
        "rewrite.feedback_docs": "Top results the offline rewrites take their terms from.",
        "rewrite.terms_per_rewrite": "Terms each offline rewrite adds.",
        "rewrite.endpoint": 'An OpenAI-compatible chat endpoint that writes the rewrites; "" '
        "(default): offline pseudo-relevance feedback. Its API key comes from "
        "`FIVEFOLD_LLM_API_KEY`, never from the file.",
        "rewrite.model": "The model the rewrite endpoint is asked for.",
        "rewrite.timeout_seconds": "Seconds to wait for the rewrite endpoint.",
        # [serve]
        "serve.host": "Address `fivefold serve` binds; without API keys only a loopback "
        "address is accepted.",
        "serve.port": "Port `fivefold serve` listens on.",
        "serve.workers": "Worker processes, each with its own engine on the same store.",
        "serve.threads": "Requests one worker runs at once.",
        "serve.max_body_bytes": "Largest request body (413 above it).",
        "serve.max_k": "Largest `k` a recall may ask for (422 above it).",
        "serve.max_batch": "Most items in one batch write (413 above it).",
        "serve.max_inflight_tokens": "Word pieces (texts times padded length) a worker's local "
        "model embeds at once across its requests; a larger request is embedded in batches "
        "that wait their turn, and one batch larger than the budget runs alone.",
        "serve.metrics": 'Who reads `/metrics`: "auto" (served without keys on a server '
        'without keys, not on one with keys), "open" (always, without a key), "off".',
        # [embed]
        "embed.provider": '"minilm" (default): the packaged int8 all-MiniLM-L6-v2, offline; '
        '"onnx": a local ONNX model; "sentence-transformers": a local sentence-transformers '
        'folder (extra `st`); "openai": an OpenAI-compatible `/embeddings` endpoint.',
        "embed.path": "onnx: a folder with a `*.onnx` model and its `tokenizer.json`; "
        "sentence-transformers: a folder as `SentenceTransformer.save` writes it; relative to "
        "the config file.",
        "embed.pooling": 'onnx: "mean" of the token vectors over real tokens, or "cls" (the '
        "first token's).",
        "embed.max_tokens": "onnx: tokens of a text the model reads.",
        "embed.url": "openai: the API's base URL; fivefold posts to `{url}/embeddings`.",
        "embed.model": "openai: the model named in each request.",
        "embed.dim": "openai: the dimension every answer's vectors must have (an onnx model's "
        "is read from the model).",
        "embed.api_key_env": "openai: the environment variable that holds the API key, read "
        'when the store is opened; "": no key is sent.',
        "embed.batch_size": "Texts embedded per request or batch.",
        "embed.timeout_s": "openai: seconds to wait for an answer before trying again.",
        "embed.retries": "openai: retries of a request answered 429 or 5xx or not answered in "
        "time, with backoff.",
    }
)
