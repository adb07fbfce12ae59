"""Closing a ``Memory`` while another thread uses it: the calls in flight finish and are
answered truly; later calls are refused with ``StoreError``; on both backends."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import fivefold
from fivefold import Memory, StoreError


def _open(store_url: str) -> Memory:
    return Memory.open(store_url, embedder=fivefold.HashingEmbedder(dim=16))


@pytest.mark.slow
def test_close_waits_for_a_write_it_met_after_the_commit(
    new_store: Callable[[], str],
) -> None:
    """The write has committed when ``close()`` is called; it must not be told it failed
    (its records are read back after the commit: a closed store failed that read)."""
    store_url = new_store()
    memory = _open(store_url)
    committed, closing = threading.Event(), threading.Event()
    insert = memory.store.writes.insert_memories

    def slow_insert(*args: Any, **kwargs: Any) -> Any:
        written = insert(*args, **kwargs)
        committed.set()
        closing.wait(10)
        time.sleep(0.3)  # close() runs now, unless it waits for this call
        return written

    memory.store.writes.insert_memories = slow_insert  # type: ignore[method-assign]
    outcome: list[Any] = []

    def write() -> None:
        try:
            outcome.append(memory.remember_many([{"content": f"note {i}"} for i in range(20)]))
        except Exception as exc:  # the failure this test is about
            outcome.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    assert committed.wait(30)
    closer = threading.Thread(target=memory.close)
    closer.start()
    closing.set()
    writer.join(30)
    closer.join(30)
    assert not closer.is_alive()
    (records,) = outcome
    assert not isinstance(records, BaseException), records
    assert [r.content for r in records] == [f"note {i}" for i in range(20)]
    with _open(store_url) as again:
        assert again.stats().memories == 20


def test_calls_after_close_are_refused(store_url: str) -> None:
    memory = _open(store_url)
    memory.remember("the blue bicycle")
    memory.close()
    for call in (
        lambda: memory.recall("bicycle"),
        lambda: memory.remember("another"),
        lambda: memory.remember_many([{"content": "more"}]),
        lambda: memory.stats(),
        lambda: memory.forget(1),
    ):
        with pytest.raises(StoreError, match="closed"):
            call()
    memory.close()  # a second close does nothing


def test_close_from_inside_a_call_does_not_wait_for_itself(store_url: str) -> None:
    """A call that closes its own ``Memory`` (say, a handler on shutdown) returns, and the
    store is closed."""
    memory = _open(store_url)
    stats = memory.store.admin.stats

    def closing_stats(*args: Any, **kwargs: Any) -> Any:
        found = stats(*args, **kwargs)
        memory.close()
        return found

    memory.store.admin.stats = closing_stats  # type: ignore[method-assign]
    memory.stats()
    with pytest.raises(StoreError, match="closed"):
        memory.recall("anything")


@pytest.mark.slow
def test_a_second_close_waits_for_the_first() -> None:
    """Two threads close at once while a call runs: neither returns before the store is
    closed (the second returned at once, with the store still open)."""
    memory = _open(":memory:")
    inside, release = threading.Event(), threading.Event()
    closed: list[float] = []
    store_close = memory.store.close

    def slow_stats(*args: Any, **kwargs: Any) -> Any:
        inside.set()
        release.wait(10)
        return None

    def closing() -> None:
        store_close()
        closed.append(time.monotonic())

    memory.store.admin.stats = slow_stats  # type: ignore[method-assign]
    memory.store.close = closing  # type: ignore[method-assign]
    caller = threading.Thread(target=memory.stats)
    caller.start()
    assert inside.wait(10)
    returned: list[float] = []
    closers = [
        threading.Thread(target=lambda: (memory.close(), returned.append(time.monotonic())))
        for _ in range(2)
    ]
    for closer in closers:
        closer.start()
    time.sleep(0.3)
    assert returned == []  # both wait for the call in flight
    release.set()
    for thread in (caller, *closers):
        thread.join(10)
    assert len(closed) == 1  # closed once
    assert len(returned) == 2
    assert min(returned) >= closed[0]
