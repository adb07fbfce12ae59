"""A namespace's posting lists, document frequencies and token counts made again from its
memories' text: by a schema migration (every namespace, its lists empty) and by ``doctor``'s
repair (one namespace, writers waiting)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from fivefold.store.postgres import schema
from fivefold.store.postgres.context_rows import Deltas
from fivefold.store.postgres.packed import CHUNK_BITS, Entry, copy_parts, parts, type_code
from fivefold.store.shared.tokens import Tokenizer, window


def reindex(conn: psycopg.Connection, tokenizer: Tokenizer, namespace: str | None = None) -> None:
    """Every memory's postings, document frequencies and token counts again from its text
    (of one namespace, or of all: a schema migration, whose lists are empty), inside the
    caller's transaction. Rows are indexed a chunk at a time (``packed.CHUNK``): each list
    gets one part per chunk."""
    deltas = Deltas()
    if namespace is None:
        conn.execute("UPDATE namespaces SET tokens = '{0,0,0,0}'")
        where, params = "", {}
    else:
        # Writers wait: a memory written meanwhile would be indexed twice, or not at all.
        conn.execute("LOCK TABLE memories, postings IN SHARE ROW EXCLUSIVE MODE")
        for table in ("postings", "term_stats"):
            conn.execute(f"DELETE FROM {table} WHERE namespace = %s", (namespace,))
        conn.execute(  # its row may be gone too
            "INSERT INTO namespaces (namespace) VALUES (%s) ON CONFLICT DO NOTHING",
            (namespace,),
        )
        conn.execute(
            "UPDATE namespaces SET tokens = '{0,0,0,0}', memories = (SELECT count(*) "
            "FROM memories WHERE namespace = %(ns)s) WHERE namespace = %(ns)s",
            {"ns": namespace},
        )
        where, params = "WHERE namespace = %(ns)s ", {"ns": namespace}
    with conn.cursor(name="fivefold_reindex") as rows:
        rows.execute(
            "SELECT namespace, id, type, coalesce(predicate, ''), content, context_near, "
            f"context_far FROM memories {where}ORDER BY namespace, id",
            params,
        )
        pending: list[tuple[Any, ...]] = []
        while batch := rows.fetchmany(2_000):
            pending += batch
            last = (pending[-1][0], int(pending[-1][1]) >> CHUNK_BITS)
            cut = len(pending)
            while cut and (pending[cut - 1][0], int(pending[cut - 1][1]) >> CHUNK_BITS) == last:
                cut -= 1
            _index_rows(conn, tokenizer, deltas, pending[:cut])
            pending = pending[cut:]
        _index_rows(conn, tokenizer, deltas, pending)
    deltas.flush(conn)
    conn.execute(f"UPDATE namespaces SET generation = generation + 1 {where}".strip(), params)


def _index_rows(
    conn: psycopg.Connection,
    tokenizer: Tokenizer,
    deltas: Deltas,
    rows: Sequence[tuple[Any, ...]],
) -> None:
    """``reindex``'s memories (namespace, id, type, predicate, content, context):
    their postings written, their counts in ``deltas``."""
    if not rows:
        return
    counted = tokenizer.count([(r[3], r[4]) for r in rows])
    around = tokenizer.count([(r[5], r[6]) for r in rows])
    entries: dict[tuple[str, int], list[Entry]] = {}
    lengths = []
    for row, own, ctx in zip(rows, counted, around, strict=True):
        namespace, memory_id, code = str(row[0]), int(row[1]), type_code(str(row[2]))
        win = window(own.second, ctx.first, ctx.second)
        entries.setdefault((namespace, schema.OWN), []).append((memory_id, own, code))
        deltas.add(namespace, schema.OWN, own, 1)
        entries.setdefault((namespace, schema.CONTEXT), []).append((memory_id, win, code))
        deltas.add(namespace, schema.CONTEXT, win, 1)
        columns = [own.first_length, own.second_length, win.first_length, win.second_length]
        lengths.append((columns, namespace, memory_id))
    for (namespace, kind), found in entries.items():
        copy_parts(conn, namespace, kind, parts(kind, found))
    with conn.cursor() as cur:
        cur.executemany("UPDATE memories SET tokens = %s WHERE namespace = %s AND id = %s", lengths)
