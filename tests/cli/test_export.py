"""``fivefold export`` and its import: a store out as JSONL and back into an empty store, equal
field by field (history, supersession, relations and aliases included), on both backends."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import fivefold
from fivefold import Memory
from fivefold.cli.export import ExportScope, export_store, import_export
from fivefold.cli.main import cli
from fivefold.errors import InvalidInput

NOW = datetime(2026, 4, 2, 9, tzinfo=UTC)
_OPENED: list[Memory] = []


@pytest.fixture(autouse=True)
def _close_what_was_opened() -> Iterator[None]:
    yield
    while _OPENED:
        _OPENED.pop().close()


def _open(url: str) -> Memory:
    memory = Memory.open(url, embedder=fivefold.HashingEmbedder())
    _OPENED.append(memory)
    return memory


def _seed(memory: Memory) -> None:
    memory.remember_many(
        [
            {
                "content": f"Note {n} about Kestrel for {ns}",
                "namespace": ns,
                "user_id": user,
                "session_id": f"s{n % 2}" if n % 3 else None,
                "type": "event" if n % 2 else "fact",
                "event_at": NOW - timedelta(days=n),
                "created_at": NOW - timedelta(days=n, hours=1),
                "importance": 0.25 + n / 40,
                "metadata": {"n": n, "tags": ["a", {"b": n}]},
                "speaker": "Priya" if n % 4 == 0 else None,
            }
            for ns in ("acme", "globex")
            for user in (None, "u1")
            for n in range(6)
        ]
    )
    old = memory.remember("I live in Lisbon", namespace="acme", user_id="u1")
    mid = memory.remember("I live in Porto", namespace="acme", user_id="u1", supersedes=old.id)
    memory.remember("I live in Braga", namespace="acme", user_id="u1", supersedes=mid.id)
    memory.remember("I drink tea", namespace="acme")
    memory.remember("I drink tea", namespace="acme")  # seen twice
    memory.relate("Sarah Chen", "reports_to", "Priya Patel", namespace="acme", user_id="u1")
    memory.relate("Kestrel", "uses", "Postgres", namespace="globex", record=False,
                  kind="lifecycle", valid_to=NOW)  # fmt: skip
    memory.alias("Priya Patel", "PP", namespace="acme")


def _plain(value: Any) -> dict[str, Any]:
    """A dataclass's fields as JSON would compare them (its metadata a plain dict)."""
    out = {f.name: getattr(value, f.name) for f in fields(value)}
    if "metadata" in out:
        out["metadata"] = json.loads(json.dumps(dict(out["metadata"]), default=dict))
    return out


def _snapshot(memory: Memory) -> dict[str, Any]:
    """Every memory's fields, oldest first per namespace, with other memories named by their
    place (ids are each store's own); the relations and aliases."""
    out: dict[str, Any] = {}
    for ns in memory.store.admin.held_namespaces():
        ids = sorted(r.id for r in memory.browse(namespace=ns, limit=1000))
        place = {memory_id: n for n, memory_id in enumerate(ids)}
        records = [memory.get(i, namespace=ns) for i in ids]
        whys = memory.store.admin.supersession_reasons(ns, ids)
        out[ns] = {
            "memories": [
                {
                    **_plain(r),
                    "id": None,
                    "superseded_by": place.get(r.superseded_by) if r.superseded_by else None,
                }
                for r in records
            ],
            "relations": [
                {**_plain(e), "memory_id": place.get(e.memory_id) if e.memory_id else None}
                for e in memory.store.admin.relations(ns)
            ],
            "aliases": sorted(memory.store.admin.aliases(ns)),
            "why": {place[i]: why for i, why in whys.items()},
        }
    return out


def test_export_then_import_gives_an_equal_store(
    new_store: Callable[[], str], tmp_path: Path
) -> None:
    source, target = _open(new_store()), _open(new_store())
    _seed(source)
    path = tmp_path / "out.jsonl"
    with path.open("w") as out:
        counts = export_store(source, out, ExportScope())
    assert (counts.memories, counts.relations, counts.aliases) == (29, 2, 1)
    imported = import_export(lambda: target, path, max_entities=64)
    assert imported == counts
    before, after = _snapshot(source), _snapshot(target)
    assert after == before
    chain = [m for m in after["acme"]["memories"] if m["content"].startswith("I live")]
    assert [m["superseded_by"] is not None for m in chain] == [True, True, False]
    assert all(m["valid_to"] is not None for m in chain[:2])
    assert list(after["acme"]["why"].values()) == ["said outright", "said outright"]
    tea = [m for m in after["acme"]["memories"] if m["content"] == "I drink tea"]
    assert [m["seen"] for m in tea] == [2]
    assert tea[0]["last_seen_at"] is not None
    # What each memory states a value of came over too: a newer statement replaces the
    # current one in the copy as it does in the source.
    for memory in (source, target):
        moved = memory.remember("I live in Faro", namespace="acme", user_id="u1")
        braga = [r for r in memory.browse(namespace="acme", user_id="u1") if "Braga" in r.content]
        assert braga[0].superseded_by == moved.id
        memory.forget(moved.id, namespace="acme")
    newest = target.recall("Braga", namespace="acme", user_id="u1").hits[0].memory
    assert newest.content == "I live in Braga"
    chain = target.history(newest.id, namespace="acme")
    assert [m.content for m in chain] == ["I live in Lisbon", "I live in Porto", "I live in Braga"]


