from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import fivefold
from fivefold.bench import report
from fivefold.bench.datasets import load_beir, load_locomo
from fivefold.bench.report import (
    from_json,
    read_json,
    render_markdown,
    summary_table,
    to_json,
    write_json,
    write_plots,
    write_report,
)
from fivefold.bench.runner import LOCOMO_CATEGORIES, BenchResult, Comparison, run_benchmark
from fivefold.errors import InvalidInput

DATA = Path(__file__).parent / "data"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def result() -> BenchResult:
    return run_benchmark(
        load_locomo(DATA / "locomo_tiny.json"),
        embedder=fivefold.HashingEmbedder(),
        categories=LOCOMO_CATEGORIES,
        resamples=200,
    )


def _rows(table: str) -> dict[str, list[str]]:
    """First cell (the system, backquotes stripped) -> the row's cells."""
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells
    return rows


def test_summary_table_has_a_row_per_system_with_figures_x100(result: BenchResult) -> None:
    table = summary_table(result)
    header = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
    assert header == [
        "system",
        "group",
        "R@1",
        "R@5",
        "R@10",
        "R@25",
        "R@50",
        "any@10",
        "nDCG@10",
        "MRR",
        "sR@10",
        "ΔR@10",
        "p",
    ]
    rows = _rows(table)
    assert list(rows) == [s.name for s in result.systems]
    for system in result.systems:
        value = system.overall["R@10"]
        assert value is not None
        assert rows[system.name][header.index("R@10")] == f"{value * 100:.1f}"
    # the engine has no difference from itself; a sure loss is marked significant
    assert rows["fivefold"][-2:] == ["", ""]
    assert rows["only-temporal"][-2].endswith("*")


def test_significance_mark_follows_the_p_value(result: BenchResult) -> None:
    def with_p(p_value: float) -> BenchResult:
        dense = result.system("dense")
        assert dense.comparison is not None
        changed = replace(dense, comparison=replace(dense.comparison, p_value=p_value))
        systems = tuple(changed if s.name == "dense" else s for s in result.systems)
        return replace(result, systems=systems)

    assert _rows(summary_table(with_p(0.01)))["dense"][-2].endswith("*")
    assert not _rows(summary_table(with_p(0.2)))["dense"][-2].endswith("*")
    assert _rows(summary_table(with_p(0.0004)))["dense"][-1] == "<0.001"


def test_markdown_report_holds_every_table_and_note(result: BenchResult) -> None:
    text = render_markdown(result, plots=["recall_at_k.png"])
    for system in result.systems:
        assert f"`{system.name}`" in text
    for heading in (
        "# Retrieval quality: locomo",
        "## Headline",
        "## Systems",
        "## R@10 per category",
        "## Ablations and fusion challengers against `fivefold`",
        "## The optimizer against the plain baselines",
        "## Read policies, before and after",
        "## Recall latency per plan",
        "## Retrievers that ran",
        "![recall@k per system](recall_at_k.png)",
    ):
        assert heading in text
    assert "1 multi-hop (n=1)" in text
    assert "FTS5 BM25 (k1 = 1.2, b = 0.75)" in text
    assert f"reproduced its ranking exactly on {result.reproduced} of 4 questions" in text
    # the loader's note on skipped questions reaches the reader
    assert "skipped 3 questions with no valid evidence" in text


def test_headline_table_quotes_what_benchmarks_md_needs(result: BenchResult) -> None:
    table = report.headline_table(result)
    header = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
    assert header == [
        "system",
        "R@5",
        "R@10",
        "R@25",
        "nDCG@10",
        "MRR",
        "R@10 multi-hop",
        "R@10 temporal",
        "R@10 open-domain",
        "R@10 single-hop",
        "ΔR@10",
    ]
    rows = _rows(table)
    assert list(rows) == [s.name for s in result.systems]
    engine = result.system("fivefold")
    assert rows["fivefold"][header.index("R@10 temporal")] == _x100(engine.by_category["2"]["R@10"])
    # open-domain has no question in the tiny fixture
    assert rows["fivefold"][header.index("R@10 open-domain")] == "-"


def _x100(value: float | None) -> str:
    assert value is not None
    return f"{value * 100:.1f}"


def test_a_plan_that_skips_a_leg_is_flagged_on_its_baseline(result: BenchResult) -> None:
    full = replace(result, coverage={**result.coverage, "semantic": 1.0, "lexical": 1.0})
    assert "WARNING" not in render_markdown(full)
    partial = replace(full, coverage={**full.coverage, "semantic": 0.75})
    text = render_markdown(partial)
    assert "did not run the semantic leg on 25.0 % of the questions; `dense`" in text
    assert "run the lexical leg" not in text


def test_change_table_lists_ablations_and_challengers_only(result: BenchResult) -> None:
    rows = _rows(report.change_table(result))
    assert list(rows) == [s.name for s in result.systems if s.group in ("ablation", "challenger")]


@pytest.mark.slow
def test_single_category_datasets_get_no_category_table() -> None:
    beir = run_benchmark(
        load_beir(DATA / "beir_tiny"), embedder=fivefold.HashingEmbedder(), resamples=100
    )
    assert report.category_table(beir) == ""
    text = render_markdown(beir)
    assert "per category" not in text
    # no sessions in BEIR: the session column is left out rather than shown empty
    assert "sR@10" not in summary_table(beir)


def test_json_round_trips_exactly(result: BenchResult, tmp_path: Path) -> None:
    data = json.loads(json.dumps(to_json(result)))
    assert data["format"] == report.FORMAT
    assert from_json(data) == result
    path = write_json(result, tmp_path / "sub" / "result.json")
    assert read_json(path) == result


def test_json_from_another_tool_is_refused(result: BenchResult, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="format"):
        from_json({"format": "something-else"})
    broken = to_json(result)
    del broken["systems"]
    with pytest.raises(InvalidInput, match="malformed"):
        from_json(broken)
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"garbage\.json"):
        read_json(garbage)


@pytest.mark.slow
def test_report_writes_markdown_and_png(result: BenchResult, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = write_report(result, tmp_path / "report")
    assert target.name == "report.md"
    png = tmp_path / "report" / "recall_at_k.png"
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert "![recall@k per system](recall_at_k.png)" in target.read_text(encoding="utf-8")


def test_without_matplotlib_the_report_says_why_it_has_no_plot(
    result: BenchResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # None in sys.modules makes the import fail as if the package were missing
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert write_plots(result, tmp_path)[0] is None
    text = write_report(result, tmp_path).read_text(encoding="utf-8")
    assert "matplotlib is not installed" in text
    assert "![" not in text
    assert not (tmp_path / "recall_at_k.png").exists()


def test_comparison_significance_threshold() -> None:
    base = Comparison(metric="R@10", mean_diff=0.1, ci_low=0.0, ci_high=0.2, p_value=0.049, n=9)
    assert base.significant
    assert not replace(base, p_value=0.05).significant
