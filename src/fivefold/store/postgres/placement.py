"""Where a Postgres store lives: the schema its URL's ``search_path`` names first (made when
missing), and the pgvector extension its tables need (made in ``public`` when missing, and
refused where the store cannot see it). Run by ``PostgresStore._init_schema`` under its lock."""

from __future__ import annotations

import string
from urllib.parse import parse_qsl, urlencode

import psycopg
from psycopg import sql

from fivefold.errors import StoreError
from fivefold.store.postgres import schema

__all__ = [
    "check_vector",
    "holds_store",
    "own_schema",
    "pick",
    "search_path",
    "without_password",
]

NAME_BYTES = 63  # Postgres cuts a longer identifier to this many bytes (NAMEDATALEN - 1)
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def own_schema(conn: psycopg.Connection, location: str) -> str:
    """The store's schema (``pick``), made when it is missing."""
    name, exists = pick(conn, location)
    if not exists:
        _make(conn, location, name)
    current = conn.execute("SELECT current_schema()").fetchone()
    if current is None or current[0] != name:
        raise StoreError(
            f"{location}: the schema {name!r} the URL's search_path names is not usable "
            f"(the connection would use {current and current[0]!r})"
        )
    return name


def pick(conn: psycopg.Connection, location: str) -> tuple[str, bool]:
    """The store's schema and whether it exists: the first of the ``search_path`` that exists
    and may be used, as Postgres picks it, except that a schema the URL names and that does
    not exist is the store's (to be made: Postgres would skip it and put the tables in the next
    one, ``public``, and stores meant apart would share it). ``$user`` is skipped as Postgres
    skips it (missing or not usable)."""
    path, user = conn.execute("SELECT current_setting('search_path'), current_user").fetchone()  # type: ignore[misc]
    for entry in search_path(str(path)):
        named = entry != "$user"
        name = entry if named else _clip(str(user))
        row = conn.execute(
            "SELECT has_schema_privilege(oid, 'USAGE') FROM pg_namespace WHERE nspname = %s",
            (name,),
        ).fetchone()
        if row is None and named:
            return name, False
        if row is None or not row[0]:
            if named:
                raise StoreError(
                    f"{location}: the schema {name!r} the URL's search_path names cannot be "
                    "used by this role (no USAGE privilege)"
                )
            continue
        return name, True
    raise StoreError(f"{location}: the URL's search_path names no schema that can be used")


def holds_store(url: str) -> bool:
    """Whether the store a URL names is there (its schema, with fivefold's tables), read
    without making anything: what `fivefold doctor` and `stats` ask first."""
    location = without_password(url)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            name, exists = pick(conn, location)
            if not exists:
                return False
            table = sql.SQL("{}.fivefold_meta").format(sql.Identifier(name)).as_string(conn)
            row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
    except psycopg.Error as exc:
        raise StoreError(f"cannot open the store at {location}: {exc}") from exc
    return bool(row and row[0])


def check_vector(conn: psycopg.Connection, location: str) -> None:
    """Refused when the pgvector extension exists in a schema the store's ``search_path``
    leaves out (its tables could not name the type); a missing one is made in ``public``, one
    opener of the database at a time (``schema.EXTENSION_LOCK``)."""
    row = conn.execute(
        "SELECT n.nspname, n.nspname = ANY(current_schemas(false)) FROM pg_extension e "
        "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
    ).fetchone()
    if row is None:
        seen = conn.execute("SELECT 'public' = ANY(current_schemas(false))").fetchone()
        if seen is not None and seen[0]:
            conn.execute(schema.EXTENSION_LOCK)
            conn.execute(schema.MAKE_EXTENSION)  # made meanwhile by the lock's holder: nothing
            return
        raise StoreError(
            f"{location}: the pgvector extension is not installed, and the schema it is "
            "made in, 'public', is not in the URL's search_path: add it "
            "(options=-csearch_path%3Dmy_schema,public), or have it installed in a schema "
            "the search_path names"
        )
    if not row[1]:
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


_SECRETS = frozenset({"password", "sslpassword"})  # libpq parameters that hold a secret


def without_password(url: str) -> str:
    """The URL as messages and ``stats`` show it: no password, in its user part or given as a
    parameter (``?password=``: a store's errors can reach keyed clients, who must not see
    it). Cut from the URL's own text: a socket's empty host, several hosts and IPv6
    brackets stay as written."""
    scheme, sep, rest = url.partition("://")
    before, mark, query = rest.partition("?")
    netloc, slash, path = before.partition("/")
    userinfo, at, hosts = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.split(':', 1)[0]}@{hosts}"
    if mark:
        pairs = parse_qsl(query, keep_blank_values=True)
        kept = [(k, v) for k, v in pairs if k not in _SECRETS]
        if len(kept) != len(pairs):
            query = urlencode(kept, safe="/:,")
            mark = "?" if query else ""
    return f"{scheme}{sep}{netloc}{slash}{path}{mark}{query}"
