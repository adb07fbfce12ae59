"""A rerank endpoint (``POST {url}/rerank``) of the shape Cohere (v1 and v2) and Jina answer,
and the servers that copy them: ``{"model", "query", "documents": [...], "top_n"}`` in,
``{"results": [{"index": i, "relevance_score": s}, ...]}`` out, most relevant first. Scores are
mapped back to the passages by ``index``; an answer that does not score every passage exactly
once is an error, never an order."""

from __future__ import annotations

from collections.abc import Sequence

from fivefold.embed.endpoint import JsonEndpoint, finite_number
from fivefold.errors import RerankerError

__all__ = ["HttpReranker"]

_SHAPE = '(expected {"results": [{"index": i, "relevance_score": s}, ...]})'


class HttpReranker:
    """Thread-safe (one pooled client, made on the first call). All candidates go in one
    request: a listwise model's scores are comparable only within one."""

    def __init__(
        self,
        *,
        url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 10.0,
        retries: int = 2,
    ) -> None:
        self._endpoint = JsonEndpoint(
            url,
            "rerank",
            api_key=api_key,
            timeout_s=timeout_s,
            retries=retries,
            error=RerankerError,
            setting="rerank.url",
        )
        self._model = model

    @property
    def name(self) -> str:
        return f"http:{self._model}"

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        documents = list(passages)
        body = {
            "model": self._model,
            "query": query,
            "documents": documents,
            "top_n": len(documents),
        }
        return self._scores(len(documents), self._endpoint.post(body))

    def close(self) -> None:
        self._endpoint.close()

    def _scores(self, count: int, body: object) -> list[float]:
        url = self._endpoint.url
        results = body.get("results") if isinstance(body, dict) else None
        if not isinstance(results, list) or len(results) != count:
            got = f"{len(results)} results" if isinstance(results, list) else "no results list"
            raise RerankerError(f"{url} answered {got} for {count} documents {_SHAPE}")
        scores: list[float | None] = [None] * count
        for position, item in enumerate(results):
            index = item.get("index") if isinstance(item, dict) else None
            score = item.get("relevance_score") if isinstance(item, dict) else None
            if (
                not isinstance(index, int)
                or isinstance(index, bool)
                or not 0 <= index < count
                or scores[index] is not None
            ):
                raise RerankerError(
                    f"{url}: results[{position}] has no index, or one out of range or repeated "
                    f"{_SHAPE}"
                )
            if not finite_number(score):
                raise RerankerError(
                    f"{url}: results[{position}].relevance_score is not a finite number {_SHAPE}"
                )
            scores[index] = float(score)
        # Every slot is filled: as many results as documents, each index seen once.
        return [s for s in scores if s is not None]
