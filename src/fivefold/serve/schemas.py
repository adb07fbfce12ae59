"""Request bodies of the HTTP API. Unknown fields and wrong JSON types are refused here (422)
before the engine sees the request; values are checked by the engine's own validation, so the
API, the CLI and the server refuse the same things with the same messages."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AliasBody",
    "BatchBody",
    "FeedbackBody",
    "ForgetScopeBody",
    "MessagesBody",
    "RecallBody",
    "RelateBody",
    "RememberBody",
    "ScopeFields",
    "SupersedeBody",
    "TrainBody",
]


class _Body(BaseModel):
    # strict: "5" is not a number and 1 is not true; forbid: a misspelt field is an error,
    # not a silently ignored option.
    model_config = ConfigDict(extra="forbid", strict=True)


class ScopeFields(_Body):
    namespace: str | None = None
    user_id: str | None = None
    agent_id: str | None = None


class RememberBody(ScopeFields):
    content: str
    type: str | None = None
    predicate: str | None = None
    event_at: str | None = Field(
        default=None,
        description="An ISO 8601 date or datetime (2026-03-20, 2026-03-20T17:00:00+00:00)",
    )
    entities: list[str] | None = None
    importance: float | None = None
    session_id: str | None = None
    metadata: dict[str, Any] | None = None
    speaker: str | None = None
    vector: list[float] | None = Field(default=None, description="precomputed embedding")
    supersedes: int | None = Field(
        default=None, description="the id of an older memory of the same scope this one replaces"
    )


class BatchBody(_Body):
    items: list[RememberBody]
    # Every item is written in this scope unless it names its own (which the key must allow).
    namespace: str | None = None


class RecallBody(ScopeFields):
    query: str
    k: int = 10
    now: str | None = None
    types: list[str] | None = None
    budget: str = "mid"
    session_id: str | None = None
    min_confidence: float | None = None
    include_superseded: bool = True


class MessagesBody(ScopeFields):
    messages: list[dict[str, Any]] = Field(
        description='a chat in the OpenAI format: [{"role": ..., "content": ..., "name"?: ...}]'
    )
    session_id: str | None = None
    at: str | None = Field(default=None, description="when the chat was held (ISO 8601)")


class SupersedeBody(ScopeFields):
    old_id: int
    new_id: int


class ForgetScopeBody(ScopeFields):
    session_id: str | None = None


class RelateBody(ScopeFields):
    source: str
    relation: str
    target: str
    kind: str = "structural"
    confidence: float = 1.0
    valid_from: str | None = None
    valid_to: str | None = None
    record: bool = True


class FeedbackBody(_Body):
    recall_id: str
    relevant: list[int] = Field(default_factory=list)
    used: list[int] = Field(default_factory=list)


class TrainBody(_Body):
    namespace: str | None = None


class AliasBody(_Body):
    name: str
    alias: str
    namespace: str | None = None
