from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from fivefold.bench import quality_cli
from fivefold.bench.quality_cli import (
    COMMANDS,
    LOCOMO_ENV,
    beir,
    default_locomo_path,
    locomo,
    longmemeval,
)
from fivefold.bench.report import read_json
from fivefold.bench.systems import default_systems
from fivefold.cli.main import cli

DATA = Path(__file__).parent / "data"
LOCOMO_TINY = str(DATA / "locomo_tiny.json")
FAST = ["--embedder", "hashing", "--resamples", "100"]


def _system_rows(output: str) -> list[str]:
    """Names in the first column of the first table printed."""
    names = []
    for line in output.splitlines():
        if line.startswith("| `"):
            names.append(line.split("`")[1])
        elif names:
            break
    return names


def test_commands_for_the_bench_group() -> None:
    assert [c.name for c in COMMANDS] == ["locomo", "longmemeval", "beir", "calibration"]
    for command in COMMANDS[:3]:
        assert command.help
        options = {name for p in command.params for name in p.opts}
        assert {"--data", "--limit", "--json", "--report", "--k-max"} <= options


@pytest.mark.slow
def test_locomo_prints_every_system_and_writes_json_and_report(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        locomo,
        [
            "--data",
            LOCOMO_TINY,
            "--limit",
            "1",
            *FAST,
            "--json",
            str(tmp_path / "out.json"),
            "--report",
            str(tmp_path / "report"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert _system_rows(result.output) == [s.name for s in default_systems()]
    assert "1 multi-hop" in result.output
    assert "`cache-hit`" in result.output
    assert "`balanced`" in result.output
    saved = read_json(tmp_path / "out.json")
    # --limit 1 keeps conv-a; its category 5 question is left out
    assert saved.question_ids == ("conv-a/q0", "conv-a/q1", "conv-a/q2")
    assert (tmp_path / "report" / "report.md").is_file()


@pytest.mark.slow
def test_no_policies_runs_only_the_optimizer(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = CliRunner().invoke(
        locomo, ["--data", LOCOMO_TINY, "--limit", "1", *FAST, "--no-policies", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert [p.name for p in read_json(out).policies] == ["optimized"]
    assert "`balanced`" not in result.output


@pytest.mark.slow
def test_locomo_with_the_default_model_and_k_max(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        locomo, ["--data", LOCOMO_TINY, "--k-max", "5", "--resamples", "100"]
    )
    assert result.exit_code == 0, result.output
    assert "all-MiniLM-L6-v2" in result.output
    header = next(line for line in result.output.splitlines() if line.startswith("| system"))
    cells = [cell.strip() for cell in header.strip("|").split("|")]
    assert cells[2:8] == ["R@1", "R@5", "any@5", "nDCG@5", "MRR", "sR@5"]


@pytest.mark.slow
def test_locomo_reads_the_path_from_the_environment() -> None:
    result = CliRunner(env={LOCOMO_ENV: LOCOMO_TINY}).invoke(locomo, ["--limit", "1", *FAST])
    assert result.exit_code == 0, result.output
    assert "locomo: 5 docs, 3 questions" in result.output


def test_locomo_missing_data_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Through ``fivefold``: its group turns library errors into one line and an exit code.
    result = CliRunner().invoke(
        cli, ["bench", "locomo", "--data", str(tmp_path / "nope.json"), *FAST]
    )
    assert result.exit_code == 2
    assert "nope.json: file not found" in result.output
    monkeypatch.setattr(quality_cli, "default_locomo_path", lambda: None)
    result = CliRunner().invoke(cli, ["bench", "locomo", *FAST])
    assert result.exit_code == 2
    assert "LoCoMo data not found" in result.output
    assert "--data PATH" in result.output


def test_default_locomo_path_walks_up_to_a_shared_folder(tmp_path: Path) -> None:
    # A machine may hold a shared/ folder above the temporary directory (CI puts one beside
    # the clone): before the file is made, nothing inside tmp_path may be found.
    before = default_locomo_path(tmp_path)
    assert before is None or tmp_path not in before.parents
    data = tmp_path / "shared/data/locomo/locomo_public.json"
    data.parent.mkdir(parents=True)
    data.write_text("[]", encoding="utf-8")
    repo = tmp_path / "main" / "src"
    repo.mkdir(parents=True)
    assert default_locomo_path(repo) == data


@pytest.mark.slow
def test_longmemeval_and_beir_commands(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        longmemeval, ["--data", str(DATA / "longmemeval_tiny.json"), "--limit", "2", *FAST]
    )
    assert result.exit_code == 0, result.output
    assert "longmemeval_tiny: " in result.output
    assert "2 questions" in result.output
    result = runner.invoke(beir, ["--data", str(DATA / "beir_tiny"), "--limit", "1", *FAST])
    assert result.exit_code == 0, result.output
    assert "beir_tiny: 4 docs, 1 questions" in result.output
    assert _system_rows(result.output) == [s.name for s in default_systems()]


def test_longmemeval_needs_its_data() -> None:
    result = CliRunner().invoke(cli, ["bench", "longmemeval", *FAST])
    assert result.exit_code == 2
    assert "--data" in result.output
