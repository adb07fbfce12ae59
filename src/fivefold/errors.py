"""One exception tree. Every error the library raises on purpose is a ``FivefoldError``; driver
errors are translated into it at the store boundary (``raise ... from exc``), so callers never
need to catch ``sqlite3`` or ``onnxruntime`` exceptions."""

from __future__ import annotations


class FivefoldError(Exception):
    """Base of every error fivefold raises on purpose. Messages say what to do next."""


class InvalidInput(FivefoldError, ValueError):
    """An argument is of the wrong type, out of range or unparseable. ``item`` is the position
    of the offending item when a batch (``remember_many``) was refused: the message then says
    "item N: " before ``detail``, what is wrong with that item."""

    def __init__(self, message: str, *, item: int | None = None) -> None:
        super().__init__(message if item is None else f"item {item}: {message}")
        self.item = item
        self.detail = message


def alone(exc: InvalidInput) -> InvalidInput | None:
    """A batch of one's refusal as a single write's: without the "item 0: " that points into a
    list its caller never made (None when the refusal does not name that item)."""
    return InvalidInput(exc.detail) if exc.item == 0 else None


class NotFound(FivefoldError, LookupError):
    """An id or name does not exist in the scope it was asked for."""


class StoreError(FivefoldError):
    """The store cannot be opened, read or written."""


class NotAFivefoldStore(StoreError):
    """The file exists but is not a fivefold store (another SQLite database, or not SQLite)."""


class TooLarge(InvalidInput):
    """A request body or batch over a server's limits (HTTP 413)."""


class EmbeddingModelMismatch(StoreError):
    """The store was built with one embedding model and is being opened with another;
    ``stored_model`` and ``stored_dim`` are the store's (``fivefold reembed`` reads them)."""

    def __init__(
        self, message: str, *, stored_model: str | None = None, stored_dim: int | None = None
    ) -> None:
        super().__init__(message)
        self.stored_model = stored_model
        self.stored_dim = stored_dim


class UnsupportedBackend(StoreError):
    """The store URL names a backend this installation cannot open."""


class EmbedderError(FivefoldError):
    """The embedding model could not be loaded or run."""


class RerankerError(FivefoldError):
    """The rerank model could not be run, or answered something that is not a score for each
    candidate: the recall fails rather than return an order no model gave."""


class ConfigError(FivefoldError):
    """A configuration file or value is invalid."""


class AccessDenied(FivefoldError, PermissionError):
    """The server refused the request: no API key, an unknown or revoked one, or a scope
    (namespace, user, agent) the key is not bound to."""


class Unauthenticated(AccessDenied):
    """No API key, or a key the server does not know (HTTP 401, as opposed to 403 for a known
    key asking outside its scope)."""


__all__ = [
    "AccessDenied",
    "ConfigError",
    "EmbedderError",
    "EmbeddingModelMismatch",
    "FivefoldError",
    "InvalidInput",
    "NotAFivefoldStore",
    "NotFound",
    "RerankerError",
    "StoreError",
    "TooLarge",
    "Unauthenticated",
    "UnsupportedBackend",
]
