"""The history on the command line: a superseded hit says which memory superseded it and
when (the recall table, --explain, --json), and ``fivefold history ID`` prints the chain."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fivefold import Memory
from fivefold.cli.main import cli


@pytest.fixture
def chain(tmp_path: Path) -> tuple[str, list[int]]:
    db = str(tmp_path / "history.db")
    with Memory.open(db) as memory:
        first = memory.remember("Marco lives in Lisbon", event_at="2026-01-05")
        second = memory.remember("Marco lives in Porto", event_at="2026-02-10", supersedes=first.id)
        third = memory.remember(
            "Marco lives in Berlin", event_at="2026-03-15", supersedes=second.id
        )
    return db, [first.id, second.id, third.id]


def _run(db: str, *args: str) -> str:
    # Wide: the table's cells are not wrapped, so a note reads as one string.
    result = CliRunner(env={"COLUMNS": "300"}).invoke(cli, ["--db", db, *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_superseded_hit_names_its_successor_and_when(chain: tuple[str, list[int]]) -> None:
    db, (first, second, third) = chain
    out = _run(db, "recall", "where did Marco live in January?", "-k", "3")
    assert f"Marco lives in Lisbon · superseded by #{second} (2026-02-10)" in out
    assert f"Marco lives in Porto · superseded by #{third} (2026-03-15)" in out
    assert "Marco lives in Berlin ·" not in out  # current: no note
    out = _run(db, "recall", "where does Marco live?", "-k", "3", "--explain")
    assert f"Marco lives in Lisbon · superseded by #{second} (2026-02-10)" in out
    hits = json.loads(_run(db, "recall", "where does Marco live?", "-k", "3", "--json"))["hits"]
    by_id = {h["memory"]["id"]: h["memory"] for h in hits}
    assert by_id[first]["superseded_by"] == second
    assert by_id[first]["valid_to"].startswith("2026-02-10")
    assert by_id[third]["superseded_by"] is None


def test_history_prints_the_chain_oldest_first(chain: tuple[str, list[int]]) -> None:
    db, (first, second, third) = chain
    lines = _run(db, "history", str(second)).splitlines()
    assert [line[2:].split()[:2] for line in lines] == [
        [f"#{first}", "2026-01-05"],
        [f"#{second}", "2026-02-10"],
        [f"#{third}", "2026-03-15"],
    ]
    assert lines[1].startswith("*")  # the one asked about
    assert lines[0].endswith(f"(superseded by #{second} (2026-02-10))")
    assert lines[2].endswith("Marco lives in Berlin")


def test_history_of_a_missing_memory_is_not_found(chain: tuple[str, list[int]]) -> None:
    db, _ = chain
    result = CliRunner().invoke(cli, ["--db", db, "history", "999"])
    assert result.exit_code == 3
    assert "no memory with id 999" in result.stderr
