"""An OpenAI-compatible embeddings endpoint (``POST {url}/embeddings``): OpenAI, vLLM, Ollama,
LM Studio. Texts go in batches; a 429, a 5xx or no answer in time is retried with backoff; an
answer of the wrong shape is an error, never a vector stored."""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from fivefold.embed.base import Vectors, normalize_rows
from fivefold.errors import EmbedderError

__all__ = ["OpenAIEmbedder"]

# Backoff before retry n (from 0): FIRST_BACKOFF_S * 2**n, or what Retry-After asks, capped.
FIRST_BACKOFF_S = 0.25
MAX_BACKOFF_S = 8.0
_RETRIED = frozenset({429, 500, 502, 503, 504})


class OpenAIEmbedder:
    """Thread-safe (one pooled ``httpx.Client``, made on the first call)."""

    def __init__(
        self,
        *,
        url: str,
        model: str,
        dim: int,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout_s: float = 30.0,
        retries: int = 3,
    ) -> None:
        if dim < 2:
            raise EmbedderError("the openai embedder needs the model's dimension (embed.dim)")
        self._endpoint = url.rstrip("/") + "/embeddings"
        self._model = model
        self._dim = dim
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._batch_size = batch_size
        self._timeout_s = timeout_s
        self._retries = retries
        self._lock = threading.Lock()
        self._client: httpx.Client | None = None

    @property
    def name(self) -> str:
        return f"openai:{self._model}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            out[start : start + len(batch)] = self._vectors(batch, self._post(batch))
        return normalize_rows(out)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self._timeout_s, headers=self._headers)
            return self._client

    def _post(self, batch: list[str]) -> object:
        body = {"model": self._model, "input": batch}
        for attempt in range(self._retries + 1):
            last = attempt == self._retries
            try:
                response = self._http().post(self._endpoint, json=body)
            except httpx.TimeoutException as exc:
                if last:
                    raise EmbedderError(
                        f"{self._endpoint} did not answer within {self._timeout_s:g} s "
                        f"({self._retries + 1} tries)"
                    ) from exc
                self._sleep(attempt, None)
                continue
            except httpx.HTTPError as exc:
                raise EmbedderError(f"could not reach {self._endpoint}: {exc}") from exc
            if response.status_code in _RETRIED and not last:
                self._sleep(attempt, response.headers.get("retry-after"))
                continue
            if response.is_error:
                # embed.url is the API's base: a URL that ends in /embeddings is asked twice.
                hint = " (embed.url is the API's base, as http://host:port/v1)" * (
                    response.status_code == 404
                )
                raise EmbedderError(
                    f"{self._endpoint} answered {response.status_code}{hint}: {_excerpt(response)}"
                )
            try:
                return response.json()
            except ValueError as exc:
                raise EmbedderError(f"{self._endpoint} answered with no JSON body") from exc
        raise AssertionError("unreachable: the last try returns or raises")

    def _sleep(self, attempt: int, retry_after: str | None) -> None:
        wait = FIRST_BACKOFF_S * 2**attempt
        # An HTTP date in Retry-After is not read: the backoff stands then.
        if retry_after is not None and re.fullmatch(r"\d+(\.\d+)?", retry_after.strip()):
            wait = float(retry_after)
        time.sleep(min(max(wait, 0.0), MAX_BACKOFF_S))

    def _vectors(self, batch: list[str], body: object) -> Vectors:
        """The ``data`` rows in ``index`` order, each of ``dim`` finite numbers."""
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != len(batch):
            got = f"{len(data)} embeddings" if isinstance(data, list) else "no data list"
            raise EmbedderError(
                f"{self._endpoint} answered {got} for {len(batch)} texts "
                '(expected {"data": [{"embedding": [...], "index": i}, ...]})'
            )
        rows: list[Any] = [None] * len(batch)
        for position, item in enumerate(data):
            index = item.get("index", position) if isinstance(item, dict) else None
            vector = item.get("embedding") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < len(batch) or rows[index] is not None:
                raise EmbedderError(f"{self._endpoint}: data[{position}] has a bad index")
            if not isinstance(vector, list) or not all(_number(v) for v in vector):
                raise EmbedderError(
                    f"{self._endpoint}: data[{position}].embedding is not a list of numbers"
                )
            if len(vector) != self._dim:
                raise EmbedderError(
                    f"{self._endpoint} gave {len(vector)}-d vectors for model {self._model!r}, "
                    f"but embed.dim is {self._dim}: set embed.dim = {len(vector)}"
                )
            rows[index] = vector
        return np.asarray(rows, dtype=np.float32)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _excerpt(response: httpx.Response) -> str:
    text = " ".join(response.text.split())
    return (text[:200] + "...") if len(text) > 200 else text or response.reason_phrase
