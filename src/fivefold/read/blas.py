"""One BLAS thread while a recall runs.

A recall's matrix products are small (the exact dense search is one matrix-vector product over
the namespace's vectors, MMR a product of a few dozen rows), and OpenBLAS splits each over a
thread per core whose workers then spin-wait: at 10k memories that nearly doubles a recall's
CPU time for no gain in wall time. The limit is process-wide (the recall's own worker threads
see it) and the caller's count is given back when the recall ends. It is taken only by a
recall on the main thread: OpenBLAS (0.3.31) sometimes ignores a count set from another
thread, so a count given back from one could leave the caller's numpy on one thread for good.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

__all__ = ["one_blas_thread"]

_depth = 0
_limiter: Any = None


@cache
def _controller() -> Any:
    # Inspecting the loaded libraries takes ~2 ms: once per process, not per recall.
    from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]

    return ThreadpoolController()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    global _depth, _limiter
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if _depth == 0:
        _limiter = _controller().limit(limits=1, user_api="blas")
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _limiter.restore_original_limits()
            _limiter = None
