"""The lexical indexer's child process (``indexer.py`` starts it and says why): it opens the
same store and brings each namespace named on its stdin up to date, as a second process of the
user's would."""

from __future__ import annotations

import json
import sqlite3
import sys

from fivefold.errors import StoreError
from fivefold.store.sqlite.files import connect
from fivefold.store.sqlite.lexical import LexicalIndexes

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """The child: catch up each namespace named on stdin until the stop line or its end."""
    path, store_id = argv
    conn, _ = connect(path)
    try:
        indexes = LexicalIndexes(conn, path, store_id=store_id, read_only=False, in_memory=False)
        for line in sys.stdin:
            namespace = json.loads(line)
            if namespace is None:
                break
            try:
                indexes.current(namespace)
            except (StoreError, OSError, ValueError, sqlite3.Error) as exc:
                print(f"fivefold indexer: {path} {namespace!r}: {exc}", file=sys.stderr)
    finally:
        conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
