"""What each setting admits (a type, a range, an enum's values) and the constraints between
settings: checked when a section or a ``Config`` is made, from Python or from a TOML file
(``file.py``), so a value a caller spells as a string (``mode="cached"``) is the enum member it
names and a value no setting admits is refused with the key and what it takes."""

from __future__ import annotations

import math
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass
from enum import StrEnum
from functools import cache
from numbers import Integral, Real
from types import MappingProxyType
from typing import Any

from fivefold.errors import ConfigError

__all__ = [
    "ANY",
    "NAMESPACES",
    "RANGES",
    "InvalidSetting",
    "Range",
    "check_fields",
    "constraint_broken",
    "describe_kind",
    "expected",
    "provider_broken",
    "quote",
    "stored_scalar",
    "toml_key",
]

# Per-namespace fuzzy windows live in [temporal.namespaces.<name>], next to the global ones.
NAMESPACES = "namespaces"


class InvalidSetting(ConfigError):
    """A setting no key admits, found when a ``Config`` (or one of its sections) was made: the
    TOML loader says it again under the file's name."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"config: {key}: {reason}")
        self.key = key
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Range:
    low: float | None = None
    high: float | None = None
    open_low: bool = False

    def admits(self, value: float) -> bool:
        if self.low is not None and (value < self.low or (self.open_low and value == self.low)):
            return False
        return self.high is None or value <= self.high

    def describe(self) -> str:
        if self.low is None:
            return ""
        if self.high is not None:
            return f" in {'(' if self.open_low else '['}{self.low:g}, {self.high:g}]"
        return f" {'>' if self.open_low else '>='} {self.low:g}"


_UNIT = Range(0.0, 1.0)
_NON_NEGATIVE = Range(0.0)
_POSITIVE = Range(0.0, open_low=True)
_ONE_UP = Range(1.0)
# Keyed by the dotted TOML key; per-namespace temporal keys use the "temporal." entries and
# mapping/array entries apply to every value.
RANGES: Mapping[str, Range] = MappingProxyType(
    {
        "temporal.recent_days": _ONE_UP,
        "temporal.few_months_from_days": _ONE_UP,
        "temporal.few_months_to_days": _NON_NEGATIVE,
        "lexical.predicate_weight": _NON_NEGATIVE,
        "lexical.content_weight": _NON_NEGATIVE,
        "lexical.max_term_share": _UNIT,
        "context.window": Range(0.0, 2.0),
        "write.max_entities": _ONE_UP,
        "write.max_comention_entities": _NON_NEGATIVE,
        "context.lexical_weight": _NON_NEGATIVE,
        "context.vector_near": _NON_NEGATIVE,
        "context.vector_far": _NON_NEGATIVE,
        "graph.hop_scores": _UNIT,
        "graph.structural_prior": _UNIT,
        "graph.semantic_prior": _UNIT,
        "graph.lifecycle_prior": _UNIT,
        "graph.expired_freshness": _UNIT,
        "graph.max_hops": _ONE_UP,
        "graph.multi_hop_max_hops": _ONE_UP,
        "graph.ambiguous_below": _UNIT,
        "graph.frontier_cap": _ONE_UP,
        "fusion.k": _ONE_UP,
        "fusion.weights": _NON_NEGATIVE,
        "fusion.graph_multi_hop_weight": _NON_NEGATIVE,
        "fusion.temporal_speculative_weight": _NON_NEGATIVE,
        "fusion.importance_floor": _UNIT,
        "fusion.speaker_boost": _NON_NEGATIVE,
        "fusion.window_boost": _NON_NEGATIVE,
        "retrieval.depth": _ONE_UP,
        "retrieval.type_widen_below": _NON_NEGATIVE,
        "retrieval.negation_threshold": _UNIT,
        "index.hnsw_threshold": _NON_NEGATIVE,
        "index.hnsw_connectivity": Range(2.0),
        "index.hnsw_expansion_add": _ONE_UP,
        "index.hnsw_expansion_search": _ONE_UP,
        "optimizer.precise_threshold": _UNIT,
        "optimizer.exploratory_threshold": _UNIT,
        "optimizer.entity_confidence_min": _UNIT,
        "optimizer.precision_rarity": _UNIT,
        "optimizer.entity_skip_embedding_min": _UNIT,
        "optimizer.entity_anchor_min_specificity": _UNIT,
        "optimizer.entity_graph_weight": _NON_NEGATIVE,
        "optimizer.graph_min_specificity": _UNIT,
        "optimizer.fusion_k": _ONE_UP,
        "optimizer.graph_frontier": _ONE_UP,
        "optimizer.precise_semantic_depth": _ONE_UP,
        # A zero step would divide by zero when features are quantized.
        "optimizer.quantum": Range(0.0, 1.0, open_low=True),
        "cache.ttl_seconds": _NON_NEGATIVE,
        "cache.max_entries": _NON_NEGATIVE,
        "rerank.depth": _ONE_UP,
        "rerank.max_tokens": _ONE_UP,
        "rerank.timeout_s": _POSITIVE,
        "rerank.retries": Range(0.0, 10.0),
        "mmr.lambda": _UNIT,
        "mmr.depth": _ONE_UP,
        "rewrite.count": _NON_NEGATIVE,
        "rewrite.feedback_docs": _ONE_UP,
        "rewrite.terms_per_rewrite": _ONE_UP,
        "rewrite.timeout_seconds": _POSITIVE,
        "default_importance": _UNIT,
        "learned.min_feedback": _ONE_UP,
        "learned.holdout_every": Range(2.0),
        "learned.l2": _NON_NEGATIVE,
        # Zero would train on nothing; a share of 1 lets one user fill a model alone.
        "learned.max_user_share": Range(0.0, 1.0, open_low=True),
        "serve.port": Range(1.0, 65535.0),
        "serve.workers": _ONE_UP,
        "serve.threads": _ONE_UP,
        "serve.max_body_bytes": Range(1024.0),
        "serve.max_k": _ONE_UP,
        "serve.max_batch": _ONE_UP,
        "serve.max_inflight_tokens": _ONE_UP,
        "embed.max_tokens": _ONE_UP,
        "embed.dim": _NON_NEGATIVE,
        "embed.batch_size": _ONE_UP,
        "embed.timeout_s": _POSITIVE,
        "embed.retries": Range(0.0, 10.0),
    }
)
ANY = Range()


# -- a section's fields ----------------------------------------------------------------------------
def check_fields(section: Any, key: str) -> None:
    """Every field of the frozen ``section`` (the ``[key]`` table) checked against its
    annotation and range; a value spelled otherwise than stored (an enum's string, a list for
    a tuple, an integer for a float, a dict for a mapping) is replaced by the stored form."""
    hints = _hints(section.__class__)
    for field in fields(section):
        name = field.name.rstrip("_")
        value = getattr(section, field.name)
        if is_dataclass(hints[field.name]):
            if not isinstance(value, hints[field.name]):
                raise InvalidSetting(
                    name, f"expected {hints[field.name].__name__}, got {describe_kind(value)}"
                )
            continue
        dotted = f"{key}.{name}" if key else name
        stored = _python_value(value, hints[field.name], dotted)
        if stored is not value:
            object.__setattr__(section, field.name, stored)  # still being made: not yet shared


def _python_value(raw: object, hint: Any, key: str) -> object:
    origin = typing.get_origin(hint)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        if not isinstance(raw, tuple | list) or not raw:
            raise InvalidSetting(key, f"expected {expected(hint, key)}, got {describe_kind(raw)}")
        return tuple(stored_scalar(v, item, f"{key}[{i}]", key) for i, v in enumerate(raw))
    if origin is Mapping:
        return _python_table(raw, hint, key)
    return stored_scalar(raw, hint, key, key)


def _python_table(raw: object, hint: Any, key: str) -> Mapping[Any, object]:
    names, item = typing.get_args(hint)
    if not isinstance(raw, Mapping):
        raise InvalidSetting(key, f"expected {expected(hint, key)}, got {describe_kind(raw)}")
    if not (isinstance(names, type) and issubclass(names, StrEnum)):
        return raw if isinstance(raw, MappingProxyType) else MappingProxyType(dict(raw))
    known = [member.value for member in names]
    table: dict[StrEnum, object] = {}
    for name, value in raw.items():
        if name not in known:
            allowed = ", ".join(known)
            raise InvalidSetting(key, f"{describe_kind(name)} is not a key; the keys: {allowed}")
        table[names(name)] = stored_scalar(value, item, f"{key}.{name}", key)
    return MappingProxyType({member: table[member] for member in names if member in table})


def stored_scalar(raw: object, hint: Any, key: str, rule: str) -> object:
    """``raw`` as the setting ``key`` stores it (``rule``: the key its range is under), read
    from a file or given in Python: numbers of numpy or the standard library alike, never a
    boolean for a number, and an integer setting never silently truncated."""
    if hint is int or hint is float:
        if (
            isinstance(raw, bool)
            or not isinstance(raw, Real)
            or (hint is int and not isinstance(raw, Integral))
        ):
            raise InvalidSetting(key, f"expected {expected(hint, rule)}, got {describe_kind(raw)}")
        number = int(raw) if isinstance(raw, Integral) and hint is int else float(raw)
        if not math.isfinite(number):
            raise InvalidSetting(
                key, f"{number} is not a finite number; expected {expected(hint, rule)}"
            )
        if not RANGES.get(rule, ANY).admits(number):
            raise InvalidSetting(
                key, f"{number!r} is out of range; expected {expected(hint, rule)}"
            )
        return raw if type(raw) is hint else number
    if hint is str and isinstance(raw, str) and raw.strip():
        return raw
    if hint is bool and isinstance(raw, bool):
        return raw
    if hint == (str | None) and (raw is None or isinstance(raw, str)):
        return raw or None  # "" is unset, as in a file
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        if isinstance(raw, hint):
            return raw
        if isinstance(raw, str) and raw in {member.value for member in hint}:
            return hint(raw)
        raise InvalidSetting(
            key, f"{describe_kind(raw)} is not accepted; expected {expected(hint, rule)}"
        )
    raise InvalidSetting(key, f"expected {expected(hint, rule)}, got {describe_kind(raw)}")


# -- between settings ------------------------------------------------------------------------------
def constraint_broken(config: Any) -> tuple[str, str] | None:
    """The first constraint between settings of ``config`` (a ``Config``) that it breaks, as
    (key, what is wrong), or None."""
    opt = config.optimizer
    if opt.exploratory_threshold > opt.precise_threshold:
        return (
            "optimizer.exploratory_threshold",
            f"{opt.exploratory_threshold:g} is above optimizer.precise_threshold "
            f"({opt.precise_threshold:g}); it must be at most that",
        )
    windows = [("temporal", config.temporal)]
    windows += [
        (f"temporal.{NAMESPACES}.{toml_key(n)}", t) for n, t in config.namespace_temporal.items()
    ]
    for key, window in windows:
        if window.few_months_to_days >= window.few_months_from_days:
            return (
                f"{key}.few_months_to_days",
                f"{window.few_months_to_days} must be below few_months_from_days "
                f'({window.few_months_from_days}): "a few months ago" runs from '
                "few_months_from_days ago to few_months_to_days ago",
            )
    graph = config.graph
    if graph.multi_hop_max_hops < graph.max_hops:
        return (
            "graph.multi_hop_max_hops",
            f"{graph.multi_hop_max_hops} is below graph.max_hops ({graph.max_hops}); "
            "multi-hop queries may only walk further",
        )
    endpoint = config.rewrite.endpoint
    if endpoint is not None and not re.match(r"https?://", endpoint):
        return "rewrite.endpoint", f"{endpoint!r} is not an http:// or https:// URL"
    return None


# What each provider of a section needs, and takes: a setting of another provider's is refused.
_NEEDS: Mapping[str, Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "embed": MappingProxyType(
            {
                "minilm": (),
                "onnx": ("path",),
                "openai": ("url", "model", "dim"),
                "sentence-transformers": ("path",),
            }
        ),
        "rerank": MappingProxyType({"onnx": (), "http": ("url", "model")}),
    }
)
_TAKES: Mapping[str, Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "embed": MappingProxyType(
            {
                "minilm": (),
                "onnx": ("path", "pooling", "max_tokens", "batch_size"),
                "sentence-transformers": ("path", "batch_size"),
                "openai": (
                    "url",
                    "model",
                    "dim",
                    "api_key_env",
                    "batch_size",
                    "timeout_s",
                    "retries",
                ),
            }
        ),
        "rerank": MappingProxyType(
            {
                "onnx": ("depth", "model_path", "max_tokens"),
                "http": ("depth", "url", "model", "api_key_env", "timeout_s", "retries"),
            }
        ),
    }
)


def provider_broken(section: Any, key: str) -> tuple[str, str] | None:
    """The first rule of its provider that ``section`` (the ``[key]`` table: an
    ``EmbedConfig`` or a ``RerankConfig``) breaks, or None."""
    provider = str(section.provider)
    for name in _NEEDS[key][provider]:
        if not getattr(section, name):
            return f"{key}.{name}", f'the "{provider}" provider needs it'
    for field in fields(section):
        if field.name == "provider" or field.name in _TAKES[key][provider]:
            continue
        if getattr(section, field.name) != field.default:
            return f"{key}.{field.name}", f'not a setting of the "{provider}" provider'
    if section.url is not None and not re.match(r"https?://", section.url):
        return f"{key}.url", f"{section.url!r} is not an http:// or https:// URL"
    variable = section.api_key_env
    if variable is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", variable):
        return (
            f"{key}.api_key_env",
            f"{variable!r} is not the name of an environment variable (the key itself never "
            "goes in this file)",
        )
    return None


# -- how values are said ---------------------------------------------------------------------------
@cache
def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def expected(hint: Any, rule: str) -> str:
    bounds = RANGES.get(rule, ANY).describe()
    origin = typing.get_origin(hint)
    if origin is tuple:
        return f"a non-empty array of numbers{bounds}"
    if origin is Mapping:
        names, item = typing.get_args(hint)
        if not (isinstance(names, type) and issubclass(names, StrEnum)):
            return "a table"
        keys = ", ".join(member.value for member in names)
        return f"a table keyed by {keys} whose values are {expected(item, rule)}s"
    if hint is bool:
        return "true or false"
    if hint is int:
        return f"an integer{bounds}"
    if hint is float:
        return f"a number{bounds}"
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return "one of " + ", ".join(f'"{member.value}"' for member in hint)
    if hint is str:
        return "a non-empty string"
    return 'a string ("" for none)'


def describe_kind(raw: object) -> str:
    if isinstance(raw, bool):
        return f"the boolean {'true' if raw else 'false'}"
    if isinstance(raw, int):
        return f"the integer {raw}"
    if isinstance(raw, float):
        return f"the number {raw!r}"
    if isinstance(raw, str):
        return f"the string {quote(raw)}"
    if isinstance(raw, list | tuple):
        return "an array" if raw else "an empty array"
    if isinstance(raw, dict):
        return "a table"
    return f"a TOML {type(raw).__name__}"  # dates and times


def quote(text: str) -> str:
    escaped = []
    for char in text:
        if char in '"\\':
            escaped.append("\\" + char)
        elif char < " " or char == "\x7f":
            escaped.append(f"\\u{ord(char):04x}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def toml_key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else quote(name)
