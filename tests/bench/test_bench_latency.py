from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import fivefold
from fivefold.bench.latency import (
    LatencyReport,
    Percentiles,
    SyntheticVectors,
    read_manifest,
    run_latency,
    store_name,
)
from fivefold.bench.latency_cli import latency, plot, render_markdown, targets
from fivefold.bench.latency_profile import costed, profiled
from fivefold.bench.synthetic import NOW, QueryKind, SyntheticCorpus
from fivefold.config import Config, IndexConfig
from fivefold.types import OptimizerMode, PlanName, RetrieverName

QUERIES = 30


@pytest.fixture(scope="module")
def report() -> LatencyReport:
    return run_latency(
        [300], embedder=fivefold.HashingEmbedder(), queries=QUERIES, warmup=3, repeats=5, sample=50
    )


def _ordered(p: Percentiles) -> bool:
    return p.p50 <= p.p95 <= p.p99 <= p.max and p.count > 0


def test_percentiles_of_known_samples() -> None:
    p = Percentiles.of([float(v) for v in range(1, 101)])
    assert (p.count, p.mean, p.p50, p.max) == (100, 50.5, 50.5, 100.0)
    assert p.p99 == pytest.approx(99.01)
    assert Percentiles.of([]).count == 0


def test_a_smoke_run_fills_every_field(report: LatencyReport) -> None:
    (result,) = report.results
    assert result.size == result.memories == 300
    assert [m.mode for m in result.modes] == ["off", "cached"]
    for mode in result.modes:
        assert mode.overall.count == QUERIES
        assert _ordered(mode.overall)
        for groups in (mode.by_kind, mode.by_retrievers, mode.by_plan):
            assert sum(p.count for p in groups.values()) == QUERIES
            assert all(_ordered(p) for p in groups.values())
        retrievers = {name for key in mode.by_retrievers for name in key.split("+")}
        assert retrievers <= {r.value for r in RetrieverName}
        assert {"total", "parse", "fuse"} <= set(mode.stages)
        assert mode.repeat.count == 5
        assert 0 <= mode.identifier_found <= mode.identifier_total
        assert mode.warmup == 3
        assert mode.rss_mb > 0
    assert result.entities > 0
    assert result.edges > 0
    assert result.peak_rss_mb >= result.rss_mb > 0
    assert result.modes[0].stages["embed"].count == QUERIES
    assert result.disk_bytes["total"] == sum(
        v for k, v in result.disk_bytes.items() if k != "total"
    )
    assert result.disk_bytes["db"] > 0
    assert result.disk_bytes["lexical"] > 0  # the tantivy folder beside the file
    assert not result.reused
    assert result.build.index_kind == "exact"
    assert result.dense_recall == 1.0  # exact search against itself
    assert result.build.bulk.memories == 300
    assert result.build.bulk.per_second > 0


def test_the_balanced_plan_runs_with_the_optimizer_off_and_others_with_it_on(
    report: LatencyReport,
) -> None:
    off, cached = report.results[0].modes
    assert set(off.by_plan) == {PlanName.BALANCED.value}
    assert set(cached.by_plan) <= {p.value for p in PlanName}
    assert len(cached.by_plan) > 1


def test_repeats_are_served_from_the_cache_only_when_it_is_on(report: LatencyReport) -> None:
    off, cached = report.results[0].modes
    assert off.repeat_cached == 0
    assert cached.repeat_cached == cached.repeat.count == 5


def test_each_recall_is_costed_and_its_answers_kept(report: LatencyReport) -> None:
    off, _ = report.results[0].modes
    cpu = off.cpu
    assert {"process", "store", "embed", "other", "store calls", "embeds"} <= set(cpu)
    assert all(p.count == QUERIES for p in cpu.values())
    assert all(p.count == 5 for p in off.repeat_cpu.values())
    # Asked again at once, a query is not embedded again.
    assert off.repeat_cpu["embeds"].max == 0.0
    assert cpu["process"].mean > 0
    assert cpu["store"].mean > 0
    # The balanced plan runs the semantic leg: one query embedding and one vector search each.
    assert cpu["embeds"].p50 == cpu["embeds"].max == 1.0
    assert off.calls["search.vector_search"] == 1.0
    assert off.calls["reads.state"] == 1.0
    assert cpu["store calls"].mean == pytest.approx(sum(off.calls.values()))
    assert [a.text for a in off.answers] == [
        q.text for q in SyntheticCorpus(300, seed=7).queries(QUERIES)
    ]
    assert all(len(a.hits) <= 10 for a in off.answers)
    assert any(a.hits for a in off.answers)


