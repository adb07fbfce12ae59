"""API keys of ``fivefold serve``: each bound to a namespace (and optionally a user and an
agent), kept hashed in the config file's ``[[keys]]`` tables.

A key is shown once, when it is made: ``ff_<id>_<secret>``. The file keeps its id, scope and
the SHA-256 of the secret. A fast hash is enough here because the secret is 256 random bits:
slow password hashes exist to stretch guessable passwords, which a generated token is not.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import tempfile
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from fivefold import validate
from fivefold.config.file import KEYS
from fivefold.errors import AccessDenied, ConfigError, NotFound
from fivefold.read.args import RecallArgs
from fivefold.serve.errors import Unauthenticated

__all__ = [
    "ApiKey",
    "KeyRing",
    "add_key",
    "check_recall_scope",
    "load_keys",
    "revoke_key",
    "scope_for",
    "token_of",
]

PREFIX = "ff"


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    digest: str
    namespace: str
    user_id: str | None = None
    agent_id: str | None = None
    label: str = ""
    created: str = ""
    holder: ClassVar[str] = "this key"  # who a refusal names

    def scope(
        self, namespace: str | None, user_id: str | None, agent_id: str | None
    ) -> tuple[str, str | None, str | None]:
        """The scope a request acts in: the key's, narrowed by what the request names. Naming
        another namespace, user or agent than the key is bound to is refused."""
        if namespace is not None and namespace != self.namespace:
            raise AccessDenied(f"{self.holder} is bound to namespace {self.namespace!r}")
        for field, bound, asked in (
            ("user_id", self.user_id, user_id),
            ("agent_id", self.agent_id, agent_id),
        ):
            if bound is not None and asked is not None and asked != bound:
                raise AccessDenied(f"{self.holder} is bound to {field} {bound!r}")
        return self.namespace, self.user_id or user_id, self.agent_id or agent_id

    def whole_namespace(self, namespace: str | None, what: str) -> str:
        """The namespace of a call about all of it, every user and agent in it (``what``:
        aliases, a fitted model, its counts): refused to a key bound to one user or agent,
        whose scope is narrower than what the call changes or tells."""
        ns, _, _ = self.scope(namespace, None, None)
        for field, bound in (("user_id", self.user_id), ("agent_id", self.agent_id)):
            if bound is not None:
                raise AccessDenied(
                    f"{what}: about the whole namespace; {self.holder} is bound to {field} "
                    f"{bound!r}: use a key of the namespace alone"
                )
        return ns


class KeyRing:
    """The keys a server accepts. Empty means no authentication (loopback only)."""

    def __init__(self, keys: Iterable[ApiKey]) -> None:
        self._by_id = {key.id: key for key in keys}

    def __len__(self) -> int:
        return len(self._by_id)

    def authenticate(self, token: str | None) -> ApiKey:
        if not token:
            raise Unauthenticated("an API key is required (Authorization: Bearer <key>)")
        parts = token.strip().split("_")
        key = self._by_id.get(parts[1]) if len(parts) == 3 and parts[0] == PREFIX else None
        # Compare digests in constant time, and do the work even for an unknown id, so
        # timing tells nothing about which ids exist.
        digest = _digest(parts[-1])
        if key is None or not hmac.compare_digest(digest, key.digest):
            raise Unauthenticated("the API key is not valid (unknown, mistyped or revoked)")
        return key


def token_of(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The key a request carries (its ASGI headers): ``Authorization: Bearer <key>`` or
    ``X-API-Key: <key>``. Two of either header are refused: the HTTP routes read the first
    and ``/mcp`` the last, so a proxy adding its own put one request in two tenants."""
    found: dict[str, list[str]] = {"authorization": [], "x-api-key": []}
    for name, value in headers:
        said = found.get(name.decode("latin-1").lower())
        if said is not None:
            said.append(value.decode("latin-1"))
    for header, values in found.items():
        if len(values) > 1:
            raise Unauthenticated(f"{len(values)} {header} headers: send one API key")
    auth = next(iter(found["authorization"]), "")
    if auth[:7].lower() == "bearer " and found["x-api-key"]:  # which of the two?
        raise Unauthenticated("a bearer key and an X-API-Key header: send one API key")
    return auth[7:] if auth[:7].lower() == "bearer " else next(iter(found["x-api-key"]), None)


