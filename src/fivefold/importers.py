"""Bulk import for ``fivefold import``: JSONL (one ``remember`` record per line) and LoCoMo
JSON (one memory per turn, the project's benchmark protocol), in batches with a progress bar."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.progress import Progress

from fivefold.errors import InvalidInput
from fivefold.memory import Memory


def import_file(
    mem: Memory,
    path: Path,
    *,
    fmt: str = "auto",
    namespace: str | None = None,
    batch_size: int = 256,
) -> int:
    if batch_size < 1:
        raise InvalidInput("batch size must be at least 1")
    if fmt == "auto":
        fmt = "jsonl" if path.suffix.lower() in (".jsonl", ".ndjson") else "locomo"
    records = list(_jsonl(path) if fmt == "jsonl" else _locomo(path))
    if namespace is not None:
        records = [{**r, "namespace": namespace} for r in records]
    with Progress(transient=True) as progress:
        task = progress.add_task(f"importing {path.name}", total=len(records))
        for start in range(0, len(records), batch_size):
            batch = records[start : start + batch_size]
            mem.remember_many(batch)
            progress.advance(task, len(batch))
    return len(records)


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{path}:{number} is not valid JSON: {exc}") from exc
            if not isinstance(record, dict):
                raise InvalidInput(f"{path}:{number} must be a JSON object")
            yield record


def _locomo(path: Path) -> Iterator[dict[str, Any]]:
    from fivefold.bench.datasets import load_locomo

    dataset = load_locomo(path)
    for doc in dataset.docs:
        yield {
            "content": doc.content,
            "event_at": doc.event_at,
            "created_at": doc.event_at,
            "namespace": doc.namespace,
            "session_id": doc.session,
            "metadata": {"dia_id": doc.id.split("/", 1)[-1]},
        }
