"""Where a Postgres store lives: the schema its URL's ``search_path`` names first (made when
missing), and the pgvector extension its tables need (made in ``public`` when missing, and
refused where the store cannot see it). Run by ``PostgresStore._init_schema`` under its lock."""

from __future__ import annotations

import string

import psycopg
from psycopg import sql

from fivefold.errors import StoreError

__all__ = ["check_vector", "own_schema", "search_path"]

NAME_BYTES = 63  # Postgres cuts a longer identifier to this many bytes (NAMEDATALEN - 1)
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def own_schema(conn: psycopg.Connection, location: str) -> str:
    """The store's schema: the first of the ``search_path`` that exists and may be used, as
    Postgres picks it, except that a schema the URL names and that does not exist is made (not
    skipped: Postgres would put the tables in the next one, ``public``, and stores meant apart
    would share it). ``$user`` is skipped as Postgres skips it (missing or not usable)."""
    path, user = conn.execute("SELECT current_setting('search_path'), current_user").fetchone()  # type: ignore[misc]
    for entry in search_path(str(path)):
        named = entry != "$user"
        name = entry if named else _clip(str(user))
        row = conn.execute(
            "SELECT has_schema_privilege(oid, 'USAGE') FROM pg_namespace WHERE nspname = %s",
            (name,),
        ).fetchone()
        if row is None and named:
            _make(conn, location, name)
        elif row is None or not row[0]:
            if named:
                raise StoreError(
                    f"{location}: the schema {name!r} the URL's search_path names cannot be "
                    "used by this role (no USAGE privilege)"
                )
            continue
        current = conn.execute("SELECT current_schema()").fetchone()
        if current is None or current[0] != name:
            raise StoreError(
                f"{location}: the schema {name!r} the URL's search_path names is not usable "
                f"(the connection would use {current and current[0]!r})"
            )
        return name
    raise StoreError(f"{location}: the URL's search_path names no schema that can be used")


def check_vector(conn: psycopg.Connection, location: str) -> None:
    """Refused when the pgvector extension exists in a schema the store's ``search_path``
    leaves out (its tables could not name the type); a missing one is made by the first
    migration, in ``public``."""
    row = conn.execute(
        "SELECT n.nspname, n.nspname = ANY(current_schemas(false)) FROM pg_extension e "
        "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
    ).fetchone()
    if row is not None and not row[1]:
        raise StoreError(
            f"{location}: the pgvector extension is in the schema {row[0]!r}, which the URL's "
            f"search_path does not name: add it (options=-csearch_path%3Dmy_schema,{row[0]})"
        )


def search_path(value: str) -> list[str]:
    """The schema names of a ``search_path`` setting, as Postgres reads them: unquoted names
    folded to lower case, quoted ones as written (``""`` inside for a quote), each cut to 63
    bytes; ``$user`` as is."""
    names: list[str] = []
    at = 0
    while at < len(value):
        while at < len(value) and value[at] in " \t,":
            at += 1
        if at >= len(value):
            break
        if value[at] == '"':
            name, at = "", at + 1
            while at < len(value):
                if value[at] == '"':
                    if value[at + 1 : at + 2] == '"':
                        name, at = name + '"', at + 2
                        continue
                    at += 1
                    break
                name, at = name + value[at], at + 1
        else:
            end = value.find(",", at)
            end = len(value) if end < 0 else end
            name, at = value[at:end].strip().translate(_ASCII_LOWER), end
        names.append(name if name == "$user" else _clip(name))
    return names


def _clip(name: str) -> str:
    """As Postgres cuts an identifier: to 63 bytes, at a character's boundary."""
    return name.encode()[:NAME_BYTES].decode("utf-8", "ignore")


def _make(conn: psycopg.Connection, location: str, name: str) -> None:
    try:
        with conn.transaction():
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(name)))
    except psycopg.Error as exc:
        raise StoreError(
            f"{location}: the schema {name!r} the URL's search_path names does not exist and "
            f"cannot be made ({exc}); create it, or name one that exists"
        ) from exc
