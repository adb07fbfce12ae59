"""The lexical index's catch-ups during a long ingest, in a process of their own.

Why a process: bringing a tantivy index up to date is Python work (reading the changed rows,
tokenizing them, building documents) that holds the GIL, so a thread would only take turns with
the writer on one core. On a large store it is a fair share of a bulk ingest's time on the
writer's thread; a child process does it on the other core.

How: after a write, the store's ``LexicalIndexes`` counts the log entries waiting for a
namespace; once a batch's worth waits it sends the namespace here (a line on the child's stdin)
instead of applying them itself, and does not ask again until as many more wait. The child
opens the same store and brings the namespace's on-disk index up to date exactly as a second
process of the user's would: under tantivy's writer lock, saving the last log entry applied
beside the index before it lets the lock go. Nothing depends on it. A read in the store's own
process still applies whatever waits first, waiting for the writer lock while the child holds
it and adopting what the child committed; closing the store applies the rest; and if the
child cannot start or has exited, the store applies the log itself, as it did before (logged
once). A catch-up that fails in the child (another process holding the lock too long, a full
disk) is reported on its stderr in one line and left to the next nudge or read.

Lifetime: started by the first batch's worth of waiting entries (a store that never writes that
much never starts one). It stops after the nudges sent before the store closes (a last line
says so), or at the end of its stdin: when the store is garbage-collected unclosed, or its
process dies (the OS closes the pipe; a process forked from the store's closes its copy of the
pipe at once, so it never keeps the child alive). It runs in a session of its own, so Ctrl-C
in a terminal reaches the store's process only, which decides.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import weakref

__all__ = ["Indexer"]

CHILD = __name__.rpartition(".")[0] + ".indexer_child"  # the child's module
STOP_WAIT_S = 60.0  # the nudges sent finish; a longer catch-up is killed (the log stays)
_STOP = "null"  # the last line: no namespace is JSON null


class Indexer:
    """The parent's end: ``nudge(namespace)`` asks the child to catch the namespace's index up;
    False when the child is gone (the caller applies the log itself)."""

    def __init__(self, path: str, store_id: str) -> None:
        self._owner = os.getpid()
        self._process = subprocess.Popen(
            [_python(), "-I", "-c", _child_code(), path, store_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        self._finalizer = weakref.finalize(self, _stop, self._process, 0.0)
        _LIVE.add(self)

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def alive(self) -> bool:
        return self._ours() and self._process.poll() is None

    def nudge(self, namespace: str) -> bool:
        stdin = self._process.stdin
        if stdin is None or not self.alive:
            return False
        try:
            stdin.write(json.dumps(namespace) + "\n")
            stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            return False
        return True

    def close(self) -> None:
        """Ask the child to stop after the nudges sent, and wait for it."""
        self._finalizer.detach()
        _LIVE.discard(self)
        if not self._ours():
            return  # a forked copy: the child is the parent's to stop
        stdin = self._process.stdin
        if stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                stdin.write(_STOP + "\n")
                stdin.flush()
        _stop(self._process, STOP_WAIT_S)

    def _ours(self) -> bool:
        return os.getpid() == self._owner

    def _forget_in_fork(self) -> None:
        """In a process forked from the owner: let go of the pipe (the child would otherwise
        wait for this copy to close it too)."""
        self._finalizer.detach()
        stdin = self._process.stdin
        if stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                os.close(stdin.fileno())
            self._process.stdin = None


_LIVE: weakref.WeakSet[Indexer] = weakref.WeakSet()


def _after_fork() -> None:
    for indexer in list(_LIVE):
        indexer._forget_in_fork()
    _LIVE.clear()


os.register_at_fork(after_in_child=_after_fork)


def _python() -> str:
    """This interpreter, when it is one: an application that embeds Python (uWSGI, a frozen
    executable) has another program as ``sys.executable``, which must not be run."""
    executable = sys.executable
    name = os.path.basename(executable or "").lower()
    if not executable or getattr(sys, "frozen", False) or not name.startswith("python"):
        raise OSError(f"no Python interpreter to run it ({executable!r})")
    return executable


def _child_code() -> str:
    """The child's program: ``indexer_child.main``, imported with this process's ``sys.path``
    (as ``multiprocessing`` does: the same copy of the package and of its dependencies, whatever
    the environment or working directory says; ``-I`` keeps both out). Named, not imported:
    the child's module imports the store, which imports this one."""
    return (
        f"import sys; sys.path[:] = {sys.path!r}; "
        f"from {CHILD} import main; sys.exit(main(sys.argv[1:]))"
    )


def _stop(process: subprocess.Popen[str], wait_s: float) -> None:
    if process.stdin is not None:
        with contextlib.suppress(OSError):  # it died with unread nudges in the pipe
            process.stdin.close()
    if wait_s <= 0.0:
        # Garbage collection must not block: the child exits on its own at EOF, and a daemon
        # thread reaps it (else it stays a zombie until the next Popen of this process).
        with contextlib.suppress(RuntimeError):  # no new threads at interpreter shutdown
            threading.Thread(target=process.wait, name="fivefold-indexer-reap", daemon=True).start()
        return
    try:
        process.wait(wait_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
