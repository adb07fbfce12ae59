"""``fivefold bench latency --peer lancedb``: LanceDB's hybrid search on the same memories."""

from __future__ import annotations

import json

import pytest

import fivefold
from fivefold.bench.latency import LatencyReport, run_latency
from fivefold.bench.latency_cli import render_markdown
from fivefold.types import OptimizerMode

QUERIES = 30


@pytest.fixture(scope="module")
def report() -> LatencyReport:
    pytest.importorskip("lancedb")
    return run_latency(
        [300],
        embedder=fivefold.HashingEmbedder(),
        queries=QUERIES,
        warmup=2,
        repeats=2,
        sample=0,
        modes=(OptimizerMode.OFF,),
        peer="lancedb",
    )


def test_lancedb_is_timed_without_and_with_its_vector_index(report: LatencyReport) -> None:
    (result,) = report.results
    assert [p.vector_index for p in result.peers] == ["none (exact scan)", "IVF_HNSW_SQ"]
    for peer in result.peers:
        assert peer.system.startswith("lancedb ")
        assert peer.overall.count == peer.search.count == peer.cpu.count == QUERIES
        # the search alone leaves each query's embedding out of the same queries' times
        assert 0 < peer.search.p50 <= peer.overall.p50
        assert peer.search.p99 <= peer.overall.p99
        assert peer.load_seconds > 0
    assert result.peers[0].index_seconds == 0.0
    assert result.peers[1].index_seconds > 0


def test_lancedb_searches_the_same_memories_under_the_same_ids(report: LatencyReport) -> None:
    """A query naming a memory's identifier finds it by full text, so every identifier query's
    target comes back: under fivefold's id, so the table holds the store's memories."""
    (result,) = report.results
    (mode,) = result.modes
    for peer in result.peers:
        assert peer.identifier_total == mode.identifier_total > 0
        assert peer.identifier_found == peer.identifier_total


def test_the_report_puts_the_ratios_side_by_side(report: LatencyReport) -> None:
    (result,) = report.results
    markdown = render_markdown(report)
    assert "### Side by side with a peer" in markdown
    assert "fused by RRF (k=60)" in markdown
    assert "five retrievers" in markdown
    mine = result.modes[0].overall
    for peer in result.peers:
        ratios = f"{mine.p50 / peer.overall.p50:.2f} | {mine.p99 / peer.overall.p99:.2f} |"
        assert f"| 300 | off | {peer.system}, {peer.vector_index} | {ratios}" in markdown
    peers = json.loads(report.to_json())["results"][0]["peers"]
    assert [p["vector_index"] for p in peers] == ["none (exact scan)", "IVF_HNSW_SQ"]


def test_an_unknown_peer_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown peer"):
        run_latency([10], embedder=fivefold.HashingEmbedder(), peer="elasticsearch")