def scope_for(
    key: ApiKey | None, namespace: str | None, user_id: str | None, agent_id: str | None
) -> dict[str, Any]:
    """Keyword arguments of an engine call: the key's scope narrowed by the request, or,
    without keys, what the request names."""
    if key is None:
        ns = "default" if namespace is None else namespace  # "" is refused, as a user_id "" is
        return {"namespace": ns, "user_id": user_id, "agent_id": agent_id}
    ns, user, agent = key.scope(namespace, user_id, agent_id)
    return {"namespace": ns, "user_id": user, "agent_id": agent}


def check_recall_scope(
    recall_id: str, resolve: Callable[[str | None, str | None, str | None], dict[str, Any]]
) -> None:
    """Feedback on a recall is the caller's business only if the recall was in the caller's
    scope: the recall_id carries it, and ``resolve`` (the key's rule) must leave it as it is."""
    asked = RecallArgs.from_token(recall_id).scope
    allowed = resolve(asked.namespace, asked.user_id, asked.agent_id)
    if (allowed["namespace"], allowed["user_id"], allowed["agent_id"]) != (
        asked.namespace,
        asked.user_id,
        asked.agent_id,
    ):
        raise AccessDenied("this recall_id is of a recall outside the caller's scope")


def load_keys(path: Path | None) -> tuple[ApiKey, ...]:
    """The ``[[keys]]`` of a config file (none when there is no file)."""
    if path is None or not path.is_file():
        return ()
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the API keys: {exc}") from exc
    raw = document.get(KEYS, [])
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: {KEYS} must be [[{KEYS}]] tables")
    return tuple(_parse(entry, f"{path}: {KEYS}[{i}]") for i, entry in enumerate(raw))


def _parse(entry: object, where: str) -> ApiKey:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a table")
    # "" in the file means "not bound" for the optional scope fields.
    fields: dict[str, Any] = {
        k: (v or None) if k in ("user_id", "agent_id") else v for k, v in entry.items()
    }
    try:
        key = ApiKey(**fields)
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    if not all(isinstance(getattr(key, f), str) for f in ("id", "digest", "namespace")):
        raise ConfigError(f"{where}: id, digest and namespace must be strings")
    return key


def add_key(
    path: Path,
    *,
    namespace: str,
    user_id: str | None = None,
    agent_id: str | None = None,
    label: str = "",
) -> tuple[ApiKey, str]:
    """Make a key, append it to the file (created if missing) and return it with its token:
    the only time the secret exists outside the caller's hands."""
    scope = validate.scope(namespace, user_id, agent_id, written=True)  # bad input: exit 2
    existing = {key.id for key in load_keys(path)}
    key_id = secrets.token_hex(4)
    while key_id in existing:
        key_id = secrets.token_hex(4)
    secret = secrets.token_urlsafe(32).replace("_", "-")
    key = ApiKey(
        id=key_id,
        digest=_digest(secret),
        namespace=scope.namespace,
        user_id=scope.user_id,
        agent_id=scope.agent_id,
        label=label,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    _edit(path, lambda tables: [*tables, _table(key)])
    return key, f"{PREFIX}_{key_id}_{secret}"


def revoke_key(path: Path, key_id: str) -> ApiKey:
    """Remove a key from the file; servers refuse it from their next start."""
    found = [key for key in load_keys(path) if key.id == key_id]
    if not found:
        raise NotFound(f"no API key with id {key_id!r} in {path}")
    _edit(path, lambda tables: [t for t in tables if t.get("id") != key_id])
    return found[0]


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _table(key: ApiKey) -> dict[str, str]:
    fields: dict[str, Any] = {
        "id": key.id,
        "digest": key.digest,
        "namespace": key.namespace,
        "user_id": key.user_id or "",
        "agent_id": key.agent_id or "",
        "label": key.label,
        "created": key.created,
    }
    return fields


def _edit(path: Path, change: Any) -> None:
    """Rewrite the file's ``[[keys]]`` with tomlkit, which keeps every other line (comments
    included) as it was; the new file replaces the old atomically and is private (0600)."""
    import tomlkit

    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    document = tomlkit.parse(text)
    tables: list[Mapping[str, Any]] = list(document.get(KEYS, []))
    kept = change(tables)
    if KEYS in document:
        del document[KEYS]
    if kept:
        array = tomlkit.aot()
        for table in kept:
            array.append(tomlkit.item(dict(table)))
        document[KEYS] = array
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(tomlkit.dumps(document))
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, 0o600)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
