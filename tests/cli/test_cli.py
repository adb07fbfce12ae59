"""The command line, driven through click's runner against real stores."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import fivefold
from fivefold.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


def run(db: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--db", db, *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.slow
def test_remember_recall_json_round_trip(db: str) -> None:
    code, out, _ = run(db, "remember", "My badge ID is 47821", "--session", "s1")
    assert code == 0
    written = json.loads(out)
    assert written["predicate"] == "badge ID is 47821"
    code, out, _ = run(db, "recall", "what's my badge ID?", "--json", "-k", "3")
    assert code == 0
    payload = json.loads(out)
    assert payload["hits"][0]["memory"]["id"] == written["id"]
    assert payload["plan"]["name"] == "exploratory"  # one memory: no term is rare yet
    assert payload["plan"]["fusion_k"] == 10
    assert "lexical" in payload["hits"][0]["sources"]


@pytest.mark.slow
def test_recall_explain_prints_tables(db: str) -> None:
    run(db, "remember", "Priya recommended Postgres for Project Kestrel")
    code, out, _ = run(db, "recall", "what did Priya recommend?", "--explain")
    assert code == 0
    assert "semantic" in out
    assert "lexical" in out
    assert "fusion" in out
    code, out, _ = run(db, "recall", "what did Priya recommend?", "--explain", "--json")
    assert set(json.loads(out)["retrievers"]) >= {"semantic", "lexical", "graph"}


@pytest.mark.slow
def test_relate_alias_forget_stats(db: str) -> None:
    code, out, _ = run(db, "relate", "Sarah Chen", "reports_to", "Priya Patel")
    assert code == 0
    memory_id = json.loads(out)["memory_id"]
    code, out, _ = run(db, "alias", "Priya Patel", "Priya")
    assert json.loads(out) == {"entity": "Priya Patel", "aliases": ["Priya"]}
    code, out, _ = run(db, "recall", "who reports to Priya?", "--json")
    assert json.loads(out)["hits"][0]["memory"]["id"] == memory_id
    assert run(db, "forget", str(memory_id))[0] == 0
    code, _, err = run(db, "forget", str(memory_id))
    assert code == 3
    assert "no memory" in err
    code, out, _ = run(db, "stats", "--json")
    assert json.loads(out)["memories"] == 0


@pytest.mark.slow
def test_import_jsonl_and_locomo(db: str, tmp_path: Path) -> None:
    path = tmp_path / "memories.jsonl"
    lines = [{"content": f"Note {i} about Kestrel", "namespace": "ns"} for i in range(5)]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    code, out, _ = run(db, "import", str(path))
    assert code == 0
    assert "imported 5" in out
    locomo = ROOT / "tests" / "bench" / "data" / "locomo_tiny.json"
    code, out, _ = run(db, "import", str(locomo), "--format", "locomo")
    assert code == 0
    assert "imported" in out
    code, out, _ = run(db, "stats", "--json")
    assert json.loads(out)["namespaces"]["ns"] == 5
    assert json.loads(out)["memories"] > 5
    marked = tmp_path / "windows.jsonl"  # a byte order mark first (Windows editors write one)
    marked.write_bytes(b"\xef\xbb\xbf" + json.dumps({"content": "BOM note"}).encode() + b"\n")
    code, out, err = run(db, "import", str(marked))
    assert (code, "imported 1" in out) == (0, True), err
    assert "\ufeff" not in run(db, "recall", "BOM note")[1]


@pytest.mark.slow
def test_bad_input_is_one_line_and_an_exit_code(db: str, tmp_path: Path) -> None:
    assert run(db, "remember", "a memory to recall")[0] == 0
    code, _, err = run(db, "recall", "   ")
    assert code == 2
    assert err.startswith("error: ")
    assert "Traceback" not in err
    code, _, err = run(db, "remember", "x", "--event-at", "not a date")
    assert code == 2
    assert "event_at" in err
    code, _, err = run(db, "remember", "x", "--metadata", "[1, 2]")
    assert code == 2
    assert "metadata" in err
    not_a_store = tmp_path / "notes.txt"
    not_a_store.write_text("hello")
    code, _, err = run(str(not_a_store), "stats")
    assert code == 4
    assert "not a fivefold store" in err
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"content": "fine"}\n{oops\n')
    code, _, err = run(db, "import", str(broken))
    assert code == 2
    assert "broken.jsonl: line 2: not valid JSON" in err


def test_db_from_environment(tmp_path: Path) -> None:
    path = tmp_path / "env.db"
    runner = CliRunner(env={"FIVEFOLD_DB": str(path)})
    assert runner.invoke(cli, ["remember", "hello from the environment"]).exit_code == 0
    assert path.exists()


@pytest.mark.slow
def test_demo_runs_and_shows_plans() -> None:
    result = CliRunner().invoke(cli, ["demo", "-k", "2"], catch_exceptions=False)
    assert result.exit_code == 0
    assert "Loaded 334 memories" in result.stdout
    assert "plan exploratory" in result.stdout
    assert "plan entity_centric" in result.stdout
    assert "right first" in result.stdout


def test_every_command_is_documented_in_the_guide() -> None:
    readme = (ROOT / "docs" / "guides" / "cli.md").read_text()
    documented = set(re.findall(r"`fivefold ([\w-]+)", readme))
    assert set(cli.commands) <= documented, set(cli.commands) - documented


def test_the_docs_show_the_values_copies_take_and_the_venv_python() -> None:
    # "--sample" alone read as a flag; the script imports the dev dependencies of the venv.
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    readme = "\n".join(page.read_text() for page in pages)
    for name in ("migrate", "reembed"):
        usage = re.search(rf"`fivefold {name} ([^`]*)`", readme)
        assert usage is not None, name
        command = cli.get_command(click.Context(cli), name)
        assert command is not None, name
        for option in command.params:
            if isinstance(option, click.Option) and not option.is_flag:
                assert f"{option.opts[0]} N" in usage.group(1), (name, option.opts[0])
    scripts = re.findall(r"(\S*)python3? scripts/", readme)
    assert scripts
    assert all(before.endswith(".venv/bin/") for before in scripts), scripts


# What a recall never needs: the server, the clients, benchmarks, plotting, async machinery.
EDGES = (
    "fastapi",
    "starlette",
    "uvicorn",
    "pydantic",
    "mcp",
    "httpx",
    "anyio",
    "asyncio",
    "prometheus_client",
    "matplotlib",
    "ir_measures",
    "psycopg",
    "fivefold.bench",
    "fivefold.serve",
    "fivefold.client",
    "fivefold.async_client",
    "fivefold.remote",
    "fivefold.demo",
)


def test_a_cold_recall_imports_none_of_the_edges(
    tmp_path: Path, minilm: fivefold.MiniLMEmbedder
) -> None:
    """A cold ``fivefold recall`` is an import and a model load: each of these modules
    imported on its path is time every command-line recall pays for nothing."""
    store = tmp_path / "m.db"
    with fivefold.Memory.open(store, embedder=minilm) as memory:
        memory.remember("Priya recommended Postgres for Project Kestrel")
    report = tmp_path / "modules.txt"
    code = (
        "import atexit, sys; "
        f"atexit.register(lambda: open({str(report)!r}, 'w').write('\\n'.join(sys.modules))); "
        "from fivefold.cli.main import main; main()"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIVEFOLD_")}
    command = [sys.executable, "-c", code, "--db", str(store), "recall", "Postgres", "-k", "1"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Postgres" in done.stdout
    loaded = report.read_text().split("\n")
    assert len(loaded) > 100  # the report is real: numpy and the engine are in it
    assert [m for m in loaded if m.split(".")[0] in EDGES or m.startswith(EDGES)] == []