def test_the_profile_counts_the_store_calls_of_one_recall(tmp_path: Path) -> None:
    embedder = fivefold.HashingEmbedder()
    config = Config()
    with fivefold.Memory.open(tmp_path / "m.db", embedder=embedder, config=config) as mem:
        mem.remember("Ada Lovelace wrote the first program")
        counted, profile = profiled(mem, config)
        result, cost = costed(lambda: counted.recall("first program", now=NOW), profile)
        assert [h.memory.content for h in result.hits] == ["Ada Lovelace wrote the first program"]
        assert cost.store_calls == sum(cost.calls.values()) > 0
        assert cost.embeds == 1
        assert cost.calls["search.vector_search"] == 1
        assert cost.cpu_ms >= cost.store_cpu_ms >= 0
        # The profile starts empty for the next recall.
        assert profile.take(0.0).store_calls == 0


def test_the_sample_is_ingested_both_ways(report: LatencyReport) -> None:
    assert [i.mode for i in report.sample] == [
        "embedder alone, no store",
        "embedder, all fields given",
        "embedder, text only",
    ]
    assert all(i.memories == 50 and i.per_second > 0 for i in report.sample)


def test_json_holds_every_figure(report: LatencyReport) -> None:
    data = json.loads(report.to_json())
    (result,) = data["results"]
    assert [m["overall"]["count"] for m in result["modes"]] == [QUERIES, QUERIES]
    assert set(result["modes"][0]["by_kind"]) <= {k.value for k in QueryKind}
    assert data["machine"]["embedder"] == "hashing-bow-64"
    assert result["build"]["bulk"]["memories"] == 300


def test_markdown_has_every_section(report: LatencyReport) -> None:
    text = render_markdown(report)
    for section in (
        "Recall latency",
        "Scale",
        "targets",
        "By plan",
        "retrievers",
        "kind",
        "stages",
        "Recall CPU",
        "Store calls",
    ):
        assert section in text
    assert "balanced" in text
    assert "| 300 | off |" in text
    assert "| 300 | cached |" in text


def test_targets_are_judged_against_design(report: LatencyReport) -> None:
    (result,) = report.results
    off, cached = result.modes
    fast = replace(off, overall=replace(off.overall, p99=12.0))
    slow = replace(off, overall=replace(off.overall, p99=80.0))
    results = (
        replace(result, size=100_000, modes=(fast, cached)),
        replace(result, size=1_000_000, modes=(slow,)),
    )
    judged = {t.name: t.met for t in targets(replace(report, results=results))}
    assert judged["recall p99 at 100,000, optimizer off"] is True
    assert judged["recall p99 at 1,000,000, optimizer off"] is False
    assert judged["cache hit at 100,000"] is (cached.repeat.p99 < 1.0)
    assert not any(name.startswith("cache hit at 1,000,000") for name in judged)  # cache off
    unmeasured = {t.name: t.met for t in targets(report)}
    assert unmeasured["recall p99 at 100,000"] is None


@pytest.mark.slow
def test_a_built_store_is_reused_and_a_half_built_one_rebuilt(tmp_path: Path) -> None:
    def run() -> LatencyReport:
        return run_latency(
            [200],
            embedder=fivefold.HashingEmbedder(),
            queries=5,
            warmup=0,
            repeats=0,
            sample=0,
            store_dir=tmp_path,
        )

    first, second = run().results[0], run().results[0]
    assert (first.reused, second.reused) == (False, True)
    assert second.build == first.build
    path = tmp_path / store_name(200, 7, "hashing-bow-64")
    assert read_manifest(path) == first.build
    path.with_name(path.name + ".build.json").unlink()  # as if the build had died
    assert not run().results[0].reused


@pytest.mark.slow
def test_the_hnsw_index_is_built_saved_and_loaded(
    tmp_path: Path, minilm: fivefold.MiniLMEmbedder
) -> None:
    # onnxruntime must be loaded before usearch: the other order segfaults on import (usearch
    # 2.26 / onnxruntime 1.31, a libstdc++ clash), and a later test loads the real model.
    minilm.embed(["load onnxruntime first"])
    config = Config(index=IndexConfig(hnsw_threshold=100))
    result = run_latency(
        [250],
        embedder=fivefold.HashingEmbedder(),
        queries=10,
        warmup=1,
        repeats=0,
        sample=0,
        store_dir=tmp_path,
        config=config,
    ).results[0]
    assert result.build.index_kind == "hnsw"
    assert result.disk_bytes["vindex"] > 0
    # Bag-of-words vectors tie often, and a graph breaks ties in its own order.
    assert result.dense_recall is not None
    assert 0.8 <= result.dense_recall <= 1.0
    assert all(m.identifier_found == m.identifier_total for m in result.modes)


