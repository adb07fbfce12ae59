"""A chat in the OpenAI message format (``[{"role": ..., "content": ..., "name"?: ...}]``) as
memories: each turn one memory, in order, spoken by its ``name`` (else its role), in one
session, so that each is indexed with the turns around it."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from fivefold.errors import InvalidInput

# Message keys the OpenAI format carries besides these (tool calls, refusals, audio) are
# not memories' text: they are left out, not refused.
_TEXT_PART = "text"


def message_items(
    messages: object,
    *,
    session_id: str | None,
    namespace: str,
    user_id: str | None,
    agent_id: str | None,
    at: datetime | str | None,
) -> list[dict[str, Any]]:
    """The ``remember_many`` items of a chat; a message that is not one names its index (and
    nothing is written). A message with no text (a tool call alone) is no memory."""
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise InvalidInput(f"messages must be a list of messages, got {type(messages).__name__}")
    session = session_id if session_id is not None else f"chat-{uuid.uuid4().hex[:16]}"
    items = []
    for index, message in enumerate(messages):
        text, speaker = _turn(message, index)
        if not text.strip():
            continue
        item: dict[str, Any] = {
            "content": text,
            "speaker": speaker,
            "session_id": session,
            "namespace": namespace,
        }
        for key, value in (("user_id", user_id), ("agent_id", agent_id), ("created_at", at)):
            if value is not None:
                item[key] = value
        items.append(item)
    return items


def _turn(message: object, index: int) -> tuple[str, str]:
    """(text, speaker) of one message."""
    where = f"message {index}"
    if not isinstance(message, Mapping):
        raise InvalidInput(f"{where}: a message is an object, got {type(message).__name__}")
    role, name = message.get("role"), message.get("name")
    if not isinstance(role, str) or not role.strip():
        raise InvalidInput(f"{where}: role must be a non-empty string, got {role!r}")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise InvalidInput(f"{where}: name must be a non-empty string when given, got {name!r}")
    return _text(message.get("content"), where), (name or role).strip()


def _text(content: object, where: str) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, Sequence) or isinstance(content, bytes):
        raise InvalidInput(f"{where}: content must be a string or a list of parts")
    texts = []
    for part, piece in enumerate(content):
        if not isinstance(piece, Mapping) or not isinstance(piece.get("type"), str):
            raise InvalidInput(f"{where}: content part {part} is not an object with a type")
        if piece["type"] == _TEXT_PART:
            text = piece.get(_TEXT_PART)
            if not isinstance(text, str):
                raise InvalidInput(f"{where}: content part {part}'s text is not a string")
            texts.append(text)
    return "\n".join(texts)
