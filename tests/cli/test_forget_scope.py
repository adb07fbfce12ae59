"""``fivefold forget-scope``: a user's (agent's, session's) memories forgotten, counted; the
whole namespace only when it is said outright."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from fivefold import Memory
from fivefold.cli.main import cli


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "scope.db")
    with Memory.open(path) as memory:
        memory.remember_many(
            [
                {
                    "content": f"note {n} of {user}",
                    "namespace": "team",
                    "user_id": user,
                    "session_id": f"s{n % 2}",
                }
                for user in ("u1", "u2")
                for n in range(3)
            ]
        )
    return path


def _run(db: str, *args: str, given: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--db", db, "forget-scope", *args], input=given)
    return result.exit_code, result.stdout, result.stderr


def _left(db: str) -> list[tuple[str | None, str | None]]:
    with Memory.open(db) as memory:
        return sorted((r.user_id, r.session_id) for r in memory.browse(namespace="team"))


def test_a_users_memories_go_and_are_counted(db: str) -> None:
    code, out, _ = _run(db, "-n", "team", "--user", "u1", "--yes")
    assert code == 0
    assert out.strip() == "forgot 3 memories"
    assert {user for user, _ in _left(db)} == {"u2"}


def test_one_session_of_a_user(db: str) -> None:
    code, out, _ = _run(db, "-n", "team", "--user", "u2", "--session", "s0", "--yes")
    assert (code, out.strip()) == (0, "forgot 2 memories")
    assert ("u2", "s0") not in _left(db)
    assert len(_left(db)) == 4


def test_an_empty_scope_is_refused_unless_the_namespace_is_meant(db: str) -> None:
    code, _, err = _run(db, "-n", "team", "--yes")
    assert code == 2
    assert "--all-of-namespace" in err
    assert len(_left(db)) == 6
    code, _, err = _run(db, "-n", "team", "--user", "u1", "--all-of-namespace", "--yes")
    assert code == 2
    assert len(_left(db)) == 6
    code, out, _ = _run(db, "-n", "team", "--all-of-namespace", "--yes")
    assert (code, out.strip()) == (0, "forgot 6 memories")
    assert _left(db) == []


def test_it_asks_first_without_yes(db: str) -> None:
    code, _, err = _run(db, "-n", "team", "--user", "u1", given="n\n")
    assert code == 1
    assert "forget every memory of namespace 'team', user 'u1'?" in err
    assert len(_left(db)) == 6
    code, out, _ = _run(db, "-n", "team", "--user", "u1", given="y\n")
    assert (code, out.strip()) == (0, "forgot 3 memories")


def test_a_missing_store_is_not_made(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    code, _, _ = _run(str(missing), "-n", "team", "--user", "u1", "--yes")
    assert code == 3
    assert not missing.exists()
