"""The error tree translated to HTTP: one JSON shape, a stable code per kind, never a trace.

``{"error": {"code": "invalid_input", "message": "k must be an integer from 1 to 1000"}}``.
The codes are the contract ``fivefold.Client`` reads back into the same exception classes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import MappingProxyType

from fivefold.errors import (
    AccessDenied,
    ConfigError,
    EmbedderError,
    EmbeddingModelMismatch,
    FivefoldError,
    InvalidInput,
    NotFound,
    RerankerError,
    StoreError,
    TooLarge,
    Unauthenticated,
)

log = logging.getLogger("fivefold.serve")

__all__ = [
    "CODES",
    "ERRORS",
    "TooLarge",
    "Unauthenticated",
    "error_body",
    "status_of",
    "tenant_message",
]


# Most specific first: the first class an error is an instance of decides.
_TABLE: tuple[tuple[type[FivefoldError], int, str], ...] = (
    (TooLarge, 413, "too_large"),
    (InvalidInput, 422, "invalid_input"),
    (NotFound, 404, "not_found"),
    (Unauthenticated, 401, "unauthorized"),
    (AccessDenied, 403, "forbidden"),
    (EmbeddingModelMismatch, 409, "conflict"),
    (StoreError, 503, "unavailable"),
    # Before EmbedderError: a client reads "unavailable" back as the last class listed with it.
    (RerankerError, 503, "unavailable"),
    (EmbedderError, 503, "unavailable"),
    (ConfigError, 500, "server_config"),
    (FivefoldError, 500, "internal"),
)
CODES: Mapping[str, int] = MappingProxyType({code: status for _, status, code in _TABLE})
# What a client raises for each code (codes that only HTTP has map to the nearest class).
ERRORS: Mapping[str, type[FivefoldError]] = MappingProxyType(
    {
        **{code: kind for kind, _, code in _TABLE},
        "bad_request": InvalidInput,
        "method_not_allowed": InvalidInput,
        "not_ready": StoreError,
    }
)


def status_of(exc: FivefoldError) -> tuple[int, str]:
    for kind, status, code in _TABLE:
        if isinstance(exc, kind):
            return status, code
    return 500, "internal"


def tenant_message(exc: FivefoldError, *, keyed: bool) -> str:
    """What a caller is told of an error: all of it, but a store's trouble to a keyed server's
    tenants, who are not told where the store lives or how it failed (a store's error can name
    the database's URL, even with its password); the server's log has it."""
    if keyed and status_of(exc)[0] == 503:  # not EmbeddingModelMismatch (409), say
        log.warning("answered 503: %s", exc)
        return "the store is unavailable; the server's log says why"
    return str(exc)


def error_body(code: str, message: str) -> dict[str, dict[str, str]]:
    return {"error": {"code": code, "message": message}}
