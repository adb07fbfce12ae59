"""The CLI's settings: `--config` / FIVEFOLD_CONFIG / the user config file, `config show`,
`config path`, bad files as one line and an exit code, and the metrics in `stats` and `demo`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fivefold.cli.errors import EXIT_CODES
from fivefold.cli.main import cli
from fivefold.config import Config
from fivefold.config import file as config_file
from fivefold.config.file import config_from_toml
from fivefold.errors import ConfigError
from fivefold.memory import Memory
from fivefold.types import OptimizerMode

GOOD = '[optimizer]\nmode = "cached"\n[fusion]\nk = 20\n'


@pytest.fixture(autouse=True)
def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's default config file, in a temporary directory (not created)."""
    path = tmp_path / "user-config" / "config.toml"
    monkeypatch.setattr(config_file, "default_config_path", lambda: path)
    monkeypatch.delenv("FIVEFOLD_CONFIG", raising=False)
    monkeypatch.delenv("FIVEFOLD_LLM_API_KEY", raising=False)
    return path


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[Config]:
    """The config every ``Memory.open`` of the CLI receives."""
    seen: list[Config] = []
    original = Memory.open.__func__

    def spy(cls: type[Memory], target: Any = None, **kwargs: Any) -> Memory:
        seen.append(kwargs["config"])
        return original(cls, target, **kwargs)

    monkeypatch.setattr(Memory, "open", classmethod(spy))
    return seen


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner(env=env).invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_config_show_prints_the_built_in_defaults() -> None:
    code, out, _ = run("config", "show")
    assert code == 0
    assert config_from_toml(out) == Config()
    assert run("config", "show", "--defaults")[1] == out
    assert run("config", "path")[1] == "built-in defaults\n"


def test_config_show_prints_the_file_in_effect(tmp_path: Path) -> None:
    path = write(tmp_path / "mine.toml", GOOD)
    code, out, _ = run("--config", str(path), "config", "show")
    assert code == 0
    shown = config_from_toml(out)
    assert shown.optimizer.mode is OptimizerMode.CACHED
    assert shown.fusion.k == 20
    assert 'model_path = ""' in out
    assert (
        config_from_toml(run("--config", str(path), "config", "show", "--defaults")[1]) == Config()
    )
    assert run("--config", str(path), "config", "path")[1] == f"{path}\n"


def test_the_user_config_file_and_the_environment(tmp_path: Path, user_config: Path) -> None:
    write(user_config, "[fusion]\nk = 7\n")
    assert run("config", "path")[1] == f"{user_config}\n"
    assert "k = 7" in run("config", "show")[1]
    env_file = write(tmp_path / "env.toml", "[fusion]\nk = 8\n")
    env = {"FIVEFOLD_CONFIG": str(env_file)}
    assert run("config", "path", env=env)[1] == f"{env_file}\n"
    assert "k = 8" in run("config", "show", env=env)[1]
    flag_file = write(tmp_path / "flag.toml", "[fusion]\nk = 9\n")
    assert "k = 9" in run("--config", str(flag_file), "config", "show", env=env)[1]


@pytest.mark.slow
def test_every_command_opens_the_store_with_the_config(
    tmp_path: Path, opened: list[Config]
) -> None:
    path = write(tmp_path / "mine.toml", GOOD)
    db = str(tmp_path / "cli.db")
    base = ["--db", db, "--config", str(path)]
    out = run(*base, "remember", "Sarah Chen reports to Priya Patel")[1]
    memory_id = json.loads(out)["id"]
    run(*base, "recall", "who does Sarah report to?")
    run(*base, "recall", "who does Sarah report to?", "--explain")
    run(*base, "relate", "Sarah Chen", "works_with", "Ana Ruiz")
    run(*base, "alias", "Priya Patel", "Priya")
    run(*base, "forget", str(memory_id))
    jsonl = write(tmp_path / "m.jsonl", '{"content": "hello"}\n')
    run(*base, "import", str(jsonl))
    run(*base, "stats")
    assert len(opened) == 8
    assert all(c.optimizer.mode is OptimizerMode.CACHED and c.fusion.k == 20 for c in opened)


def test_the_api_key_comes_from_the_environment_and_is_never_shown(
    tmp_path: Path, opened: list[Config]
) -> None:
    env = {"FIVEFOLD_LLM_API_KEY": "sk-from-env"}
    code, out, _ = run("--db", str(tmp_path / "k.db"), "remember", "anything", env=env)
    assert code == 0
    assert opened[0].rewrite.api_key == "sk-from-env"
    code, out, _ = run("config", "show", env=env)
    assert "sk-from-env" not in out
    run("--db", str(tmp_path / "k.db"), "stats")  # the store is there: made by the remember
    assert opened[1].rewrite.api_key is None


@pytest.mark.parametrize(
    ("text", "part"),
    [
        ("[fusion]\nk = 0\n", "fusion.k: 0 is out of range; expected an integer >= 1"),
        ("[optimizer\n", "not valid TOML"),
        ('[optimizer]\nmode = "telepathic"\n', '"telepathic" is not accepted'),
        ('[rewrite]\napi_key = "sk-1"\n', "FIVEFOLD_LLM_API_KEY"),
    ],
)
def test_a_bad_config_file_is_one_line_and_an_exit_code(
    tmp_path: Path, text: str, part: str
) -> None:
    path = write(tmp_path / "bad.toml", text)
    code_of_config_errors = next(c for kind, c in EXIT_CODES if issubclass(ConfigError, kind))
    for command in (["stats"], ["recall", "anything"], ["config", "show"]):
        code, out, err = run("--db", str(tmp_path / "x.db"), "--config", str(path), *command)
        assert code == code_of_config_errors == 1
        assert out == ""
        assert err.startswith(f"error: {path}: ")
        assert part in err
        assert err.count("\n") == 1
        assert "Traceback" not in err
    # Where the settings come from is still answerable, and the defaults still print.
    assert run("--config", str(path), "config", "path") == (0, f"{path}\n", "")
    assert run("--config", str(path), "config", "show", "--defaults")[0] == 0


def test_a_missing_config_file_is_an_error_not_the_defaults(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    for command in (["config", "path"], ["config", "show"], ["stats"]):
        code, _, err = run("--db", str(tmp_path / "x.db"), "--config", str(missing), *command)
        assert code == 1
        assert err == f"error: {missing}: no such config file\n"
    code, _, err = run("--config", str(tmp_path), "config", "path")
    assert (code, err) == (1, f"error: {tmp_path}: a directory, not a config file\n")


def test_stats_shows_this_process_metrics(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    run("--db", db, "remember", "My badge ID is 47821")
    code, out, _ = run("--db", db, "stats")
    assert code == 0
    assert "memories" in out
    assert "cover this process only" in out
    code, out, _ = run("--db", db, "stats", "--json")
    payload = json.loads(out)
    assert payload["memories"] == 1
    assert payload["metrics"]["scope"] == "this process"
    assert payload["metrics"]["recalls"] == 0
    assert set(payload["metrics"]) >= {"plans", "latency", "cache_hit_rate", "rerank"}


@pytest.mark.slow
def test_demo_prints_the_metrics_at_its_end(tmp_path: Path) -> None:
    path = write(tmp_path / "cached.toml", '[optimizer]\nmode = "cached"\n')
    code, out, _ = run("--config", str(path), "demo", "-k", "1")
    assert code == 0
    metrics = out[out.index("recall metrics of this process") :]
    assert "p99 ms" in metrics
    assert "cache hit rate 0%" in metrics  # every demo query is asked once
    assert "rerank: none ran" in metrics
