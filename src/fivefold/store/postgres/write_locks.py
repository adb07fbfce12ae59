"""What keeps concurrent Postgres writers apart: memory ids taken from the sequence (or given,
the sequence moved past them), and one write of a session at a time."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Sequence

import psycopg

from fivefold.store.postgres import write_sql
from fivefold.store.shared import batch
from fivefold.store.shared.context import Group


def take_ids(conn: psycopg.Connection, given: Sequence[int], count: int) -> list[int]:
    """``given`` ids (``batch.given_ids``), the sequence moved past them. Alone
    (``write_sql.IDS_EXCLUSIVE``): a writer that had taken ids from the sequence has committed,
    and the next waits for this one, so none takes a given id meanwhile (a writer into a copy's
    destination took ids the copy then gave memories of other namespaces: two of each id, and
    the sequence set back under them). Sequences are not rolled back: a batch that fails
    leaves a gap, as a reserved one does."""
    ids = batch.given_ids(given, count, move_memory_ids(conn, None))
    if ids:
        move_memory_ids(conn, ids[-1] + 1)
    return ids


def next_memory_id(conn: psycopg.Connection) -> int:
    """The id the sequence gives next."""
    row = conn.execute(
        "SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END "
        "FROM fivefold_memory_ids"
    ).fetchone()
    return int(row[0]) if row else 1


def move_memory_ids(conn: psycopg.Connection, at_least: int | None) -> int:
    """In the caller's transaction, alone with the sequence until it ends: its next id, first
    moved up to ``at_least`` when below."""
    conn.execute(write_sql.IDS_EXCLUSIVE)
    now = next_memory_id(conn)
    if at_least is not None and at_least > now:
        conn.execute("SELECT setval('fivefold_memory_ids', %s, false)", (at_least,))
        return at_least
    return now


def lock_sessions(conn: psycopg.Connection, groups: Iterable[Group]) -> None:
    """Take the sessions' write locks (``write_sql.SESSION_LOCK``), in one order for every writer:
    two cannot wait on each other for them."""
    keys = sorted(set(session_keys(groups)))
    if keys:
        conn.execute(write_sql.LOCK_SESSIONS, (write_sql.SESSION_LOCK, keys))


def session_keys(groups: Iterable[Group]) -> Iterator[int]:
    """Each session's lock key: its namespace and a bucket of its user, agent and id, as a
    signed 32-bit integer (stable across processes, unlike ``hash``)."""
    for namespace, user, agent, session in groups:
        bucket = (
            zlib.crc32("\x00".join((user, agent, session)).encode()) % write_sql.SESSION_BUCKETS
        )
        key = zlib.crc32(f"{namespace}\x00{bucket}".encode())
        yield key - (1 << 32) if key >= 1 << 31 else key


__all__ = ["lock_sessions", "move_memory_ids", "next_memory_id", "take_ids"]
