"""One recall's arguments, validated once: the scope, the time it is asked at, the forced types,
the budget, the session, whether superseded memories are kept; and the ``recall_id`` that
carries them, so any process of the store can take feedback on the recall."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fivefold import validate
from fivefold.errors import InvalidInput
from fivefold.read.cache import ResultCache
from fivefold.text import normalize_query
from fivefold.types import Budget, MemoryType, Scope

TOKEN_PREFIX = "r1."
_TOKEN_KEYS = frozenset({"q", "k", "ns", "user", "agent", "now", "types", "budget", "session"})


@dataclass(frozen=True, slots=True)
class RecallArgs:
    """One recall's arguments, validated."""

    text: str
    k: int
    scope: Scope
    now: datetime
    now_given: bool
    forced: tuple[MemoryType, ...]
    budget: Budget
    session: str | None
    include_superseded: bool = True

    @classmethod
    def of(cls, query: object, k: object, **kwargs: Any) -> RecallArgs:
        given_now = validate.when(kwargs.pop("now", None), "now")
        args = cls(
            text=validate.text(query, "query"),
            k=validate.top_k(k),
            scope=validate.scope(
                kwargs.pop("namespace", "default"),
                kwargs.pop("user_id", None),
                kwargs.pop("agent_id", None),
            ),
            now=given_now or datetime.now(UTC),
            now_given=given_now is not None,
            forced=validate.memory_types(kwargs.pop("types", None)),
            budget=validate.budget(kwargs.pop("budget", "mid")),
            session=validate.optional_read_name(kwargs.pop("session_id", None), "session_id"),
            include_superseded=validate.flag(
                kwargs.pop("include_superseded", True), "include_superseded"
            ),
        )
        if kwargs:
            raise InvalidInput(f"unknown argument(s) {sorted(kwargs)}")
        return args

    def to_token(self) -> str:
        """The recall as a ``recall_id``: everything needed to ask it again (for feedback and
        training), so any process of the store can take feedback on it, and nothing is kept."""
        body = {
            "q": self.text,
            "k": self.k,
            "ns": self.scope.namespace,
            "user": self.scope.user_id,
            "agent": self.scope.agent_id,
            "now": self.now.isoformat(),
            "types": [t.value for t in self.forced],
            "budget": self.budget.value,
            "session": self.session,
        }
        if not self.include_superseded:  # tokens before this argument existed lack the key
            body["history"] = False
        raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        return TOKEN_PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def from_token(cls, token: object) -> RecallArgs:
        """The recall a ``recall_id`` names, validated as a recall's arguments are."""
        if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX):
            raise InvalidInput("recall_id must be the recall_id of a recall result")
        body = token[len(TOKEN_PREFIX) :]
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            data = json.loads(raw)
            # A recall_id fivefold issued has these keys, and no other.
            if set(data) - {"history"} != _TOKEN_KEYS or data.get("history", False) is not False:
                raise ValueError(f"keys {sorted(data)}")
            return cls.of(
                data["q"],
                data["k"],
                namespace=data["ns"],
                user_id=data["user"],
                agent_id=data["agent"],
                now=data["now"],
                types=data["types"] or None,
                budget=data["budget"],
                session_id=data["session"],
                include_superseded="history" not in data,
            )
        # RecursionError: a body of 100,000 "[" (json nests each one on the stack).
        except (binascii.Error, ValueError, KeyError, TypeError, RecursionError) as exc:
            if isinstance(exc, InvalidInput):
                raise
            raise InvalidInput("recall_id is not a recall_id fivefold issued") from exc

    def cache_key(self) -> str:
        scope = self.scope
        return ResultCache.key(
            normalize_query(self.text),
            scope.namespace,
            scope.user_id,
            scope.agent_id,
            self.k,
            [t.value for t in self.forced],
            self.budget.value,
            self.session,
            self.now.isoformat() if self.now_given else None,
            self.include_superseded,
        )
