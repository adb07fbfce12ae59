"""A recall holds BLAS to one thread, and gives the caller's thread count back after."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from threadpoolctl import threadpool_info, threadpool_limits  # type: ignore[import-untyped]

from fivefold import HashingEmbedder, Memory
from fivefold.embed.base import Vectors
from fivefold.read.blas import one_blas_thread


def _blas_threads() -> int:
    counts = {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}
    assert len(counts) == 1, counts
    return int(counts.pop())


@pytest.fixture
def two_blas_threads() -> Iterator[None]:
    """Two BLAS threads outside a recall, whatever this machine's default (a one-core
    default could not tell a limit from none)."""
    with threadpool_limits(limits=2, user_api="blas"):
        assert _blas_threads() == 2
        yield


class _Watching(HashingEmbedder):
    """Records the BLAS thread count each time the query is embedded, inside the recall."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[int] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.seen.append(_blas_threads())
        return super().embed(texts)


def test_recall_and_explain_run_with_one_blas_thread(
    tmp_path: Path, two_blas_threads: None
) -> None:
    embedder = _Watching()
    with Memory.open(tmp_path / "m.db", embedder=embedder) as mem:
        mem.remember("Ada moved to Lisbon in March.")
        embedder.seen.clear()
        assert mem.recall("where did Ada move?").hits
        mem.explain("when did Ada move to Lisbon?")
    assert embedder.seen == [1, 1]
    assert _blas_threads() == 2


# In a process of its own, two threads by default set by the environment: a count set from
# the main thread first would change how OpenBLAS takes counts set from others.
_FROM_A_THREAD = """
import threading
import numpy
from threadpoolctl import threadpool_info
from fivefold.read.blas import one_blas_thread

def count():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

seen = {"before": count()}

def recall():
    with one_blas_thread():
        seen["inside"] = count()

thread = threading.Thread(target=recall)
thread.start()
thread.join(10)
seen["after"] = count()
print(seen)
"""


def test_a_recall_on_another_thread_leaves_the_count_alone() -> None:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2"}
    done = subprocess.run(
        [sys.executable, "-c", _FROM_A_THREAD], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    seen = ast.literal_eval(done.stdout.strip())
    assert seen == {"before": [2], "inside": [2], "after": [2]}


def test_a_nested_recall_keeps_the_limit_until_the_outer_one_ends(two_blas_threads: None) -> None:
    with one_blas_thread():
        with one_blas_thread():
            assert _blas_threads() == 1
        assert _blas_threads() == 1
    assert _blas_threads() == 2


def test_the_limit_is_given_back_when_a_recall_raises(two_blas_threads: None) -> None:
    inside: list[int] = []

    def failing_recall() -> None:
        with one_blas_thread():
            inside.append(_blas_threads())
            raise RuntimeError("the recall failed")

    with pytest.raises(RuntimeError):
        failing_recall()
    assert inside == [1]
    assert _blas_threads() == 2
