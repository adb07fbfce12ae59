"""Settings made in Python are checked as a file's are: an enum's value given as its string is
the member, and a value no setting admits is refused with the key and what it takes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType

import numpy as np
import pytest

from fivefold import HashingEmbedder, Memory
from fivefold.config import (
    Config,
    ContextConfig,
    FusionConfig,
    GraphConfig,
    IndexConfig,
    MetricsAccess,
    OptimizerConfig,
    RerankConfig,
    RetrievalConfig,
    ServeConfig,
    TemporalConfig,
    WriteConfig,
)
from fivefold.errors import ConfigError
from fivefold.types import Budget, Dedup, OptimizerMode, RetrieverName


def test_an_enum_given_as_its_string_is_the_member() -> None:
    config = Config(optimizer=OptimizerConfig(mode="cached"))  # type: ignore[arg-type]
    assert config.optimizer.mode is OptimizerMode.CACHED
    assert WriteConfig(dedup="off").dedup is Dedup.OFF  # type: ignore[arg-type]
    assert ServeConfig(metrics="open").metrics is MetricsAccess.OPEN  # type: ignore[arg-type]


def test_a_string_mode_takes_effect_in_a_recall() -> None:
    """Compared with ``is OptimizerMode.CACHED``, a mode given as "cached" was ignored: the
    second recall of a query ran again instead of coming from the cache."""
    config = Config(optimizer=OptimizerConfig(mode="cached"))  # type: ignore[arg-type]
    with Memory.open(":memory:", embedder=HashingEmbedder(dim=16), config=config) as memory:
        memory.remember("The Kestrel review moved to Thursday")
        memory.recall("when is the Kestrel review?")
        assert memory.recall("when is the Kestrel review?").cached


def test_values_are_stored_in_their_own_form() -> None:
    graph = GraphConfig(hop_scores=[1, 0.5])  # type: ignore[arg-type]
    assert graph.hop_scores == (1.0, 0.5)
    assert all(type(score) is float for score in graph.hop_scores)
    fusion = FusionConfig(weights={"semantic": 2})  # type: ignore[dict-item]
    assert isinstance(fusion.weights, MappingProxyType)
    assert dict(fusion.weights) == {RetrieverName.SEMANTIC: 2.0}
    depth = RetrievalConfig(depth={Budget.LOW: np.int64(7)})  # type: ignore[dict-item]
    assert depth.depth[Budget.LOW] == 7
    assert type(depth.depth[Budget.LOW]) is int
    assert RerankConfig(model_path="").model_path is None  # as a file's ""
    assert type(ContextConfig(vector_near=1).vector_near) is float
    assert replace(Config(), default_importance=1).default_importance == 1.0


REFUSED: list[tuple[Callable[[], object], tuple[str, ...]]] = [
    (
        lambda: OptimizerConfig(mode="bogus"),  # type: ignore[arg-type]
        ("optimizer.mode", '"bogus" is not accepted', '"rule", "cached", "off", "learned"'),
    ),
    (lambda: OptimizerConfig(mode=None), ("optimizer.mode", "not accepted")),  # type: ignore[arg-type]
    (lambda: IndexConfig(hnsw_threshold=-1), ("index.hnsw_threshold", "out of range", ">= 0")),
    (lambda: IndexConfig(hnsw_threshold=2.5), ("index.hnsw_threshold", "an integer")),  # type: ignore[arg-type]
    (lambda: IndexConfig(hnsw_threshold="10"), ("index.hnsw_threshold", 'the string "10"')),  # type: ignore[arg-type]
    (lambda: WriteConfig(durable=1), ("write.durable", "true or false")),  # type: ignore[arg-type]
    (lambda: WriteConfig(max_entities=True), ("write.max_entities", "the boolean true")),
    (lambda: GraphConfig(hop_scores=()), ("graph.hop_scores", "an empty array")),
    (lambda: GraphConfig(hop_scores=(1.0, 2.0)), ("graph.hop_scores[1]", "in [0, 1]")),
    (lambda: FusionConfig(k=0), ("fusion.k", ">= 1")),
    (
        lambda: FusionConfig(weights={"nope": 1.0}),  # type: ignore[dict-item]
        ("fusion.weights", '"nope" is not a key', "semantic, lexical, graph, temporal, type"),
    ),
    (lambda: FusionConfig(importance_floor=float("nan")), ("fusion.importance_floor", "finite")),
    (lambda: ServeConfig(port=70_000), ("serve.port", "in [1, 65535]")),
    (lambda: ServeConfig(host=" "), ("serve.host", "a non-empty string")),
    (lambda: Config(default_importance="high"), ("default_importance", "in [0, 1]")),  # type: ignore[arg-type]
    (lambda: Config(optimizer="rule"), ("optimizer", "expected OptimizerConfig")),  # type: ignore[arg-type]
    (
        lambda: Config(optimizer=OptimizerConfig(exploratory_threshold=0.9)),
        ("optimizer.exploratory_threshold", "above optimizer.precise_threshold"),
    ),
    (
        lambda: Config(temporal=TemporalConfig(few_months_to_days=90)),
        ("temporal.few_months_to_days", "below few_months_from_days"),
    ),
    (
        lambda: Config(namespace_temporal={"work": 3}),  # type: ignore[dict-item]
        ("temporal.namespaces", "TemporalConfig"),
    ),
]


@pytest.mark.parametrize(("make", "parts"), REFUSED)
def test_a_value_no_setting_admits_is_refused(
    make: Callable[[], object], parts: tuple[str, ...]
) -> None:
    with pytest.raises(ConfigError) as refused:
        make()
    for part in parts:
        assert part in str(refused.value)


def test_a_file_names_itself_for_a_constraint_between_settings() -> None:
    from fivefold.config.file import config_from_toml

    with pytest.raises(ConfigError, match=r"^my\.toml: graph\.multi_hop_max_hops: 1 is below"):
        config_from_toml("[graph]\nmulti_hop_max_hops = 1", source="my.toml")
