"""One BLAS thread while a recall runs.

A recall's matrix products are small (the exact dense search is one matrix-vector product over
the namespace's vectors, MMR a product of a few dozen rows), and OpenBLAS splits each over a
thread per core whose workers then spin-wait: at 10k memories that doubles a recall's CPU time
for no gain in wall time. The caller's own numpy keeps its threads outside a recall: the limit
is taken when the first of any concurrent recalls starts and given back when the last ends
(BLAS thread counts are process-wide, so a per-recall restore would race). OpenBLAS ignores a
count set from another thread once the main thread has set one itself: a recall asked from
another thread of such a process runs with the caller's count.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

__all__ = ["one_blas_thread"]

_lock = threading.Lock()
_inside = 0
_limiter: Any = None


@cache
def _controller() -> Any:
    # Inspecting the loaded libraries takes ~2 ms: once per process, not per recall.
    from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]

    return ThreadpoolController()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    global _inside, _limiter
    with _lock:
        if _inside == 0:
            _limiter = _controller().limit(limits=1, user_api="blas")
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                _limiter.restore_original_limits()
                _limiter = None
