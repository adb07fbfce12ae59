"""An OpenAI-compatible embeddings endpoint (``POST {url}/embeddings``): OpenAI, vLLM, Ollama,
LM Studio. Texts go in batches; a 429, a 5xx or no answer in time is retried with backoff; an
answer of the wrong shape is an error, never a vector stored."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fivefold.embed.base import KnownModel, Vectors, normalize_rows
from fivefold.embed.endpoint import JsonEndpoint, finite_number
from fivefold.errors import EmbedderError

__all__ = ["OpenAIEmbedder"]


class OpenAIEmbedder(KnownModel):
    """Thread-safe (one pooled client, made on the first call)."""

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
        self._endpoint = JsonEndpoint(
            url,
            "embeddings",
            api_key=api_key,
            timeout_s=timeout_s,
            retries=retries,
            error=EmbedderError,
            setting="embed.url",
        )
        super().__init__(f"openai:{model}", dim)
        self._model = model
        self._batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            answer = self._endpoint.post({"model": self._model, "input": batch})
            out[start : start + len(batch)] = self._vectors(batch, answer)
        return normalize_rows(out)

    def close(self) -> None:
        self._endpoint.close()

    def _vectors(self, batch: list[str], body: object) -> Vectors:
        """The ``data`` rows in ``index`` order, each of ``dim`` finite numbers."""
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != len(batch):
            got = f"{len(data)} embeddings" if isinstance(data, list) else "no data list"
            raise EmbedderError(
                f"{self._endpoint.url} answered {got} for {len(batch)} texts "
                '(expected {"data": [{"embedding": [...], "index": i}, ...]})'
            )
        rows: list[Any] = [None] * len(batch)
        for position, item in enumerate(data):
            index = item.get("index", position) if isinstance(item, dict) else None
            vector = item.get("embedding") if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < len(batch) or rows[index] is not None:
                raise EmbedderError(f"{self._endpoint.url}: data[{position}] has a bad index")
            if not isinstance(vector, list) or not all(finite_number(v) for v in vector):
                raise EmbedderError(
                    f"{self._endpoint.url}: data[{position}].embedding is not a list of numbers"
                )
            if len(vector) != self._dim:
                raise EmbedderError(
                    f"{self._endpoint.url} gave {len(vector)}-d vectors for model {self._model!r}, "
                    f"but embed.dim is {self._dim}: set embed.dim = {len(vector)}"
                )
            rows[index] = vector
        return np.asarray(rows, dtype=np.float32)
