"""The docs say what the code does: every Python example of docs/ and the README runs, every
``fivefold`` command line they show parses, the examples marked to run do, and the generated
reference pages are current.

An example is marked by an HTML comment on the line before its fence:
``<!-- docs-test: skip REASON -->`` (not run; the reason is required),
``<!-- docs-test: file NAME -->`` (written to NAME for the page's other examples),
``<!-- docs-test: run -->`` (a shell block whose ``fivefold`` lines are run),
``<!-- docs-test: server -->`` (run against a real ``fivefold serve``) and
``<!-- docs-test: postgres -->`` (run against the test PostgreSQL server).
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import click
import pytest
from click.testing import CliRunner
from tests.serve.conftest import start_server

from fivefold.cli.main import cli
from fivefold.config.meaning import MEANINGS

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
FENCE = re.compile(r"^```(\w*)\s*$")
MARK = re.compile(r"^<!-- docs-test: (\w+)(?: (.+?))? -->$")
KINDS = {"skip", "file", "run", "server", "postgres"}
# What the server examples name, and what the test's own server and key replace it with.
EXAMPLE_URL = "http://127.0.0.1:8420"
EXAMPLE_KEY = "ff_..."
EXAMPLE_POSTGRES = "postgresql://fivefold:secret@db.internal/memory"


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    text: str
    mark: str = ""
    arg: str = ""

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        mark = MARK.match(lines[i - 1]) if i > 0 else None
        kind, arg = (mark.group(1), mark.group(2) or "") if mark else ("", "")
        text = "\n".join(lines[i + 1 : end]) + "\n"
        found.append(Block(page, i + 1, fence.group(1), text, kind, arg))
        i = end + 1
    return found


ALL = [b for page in PAGES for b in blocks(page)]
PYTHON = [b for b in ALL if b.lang == "python"]
SHELL = [b for b in ALL if b.lang == "bash"]


def _files_of(page: Path, folder: Path) -> None:
    for block in blocks(page):
        if block.mark == "file":
            (folder / block.arg).write_text(block.text)


def _run_python(block: Block, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _files_of(block.page, folder)
    monkeypatch.chdir(folder)
    code = compile(block.text, block.name, "exec")
    exec(code, {"__name__": "__docs__"})


def test_the_examples_are_found_and_marked_with_known_kinds() -> None:
    assert len(PYTHON) >= 10
    assert any(b.page.name == "README.md" for b in PYTHON)
    for page in PAGES:
        for number, line in enumerate(page.read_text().splitlines(), start=1):
            if line.startswith("<!-- docs-test"):
                mark = MARK.match(line)
                assert mark is not None, f"{page}:{number}"
                assert mark.group(1) in KINDS, f"{page}:{number}"
    for block in ALL:
        if block.mark == "skip":
            assert block.arg.strip(), f"{block.name}: a skipped example says why"
        if block.mark == "file":
            assert block.arg, block.name
            assert "/" not in block.arg, block.name


@pytest.mark.parametrize(
    "block", [b for b in PYTHON if b.mark in {"", "skip"}], ids=lambda b: b.name
)
def test_a_python_example_runs(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if block.mark == "skip":
        pytest.skip(block.arg)
    _run_python(block, tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in PYTHON if b.mark == "server"], ids=lambda b: b.name)
def test_a_server_example_runs_against_a_real_server(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert EXAMPLE_URL in block.text, block.name
    server = start_server(tmp_path / "server", keys={"example": {"namespace": "default"}})
    try:
        text = block.text.replace(EXAMPLE_URL, server.url)
        text = text.replace(EXAMPLE_KEY, server.tokens["example"])
        _run_python(Block(block.page, block.line, "python", text), tmp_path, monkeypatch)
    finally:
        server.stop()


@pytest.mark.parametrize("block", [b for b in PYTHON if b.mark == "postgres"], ids=lambda b: b.name)
def test_a_postgres_example_runs_against_postgres(
    block: Block, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert EXAMPLE_POSTGRES in block.text, block.name
    text = block.text.replace(EXAMPLE_POSTGRES, pg_url)
    _run_python(Block(block.page, block.line, "python", text), tmp_path, monkeypatch)


def _command_lines(block: Block) -> list[list[str]]:
    """The ``fivefold`` command lines of a shell block, as argument lists (comments, line
    continuations and a leading ``.venv/bin/`` taken off)."""
    joined = block.text.replace("\\\n", " ")
    found = []
    for line in joined.splitlines():
        for part in re.split(r"&&|;", line):
            words = shlex.split(part, comments=True)
            if words and words[0] in {"fivefold", ".venv/bin/fivefold"}:
                found.append(words[1:])
    return found


def _known_options(command: click.Command) -> set[str]:
    known = {"--help", "-h"}
    for param in command.params:
        if isinstance(param, click.Option):
            known.update(param.opts)
            known.update(param.secondary_opts)
    return known


@pytest.mark.parametrize("block", SHELL, ids=lambda b: b.name)
def test_every_command_line_shown_names_real_commands_and_options(block: Block) -> None:
    for args in _command_lines(block):
        path: list[click.Command] = [cli]
        command: click.Command = cli
        words = iter(args)
        for word in words:
            if word in {"--db", "--config"}:
                next(words)  # fivefold's own options take a value
            if word.startswith("-"):
                continue
            if isinstance(command, click.Group):
                sub = command.get_command(click.Context(command), word)
                if sub is None:
                    break
                command = sub
                path.append(command)
        known = set().union(*(_known_options(c) for c in path))
        used = {w.split("=", 1)[0] for w in args if w.startswith("-")}
        assert used <= known, (block.name, args, used - known)
        assert command is not cli, (block.name, args)


@pytest.mark.parametrize("block", [b for b in SHELL if b.mark == "run"], ids=lambda b: b.name)
def test_a_shell_example_marked_to_run_runs(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _files_of(block.page, tmp_path)
    monkeypatch.chdir(tmp_path)
    commands = _command_lines(block)
    assert commands, block.name
    for args in commands:
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, (block.name, args, result.output)


# -- the generated reference pages --------------------------------------------------------------
def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_reference", ROOT / "scripts" / "gen_reference.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_reference", module)
    spec.loader.exec_module(module)
    return module


def test_the_generated_reference_pages_are_current() -> None:
    assert _generator().stale() == [], "run: python scripts/gen_reference.py"


def test_every_setting_has_a_meaning_and_every_meaning_a_setting() -> None:
    keys = [key for key, _ in _generator().config_rows()]
    assert len(keys) == len(set(keys))
    missing = [key for key in keys if not MEANINGS.get(key, "").strip()]
    assert missing == [], f"settings without a meaning in fivefold.config.meaning: {missing}"
    assert set(MEANINGS) - set(keys) == set()


def test_the_config_reference_shows_every_default() -> None:
    page = (ROOT / "docs" / "reference" / "config.md").read_text()
    for key, default in _generator().config_rows():
        assert f"| `{key}` | `{default}` |" in page, key


def test_the_cli_reference_names_every_command_and_option() -> None:
    page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    for name in cli.list_commands(click.Context(cli)):
        command = cli.get_command(click.Context(cli), name)
        assert command is not None
        assert f"`fivefold {name}`" in page, name
        for option in _known_options(command) - {"--help", "-h"}:
            assert f"`{option}`" in page, (name, option)
