"""The TOML config file: defaults, every section, every validation error, the round trip, and a
per-namespace temporal window that a recall really uses."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import fields, is_dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import fivefold
from fivefold.config import (
    CacheConfig,
    Config,
    FusionConfig,
    OptimizerConfig,
    RerankConfig,
    RetrievalConfig,
    RewriteConfig,
    TemporalConfig,
)
from fivefold.config import file as config_file
from fivefold.config.file import config_from_toml, config_to_toml, load_config
from fivefold.errors import ConfigError
from fivefold.types import Budget, OptimizerMode, RetrieverName


def load_text(tmp_path: Path, text: str) -> Config:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        config_from_toml(text, source="my.toml")
    return str(caught.value)


# -- defaults and every section --------------------------------------------------------------------
def test_an_empty_file_is_the_built_in_defaults(tmp_path: Path) -> None:
    assert load_text(tmp_path, "") == Config()
    assert load_text(tmp_path, "# only a comment\n") == Config()


def test_the_default_dump_is_the_seed_defaults() -> None:
    text = config_to_toml(Config())
    assert 'mode = "learned"' in text
    assert "precise_threshold = 0.8" in text
    assert "exploratory_threshold = 0.4" in text
    assert "entity_confidence_min = 0.85" in text
    assert "ttl_seconds = 30.0" in text
    assert "max_entries = 1000" in text
    assert "k = 60" in text
    assert 'model_path = ""' in text


SECTIONS: list[tuple[str, Callable[[Config], object], object]] = [
    ("[temporal]\nrecent_days = 7", lambda c: c.temporal.recent_days, 7),
    ("[lexical]\npredicate_weight = 2.5", lambda c: c.lexical.predicate_weight, 2.5),
    ("[graph]\nhop_scores = [1.0, 0.5]", lambda c: c.graph.hop_scores, (1.0, 0.5)),
    ("[graph]\nmax_hops = 1", lambda c: c.graph.max_hops, 1),
    ("[fusion]\nk = 10", lambda c: c.fusion.k, 10),
    ("[fusion]\nimportance_floor = 1", lambda c: c.fusion.importance_floor, 1.0),
    ("[fusion]\ngraph_multi_hop_weight = 0.35", lambda c: c.fusion.graph_multi_hop_weight, 0.35),
    (
        "[fusion]\ntemporal_speculative_weight = 0.25",
        lambda c: c.fusion.temporal_speculative_weight,
        0.25,
    ),
    (
        "[fusion.weights]\ngraph = 2",
        lambda c: dict(c.fusion.weights),
        {**FusionConfig().weights, RetrieverName.GRAPH: 2.0},
    ),
    (
        "[retrieval.depth]\nhigh = 400",
        lambda c: dict(c.retrieval.depth),
        {Budget.LOW: 50, Budget.MID: 100, Budget.HIGH: 400},
    ),
    ("[retrieval]\ntype_widen_below = 3", lambda c: c.retrieval.type_widen_below, 3),
    ("[retrieval]\nnegation_threshold = 0.5", lambda c: c.retrieval.negation_threshold, 0.5),
    ("[index]\nhnsw_threshold = 500", lambda c: c.index.hnsw_threshold, 500),
    ('[optimizer]\nmode = "cached"', lambda c: c.optimizer.mode, OptimizerMode.CACHED),
    ('[optimizer]\nmode = "off"', lambda c: c.optimizer.mode, OptimizerMode.OFF),
    ("[optimizer]\nprecise_threshold = 0.9", lambda c: c.optimizer.precise_threshold, 0.9),
    ("[optimizer]\nexploratory_threshold = 0.3", lambda c: c.optimizer.exploratory_threshold, 0.3),
    ("[optimizer]\nentity_confidence_min = 0.7", lambda c: c.optimizer.entity_confidence_min, 0.7),
    ("[optimizer]\nrewrites = true", lambda c: c.optimizer.rewrites, True),
    ("[cache]\nttl_seconds = 0", lambda c: c.cache.ttl_seconds, 0.0),
    ("[cache]\nmax_entries = 10", lambda c: c.cache.max_entries, 10),
    ('[rerank]\nmodel_path = "/models/ce"', lambda c: c.rerank.model_path, "/models/ce"),
    (
        "[rerank]\ndepth = 50\nmax_tokens = 128",
        lambda c: (c.rerank.depth, c.rerank.max_tokens),
        (50, 128),
    ),
    ("[mmr]\nlambda = 0.5", lambda c: c.mmr.lambda_, 0.5),
    ("[rewrite]\ncount = 2", lambda c: c.rewrite.count, 2),
    (
        '[rewrite]\nendpoint = "http://localhost:8080/v1"\nmodel = "llama"',
        lambda c: (c.rewrite.endpoint, c.rewrite.model),
        ("http://localhost:8080/v1", "llama"),
    ),
    ("default_importance = 0.25", lambda c: c.default_importance, 0.25),
]


@pytest.mark.parametrize(("text", "read", "expected"), SECTIONS, ids=[s[0] for s in SECTIONS])
def test_every_section_maps_onto_its_dataclass(
    text: str, read: Callable[[Config], object], expected: object
) -> None:
    config = config_from_toml(text)
    assert read(config) == expected
    assert read(Config()) != expected


def test_an_empty_string_is_an_unset_optional_string() -> None:
    config = config_from_toml('[rerank]\nmodel_path = ""\n[rewrite]\nendpoint = ""\nmodel = ""')
    assert config.rerank.model_path is None
    assert config.rewrite.endpoint is None
    assert config.rewrite.model is None


def test_a_float_setting_written_as_an_integer_is_a_float() -> None:
    config = config_from_toml("[cache]\nttl_seconds = 10")
    assert isinstance(config.cache.ttl_seconds, float)
    assert config.cache.ttl_seconds == 10.0


def test_namespace_windows_inherit_from_the_file_temporal_section() -> None:
    config = config_from_toml(
        "[temporal]\nrecent_days = 7\nfew_months_from_days = 120\n"
        "[temporal.namespaces.work]\nrecent_days = 3\n"
        '[temporal.namespaces."team a"]\nfew_months_to_days = 10\n'
    )
    assert config.temporal == TemporalConfig(7, 120, 30)
    assert config.temporal_for("work") == TemporalConfig(3, 120, 30)
    assert config.temporal_for("team a") == TemporalConfig(7, 120, 10)
    assert config.temporal_for("elsewhere") == config.temporal


def test_a_relative_model_path_is_relative_to_the_file(tmp_path: Path) -> None:
    config = load_text(tmp_path, '[rerank]\nmodel_path = "models/ce"\n')
    assert config.rerank.model_path == str(tmp_path.absolute() / "models" / "ce")
    absolute = load_text(tmp_path, f'[rerank]\nmodel_path = "{tmp_path / "x"}"\n')
    assert absolute.rerank.model_path == str(tmp_path / "x")


# -- validation ------------------------------------------------------------------------------------
ERRORS: list[tuple[str, tuple[str, ...]]] = [
    # syntax, with the line
    ("[optimizer]\nmode = \n", ("not valid TOML", "line 2")),
    ("[optimizer\n", ("not valid TOML", "line 1")),
    ("a = 1\na = 2\n", ("not valid TOML",)),
    # unknown sections and keys, with the closest known one
    ("[optimiser]\nmode = 'rule'", ("unknown key [optimiser]", "did you mean [optimizer]?")),
    (
        "[optimizer]\nprecise_treshold = 0.9",
        ("optimizer.precise_treshold", "did you mean optimizer.precise_threshold?"),
    ),
    (
        "[fusion.weights]\nsemantc = 1.0",
        ("fusion.weights.semantc", "did you mean fusion.weights.semantic?"),
    ),
    (
        "[retrieval.depth]\nmedium = 10",
        ("retrieval.depth.medium", "known in [retrieval.depth]: low, mid, high"),
    ),
    ("colour = 1", ("unknown key colour", "known at the top level")),
    (
        "[temporal.namespaces.work]\nrecent_day = 3",
        (
            "temporal.namespaces.work.recent_day",
            "did you mean temporal.namespaces.work.recent_days?",
        ),
    ),
    # keys of the optimizer's first config layout that live elsewhere now
    ("[cache]\nenabled = true", ("cache.enabled", 'optimizer.mode = "cached"')),
    ("[optimizer.rule]\nprecise_threshold = 0.8", ("optimizer.rule", "directly in [optimizer]")),
    ("[read_pipeline.optimizer]\nmode = 'rule'", ("[read_pipeline]", "[optimizer] and [cache]")),
    # wrong types; a boolean is not a number and a float is not an integer
    (
        '[optimizer]\nprecise_threshold = "high"',
        ("optimizer.precise_threshold", 'got the string "high"', "a number in [0, 1]"),
    ),
    ("[fusion]\nk = true", ("fusion.k", "got the boolean true", "an integer >= 1")),
    ("[fusion]\nk = 60.5", ("fusion.k", "got the number 60.5", "an integer >= 1")),
    ("[optimizer]\nrewrites = 1", ("optimizer.rewrites", "true or false", "got the integer 1")),
    ("[rerank]\nmodel_path = 3", ("rerank.model_path", 'a string ("" for none)')),
    ("optimizer = 3", ("optimizer", "expected a table", "got the integer 3")),
    ("temporal = 'soon'", ("temporal", "expected a table")),
    (
        "[fusion]\nweights = 2.0",
        ("fusion.weights", "a table keyed by semantic, lexical, graph, temporal, type"),
    ),
    ("[graph]\nhop_scores = 1.0", ("graph.hop_scores", "a non-empty array of numbers in [0, 1]")),
    ("[graph]\nhop_scores = []", ("graph.hop_scores", "got an empty array")),
    ("[graph]\nhop_scores = [1.0, 'x']", ("graph.hop_scores[1]", 'got the string "x"')),
    ("[cache]\nttl_seconds = 2024-01-01", ("cache.ttl_seconds", "got a TOML date")),
    ("[temporal]\nnamespaces = 3", ("temporal.namespaces", "a table per namespace")),
    ('[temporal.namespaces." "]\nrecent_days = 3', ('temporal.namespaces." "', "cannot be empty")),
    # out of range
    (
        "[optimizer]\nprecise_threshold = 1.5",
        ("optimizer.precise_threshold", "1.5 is out of range", "in [0, 1]"),
    ),
    ("[optimizer]\nentity_confidence_min = -0.1", ("optimizer.entity_confidence_min", "in [0, 1]")),
    ("[fusion]\nk = 0", ("fusion.k", "0 is out of range", ">= 1")),
    ("[fusion.weights]\nlexical = -1.0", ("fusion.weights.lexical", ">= 0")),
    ("[retrieval.depth]\nlow = 0", ("retrieval.depth.low", ">= 1")),
    ("[cache]\nttl_seconds = -1", ("cache.ttl_seconds", ">= 0")),
    ("[mmr]\nlambda = 1.2", ("mmr.lambda", "in [0, 1]")),
    ("[optimizer]\nquantum = 0.0", ("optimizer.quantum", "in (0, 1]")),
    ("[rewrite]\ntimeout_seconds = 0", ("rewrite.timeout_seconds", "> 0")),
    ("default_importance = nan", ("default_importance", "not a finite number")),
    ("[fusion]\nimportance_floor = inf", ("fusion.importance_floor", "not a finite number")),
    (
        "[temporal.namespaces.work]\nrecent_days = 0",
        ("temporal.namespaces.work.recent_days", ">= 1"),
    ),
    # between keys
    (
        "[optimizer]\nexploratory_threshold = 0.9",
        ("optimizer.exploratory_threshold", "above optimizer.precise_threshold (0.8)"),
    ),
    (
        "[temporal]\nfew_months_to_days = 90",
        ("temporal.few_months_to_days", "below few_months_from_days"),
    ),
    ("[graph]\nmulti_hop_max_hops = 1", ("graph.multi_hop_max_hops", "below graph.max_hops (2)")),
    ('[rewrite]\nendpoint = "localhost:8080"', ("rewrite.endpoint", "http:// or https://")),
    # enums
    (
        '[optimizer]\nmode = "telepathic"',
        ("optimizer.mode", '"telepathic" is not accepted', '"rule", "cached", "off", "learned"'),
    ),
    ("[optimizer]\nmode = 1", ("optimizer.mode", "the integer 1 is not accepted")),
    # the one secret
    ('[rewrite]\napi_key = "sk-123"', ("rewrite.api_key", "FIVEFOLD_LLM_API_KEY")),
]


@pytest.mark.parametrize(("text", "parts"), ERRORS, ids=[e[0] for e in ERRORS])
def test_invalid_files_are_one_clear_line(text: str, parts: tuple[str, ...]) -> None:
    message = error_of(text)
    assert message.startswith("my.toml: ")
    assert "\n" not in message
    for part in parts:
        assert part in message


def test_an_api_key_in_the_file_is_not_echoed() -> None:
    assert "sk-123" not in error_of('[rewrite]\napi_key = "sk-123"')


def _numeric_keys() -> list[tuple[str, str]]:
    """(section, TOML line) for every number in the config, written far out of range."""
    out = [("", "default_importance = -1000000")]
    for section in fields(Config):
        value = getattr(Config(), section.name)
        if not is_dataclass(value):
            continue
        for setting in fields(value):
            current, name = getattr(value, setting.name), setting.name.rstrip("_")
            if isinstance(current, Mapping):
                out.append((f"{section.name}.{name}", f"{next(iter(current))} = -1000000"))
            elif isinstance(current, tuple):
                out.append((section.name, f"{name} = [-1000000]"))
            elif isinstance(current, int | float) and not isinstance(current, bool):
                out.append((section.name, f"{name} = -1000000"))
    return out


@pytest.mark.parametrize(("section", "line"), _numeric_keys())
def test_every_number_has_a_range(section: str, line: str) -> None:
    header = f"[{section}]\n" if section else ""
    assert "is out of range" in error_of(header + line)


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match=r"nope\.toml: no such config file"):
        load_config(missing)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"mode = '\xff'\n")
    with pytest.raises(ConfigError, match=r"binary\.toml: not UTF-8"):
        load_config(binary)
    broken = tmp_path / "broken.toml"
    broken.write_text("[fusion]\nk = 60\nk = 61\n")
    with pytest.raises(ConfigError, match=r"broken\.toml: not valid TOML: .*line 3"):
        load_config(broken)
    with pytest.raises(ConfigError, match="cannot read the config file: Is a directory"):
        load_config(tmp_path)


def test_config_in_effect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    default = tmp_path / "user" / "config.toml"
    monkeypatch.setattr(config_file, "default_config_path", lambda: default)
    assert config_file.config_in_effect(None) is None
    default.parent.mkdir()
    default.write_text("")
    assert config_file.config_in_effect(None) == default
    given = tmp_path / "given.toml"
    with pytest.raises(ConfigError, match=r"given\.toml: no such config file"):
        config_file.config_in_effect(given)
    given.write_text("")
    assert config_file.config_in_effect(given) == given


# -- the round trip --------------------------------------------------------------------------------
MODIFIED = [
    Config(),
    Config(optimizer=OptimizerConfig(mode=OptimizerMode.CACHED, precise_threshold=0.9)),
    Config(
        fusion=FusionConfig(
            k=20,
            weights=MappingProxyType(
                {**FusionConfig().weights, RetrieverName.SEMANTIC: 1.5, RetrieverName.GRAPH: 0.35}
            ),
        ),
        retrieval=RetrievalConfig(
            depth=MappingProxyType({Budget.LOW: 7, Budget.MID: 8, Budget.HIGH: 9})
        ),
    ),
    Config(
        temporal=TemporalConfig(recent_days=7),
        namespace_temporal=MappingProxyType(
            {"work": TemporalConfig(recent_days=3), 'odd "name"\t': TemporalConfig(60, 400, 100)}
        ),
    ),
    Config(
        rerank=RerankConfig(model_path="/opt/models/ms-marco", depth=20),
        rewrite=RewriteConfig(endpoint="https://llm.example/v1", model="small"),
        cache=CacheConfig(ttl_seconds=0.5, max_entries=0),
        default_importance=0.0,
    ),
]


@pytest.mark.parametrize("config", MODIFIED)
def test_load_of_dump_is_the_same_config(config: Config, tmp_path: Path) -> None:
    assert config_from_toml(config_to_toml(config)) == config
    assert load_text(tmp_path, config_to_toml(config)) == config


def test_the_dump_never_holds_the_api_key() -> None:
    config = Config(rewrite=RewriteConfig(endpoint="https://llm.example/v1", api_key="sk-secret"))
    text = config_to_toml(config)
    assert "sk-secret" not in text
    # embed.api_key_env names a variable, never holds a key
    assert not re.search(r"^api_key\s*=", text, re.MULTILINE)
    assert config_from_toml(text) == replace(config, rewrite=replace(config.rewrite, api_key=None))


unit = st.floats(0.0, 1.0, allow_nan=False)
names = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12).filter(
    lambda name: bool(name.strip())
)


@st.composite
def configs(draw: Any) -> Config:
    low, high = sorted((draw(unit), draw(unit)))
    # Complete tables, as the loader builds them (a key left out of a file keeps its default).
    weights = draw(st.fixed_dictionaries({r: st.floats(0.0, 10.0) for r in RetrieverName}))
    windows = draw(
        st.dictionaries(
            names,
            st.builds(
                TemporalConfig,
                recent_days=st.integers(1, 400),
                few_months_from_days=st.integers(200, 400),
                few_months_to_days=st.integers(0, 199),
            ),
            max_size=3,
        )
    )
    return Config(
        namespace_temporal=MappingProxyType(windows),
        fusion=FusionConfig(k=draw(st.integers(1, 10**6)), weights=MappingProxyType(weights)),
        optimizer=OptimizerConfig(
            mode=draw(st.sampled_from(list(OptimizerMode))),
            precise_threshold=high,
            exploratory_threshold=low,
        ),
        cache=CacheConfig(ttl_seconds=draw(st.floats(0.0, 1e9)), max_entries=draw(st.integers(0))),
        rerank=RerankConfig(model_path=draw(st.none() | names)),
        default_importance=draw(unit),
    )


@pytest.mark.slow
@given(configs())
def test_round_trip_property(config: Config) -> None:
    assert config_from_toml(config_to_toml(config)) == config


# -- a namespace window that a recall really uses --------------------------------------------------
def test_a_namespace_override_changes_what_recently_means(tmp_path: Path) -> None:
    config = load_text(
        tmp_path, "[temporal]\nrecent_days = 7\n[temporal.namespaces.long]\nrecent_days = 30\n"
    )
    now = datetime(2026, 3, 20, 17, 0, tzinfo=UTC)
    with fivefold.Memory.open(
        ":memory:", embedder=fivefold.HashingEmbedder(), config=config
    ) as mem:
        for namespace in ("short", "long"):
            mem.remember(
                "Deployed the billing service to production",
                type="event",
                event_at=now - timedelta(days=20),
                namespace=namespace,
            )
        short = mem.recall("what did I deploy recently?", namespace="short", now=now)
        long = mem.recall("what did I deploy recently?", namespace="long", now=now)
    assert short.query.temporal_window is not None
    assert long.query.temporal_window is not None
    assert short.query.temporal_window.start == now - timedelta(days=7)
    assert long.query.temporal_window.start == now - timedelta(days=30)
    assert all("temporal" not in hit.sources for hit in short.hits)
    assert "temporal" in long.hits[0].sources


def test_the_docs_example_is_a_valid_file() -> None:
    guide = Path(__file__).resolve().parents[2] / "docs" / "guides" / "configuration.md"
    example = re.search(r"# Configuration.*?```toml\n(.*?)```", guide.read_text(), re.DOTALL)
    assert example is not None
    config = config_from_toml(example.group(1), source="configuration.md")
    assert config.optimizer.mode is OptimizerMode.CACHED
    assert config.temporal_for("standup").recent_days == 7
