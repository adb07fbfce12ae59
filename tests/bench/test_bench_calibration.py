"""``fivefold bench calibration`` on the tiny LoCoMo fixture."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

import fivefold
from fivefold.bench import calibration as module
from fivefold.bench.datasets import load_locomo
from fivefold.bench.quality_cli import calibration
from fivefold.read.calibrate import FEATURES

DATA = Path(__file__).parent / "data" / "locomo_tiny.json"


def test_every_hit_is_a_sample_and_unstored_questions_have_no_relevant_hit() -> None:
    dataset = load_locomo(DATA)
    with fivefold.Memory.open(":memory:", embedder=fivefold.HashingEmbedder()) as mem:
        result = module.run(dataset, mem, k=5)
    kinds = {s.kind for s in result.samples}
    assert module.UNSTORED in kinds
    assert not any(s.relevant for s in result.samples if s.kind == module.UNSTORED)
    assert any(s.relevant for s in result.samples)
    assert len(result.held_out) == len(result.samples)
    assert all(0.0 <= p <= 1.0 for p in result.held_out)
    assert len(result.coefficients) == len(FEATURES)
    assert all(1 <= s.rank <= 5 for s in result.samples)


@pytest.mark.parametrize(
    ("optimizer", "name"), [("rule", "COEFFICIENTS"), ("learned", "LEARNED_COEFFICIENTS")]
)
def test_the_command_prints_reliability_top_hits_and_coefficients(
    optimizer: str, name: str
) -> None:
    args = ["--data", str(DATA), "--embedder", "hashing", "-k", "5", "--optimizer", optimizer]
    out = CliRunner().invoke(calibration, args)
    assert out.exit_code == 0, out.output
    assert "expected calibration error" in out.output
    assert "answerable (1-4)" in out.output
    line = next(x for x in out.output.splitlines() if x.startswith(f"{name} = "))
    values = ast.literal_eval(line.split("=", 1)[1].split("#", 1)[0].strip())
    assert len(values) == len(FEATURES)