def test_synthetic_vectors_do_not_depend_on_batching() -> None:
    corpus = SyntheticCorpus(5000, seed=2)
    pool = fivefold.HashingEmbedder().embed([m.content for m in corpus.memories(0, 40)])
    vectors = SyntheticVectors(corpus, pool)
    memories = list(corpus.memories(4090, 4110))  # crosses a noise block
    whole = vectors.rows(memories)
    pieces = np.vstack([vectors.rows(memories[:7]), vectors.rows(memories[7:])])
    assert np.array_equal(whole, pieces)
    assert np.allclose(np.linalg.norm(whole, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors.rows(list(corpus.memories(0, 3))), pool[:3], atol=1e-6)
    # a derived vector stays close to a pool vector of its own template, not a copy of it
    best = (whole @ pool.T).max(axis=1)
    assert np.all(best > 0.7)
    assert np.all(best < 0.999)


@pytest.mark.slow
def test_a_tiny_run_with_the_real_embedder(minilm: fivefold.MiniLMEmbedder) -> None:
    run = run_latency([120], embedder=minilm, queries=12, warmup=2, repeats=2, sample=30)
    (result,) = run.results
    assert run.machine["embedder"] == minilm.name
    for mode in result.modes:
        assert mode.overall.count == 12
        assert _ordered(mode.overall)
    assert result.modes[0].stages["embed"].count == 12
    assert result.build.pool_size == 120


@pytest.mark.slow
def test_the_cli_command_writes_its_report(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        latency,
        [
            "--sizes", "150", "--queries", "8", "--warmup", "1", "--sample", "20",
            "--embedder", "hashing", "--optimizer", "rule",
            "--json", str(tmp_path / "run.json"), "--report", str(out),
        ],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "### Recall latency" in result.output
    assert json.loads((tmp_path / "run.json").read_text())["results"][0]["size"] == 150
    assert (out / "latency.md").read_text().startswith("Run ")
    (written,) = json.loads((out / "latency.json").read_text())["results"]
    assert [m["mode"] for m in written["modes"]] == ["rule"]
    assert written["modes"][0]["overall"]["count"] == 8
    has_matplotlib = importlib.util.find_spec("matplotlib") is not None
    assert (out / "latency.png").is_file() == has_matplotlib


@pytest.mark.parametrize(
    ("option", "value"),
    [("--sizes", "10,abc"), ("--sizes", "0"), ("--sizes", ","), ("--optimizer", "fast")],
)
def test_the_cli_rejects_bad_options(option: str, value: str) -> None:
    result = CliRunner().invoke(latency, [option, value, "--embedder", "hashing"])
    assert result.exit_code == 2
    assert option in result.output


@pytest.mark.slow
def test_plot_writes_a_png(report: LatencyReport, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "latency.png"
    assert plot(report, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_tail_rate_counts_a_partial_last_batch() -> None:
    from fivefold.bench.latency_store import _ingest

    # 2,000 memories in batches of 256: seven full batches and one of 208, a second each.
    ingest = _ingest("sample", 2000, [1.0] * 8, 256)
    assert ingest.per_second == pytest.approx(250.0)
    assert ingest.tail_per_second == pytest.approx(208.0)  # the tail is the last batch alone
    whole = _ingest("bulk", 20, [1.0, 1.0], 10)
    assert whole.tail_per_second == pytest.approx(10.0)


def test_the_cli_times_every_optimizer_mode_by_default() -> None:
    option = next(p for p in latency.params if p.name == "modes")
    assert option.default == "off,rule,cached"


@pytest.mark.slow
def test_a_store_named_by_a_url_is_built_and_timed_there(pg_url: str) -> None:
    result = run_latency(
        [200],
        embedder=fivefold.HashingEmbedder(),
        queries=10,
        warmup=2,
        repeats=2,
        sample=0,
        db=pg_url,
        modes=[OptimizerMode.RULE],
    ).results[0]
    assert result.memories == 200
    assert result.store.startswith("postgresql://")
    assert result.dense_recall is None
    assert result.disk_bytes["total"] > 0
    assert result.modes[0].overall.count == 10


def test_a_store_without_the_embedded_parts_shows_its_total_alone() -> None:
    from fivefold.bench.latency_cli import _disk

    mb = 1024 * 1024
    assert _disk({"total": 3 * mb}) == "3.0"  # a Postgres store: its tables
    shown = _disk({"total": 6 * mb, "db": 4 * mb, "lexical": mb, "vindex": mb})
    assert shown == "6.0 (4.0 + 1.0 + 1.0)"
