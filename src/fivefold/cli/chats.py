"""``fivefold import --format chat``: JSONL of chats, one a line (``{"session_id": ...,
"messages": [{"role", "content", "name"?}], "user_id"?: ...}``), each stored as one session's
turns (``Memory.remember_messages``). Every line is checked before the first is written: a
malformed one is named with its line (and its message's index) and nothing is imported."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fivefold import validate
from fivefold.errors import InvalidInput
from fivefold.memory import Memory
from fivefold.write.messages import message_items

FIELDS = frozenset({"session_id", "messages", "namespace", "user_id", "agent_id", "at"})


def sniff(path: Path) -> str:
    """The format of a JSONL file from its first record: "export" (a fivefold export's
    header), "chat" (a record with ``messages``) or "jsonl" (``remember`` records)."""
    from fivefold.cli.export import is_export

    with path.open("rb") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            line = raw.decode("utf-8-sig", errors="replace")
            if is_export(line):
                return "export"
            try:
                value = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                return "jsonl"  # the JSONL import names the line
            return "chat" if isinstance(value, dict) and "messages" in value else "jsonl"
    return "jsonl"


def import_chats(opened: Callable[[], Memory], path: Path, *, namespace: str | None) -> int:
    """Store every chat of ``path`` in the store ``opened()`` returns (opened once every line
    is checked); returns how many memories were written."""
    if namespace is not None:
        validate.name_text(namespace, "namespace")
    for _ in _chats(path, namespace):  # the check: nothing kept
        pass
    mem = opened()
    written = 0
    for _, arguments in _chats(path, namespace):
        written += len(mem.remember_messages(**arguments))
    return written


def _chats(path: Path, namespace: str | None) -> Iterator[tuple[str, dict[str, Any]]]:
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            where = f"{path}: line {number}"
            try:
                arguments = _arguments(raw, number, namespace)
                message_items(
                    arguments["messages"],
                    session_id=arguments["session_id"],
                    namespace=arguments["namespace"],
                    user_id=arguments["user_id"],
                    agent_id=arguments["agent_id"],
                    at=arguments["at"],
                )
            except InvalidInput as exc:
                raise InvalidInput(f"{where}: {exc.detail}; nothing imported") from None
            yield where, arguments


def _arguments(raw: bytes, number: int, namespace: str | None) -> dict[str, Any]:
    """``remember_messages``' arguments of one line, its scope and time checked."""
    value = validate.json_line(raw, number)
    if unknown := set(value) - FIELDS:
        raise InvalidInput(f"unknown field(s) {sorted(unknown)}; accepted: {sorted(FIELDS)}")
    if "messages" not in value:
        raise InvalidInput("messages is required")
    scope = validate.scope(
        namespace or value.get("namespace", "default"),
        value.get("user_id"),
        value.get("agent_id"),
        written=True,
    )
    return {
        "messages": value["messages"],
        "session_id": validate.optional_name(value.get("session_id"), "session_id"),
        "namespace": scope.namespace,
        "user_id": scope.user_id,
        "agent_id": scope.agent_id,
        "at": validate.when(value.get("at"), "at"),
    }


__all__ = ["import_chats", "sniff"]
