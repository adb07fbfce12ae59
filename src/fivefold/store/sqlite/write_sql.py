"""The statements of the SQLite write path: memory rows, their ids and sessions, entities,
mentions, edges and aliases.

The tables they write are ``schema.py``'s.
"""

from __future__ import annotations

from fivefold.store import sql
from fivefold.store.shared.rows import COMENTION
from fivefold.store.sql import Dialect

# A batch's ids are taken before it is written (inside the write lock), so that each memory is
# written once with its final session context. AUTOINCREMENT: an id is never reused, even
# after the newest memory was forgotten.
NEXT_MEMORY_ID = """
SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'memories'), 0),
           coalesce((SELECT max(id) FROM memories), 0)) + 1
"""
INSERT_MEMORY = """
INSERT INTO memories (id, namespace, user_id, agent_id, session_id, content, predicate, type,
                      event_at, created_at, importance, metadata, speaker, context_near,
                      context_far, repeat_key, seen, last_seen_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
# A long job's note (``note_progress``): its first, then each next, which changes no row where
# another run of the job moved the note meanwhile.
INSERT_PROGRESS = "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING"
UPDATE_PROGRESS = "UPDATE meta SET value = ? WHERE key = ? AND value = ?"
INSERT_VECTOR = "INSERT INTO vectors (memory_id, embedding, context) VALUES (?, ?, ?)"
INSERT_SLOT = (
    "INSERT OR IGNORE INTO slots (namespace, user_id, agent_id, slot, memory_id) "
    "VALUES (?, ?, ?, ?, ?)"
)
# An older memory of the same scope replaced by a newer one; one the engine inferred is not
# replaced again (it is no longer current), one the caller names always is.
SUPERSEDE = """
UPDATE memories SET superseded_by = ?, valid_to = ?, supersession = ?
WHERE id = ? AND namespace = ? AND user_id = ? AND agent_id = ? AND id <> ?
  AND (superseded_by IS NULL OR ?)
"""
# A memory forgotten hands what it superseded to the memory that superseded it (or makes it
# current again).
RESTORE_SUPERSEDED = """
UPDATE memories SET superseded_by = ?, valid_to = ?,
    supersession = CASE WHEN ? IS NULL THEN NULL ELSE supersession END
WHERE superseded_by = ?
"""
SEEN_AGAIN = "UPDATE memories SET seen = seen + 1, last_seen_at = ? WHERE id = ? AND namespace = ?"
UPDATE_CONTEXT = "UPDATE memories SET context_near = ?, context_far = ? WHERE id = ?"
UPDATE_SEARCHED = "UPDATE vectors SET context = ? WHERE memory_id = ?"
# (key, entity id, its stored name): the names are the written records' (``batch.records``).
FIND_ALIASES = """
SELECT a.norm, a.entity_id, e.name FROM (
    SELECT norm, min(entity_id) AS entity_id FROM aliases
    WHERE namespace = ? AND norm IN (SELECT value FROM json_each(?)) GROUP BY norm
) a JOIN entities e ON e.id = a.entity_id
"""
FIND_ENTITIES = """
SELECT norm, id, name FROM entities
WHERE namespace = ? AND norm IN (SELECT value FROM json_each(?))
"""
FIND_ALIAS = "SELECT entity_id FROM aliases WHERE namespace = ? AND norm = ? ORDER BY entity_id"
UPSERT_ENTITY = """
INSERT INTO entities (namespace, name, norm, mentions, created_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (namespace, norm) DO UPDATE SET mentions = mentions + excluded.mentions
RETURNING id, name
"""
BUMP_ENTITY_MENTIONS = "UPDATE entities SET mentions = mentions + ? WHERE id = ?"
INSERT_MENTION = (
    "INSERT OR IGNORE INTO mentions (entity_id, memory_id, joined, type) VALUES (?, ?, ?, ?)"
)
UPSERT_COMENTIONS = f"""
INSERT INTO edges (namespace, user_id, agent_id, source_id, target_id, relation, kind,
                   confidence, support, created_at)
VALUES (?, ?, ?, ?, ?, '{COMENTION}', 'semantic', 1.0, ?, ?)
ON CONFLICT (namespace, user_id, agent_id, source_id, target_id) WHERE relation = '{COMENTION}'
DO UPDATE SET support = support + excluded.support
"""
DROP_COMENTION = f"""
UPDATE edges SET support = support - 1
WHERE namespace = ? AND user_id = ? AND agent_id = ? AND source_id = ? AND target_id = ?
  AND relation = '{COMENTION}'
"""
PRUNE_COMENTIONS = f"DELETE FROM edges WHERE relation = '{COMENTION}' AND support <= 0"
DROP_ORPHAN_ENTITIES = """
DELETE FROM entities WHERE id IN (SELECT value FROM json_each(?))
  AND NOT EXISTS (SELECT 1 FROM mentions WHERE entity_id = entities.id)
  AND NOT EXISTS (SELECT 1 FROM edges WHERE source_id = entities.id OR target_id = entities.id)
  AND NOT EXISTS (SELECT 1 FROM aliases WHERE entity_id = entities.id)
"""
INSERT_EDGE = """
INSERT INTO edges (namespace, user_id, agent_id, source_id, target_id, relation, kind,
                   confidence, valid_from, valid_to, memory_id, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
# What an alias's key already names: an entity of that key, and the entities it is an alias of.
NAME_TAKEN = """
SELECT id, name, 0 FROM entities WHERE namespace = ? AND norm = ?
UNION ALL
SELECT a.entity_id, e.name, 1 FROM aliases a JOIN entities e ON e.id = a.entity_id
WHERE a.namespace = ? AND a.norm = ?
"""
INSERT_ALIAS = (
    "INSERT OR IGNORE INTO aliases (namespace, norm, alias, entity_id) VALUES (?, ?, ?, ?)"
)
UPSERT_SESSION = """
INSERT INTO sessions (namespace, user_id, agent_id, session_id, started_at, last_seen_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (namespace, user_id, agent_id, session_id) DO UPDATE SET
    started_at = min(started_at, excluded.started_at),
    last_seen_at = max(last_seen_at, excluded.last_seen_at)
"""
RESPAN_SESSION = Dialect.SQLITE.positional(sql.RESPAN_SESSION)
DROP_EMPTY_SESSION = Dialect.SQLITE.positional(sql.DROP_EMPTY_SESSION)
