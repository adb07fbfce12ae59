"""A real OpenAI-compatible embeddings server on a loopback port, in a thread of the test
process: it answers ``POST /v1/embeddings`` with the hashing embedder's vectors (texts that
share words get a positive cosine, so recalls mean something), counts what it is sent, and
can be told to fail, stall or answer wrong."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.fake_json_server import json_server

from fivefold import HashingEmbedder

MODEL = "fake-embed-v1"
DIM = 32


@dataclass
class FakeEndpoint:
    url: str = ""
    dim: int = DIM
    # Statuses answered, one per request, before the endpoint answers normally again.
    fail_with: list[int] = field(default_factory=list)
    delay_s: float = 0.0
    body: bytes | None = None  # answered as is (a malformed answer)
    batches: list[int] = field(default_factory=list)  # texts per request answered 200
    requests: int = 0
    authorization: list[str | None] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, payload: dict[str, object]) -> tuple[int, bytes]:
        with self.lock:
            self.requests += 1
            if self.fail_with:
                return self.fail_with.pop(0), b'{"error": {"message": "busy"}}'
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.body is not None:
            return 200, self.body
        texts = payload["input"]
        assert isinstance(texts, list)
        assert payload["model"] == MODEL
        vectors = HashingEmbedder(self.dim).embed([str(t) for t in texts]).tolist()
        with self.lock:
            self.batches.append(len(texts))
        # Reversed, as a server may answer: the embedder must order rows by ``index``.
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        return 200, json.dumps({"object": "list", "data": data[::-1], "model": MODEL}).encode()


@contextmanager
def fake_endpoint() -> Iterator[FakeEndpoint]:
    endpoint = FakeEndpoint()
    with json_server(
        "/v1/embeddings", endpoint.answer, endpoint.authorization, endpoint.lock
    ) as url:
        endpoint.url = url
        yield endpoint


def embed_toml(endpoint: FakeEndpoint, extra: str = "") -> str:
    return (
        f'[embed]\nprovider = "openai"\nurl = "{endpoint.url}"\nmodel = "{MODEL}"\n'
        f"dim = {DIM}\n{extra}"
    )
