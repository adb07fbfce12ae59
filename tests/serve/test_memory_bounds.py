"""Bounds on a server's memory, over a real socket: the word pieces its model embeds at once
(``serve.max_inflight_tokens``), and the memory a large batch leaves behind."""

from __future__ import annotations

import random
import re
import threading
from pathlib import Path

import httpx
import psutil
import pytest
from tests.serve.conftest import start_server

WORDS = "the team moved the release after the billing migration failed on staging again".split()
MB = 1 << 20


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS))
    return " ".join(words)[:chars]


def _gauge(url: str, name: str) -> float:
    exposition = httpx.get(f"{url}/metrics", timeout=30).text
    found = re.search(rf"^{name} (\S+)$", exposition, re.MULTILINE)
    assert found is not None, exposition
    return float(found.group(1))


def test_concurrent_writes_hold_no_more_word_pieces_than_the_budget(tmp_path: Path) -> None:
    """Four batches at once, each of texts that exceed the budget one by one: every one is
    written (each text waits its turn and runs alone), and the word pieces embedded at once
    never exceed the budget."""
    server = start_server(tmp_path, settings="max_inflight_tokens = 100\nthreads = 4")
    try:
        rng = random.Random(3)
        statuses: list[int] = []

        def write(n: int) -> None:
            items = [{"content": f"batch {n}: {_text(rng, 600)}"} for _ in range(6)]
            response = httpx.post(
                f"{server.url}/v1/memories/batch", json={"items": items}, timeout=300
            )
            statuses.append(response.status_code)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert statuses == [201] * 4
        assert _gauge(server.url, "fivefold_embed_tokens_budget") == 100
        # A text of 600 characters is well over 100 word pieces: it held the whole budget, and
        # nothing else ran beside it.
        assert _gauge(server.url, "fivefold_embed_tokens_peak") == 100
        assert _gauge(server.url, "fivefold_embed_tokens_in_flight") == 0
        found = httpx.post(
            f"{server.url}/v1/recall", json={"query": "billing migration"}, timeout=60
        )
        assert found.status_code == 200
        assert found.json()["hits"]
    finally:
        server.stop()


def test_a_recall_runs_beside_a_batch_within_the_default_budget(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    try:
        assert _gauge(server.url, "fivefold_embed_tokens_budget") == 8192
        httpx.post(f"{server.url}/v1/recall", json={"query": "hello"}, timeout=60)
        # The warm-up and the query: a few word pieces each, none left held.
        assert 0 < _gauge(server.url, "fivefold_embed_tokens_peak") < 100
        assert _gauge(server.url, "fivefold_embed_tokens_in_flight") == 0
    finally:
        server.stop()


@pytest.mark.slow
def test_a_large_batch_leaves_the_server_near_its_memory_before(tmp_path: Path) -> None:
    """A batch of 100 memories of 1.5 KB runs the model's largest batches; once answered, the
    server gives their buffers back (a generous bound: it kept about 600 MB more before)."""
    server = start_server(tmp_path)
    try:
        process = psutil.Process(server.process.pid)
        before = process.memory_info().rss
        rng = random.Random(5)
        items = [{"content": _text(rng, 1500)} for _ in range(100)]
        response = httpx.post(f"{server.url}/v1/memories/batch", json={"items": items}, timeout=600)
        assert response.status_code == 201
        grown = (process.memory_info().rss - before) / MB
        assert grown < 200, f"{grown:.0f} MB more than before the batch"
    finally:
        server.stop()
