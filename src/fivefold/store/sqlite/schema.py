"""The SQLite schema and the statements the embedded store reads and keeps it with (those of the
write path are ``write_sql.py``'s), defined once.

Scope columns (``user_id``, ``agent_id``) hold ``''`` for "none" rather than NULL: NULLs are
distinct in UNIQUE constraints and need ``IS`` instead of ``=`` in filters, and both would make
the scope checks easier to get wrong.

The lexical index lives beside the file, one tantivy index per namespace (``lexical.py``),
kept in step through ``lexical_log``.

Derived columns (``context.py``): ``memories.context_near`` / ``context_far`` hold the text
of a session memory's neighbours at distance 1 and 2, which the lexical index scores with the
memory's own text as its window (its own columns keep their statistics); ``vectors.context``
its embedding smoothed with
theirs, which the dense index searches (NULL without neighbours: ``embedding`` is searched).
``vectors.embedding`` stays the memory's own embedding.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from fivefold.store.shared.rows import COMENTION as COMENTION  # one name for both backends

SCHEMA_VERSION = 10
# Rows of one namespace among a list of ids (``id_list``): the unary ``+`` keeps SQLite from
# answering through an index on the namespace (which reads every row of the namespace) rather
# than looking each id up.
BY_ID = "+namespace = ? AND id IN (SELECT value FROM json_each(?))"


def id_list(ids: Sequence[int]) -> str:
    """Ids as one parameter, read by ``json_each``."""
    return json.dumps([int(i) for i in ids])


SCHEMA_VERSION_OF = "SELECT value FROM meta WHERE key = 'schema_version'"

# Learned fusion (learned.py): feedback on recalls (the query and its arguments, and which
# memories answered it; a forgotten memory's labels go with it) and the models trained from it,
# versioned per namespace; only an accepted model ranks.
LEARNING_DDL = """
CREATE TABLE IF NOT EXISTS feedback (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace  TEXT NOT NULL,
    query      TEXT NOT NULL,
    args       TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS feedback_namespace ON feedback(namespace, id);
CREATE TABLE IF NOT EXISTS feedback_labels (
    feedback_id INTEGER NOT NULL REFERENCES feedback(id) ON DELETE CASCADE,
    memory_id   INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    label       REAL NOT NULL,
    PRIMARY KEY (feedback_id, memory_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS feedback_labels_memory ON feedback_labels(memory_id);
CREATE TABLE IF NOT EXISTS models (
    namespace  TEXT NOT NULL,
    version    INTEGER NOT NULL,
    accepted   INTEGER NOT NULL,
    created_at REAL NOT NULL,
    payload    TEXT NOT NULL,
    PRIMARY KEY (namespace, version)
);
"""
# A model may be one user's (``learned.scope = "user"``): '' is the namespace's. Versions still
# count per namespace. Made apart from ``LEARNING_DDL``, which schema 4 -> 5 runs as it was.
MODEL_USERS_DDL = (
    "ALTER TABLE models ADD COLUMN user_id TEXT NOT NULL DEFAULT ''",
    "CREATE INDEX IF NOT EXISTS models_user ON models(namespace, user_id, version)",
)

# An edge's strength, as graph.py documents it: a co-mention seen n times has confidence
# 1 - 0.5^n (1 << n is 2^n: SQLite's math functions are optional), any other edge its own. The
# graph walk reads each entity's strongest edges first through an index on it.
STRENGTH = (
    f"CASE WHEN relation = '{COMENTION}' "
    "THEN 1.0 - 1.0 / (1 << min(max(support, 1), 62)) ELSE confidence END"
)
# The names a namespace resolves (its entities and aliases) change far less often than its
# memories: a process caches them until ``catalog_version`` moves, which these triggers move on
# any change of either table (the namespace's ``generation``, which every write moves, made a
# bulk write read the whole catalog again each batch). A namespace without a row reads 0.
# Listed one by one, as ``VECTOR_LOG_DDL``: a trigger body holds ';'.
CATALOG_TRIGGERS = tuple(
    f"""CREATE TRIGGER IF NOT EXISTS {table}_{name}_catalog AFTER {event} ON {table} BEGIN
        INSERT INTO namespaces (namespace) VALUES ({row}.namespace)
        ON CONFLICT (namespace) DO UPDATE SET catalog_version = catalog_version + 1;
    END"""
    for table, columns in (("entities", "name, norm"), ("aliases", "norm, alias, entity_id"))
    for name, event, row in (
        ("insert", "INSERT", "NEW"),
        ("delete", "DELETE", "OLD"),
        ("update", f"UPDATE OF {columns}", "NEW"),
    )
)
CATALOG_VERSION = "SELECT catalog_version FROM namespaces WHERE namespace = ?"

# What a memory's history keeps: the key an exact repeat is found by (none for a conversation
# turn), how often it was said and when last, and the memory that superseded it, from when,
# and why. A slot is what a memory states a value of ("user|residence"): the older memories
# of a scope sharing one are those a new memory may supersede.
MEMORY_HISTORY_COLUMNS = """repeat_key  TEXT,
    seen        INTEGER NOT NULL DEFAULT 1,
    last_seen_at REAL,
    superseded_by INTEGER,
    valid_to    REAL,
    supersession TEXT"""
HISTORY_DDL = """
CREATE INDEX IF NOT EXISTS memories_repeat
    ON memories(namespace, user_id, agent_id, repeat_key) WHERE repeat_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_superseded
    ON memories(superseded_by) WHERE superseded_by IS NOT NULL;
CREATE TABLE IF NOT EXISTS slots (
    namespace TEXT NOT NULL,
    user_id   TEXT NOT NULL,
    agent_id  TEXT NOT NULL,
    slot      TEXT NOT NULL,
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    PRIMARY KEY (namespace, user_id, agent_id, slot, memory_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS slots_memory ON slots(memory_id);
"""

DDL = f"""
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS memories (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace   TEXT NOT NULL,
    user_id     TEXT NOT NULL DEFAULT '',
    agent_id    TEXT NOT NULL DEFAULT '',
    session_id  TEXT,
    content     TEXT NOT NULL,
    predicate   TEXT,
    type        TEXT NOT NULL,
    event_at    REAL,
    created_at  REAL NOT NULL,
    importance  REAL NOT NULL,
    metadata    TEXT NOT NULL DEFAULT '{{}}',
    speaker     TEXT,
    context_near TEXT NOT NULL DEFAULT '',
    context_far  TEXT NOT NULL DEFAULT '',
    {MEMORY_HISTORY_COLUMNS}
);
CREATE INDEX IF NOT EXISTS memories_scope ON memories(namespace, user_id, agent_id);
CREATE INDEX IF NOT EXISTS memories_event_at ON memories(namespace, type, event_at);
CREATE INDEX IF NOT EXISTS memories_session
    ON memories(namespace, user_id, agent_id, session_id) WHERE session_id IS NOT NULL;
{HISTORY_DDL}
CREATE TABLE IF NOT EXISTS vectors (
    memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    embedding BLOB NOT NULL,
    context   BLOB
);
CREATE TABLE IF NOT EXISTS entities (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace  TEXT NOT NULL,
    name       TEXT NOT NULL,
    norm       TEXT NOT NULL,
    mentions   INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    UNIQUE (namespace, norm)
);
CREATE TABLE IF NOT EXISTS aliases (
    namespace TEXT NOT NULL,
    norm      TEXT NOT NULL,
    alias     TEXT NOT NULL,
    entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    PRIMARY KEY (namespace, norm, entity_id)
);
CREATE TABLE IF NOT EXISTS mentions (
    entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    type      TEXT NOT NULL DEFAULT '',
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    joined    INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (entity_id, type, memory_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mentions_memory ON mentions(memory_id, entity_id);
CREATE TABLE IF NOT EXISTS edges (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace  TEXT NOT NULL,
    user_id    TEXT NOT NULL DEFAULT '',
    agent_id   TEXT NOT NULL DEFAULT '',
    source_id  INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    target_id  INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    relation   TEXT NOT NULL,
    kind       TEXT NOT NULL,
    confidence REAL NOT NULL,
    support    INTEGER NOT NULL DEFAULT 1,
    valid_from REAL,
    valid_to   REAL,
    memory_id  INTEGER REFERENCES memories(id) ON DELETE CASCADE,
    created_at REAL NOT NULL,
    strength   REAL GENERATED ALWAYS AS ({STRENGTH}) VIRTUAL
);
CREATE INDEX IF NOT EXISTS edges_source ON edges(source_id, strength DESC);
CREATE INDEX IF NOT EXISTS edges_target ON edges(target_id, strength DESC);
CREATE UNIQUE INDEX IF NOT EXISTS edges_comention
    ON edges(namespace, user_id, agent_id, source_id, target_id) WHERE relation = 'co_mentioned';
CREATE TABLE IF NOT EXISTS sessions (
    namespace    TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    agent_id     TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    started_at   REAL NOT NULL,
    last_seen_at REAL NOT NULL,
    PRIMARY KEY (namespace, user_id, agent_id, session_id)
);
{LEARNING_DDL}
CREATE TABLE IF NOT EXISTS namespaces (
    namespace         TEXT PRIMARY KEY,
    memories          INTEGER NOT NULL DEFAULT 0,
    generation        INTEGER NOT NULL DEFAULT 0,
    vector_generation INTEGER NOT NULL DEFAULT 0,
    catalog_version   INTEGER NOT NULL DEFAULT 1
);
"""


FIND_REPEATS = """
SELECT repeat_key, id FROM memories
WHERE namespace = ? AND user_id = ? AND agent_id = ? AND session_id IS NULL
  AND repeat_key IN (SELECT value FROM json_each(?))
ORDER BY id
"""
SLOT_HOLDERS = """
SELECT slot, memory_id FROM (
  SELECT s.slot, s.memory_id,
         row_number() OVER (PARTITION BY s.slot ORDER BY s.memory_id DESC) AS place
  FROM slots s JOIN memories m ON m.id = s.memory_id
  WHERE s.namespace = ? AND s.user_id = ? AND s.agent_id = ? AND m.superseded_by IS NULL
    AND s.slot IN (SELECT value FROM json_each(?))
) WHERE place <= ? ORDER BY slot, memory_id DESC
"""
REPLACED = """
SELECT superseded_by, id FROM memories
WHERE +namespace = ? AND superseded_by IN (SELECT value FROM json_each(?)) ORDER BY id
"""

# ``joined``: the mention took part in the memory's co-mention edges (WriteConfig caps them), so
# forgetting the memory takes back exactly the support it gave.
INSERT_FEEDBACK = (
    "INSERT INTO feedback (namespace, query, args, created_at) VALUES (?, ?, ?, ?) RETURNING id"
)
INSERT_LABEL = (
    "INSERT OR REPLACE INTO feedback_labels (feedback_id, memory_id, label) VALUES (?, ?, ?)"
)
SELECT_FEEDBACK = """
SELECT f.id, f.query, f.args, f.created_at, l.memory_id, l.label
FROM feedback f LEFT JOIN feedback_labels l ON l.feedback_id = f.id
WHERE f.namespace = ? ORDER BY f.id, l.memory_id
"""
INSERT_MODEL = """
INSERT INTO models (namespace, version, accepted, created_at, payload, user_id)
SELECT ?, coalesce(max(version), 0) + 1, ?, ?, ?, ? FROM models WHERE namespace = ?
RETURNING version
"""
SELECT_MODEL = """
SELECT version, payload FROM models WHERE namespace = ? AND user_id = ? AND accepted = 1
ORDER BY version DESC LIMIT 1
"""
SELECT_MODEL_USERS = """
SELECT DISTINCT user_id FROM models WHERE namespace = ? AND user_id != '' AND accepted = 1
ORDER BY user_id
"""
BUMP_NAMESPACE = """
INSERT INTO namespaces (namespace, memories, generation, vector_generation) VALUES (?, ?, 1, ?)
ON CONFLICT (namespace) DO UPDATE SET
    memories = memories + excluded.memories,
    generation = generation + 1,
    vector_generation = vector_generation + excluded.vector_generation
"""
NAMESPACE_STATE = (
    "SELECT memories, generation, vector_generation FROM namespaces WHERE namespace = ?"
)

SELECT_MEMORY_COLUMNS = """
SELECT id, namespace, user_id, agent_id, session_id, content, predicate, type, event_at,
       created_at, importance, metadata, speaker, seen, last_seen_at, superseded_by, valid_to
FROM memories
"""
SELECT_MEMORY_ENTITIES = """
SELECT mn.memory_id, e.name FROM mentions mn JOIN entities e ON e.id = mn.entity_id
WHERE mn.memory_id IN (SELECT value FROM json_each(?)) ORDER BY e.id
"""
SELECT_NAMESPACE_VECTORS = """
SELECT m.id, coalesce(v.context, v.embedding), m.user_id, m.agent_id, m.type
FROM memories m JOIN vectors v ON v.memory_id = m.id
WHERE m.namespace = :ns ORDER BY m.id
"""
# The same rows for a namespace holding most of the store: read in id order (the unary + keeps
# SQLite off the namespace's index, whose order is by type and time: every row and vector
# fetched at random, then all of them sorted in a temporary B-tree, several times slower).
SCAN_NAMESPACE_VECTORS = """
SELECT m.id, coalesce(v.context, v.embedding), m.user_id, m.agent_id, m.type
FROM memories m JOIN vectors v ON v.memory_id = m.id
WHERE +m.namespace = :ns ORDER BY m.id
"""
# Newest first, for browsing: the scope index answers the namespace (and user) prefix.
SELECT_RECENT_IDS = """
SELECT id FROM memories
WHERE namespace = :ns AND id < :before
  AND (:user IS NULL OR user_id = :user) AND (:agent IS NULL OR agent_id = :agent)
ORDER BY id DESC LIMIT :limit
"""
SELECT_SEARCHED_VECTORS = """
SELECT m.id, coalesce(v.context, v.embedding), m.user_id, m.agent_id, m.type
FROM memories m JOIN vectors v ON v.memory_id = m.id
WHERE m.id IN (SELECT value FROM json_each(?)) ORDER BY m.id
"""
SELECT_CATALOG = """
SELECT id, name, norm, 0 FROM entities WHERE namespace = ?
UNION ALL
SELECT entity_id, alias, norm, 1 FROM aliases WHERE namespace = ?
"""
# The catalog's entries of some keys, each with its entity's canonical name: a probe of the
# (namespace, norm) keys per key asked, however many names the namespace holds. Names first,
# then aliases (an alias wins over a name of the same key, as in the whole catalog).
SELECT_NAMES_BY_KEY = """
SELECT id, name, norm, 0 FROM entities
WHERE namespace = :ns AND norm IN (SELECT value FROM json_each(:keys))
UNION ALL
SELECT a.entity_id, e.name, a.norm, 1 FROM aliases a JOIN entities e ON e.id = a.entity_id
WHERE a.namespace = :ns AND a.norm IN (SELECT value FROM json_each(:keys))
ORDER BY 4, 1
"""

# ``fivefold doctor``: mentions whose type is not their memory's, and their repair.
MISTYPED_MENTIONS = (
    "SELECT count(*) FROM mentions mn JOIN memories m ON m.id = mn.memory_id "
    "WHERE mn.type != m.type"
)
# A mistyped mention whose well-typed twin is there too goes first (retyped, it would break
# the key).
DROP_MISTYPED_TWINS = """
DELETE FROM mentions WHERE (entity_id, type, memory_id) IN (
    SELECT mn.entity_id, mn.type, mn.memory_id FROM mentions mn
    JOIN memories m ON m.id = mn.memory_id
    WHERE mn.type != m.type AND EXISTS (
        SELECT 1 FROM mentions t
        WHERE t.entity_id = mn.entity_id AND t.type = m.type AND t.memory_id = mn.memory_id
    )
)
"""
RETYPE_MENTIONS = """
UPDATE mentions SET type = (SELECT type FROM memories WHERE id = mentions.memory_id)
WHERE type != (SELECT type FROM memories WHERE id = mentions.memory_id)
"""

# The lexical index's change log, as the dense index's below: a memory written, deleted, or
# whose text or context changed. An index applies the entries after the last one it holds.
LEXICAL_LOG_DDL = (
    """CREATE TABLE IF NOT EXISTS lexical_log (
        seq       INTEGER PRIMARY KEY AUTOINCREMENT,
        namespace TEXT NOT NULL,
        memory_id INTEGER NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS lexical_log_namespace ON lexical_log(namespace, seq)",
    # Per namespace, the last entry pruned: an index older than that is rebuilt from the rows.
    """CREATE TABLE IF NOT EXISTS lexical_pruned (
        namespace TEXT PRIMARY KEY,
        seq       INTEGER NOT NULL
    )""",
    """CREATE TRIGGER IF NOT EXISTS lexical_log_insert AFTER INSERT ON memories BEGIN
        INSERT INTO lexical_log (namespace, memory_id) VALUES (NEW.namespace, NEW.id);
    END""",
    """CREATE TRIGGER IF NOT EXISTS lexical_log_update
    AFTER UPDATE OF predicate, content, context_near, context_far, type, user_id, agent_id
    ON memories BEGIN
        INSERT INTO lexical_log (namespace, memory_id) VALUES (NEW.namespace, NEW.id);
    END""",
    """CREATE TRIGGER IF NOT EXISTS lexical_log_delete AFTER DELETE ON memories BEGIN
        INSERT INTO lexical_log (namespace, memory_id) VALUES (OLD.namespace, OLD.id);
    END""",
)
LEXICAL_LOG_KEEP = 200_000
LEXICAL_LOG_SINCE = "SELECT memory_id FROM lexical_log WHERE namespace = ? AND seq > ? ORDER BY seq"
# A namespace's last entry, and the last of its entries pruned.
LEXICAL_LOG_STATE = (
    "SELECT coalesce((SELECT max(seq) FROM lexical_log WHERE namespace = :ns), 0), "
    "coalesce((SELECT seq FROM lexical_pruned WHERE namespace = :ns), 0)"
)
LEXICAL_LOG_NEWEST = "SELECT coalesce(max(seq), 0) FROM lexical_log"
PRUNE_LEXICAL_LOG = (
    """INSERT INTO lexical_pruned (namespace, seq)
    SELECT namespace, max(seq) FROM lexical_log
    WHERE seq <= (SELECT max(seq) FROM lexical_log) - :keep GROUP BY namespace
    ON CONFLICT (namespace) DO UPDATE SET seq = max(lexical_pruned.seq, excluded.seq)""",
    "DELETE FROM lexical_log WHERE seq <= (SELECT max(seq) FROM lexical_log) - :keep",
)
SELECT_LEXICAL_COLUMNS = """
SELECT id, user_id, agent_id, type, coalesce(predicate, ''), content, context_near, context_far
FROM memories"""

# The dense index's change log: every memory whose searched vector appeared, changed or went,
# written by triggers in the transaction that changed it, so no write path can forget it. An
# index (in this process, another, or a graph saved to disk) remembers the last ``seq`` it has
# applied and catches up from there instead of reloading the namespace. Statements are listed
# one by one: a trigger body holds ';' and cannot be split like DDL.
VECTOR_LOG_DDL = (
    """CREATE TABLE IF NOT EXISTS vector_log (
        seq       INTEGER PRIMARY KEY AUTOINCREMENT,
        namespace TEXT NOT NULL,
        memory_id INTEGER NOT NULL,
        deleted   INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX IF NOT EXISTS vector_log_namespace ON vector_log(namespace, seq)",
    """CREATE TRIGGER IF NOT EXISTS vector_log_insert AFTER INSERT ON vectors BEGIN
        INSERT INTO vector_log (namespace, memory_id)
        SELECT namespace, id FROM memories WHERE id = NEW.memory_id;
    END""",
    """CREATE TRIGGER IF NOT EXISTS vector_log_update AFTER UPDATE OF embedding, context ON vectors
    BEGIN
        INSERT INTO vector_log (namespace, memory_id)
        SELECT namespace, id FROM memories WHERE id = NEW.memory_id;
    END""",
    """CREATE TRIGGER IF NOT EXISTS vector_log_delete AFTER DELETE ON memories BEGIN
        INSERT INTO vector_log (namespace, memory_id, deleted) VALUES (OLD.namespace, OLD.id, 1);
    END""",
)
# Entries kept: an index further behind than this reloads its namespace instead.
VECTOR_LOG_KEEP = 200_000
VECTOR_LOG_SINCE = (
    "SELECT seq, memory_id, deleted FROM vector_log WHERE namespace = ? AND seq > ? ORDER BY seq"
)
# Two subqueries: SQLite answers a lone min() or max() from the key, but not both in one.
VECTOR_LOG_BOUNDS = (
    "SELECT coalesce((SELECT min(seq) FROM vector_log), 0), "
    "coalesce((SELECT max(seq) FROM vector_log), 0)"
)
PRUNE_VECTOR_LOG = "DELETE FROM vector_log WHERE seq <= (SELECT max(seq) FROM vector_log) - ?"
SELECT_NAMESPACES = "SELECT namespace FROM namespaces WHERE memories > 0 ORDER BY namespace"
SELECT_NAMESPACE_IDS = "SELECT id FROM memories WHERE namespace = ?"

# Explicit edges and declared aliases, for export (``fivefold migrate``), in write order.
SELECT_RELATIONS = f"""
SELECT s.name, ed.relation, t.name, ed.kind, ed.confidence, ed.valid_from, ed.valid_to,
       ed.user_id, ed.agent_id, ed.memory_id
FROM edges ed JOIN entities s ON s.id = ed.source_id JOIN entities t ON t.id = ed.target_id
WHERE ed.namespace = ? AND ed.relation <> '{COMENTION}' ORDER BY ed.id
"""
SELECT_ALIASES = """
SELECT e.name, a.alias FROM aliases a JOIN entities e ON e.id = a.entity_id
WHERE a.namespace = ? ORDER BY e.id, a.alias
"""
