"""A real rerank server of the Cohere/Jina shape on a loopback port, in a thread of the test
process: ``POST /v1/rerank`` scores each document by how short it is (so the order it gives
is known, and unlike any fusion's), answers the results most relevant first as those APIs do,
records what it is sent, and can be told to fail, stall or answer wrong."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.fake_json_server import json_server

MODEL = "fake-rerank-v1"


def relevance(document: str) -> float:
    return round(1.0 / (1 + len(document)), 6)


@dataclass
class FakeReranker:
    url: str = ""
    # Statuses answered, one per request, before the endpoint answers normally again.
    fail_with: list[int] = field(default_factory=list)
    delay_s: float = 0.0
    body: bytes | None = None  # answered as is (a malformed answer)
    sent: list[dict[str, object]] = field(default_factory=list)  # bodies answered 200
    requests: int = 0
    authorization: list[str | None] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, payload: dict[str, object]) -> tuple[int, bytes]:
        with self.lock:
            self.requests += 1
            if self.fail_with:
                return self.fail_with.pop(0), b'{"message": "busy"}'
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.body is not None:
            return 200, self.body
        documents = payload["documents"]
        assert isinstance(documents, list)
        with self.lock:
            self.sent.append(payload)
        results = [
            {"index": i, "relevance_score": relevance(str(d)), "document": {"text": d}}
            for i, d in enumerate(documents)
        ]
        results.sort(key=lambda r: -float(r["relevance_score"]))  # type: ignore[arg-type]
        top_n = payload.get("top_n")
        if isinstance(top_n, int):
            results = results[:top_n]
        return 200, json.dumps({"id": "r-1", "results": results, "meta": {}}).encode()


@contextmanager
def fake_reranker() -> Iterator[FakeReranker]:
    endpoint = FakeReranker()
    with json_server("/v1/rerank", endpoint.answer, endpoint.authorization, endpoint.lock) as url:
        endpoint.url = url
        yield endpoint
