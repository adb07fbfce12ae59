"""The lexical index's catch-ups during a long ingest, in a process of their own.

Why a process: bringing a tantivy index up to date is Python work (reading the changed rows,
tokenizing them, building documents) that holds the GIL, so a thread would only take turns with
the writer on one core. At 1M memories it was a fifth of a bulk ingest's time on the writer's
thread; a child process does it on the other core (measured on a copy of the 1M store, 40
batches of 2,000: 3,158 -> 3,715 memories/s).

How: after a write, the store's ``LexicalIndexes`` counts the log entries waiting for a
namespace; once a batch's worth waits it sends the namespace here (a line on the child's stdin)
instead of applying them itself, and does not ask again until as many more wait. The child
opens the same store and brings the namespace's on-disk index up to date exactly as a second
process of the user's would: under tantivy's writer lock, saving the last log entry applied
beside the index. Nothing depends on it. A read in the store's own process still applies
whatever waits first, waiting for the writer lock if the child holds it and adopting what the
child committed; closing the store applies the rest; and if the child cannot start or has
exited, the store applies the log itself, as it did before (logged once).

Lifetime: started by the first batch's worth of waiting entries (a store that never writes that
much never starts one); it ends when its stdin closes, after finishing the catch-up it is in:
when the store closes, or is garbage-collected, or its process dies (the OS closes the pipe).
It ignores SIGINT: Ctrl-C in a terminal reaches the whole process group, and the store's
process decides what happens.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import weakref
from pathlib import Path

__all__ = ["Indexer"]

STOP_WAIT_S = 60.0  # a catch-up in progress finishes; a longer one is killed (the log stays)


class Indexer:
    """The parent's end: ``nudge(namespace)`` asks the child to catch the namespace's index up;
    False when the child is gone (the caller applies the log itself)."""

    def __init__(self, path: str, store_id: str) -> None:
        self._process = subprocess.Popen(
            [_python(), "-c", _child_code(), path, store_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        self._finalizer = weakref.finalize(self, _stop, self._process, 0.0)

    def nudge(self, namespace: str) -> bool:
        stdin = self._process.stdin
        if stdin is None or self._process.poll() is not None:
            return False
        try:
            stdin.write(json.dumps(namespace) + "\n")
            stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            return False
        return True

    @property
    def pid(self) -> int:
        return self._process.pid

    def close(self) -> None:
        """Close its stdin and wait for it to finish the catch-up it is in."""
        self._finalizer.detach()
        _stop(self._process, STOP_WAIT_S)


def _python() -> str:
    """This interpreter, when it is one: an application that embeds Python (uWSGI, a frozen
    executable) has another program as ``sys.executable``, which must not be run."""
    executable = sys.executable
    name = os.path.basename(executable or "").lower()
    if not executable or getattr(sys, "frozen", False) or not name.startswith("python"):
        raise OSError(f"no Python interpreter to run it ({executable!r})")
    return executable


def _child_code() -> str:
    """The child's program: this module's ``main``, imported from the same place as here (the
    folder holding the package goes first on its path only when this process found it
    elsewhere than on the default path, e.g. a source tree it put on ``sys.path`` itself)."""
    root = str(Path(__file__).resolve().parents[3])
    prefix = "" if root in sys.path else f"sys.path.insert(0, {root!r}); "
    return f"import sys; {prefix}from {__name__} import main; sys.exit(main(sys.argv[1:]))"


def _stop(process: subprocess.Popen[str], wait_s: float) -> None:
    if process.stdin is not None:
        with contextlib.suppress(OSError):  # it died with unread nudges in the pipe
            process.stdin.close()
    if wait_s <= 0.0:
        return  # garbage collection must not block: it exits on its own at EOF
    try:
        process.wait(wait_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main(argv: list[str]) -> int:
    """The child: catch up each namespace named on stdin until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from fivefold.store.sqlite.lexical import LexicalIndexes
    from fivefold.store.sqlite.store import connect

    path, store_id = argv
    conn, _ = connect(path)
    try:
        indexes = LexicalIndexes(conn, path, store_id=store_id, read_only=False, in_memory=False)
        for line in sys.stdin:
            indexes.current(json.loads(line))
    finally:
        conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