def test_export_of_a_user_holds_only_theirs(new_store: Callable[[], str], tmp_path: Path) -> None:
    source = _open(new_store())
    _seed(source)
    path = tmp_path / "u1.jsonl"
    with path.open("w") as out:
        counts = export_store(source, out, ExportScope("acme", user_id="u1"))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    memories = [line for line in lines if line["kind"] == "memory"]
    assert len(memories) == counts.memories == 10
    assert {m["user_id"] for m in memories} == {"u1"}
    assert counts.aliases == 0  # a namespace's names are no one user's
    assert [line["relation"] for line in lines if line["kind"] == "relation"] == ["reports_to"]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ({"kind": "memory", "content": "x", "type": "fact"}, "created_at is required"),
        ({"kind": "gizmo"}, "unknown kind"),
        (
            {
                "kind": "memory",
                "content": "x",
                "type": "fact",
                "created_at": "2026-01-01",
                "namespace": "a",
                "superseded_by": 7,
            },
            "superseded_by 7 names no memory",
        ),
        (
            {
                "kind": "relation",
                "source": "A",
                "relation": "r",
                "target": "B",
                "namespace": "a",
                "memory": 3,
            },
            "memory 3 is not an earlier",
        ),
    ],
)
def test_a_bad_line_is_named_and_nothing_is_written(
    tmp_path: Path, line: dict[str, Any], said: str
) -> None:
    good = {"kind": "memory", "content": "fine", "type": "fact", "created_at": "2026-01-01",
            "namespace": "a"}  # fmt: skip
    path = tmp_path / "bad.jsonl"
    header = {"kind": "header", "format": "fivefold-export", "version": 1}
    path.write_text("\n".join(json.dumps(v) for v in (header, good, line)) + "\n")
    opened: list[Memory] = []
    with pytest.raises(InvalidInput, match=f"line 3: {said}"):
        import_export(lambda: opened.append(_open(":memory:")) or opened[0], path,
                      max_entities=64)  # fmt: skip
    assert opened == []  # checked whole before a store is opened


def test_cli_export_and_import_round_trip(tmp_path: Path) -> None:
    source, target = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    runner = CliRunner()
    for text in ("Priya leads Kestrel", "Marco moved to Berlin"):
        assert runner.invoke(cli, ["--db", source, "remember", text, "-n", "team"]).exit_code == 0
    path = tmp_path / "team.jsonl"
    result = runner.invoke(cli, ["--db", source, "export", "-n", "team", str(path)])
    assert result.exit_code == 0, result.output
    assert "exported 2 memories" in result.stdout
    result = runner.invoke(cli, ["--db", target, "import", str(path)])
    assert result.exit_code == 0, result.output
    assert "imported 2 memories" in result.stdout
    with Memory.open(target) as memory:
        assert sorted(r.content for r in memory.browse(namespace="team")) == [
            "Marco moved to Berlin",
            "Priya leads Kestrel",
        ]
    result = runner.invoke(cli, ["--db", source, "export", "--user", "u1", str(path)])
    assert result.exit_code == 2
    assert "give -n" in result.stderr


def _chat(session: str, *messages: dict[str, Any], **more: Any) -> str:
    return json.dumps({"session_id": session, "messages": list(messages), **more})


def test_import_of_chats_stores_each_as_a_session(tmp_path: Path) -> None:
    db, path = str(tmp_path / "chats.db"), tmp_path / "chats.jsonl"
    path.write_text(
        _chat(
            "s1",
            {"role": "user", "content": "I moved to Berlin", "name": "Marco"},
            {"role": "assistant", "content": "Noted."},
            user_id="u1",
        )
        + "\n\n"
        + _chat("s2", {"role": "user", "content": "My badge is 47821"})
        + "\n"
    )
    result = CliRunner().invoke(cli, ["--db", db, "import", str(path), "-n", "team"])
    assert result.exit_code == 0, result.output
    assert "imported 3 memories" in result.stdout
    with Memory.open(db) as memory:
        turns = sorted(memory.browse(namespace="team"), key=lambda r: r.id)
    assert [(r.content, r.speaker, r.session_id, r.user_id) for r in turns] == [
        ("I moved to Berlin", "Marco", "s1", "u1"),
        ("Noted.", "assistant", "s1", "u1"),
        ("My badge is 47821", "user", "s2", None),
    ]


@pytest.mark.parametrize(
    ("second", "said"),
    [
        (_chat("s2", {"role": "user", "content": "ok"}, {"content": "no role"}), "message 1: role"),
        (_chat("s2", {"role": "user", "content": 7}), "message 0: content must be"),
        (json.dumps({"session_id": "s2"}), "messages is required"),
        (json.dumps({"messages": [], "colour": "red"}), "unknown field"),
        ("{not json", "not a JSON line"),
    ],
)
def test_a_malformed_chat_names_its_line_and_nothing_is_imported(
    tmp_path: Path, second: str, said: str
) -> None:
    db, path = tmp_path / "chats.db", tmp_path / "chats.jsonl"
    path.write_text(_chat("s1", {"role": "user", "content": "fine"}) + "\n" + second + "\n")
    result = CliRunner().invoke(cli, ["--db", str(db), "import", "--format", "chat", str(path)])
    assert result.exit_code == 2
    assert f"line 2: {said}" in result.stderr
    assert "nothing imported" in result.stderr
    assert not db.exists()  # checked whole before the store is made


def test_chats_take_no_skipping(tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    path.write_text(_chat("s1", {"role": "user", "content": "fine"}) + "\n")
    args = ["--db", str(tmp_path / "c.db"), "import", str(path), "--on-error", "skip"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert "--on-error skip does not apply to --format chat" in result.stderr
