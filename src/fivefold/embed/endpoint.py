"""One JSON-over-HTTP endpoint of a model server (embeddings, rerank): a pooled client, the API
key as a bearer token, a 429, a 5xx or no answer in time retried with backoff, and every
failure raised as the caller's error class with the URL and what to do."""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Mapping
from typing import TypeGuard

import httpx

from fivefold.errors import ConfigError, FivefoldError

__all__ = ["FIRST_BACKOFF_S", "MAX_BACKOFF_S", "JsonEndpoint", "api_key_of", "finite_number"]

# Backoff before retry n (from 0): FIRST_BACKOFF_S * 2**n, or what Retry-After asks, capped.
FIRST_BACKOFF_S = 0.25
MAX_BACKOFF_S = 8.0
_RETRIED = frozenset({429, 500, 502, 503, 504})


def api_key_of(
    environ: Mapping[str, str], variable: str | None, *, section: str, holder: str
) -> str | None:
    """The API key in the environment variable ``variable`` (None: the endpoint takes none);
    a variable that is not set is an error of the config's ``section``."""
    if variable is None:
        return None
    key = environ.get(variable)
    if not key:
        raise ConfigError(
            f"{section}.api_key_env: the environment variable {variable} is not set "
            f"(it holds the {holder} API key)"
        )
    return key


class JsonEndpoint:
    """``POST {base}/{path}``. Thread-safe (one ``httpx.Client``, made on the first call).
    ``setting`` is the config key of ``base``, named when a 404 says it is not the API's base."""

    def __init__(
        self,
        base: str,
        path: str,
        *,
        api_key: str | None,
        timeout_s: float,
        retries: int,
        error: type[FivefoldError],
        setting: str,
    ) -> None:
        self.url = base.rstrip("/") + "/" + path
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout_s = timeout_s
        self._retries = retries
        self._error = error
        self._setting = setting
        self._lock = threading.Lock()
        self._client: httpx.Client | None = None

    @property
    def open(self) -> bool:
        return self._client is not None

    def post(self, body: object) -> object:
        """The answer's JSON body; the last try's failure is raised."""
        for attempt in range(self._retries + 1):
            last = attempt == self._retries
            try:
                response = self._http().post(self.url, json=body)
            except httpx.TimeoutException as exc:
                if last:
                    raise self._error(
                        f"{self.url} did not answer within {self._timeout_s:g} s "
                        f"({self._retries + 1} tries)"
                    ) from exc
                _sleep(attempt, None)
                continue
            except httpx.HTTPError as exc:
                raise self._error(f"could not reach {self.url}: {exc}") from exc
            if response.status_code in _RETRIED and not last:
                _sleep(attempt, response.headers.get("retry-after"))
                continue
            if response.is_error:
                # The setting is the API's base: a URL that already ends in the path is asked twice.
                hint = f" ({self._setting} is the API's base, as http://host:port/v1)" * (
                    response.status_code == 404
                )
                raise self._error(
                    f"{self.url} answered {response.status_code}{hint}: {_excerpt(response)}"
                )
            try:
                return response.json()
            except ValueError as exc:
                raise self._error(f"{self.url} answered with no JSON body") from exc
        raise AssertionError("unreachable: the last try returns or raises")

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


def _sleep(attempt: int, retry_after: str | None) -> None:
    wait = FIRST_BACKOFF_S * 2**attempt
    # An HTTP date in Retry-After is not read: the backoff stands then.
    if retry_after is not None and re.fullmatch(r"\d+(\.\d+)?", retry_after.strip()):
        wait = float(retry_after)
    time.sleep(min(max(wait, 0.0), MAX_BACKOFF_S))


def _excerpt(response: httpx.Response) -> str:
    text = " ".join(response.text.split())
    return (text[:200] + "...") if len(text) > 200 else text or response.reason_phrase


def finite_number(value: object) -> TypeGuard[int | float]:
    """A JSON number that is one: not a boolean, not NaN or infinite."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
