"""The Postgres store's writes inside a transaction (``PostgresStore._write`` opens it, retries
it and commits it): a batch of memories in a few statements (ids reserved at once, rows and
postings sent together, entities, mentions, co-mentions and sessions per batch, the context of
the turns before it), a memory's deletion with its traces, and an entity's resolution. The
rules are the SQLite backend's (``store/batch.py``, ``store/context.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np
import psycopg

from fivefold.embed.base import Vectors
from fivefold.errors import InvalidInput, NotFound
from fivefold.store.postgres import schema, write_sql
from fivefold.store.postgres.bags import Bags, paired
from fivefold.store.postgres.beside import THREADED_FROM, Beside
from fivefold.store.postgres.context_rows import (
    Deltas,
    MemoryGone,
    PostgresContextRows,
    as_array,
)
from fivefold.store.postgres.packed import Rows, copy_parts, norm_ids, pack, type_code
from fivefold.store.postgres.write_locks import lock_sessions, take_ids
from fivefold.store.postgres.write_rows import (
    BatchCounts,
    OlderRows,
    as_columns,
    memory_row,
    no_nul,
    window_postings,
)
from fivefold.store.protocol import StoreSettings
from fivefold.store.records import NewMemory
from fivefold.store.shared import batch, context
from fivefold.store.shared.context import Group, SessionRow
from fivefold.store.shared.rows import scope_columns
from fivefold.store.shared.tokens import Tokenizer, window
from fivefold.store.sql import Dialect, forget_edges_sql, forget_rows_sql
from fivefold.text import normalize_name
from fivefold.types import MemoryRecord, Scope


class Writer:
    """A store's write statements, given its settings, tokenizer and vector width; each
    method runs inside the caller's transaction on ``conn`` and gathers its statistics'
    changes in ``deltas``."""

    def __init__(self, settings: StoreSettings, tokenizer: Tokenizer, dim: int) -> None:
        self._settings = settings
        self._tokenizer = tokenizer
        self._bags = Bags(tokenizer)
        self._dim = dim

    def memories(
        self,
        conn: psycopg.Connection,
        deltas: Deltas,
        memories: Sequence[NewMemory],
        vectors: Vectors,
        given: Sequence[int] | None = None,
    ) -> list[MemoryRecord]:
        """A batch in a few statements: ids reserved at once (or ``given``), rows and
        postings sent together, entities, mentions, co-mentions and sessions resolved per
        batch (the same rules as the SQLite backend's row-by-row path), then the session
        context."""
        if not memories:
            return []
        for position, memory in enumerate(memories):
            no_nul(
                position,
                content=memory.content,
                predicate=memory.predicate,
                speaker=memory.speaker,
                session_id=memory.session_id,
                entity=" ".join(memory.entities),
            )
        bounds = self._settings.write
        named = [
            batch.entity_keys(m.entities[: bounds.max_entities]) for m in memories
        ]  # refuses first
        # Before the ids: a session's writes then take their ids in the order they commit.
        lock_sessions(conn, (g for m in memories if (g := batch.group_of(m)) is not None))
        # Each memory's own text, counted as arrays (``bags``): predicate and content.
        own = self._bags.columns([(m.predicate or "", m.content) for m in memories])
        if given is None:  # beside other writers, not beside given ids (``write_sql.IDS_SHARED``)
            reserved = conn.execute(write_sql.RESERVE_IDS, (len(memories),)).fetchall()
            ids = sorted(int(r[0]) for r in reserved)
        else:
            ids = take_ids(conn, given, len(memories))
        # Each new row is written once with its final context and searched vector, and each
        # older row its context changes in one update: every row version is an insertion into
        # the HNSW graph.
        older_types: dict[int, str] = {}  # of the older rows read (``_newest``)
        rows = batch.session_context(
            memories,
            ids,
            vectors,
            self._settings.smoothing,
            lambda w, n: self._newest(conn, w, n, older_types),
        )
        texts = rows.contexts
        # Every memory has a window: its own text, and its neighbours' where it has some.
        windows = self._bags.windows(
            [(m.content, *texts.get(i, ("", ""))) for m, i in zip(memories, ids, strict=True)]
        )
        count = len(memories)
        lengths = np.stack(
            [own[0].lengths(count), own[1].lengths(count), windows.lengths(count)], axis=1
        )
        counts = BatchCounts(memories, ids, own, windows, lengths)
        values = [(i, *batch.memory_values(m)) for i, m in zip(ids, memories, strict=True)]
        # The postings, new and of the older rows, are worked out beside the memory rows' COPY
        # and the entities (``Beside``: this thread waits on the server meanwhile); ``deltas``
        # is the other thread's until its result is taken.
        beside = Beside(
            partial(self._postings, deltas, counts, rows, older_types),
            threaded=len(memories) >= THREADED_FROM,
        )
        with conn.cursor() as cur, cur.copy(write_sql.COPY_MEMORIES) as copy:
            copy.set_types(write_sql.MEMORY_TYPES)
            for r, v, n, m in zip(values, vectors, lengths.tolist(), memories, strict=True):
                row = memory_row(r, v, n, texts.get(r[0], ("", "")), rows.searched.get(r[0]))
                copy.write_row((*row, *batch.history_values(m)))
        with conn.cursor() as cur:
            cur.executemany(write_sql.INSERT_SLOT, batch.slot_rows(memories, ids))
            cur.executemany(write_sql.SUPERSEDE, batch.supersessions(memories, ids))
        found, names = self._write_entities(conn, memories, ids, named)
        self._write_sessions(conn, memories)
        new_postings, older = beside.result()
        for namespace, kind, packed in new_postings:
            copy_parts(conn, namespace, kind, packed)
        self._update_older(conn, older)
        return batch.fresh_records(memories, batch.records(values, found, names))

    @staticmethod
    def _newest(
        conn: psycopg.Connection,
        wanted: Sequence[tuple[Group, int]],
        limit: int,
        types: dict[int, str],
    ) -> dict[Group, list[tuple[int, SessionRow]]]:
        """One statement per namespace (a shard's), for all its sessions wanted; each row's
        type into ``types``."""
        out: dict[Group, list[tuple[int, SessionRow]]] = {}
        for namespace in dict.fromkeys(group[0] for group, _ in wanted):
            mine = [(k, g, b) for k, (g, b) in enumerate(wanted) if g[0] == namespace]
            params = {
                "k": [k for k, _, _ in mine],
                "usr": [g[1] for _, g, _ in mine],
                "agt": [g[2] for _, g, _ in mine],
                "ses": [g[3] for _, g, _ in mine],
                "below": [b for _, _, b in mine],
                "ns": namespace,
                "limit": limit,
            }
            # Binary: pgvector parses its text form float by float, a cost on every bulk
            # write.
            with conn.cursor(binary=True) as cur:
                for k, i, c, v, n, f, t in cur.execute(write_sql.NEWEST_IN_SESSIONS, params):
                    row = (int(i), SessionRow(str(c), as_array(v), (str(n), str(f))))
                    out.setdefault(wanted[int(k)][0], []).append(row)
                    types[int(i)] = str(t)
        return out

    def _postings(
        self,
        deltas: Deltas,
        counts: BatchCounts,
        rows: context.BatchRows,
        types: dict[int, str],
    ) -> tuple[list[tuple[str, int, list[tuple[str, int, np.ndarray]]]], OlderRows]:
        """The new rows' list parts (``_new_postings``) and the older rows' changes
        (``_older_changes``), computed without the connection."""
        new = self._new_postings(deltas, counts)
        ids = set(counts.ids)
        return new, self._older_changes(deltas=deltas, rows=rows, new=ids, types=types)

    def _older_changes(
        self, *, deltas: Deltas, rows: context.BatchRows, new: set[int], types: dict[int, str]
    ) -> OlderRows:
        """The rows before the batch in its sessions: their new context text and searched
        vector, and, where the text changed, their window's postings replaced (in ``deltas``:
        of each row's ``types``), worked out without the connection."""
        older = [
            (i, group[0]) for i in rows.searched if i not in new and (group := rows.group_of(i))
        ]
        texts = [(rows.was.get(i, rows.context_of(i)), rows.context_of(i)) for i, _ in older]
        contents = [rows.content_of(i) for i, _ in older]
        pairs = list(zip(contents, texts, strict=True))
        before = self._bags.windows([(c, *old) for c, (old, _) in pairs])
        after = self._bags.windows([(c, *now) for c, (_, now) in pairs])
        count = len(older)
        was, now = before.lengths(count), after.lengths(count)
        out = OlderRows()
        for n, ((memory_id, namespace), (old, text)) in enumerate(zip(older, texts, strict=True)):
            vector = rows.searched[memory_id]
            searched = None if vector is None else np.asarray(vector, np.float32)
            out.updates.append((*text, int(now[n]), 0, searched, namespace, memory_id, *old))
        # Rows whose window changed with their context, a namespace at a time.
        changed = np.asarray([old != text for old, text in texts], dtype=bool)
        spaces = [namespace for _, namespace in older]
        memory_ids = np.asarray([i for i, _ in older], dtype=np.int64)
        codes = np.asarray([type_code(types[i]) for i, _ in older], dtype=np.uint8)
        for namespace in sorted(set(spaces)):
            mine = changed & np.asarray([s == namespace for s in spaces], dtype=bool)
            if not mine.any():
                continue
            gone = pack(
                schema.CONTEXT, window_postings(before, mine, memory_ids, was, codes), before.names
            )
            fresh = pack(
                schema.CONTEXT, window_postings(after, mine, memory_ids, now, codes), after.names
            )
            deltas.add_documents(
                namespace, schema.CONTEXT, gone.documents(), (int(was[mine].sum()), 0), -1
            )
            deltas.add_documents(
                namespace, schema.CONTEXT, fresh.documents(), (int(now[mine].sum()), 0)
            )
            deltas.lists.replace(
                namespace, schema.CONTEXT, memory_ids[mine].tolist(), gone.keys, fresh
            )
        return out

    @staticmethod
    def _update_older(conn: psycopg.Connection, older: OlderRows) -> None:
        """The older rows' changes (``_older_changes``), in one update each (their windows'
        postings are merged at the end of the transaction: ``Deltas.flush``). Each row only if
        it still holds the context this batch read: another writer may have deleted it, or
        rewritten it with a turn of its own in the same session, since; then the postings this
        batch would remove and add are not the row's, and the write starts again from a fresh
        read. Each row updated is locked until the commit."""
        if not older.updates:
            return
        updated: set[int] = set()
        with conn.cursor() as cur:
            cur.executemany(write_sql.UPDATE_CONTEXT_AND_SEARCHED, older.updates, returning=True)
            while True:
                updated.update(int(r[0]) for r in cur.fetchall())
                if not cur.nextset():
                    break
        if len(updated) != len(older.updates):
            raise MemoryGone(
                f"{len(older.updates) - len(updated)} memories before this batch in its "
                "sessions were changed or deleted by a concurrent write; nothing was written: "
                "try again"
            )

    @staticmethod
    def _new_postings(
        deltas: Deltas, counts: BatchCounts
    ) -> list[tuple[str, int, list[tuple[str, int, np.ndarray]]]]:
        """The postings of the new rows' own text and of their window: per namespace and
        field, its list parts (``packed.pack``), counted into ``deltas`` from them."""
        own, windows, lengths = counts.own, counts.windows, counts.lengths
        memory_ids = np.asarray(counts.ids, dtype=np.int64)
        codes = np.asarray([type_code(m.type.value) for m in counts.memories], dtype=np.uint8)
        norms = norm_ids(lengths)
        doc, term, first, second = paired(*own)
        own_rows = Rows(
            memory_ids[doc], term, first, second, norms[doc, 0], norms[doc, 1], codes[doc]
        )
        every = np.ones(len(memory_ids), bool)
        window_rows = window_postings(windows, every, memory_ids, lengths[:, 2], codes)
        spaces = [m.scope.namespace for m in counts.memories]
        found = []
        for namespace in sorted(set(spaces)):
            mine = np.asarray([s == namespace for s in spaces], dtype=bool)
            deltas.memories[namespace] += int(mine.sum())
            for kind, rows, names, columns in (
                (schema.OWN, own_rows.take(mine[doc]), own[0].names, (0, 1)),
                (schema.CONTEXT, window_rows.take(mine[windows.doc]), windows.names, (2,)),
            ):
                postings = pack(kind, rows, names)
                totals = [int(lengths[mine, c].sum()) for c in columns] + [0]
                deltas.add_documents(namespace, kind, postings.documents(), (totals[0], totals[1]))
                found.append((namespace, kind, postings.rows()))
        return found

    def _write_entities(
        self,
        conn: psycopg.Connection,
        memories: Sequence[NewMemory],
        ids: Sequence[int],
        named: Sequence[batch.Named],
    ) -> tuple[batch.Mentions, dict[int, str]]:
        """Names resolved per namespace (an alias wins, else the entity of that key, created
        with the first spelling met), then mentions, mention counts and co-mention edges.
        Returns the mentions and each named entity's stored name (id -> name)."""
        first = batch.first_spellings(memories, named)
        resolved: dict[tuple[str, str], int] = {}
        names: dict[int, str] = {}
        if first:  # before the look-ups it guards
            conn.execute(write_sql.NAMES_LOCK, (sorted({ns for ns, _ in first}),))
        for namespace in dict.fromkeys(ns for ns, _ in first):
            keys = [k for ns, k in first if ns == namespace]
            for statement in (write_sql.FIND_ENTITIES, write_sql.FIND_ALIASES):  # an alias wins
                for key, entity_id, name in conn.execute(
                    statement, {"ns": namespace, "keys": keys}
                ):
                    resolved[namespace, str(key)] = int(entity_id)
                    names[int(entity_id)] = str(name)
        fresh = [key for key in first if key not in resolved]  # in first-met order
        if fresh:
            rows = conn.execute(
                write_sql.UPSERT_ENTITIES,
                as_columns([(ns, first[ns, k][0], k, first[ns, k][1]) for ns, k in fresh]),
            ).fetchall()
            resolved.update(((str(ns), str(k)), int(i)) for i, ns, k, _ in rows)
            names.update((int(i), str(name)) for i, _, _, name in rows)
        found = batch.mentions(
            memories, ids, named, resolved, self._settings.write.max_comention_entities
        )
        if found.rows:
            conn.execute(write_sql.INSERT_MENTIONS, as_columns([r[:4] for r in found.rows]))
            ordered = sorted(found.bumps.items())
            bumped = conn.execute(
                write_sql.BUMP_ENTITIES_MENTIONS,
                ([k[0] for k, _ in ordered], [k[1] for k, _ in ordered], [n for _, n in ordered]),
            ).fetchall()
            if len(bumped) != len(ordered):
                # A concurrent forget dropped an entity this batch found (its last mention
                # went between the lookup and this update, which waits for that forget's
                # commit): the mentions would point at nothing. The write starts again.
                raise MemoryGone(
                    f"{len(ordered) - len(bumped)} entities this batch names were deleted by a "
                    "concurrent forget; nothing was written: try again"
                )
        if found.pairs:
            pairs = sorted(found.pairs.items())
            conn.execute(
                write_sql.UPSERT_COMENTIONS,
                (
                    *as_columns([key for key, _ in pairs]),
                    [n for _, (n, _) in pairs],
                    [created for _, (_, created) in pairs],
                ),
            )
        return found, names

    def _write_sessions(self, conn: psycopg.Connection, memories: Sequence[NewMemory]) -> None:
        spans = sorted(batch.sessions(memories).items())
        if spans:
            conn.execute(
                write_sql.UPSERT_SESSIONS,
                (
                    *as_columns([group for group, _ in spans]),
                    [low for _, (low, _) in spans],
                    [high for _, (_, high) in spans],
                ),
            )

    def entity_id(
        self, conn: psycopg.Connection, namespace: str, name: str, created: float, mentions: int
    ) -> int:
        norm = normalize_name(name)
        if not norm:
            raise InvalidInput(f"entity name {name!r} has no letters or digits")
        conn.execute(write_sql.NAMES_LOCK, ([namespace],))
        alias = conn.execute(write_sql.FIND_ALIAS, (namespace, norm)).fetchone()
        if alias is not None:
            if mentions:
                conn.execute(write_sql.BUMP_ENTITY_MENTIONS, (mentions, namespace, alias[0]))
            return int(alias[0])
        row = conn.execute(
            write_sql.UPSERT_ENTITY, (namespace, name.strip(), norm, mentions, created)
        ).fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def seen_again(conn: psycopg.Connection, seen: Sequence[tuple[str, int]], at: float) -> None:
        """Memories said again (exact repeats, by namespace and id): counted, with when."""
        with conn.cursor() as cur:
            cur.executemany(write_sql.SEEN_AGAIN, [(at, ns, int(i)) for ns, i in seen])

    @staticmethod
    def named(conn: psycopg.Connection, namespace: str, name: str) -> int:
        """The entity a name (or an alias) names; ``NotFound`` when none."""
        norm = normalize_name(name)
        for statement in (
            "SELECT entity_id FROM aliases WHERE namespace = %s AND norm = %s ORDER BY entity_id",
            "SELECT id FROM entities WHERE namespace = %s AND norm = %s",
        ):
            row = conn.execute(statement, (namespace, norm)).fetchone()
            if row is not None:
                return int(row[0])
        raise NotFound(f"no entity named {name!r} in namespace {namespace!r}")

    @staticmethod
    def fold(conn: psycopg.Connection, namespace: str, keep: int, gone: int) -> None:
        """Entity ``gone`` folded into ``keep``: its mentions, edges and aliases move to it,
        co-mention supports add up, and its name becomes one of ``keep``'s aliases."""
        ns = namespace
        _move_rows(
            conn, "mentions", "k.type = g.type AND k.memory_id = g.memory_id", ns, keep, gone
        )
        conn.execute(
            "UPDATE entities SET mentions = (SELECT count(*) FROM mentions WHERE namespace = %s "
            "AND entity_id = %s) WHERE namespace = %s AND id = %s",
            (ns, keep, ns, keep),
        )
        pairs = conn.execute(
            "DELETE FROM edges WHERE namespace = %s AND relation = %s AND (source_id = %s "
            "OR target_id = %s) RETURNING namespace, user_id, agent_id, source_id, target_id, "
            "support, created_at",
            (ns, schema.COMENTION, gone, gone),
        ).fetchall()
        rows = batch.folded_pairs(pairs, keep, gone)
        if rows:
            conn.execute(
                write_sql.UPSERT_COMENTIONS, [list(column) for column in zip(*rows, strict=True)]
            )
        for side in ("source_id", "target_id"):
            conn.execute(
                f"UPDATE edges SET {side} = %s WHERE namespace = %s AND {side} = %s",
                (keep, ns, gone),
            )
        conn.execute("DELETE FROM edges WHERE namespace = %s AND source_id = target_id", (ns,))
        _move_rows(conn, "aliases", "k.norm = g.norm", ns, keep, gone)
        found = conn.execute(
            "DELETE FROM entities WHERE namespace = %s AND id = %s RETURNING name, norm",
            (ns, gone),
        ).fetchone()
        if found is not None:
            conn.execute(write_sql.INSERT_ALIAS, (ns, found[1], found[0], keep))

    @staticmethod
    def forget_traces(conn: psycopg.Connection, scope: Scope, feedback: Sequence[int]) -> None:
        ns = scope.namespace
        named = conn.execute(*forget_edges_sql(scope, Dialect.POSTGRES)).fetchall()
        wanted = sorted(int(i) for i in feedback)
        for table, column in (("feedback_labels", "feedback_id"), ("feedback", "id")):
            conn.execute(
                f"DELETE FROM {table} WHERE namespace = %s AND {column} = ANY(%s::bigint[])",
                (ns, wanted),
            )
        for statement, params in forget_rows_sql(scope, Dialect.POSTGRES):
            conn.execute(statement, params)
        entities = sorted({int(e) for pair in named for e in pair})
        conn.execute(write_sql.DROP_ORPHAN_ENTITIES, (ns, entities))

    @staticmethod
    def supersede(conn: psycopg.Connection, scope: Scope, old: int, new: int, reason: str) -> bool:
        """``new`` replaces ``old``, both of ``scope`` (exactly): False when either is not
        there; ``InvalidInput`` when ``new`` is (transitively) superseded by ``old``."""
        where = scope_columns(scope)
        held = {
            int(i): (e, c)
            for i, e, c in conn.execute(
                "SELECT id, event_at, created_at FROM memories WHERE namespace = %s "
                "AND user_id = %s AND agent_id = %s AND id = ANY(%s::bigint[]) FOR UPDATE",
                (*where, [old, new]),
            ).fetchall()
        }
        if old not in held or new not in held:
            return False

        def successor(memory_id: int) -> int | None:
            row = conn.execute(
                "SELECT superseded_by FROM memories WHERE namespace = %s AND id = %s",
                (scope.namespace, memory_id),
            ).fetchone()
            return None if row is None or row[0] is None else int(row[0])

        batch.refuse_cycle(old, new, successor)
        event_at, created_at = held[new]
        since = event_at if event_at is not None else created_at
        conn.execute(write_sql.SUPERSEDE, (new, since, reason, old, *where, new, True))
        return True

    def delete(
        self, conn: psycopg.Connection, deltas: Deltas, memory_id: int, scope: Scope
    ) -> bool:
        ns = scope.namespace
        session = conn.execute(
            "SELECT user_id, agent_id, session_id FROM memories WHERE namespace = %s AND id = %s",
            (ns, memory_id),
        ).fetchone()
        if session is not None and session[2]:  # its neighbours' context is refreshed below
            lock_sessions(conn, [(ns, session[0] or "", session[1] or "", session[2])])
        row = conn.execute(
            "SELECT user_id, agent_id, predicate, content, context_near, context_far "
            "FROM memories WHERE namespace = %s AND id = %s FOR UPDATE",
            (ns, memory_id),
        ).fetchone()
        if row is None or not scope.admits(ns, row[0] or None, row[1] or None):
            return False
        user, agent, predicate, content, near, far = row
        rows = PostgresContextRows(conn, self._tokenizer, deltas, self._dim)
        rows.namespace = ns
        around = context.around(rows, memory_id)
        mentioned = conn.execute(
            "SELECT entity_id, joined FROM mentions WHERE namespace = %s AND memory_id = %s "
            "ORDER BY entity_id",
            (ns, memory_id),
        ).fetchall()
        entity_ids = [int(r[0]) for r in mentioned]
        joined = [int(r[0]) for r in mentioned if r[1]]
        for entity_id in entity_ids:
            conn.execute(write_sql.BUMP_ENTITY_MENTIONS, (-1, ns, entity_id))
        for i, a in enumerate(joined):
            for b in joined[i + 1 :]:
                conn.execute(write_sql.DROP_COMENTION, (ns, user, agent, a, b))
        conn.execute(write_sql.PRUNE_COMENTIONS, (ns,))
        own, ctx = self._tokenizer.count([(predicate or "", content), (near, far)])
        gone = window(own.second, ctx.first, ctx.second)
        deltas.lists.remove(ns, schema.OWN, memory_id, own)
        deltas.add(ns, schema.OWN, own, -1)
        deltas.memories[ns] -= 1
        deltas.lists.remove(ns, schema.CONTEXT, memory_id, gone)
        deltas.add(ns, schema.CONTEXT, gone, -1)
        conn.execute(
            "DELETE FROM mentions WHERE namespace = %s AND memory_id = %s", (ns, memory_id)
        )
        conn.execute("DELETE FROM edges WHERE namespace = %s AND memory_id = %s", (ns, memory_id))
        conn.execute("DELETE FROM slots WHERE namespace = %s AND memory_id = %s", (ns, memory_id))
        successor, until = conn.execute(
            "SELECT superseded_by, valid_to FROM memories WHERE namespace = %s AND id = %s",
            (ns, memory_id),
        ).fetchone() or (None, None)
        conn.execute(write_sql.RESTORE_SUPERSEDED, (successor, until, successor, ns, memory_id))
        conn.execute("DELETE FROM memories WHERE namespace = %s AND id = %s", (ns, memory_id))
        if session is not None and session[2] is not None:
            for statement in (write_sql.RESPAN_SESSION, write_sql.DROP_EMPTY_SESSION):
                conn.execute(statement, (ns, user or "", agent or "", session[2]))
        conn.execute(
            "DELETE FROM feedback_labels WHERE namespace = %s AND memory_id = %s", (ns, memory_id)
        )
        context.refresh(rows, around, self._settings.smoothing)
        rows.flush()
        conn.execute(write_sql.DROP_ORPHAN_ENTITIES, (ns, entity_ids))
        return True


__all__ = ["Writer"]


def _move_rows(
    conn: psycopg.Connection, table: str, same: str, ns: str, keep: int, gone: int
) -> None:
    """Entity ``gone``'s rows of ``table`` become ``keep``'s, but for those ``keep`` holds
    already (``same``: the columns that say so), which go."""
    conn.execute(
        f"DELETE FROM {table} g USING {table} k WHERE g.namespace = %s AND g.entity_id = %s "
        f"AND k.namespace = g.namespace AND k.entity_id = %s AND {same}",
        (ns, gone, keep),
    )
    conn.execute(
        f"UPDATE {table} SET entity_id = %s WHERE namespace = %s AND entity_id = %s",
        (keep, ns, gone),
    )
