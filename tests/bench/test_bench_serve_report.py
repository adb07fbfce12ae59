"""``fivefold bench serve``'s report: the CPU per request as measured, or said to be missing."""

from __future__ import annotations

import json
from dataclasses import asdict

from fivefold.bench.serve import Endpoint, LoadReport, render


def report(server_cpu_ms: float | None) -> LoadReport:
    recall = Endpoint("recall", 90, 0, 12.0, 40.0)
    return LoadReport(
        memories=1000, clients=4, workers=1, seconds=10.0, write_share=0.1,
        offered_per_second=0.0, requests=100, per_second=10.0, recalls_per_second=9.0,
        errors=0, error_kinds={}, endpoints=(recall,), server_cpu_ms=server_cpu_ms,
        driver_cpu_ms=2.5,
    )  # fmt: skip


def test_the_cpu_per_request_is_rendered_and_written_as_json() -> None:
    text = render(report(31.25))
    assert "CPU per request: server 31.2 ms (every worker), this driver 2.5 ms" in text
    assert json.loads(json.dumps(asdict(report(31.25))))["server_cpu_ms"] == 31.25


def test_without_psutil_the_server_cpu_is_said_to_be_missing_not_zero() -> None:
    assert "server n/a (psutil is not installed)" in render(report(None))
    assert json.loads(json.dumps(asdict(report(None)), allow_nan=False))["server_cpu_ms"] is None
