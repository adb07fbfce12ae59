"""``fivefold bench serve`` against a real server: with ``--soak-minutes``, driven window after
window, its RSS and recall p99 reported per window with the growth from the first to the last;
a plain run reports the CPU each request cost the server and the driver."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fivefold.cli.main import cli


@pytest.mark.slow
def test_a_short_soak_reports_every_window(tmp_path: Path) -> None:
    arguments = ["bench", "serve", "--memories", "200", "--clients", "2", "--rate", "10"]
    arguments += ["--workers", "1", "--store-dir", str(tmp_path), "--json"]
    arguments += ["--soak-minutes", "0.15", "--window-seconds", "3"]
    result = CliRunner().invoke(cli, arguments, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout[result.stdout.index("{") :])
    windows = report["windows"]
    assert [w["minute"] for w in windows] == [1, 2, 3]
    assert all(w["rss_mb"] > 50 for w in windows)  # a served model, not an empty process
    assert all(w["peak_rss_mb"] >= w["rss_mb"] for w in windows)
    assert all(w["recalls"] > 0 and w["recall_p99_ms"] > 0 for w in windows)
    assert sum(w["errors"] for w in windows) == 0
    first, last = windows[0]["rss_mb"], windows[-1]["rss_mb"]
    assert report["rss_growth_percent"] == pytest.approx((last - first) / first * 100, abs=0.1)


@pytest.mark.slow
def test_a_short_run_reports_the_cpu_each_request_cost(tmp_path: Path) -> None:
    arguments = ["bench", "serve", "--memories", "200", "--clients", "2", "--rate", "20"]
    arguments += ["--workers", "1", "--store-dir", str(tmp_path), "--json", "--seconds", "4"]
    result = CliRunner().invoke(cli, arguments, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout[result.stdout.index("{") :])
    assert report["requests"] > 20
    assert report["errors"] == 0
    # A recall embeds its query and reads the store: well over a tenth of a millisecond of the
    # server's CPU, and the server's is counted apart from this driver's.
    assert 0.1 < report["server_cpu_ms"] < 2000
    assert 0.0 < report["driver_cpu_ms"] < 2000
    assert report["server_cpu_ms"] != report["driver_cpu_ms"]
