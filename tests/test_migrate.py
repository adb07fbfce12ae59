"""``fivefold migrate``: a store copied between backends, both ways, verified by counts and by
recalls that rank the same."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

import fivefold
from fivefold import Memory
from fivefold.cli import cli
from fivefold.migrate import migrate

NOW = datetime(2026, 4, 2, 9, tzinfo=UTC)
QUERIES = [
    "What did Priya say about the Kestrel budget?",
    "who leads Kestrel?",
    "PP hiring plan",
    "what happened last week?",
    "coffee",
]


def _open(url: str) -> Memory:
    return Memory.open(url, embedder=fivefold.HashingEmbedder())


def _seed(memory: Memory) -> None:
    for namespace in ("acme", "globex"):
        for user in (None, "u1"):
            memory.remember_many(
                [
                    {
                        "content": f"{who}: {topic} note {n} for {namespace}",
                        "namespace": namespace,
                        "user_id": user,
                        "session_id": f"s{n // 5}",
                        "type": "event" if n % 2 else "fact",
                        "event_at": NOW - timedelta(days=n),
                        "metadata": {"n": n, "tags": ["x", "y"]},
                        "entities": [who, "Kestrel"],
                    }
                    for n, (who, topic) in enumerate(
                        [("Priya Patel", "the Kestrel budget"), ("Sarah Chen", "hiring plan")] * 8
                    )
                ]
            )
        memory.relate("Priya Patel", "leads", "Kestrel", namespace=namespace)
        memory.relate("Sarah Chen", "reports_to", "Priya Patel", namespace=namespace, user_id="u1")
        memory.alias("Priya Patel", "PP", namespace=namespace)
    gone = memory.recall("hiring plan note 3", namespace="acme", now=NOW).hits[0].memory.id
    memory.forget(gone, namespace="acme")


def _rankings(memory: Memory) -> list[list[tuple[str, float]]]:
    out = []
    for namespace in ("acme", "globex"):
        for user in (None, "u1"):
            for query in QUERIES:
                hits = memory.recall(query, namespace=namespace, user_id=user, now=NOW).hits
                out.append([(h.memory.content, h.score) for h in hits])
    return out


def _same(a: list[list[tuple[str, float]]], b: list[list[tuple[str, float]]]) -> bool:
    """The same contents in the same order, scores equal but for float noise (the backends
    sum in their own order; learned fusion's probabilities carry that on)."""
    return all(
        [c for c, _ in x] == [c for c, _ in y]
        and [s for _, s in x] == pytest.approx([s for _, s in y], abs=1e-5)
        for x, y in zip(a, b, strict=True)
    ) and len(a) == len(b)


@pytest.mark.parametrize("direction", ["sqlite->postgres", "postgres->sqlite"])
def test_a_store_moves_between_backends_whole(direction: str, tmp_path: Path, pg_url: str) -> None:
    sqlite = str(tmp_path / "memory.db")
    source, target = (sqlite, pg_url) if direction.startswith("sqlite") else (pg_url, sqlite)
    with _open(source) as memory:
        _seed(memory)
        # Feedback on 30 recalls of acme, and the model trained on it (if it beat the rules).
        records = memory.browse(namespace="acme", limit=100)
        for record in records[:30]:
            result = memory.recall(record.content, namespace="acme", now=NOW)
            memory.feedback(result.recall_id, relevant=[record.id])
        trained = memory.train(namespace="acme")
        # As migrate compares: with statistics of the current rows only (the forget above left
        # the embedded lexical index counting the forgotten text until compacted).
        memory.store.compact()
        before = _rankings(memory)
    progress: list[tuple[int, int]] = []
    with _open(source) as src, _open(target) as dst:
        report = migrate(src, dst, batch=7, on_progress=lambda d, t: progress.append((d, t)))
    assert report.verified, report
    assert (report.feedback, report.models) == (30, int(trained.accepted))
    assert set(report.namespaces) == {"acme", "globex"}
    assert (report.relations, report.aliases, report.sampled) == (4, 2, 20)
    assert progress[-1][0] == progress[-1][1] == 67  # 64 and 4 relations written, 1 forgotten
    with _open(target) as memory:
        assert _same(_rankings(memory), before)
        records = {r.content: r for r in memory.browse(namespace="globex", limit=100)}
        record = records["Sarah Chen: hiring plan note 3 for globex"]
        assert dict(record.metadata) == {"n": 3, "tags": ["x", "y"]}
        assert (record.session_id, record.speaker, record.event_at) == (
            "s0",
            "Sarah Chen",
            NOW - timedelta(days=3),
        )
        assert memory.explain("PP", namespace="acme", now=NOW).query.entity_refs
        copied = memory.store.feedback("acme")
        assert len(copied) == 30
        assert all(
            set(entry.labels) <= {r.id for r in memory.browse(namespace="acme", limit=100)}
            and len(entry.labels) == 1
            for entry in copied
        )


def test_the_destination_must_be_empty(tmp_path: Path, pg_url: str) -> None:
    with _open(pg_url) as memory:
        memory.remember("already here")
    with _open(str(tmp_path / "a.db")) as src, _open(pg_url) as dst:
        src.remember("to copy")
        with pytest.raises(fivefold.InvalidInput, match="empty store"):
            migrate(src, dst)


def test_the_command_copies_and_verifies(tmp_path: Path, pg_url: str) -> None:
    source = str(tmp_path / "cli.db")
    with Memory.open(source) as memory:  # the default model, as the command opens it
        memory.remember_many(
            [{"content": f"Priya Patel reviewed the Kestrel budget, round {n}"} for n in range(12)]
        )
        memory.relate("Priya Patel", "leads", "Kestrel")
    result = CliRunner().invoke(cli, ["migrate", source, pg_url, "--sample", "5"])
    assert result.exit_code == 0, result.output
    assert "ok: namespace 'default': memories 13 -> 13" in result.output
    assert "5/5 sampled recalls ranked the same" in result.output
    again = CliRunner().invoke(cli, ["migrate", source, pg_url])
    assert again.exit_code == 2
    assert "empty store" in again.output
