"""Settings from one TOML file: ``load_config`` maps its sections onto the frozen dataclasses of
``fivefold.config`` and validates every value; ``config_to_toml`` writes the effective settings
back (what ``fivefold config show`` prints), so that ``load(dump(c)) == c``.

Only entry points call this module; the library never reads files or the environment on its own.
The mapping is driven by ``dataclasses.fields`` and the field annotations, so a setting added to
``config.py`` is readable from the file at once; give it a range in ``RANGES`` (a test checks
that every number has one).
"""

from __future__ import annotations

import difflib
import tomllib
import typing
from collections.abc import Mapping
from dataclasses import fields, is_dataclass, replace
from enum import StrEnum
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from fivefold.config import Config, TemporalConfig
from fivefold.config.rules import (
    NAMESPACES,
    InvalidSetting,
    constraint_broken,
    describe_kind,
    expected,
    quote,
    stored_scalar,
    toml_key,
)
from fivefold.errors import ConfigError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    D = TypeVar("D", bound=DataclassInstance)

__all__ = [
    "API_KEY_ENV",
    "FILE_NAME",
    "KEYS",
    "check_config",
    "config_from_toml",
    "config_in_effect",
    "config_to_toml",
    "default_config_path",
    "load_config",
    "settings_in_effect",
]

API_KEY_ENV = "FIVEFOLD_LLM_API_KEY"
FILE_NAME = "config.toml"
# The [[keys]] tables of the server's API keys (hashed), in the same file as the settings.
KEYS = "keys"
_NAMESPACE_FIELD = "namespace_temporal"
# Secrets never live in a file that gets copied, committed and printed by `config show`.
_SECRETS: Mapping[str, str] = MappingProxyType(
    {
        "rewrite.api_key": f"an API key never goes in this file; set {API_KEY_ENV} instead",
        "embed.api_key": "an API key never goes in this file; name the environment variable "
        "that holds it with embed.api_key_env",
        "rerank.api_key": "an API key never goes in this file; name the environment variable "
        "that holds it with rerank.api_key_env",
    }
)
# Keys of the YAML read_pipeline layout that this file spells differently: say where they went.
_MOVED: Mapping[str, str] = MappingProxyType(
    {
        "optimizer.rule": "the rule thresholds sit directly in [optimizer]",
        "optimizer.cache": "the cache settings are the [cache] section",
        "optimizer.learned": 'the learned optimizer is optimizer.mode = "learned"; its '
        "training settings are the [learned] section",
        "cache.enabled": 'the cache is switched on by optimizer.mode = "cached"',
        "cache.normalize_casing": "queries are always lowercased for the cache key",
        "cache.normalize_punctuation": "punctuation is always stripped for the cache key",
        "read_pipeline": "a read_pipeline block maps onto [optimizer] and [cache]",
    }
)


_COMMENTS: Mapping[str, str] = MappingProxyType(
    {
        "temporal": 'Fuzzy windows in days: "recently"/"lately", "a few months ago".',
        "lexical": "BM25 column weights: a predicate term counts 4x a content term (content:"
        " with context on, own-text matches only; the window stands for it in the leg).",
        "write": "Bounds on one write: names linked per memory, names joined by co-mentions;\n"
        "durable = false: a power cut can lose the last writes (SQLite), bulk loads run faster.",
        "context": "Session neighbours in BM25 (the window's weight) and the searched embedding.",
        "graph": "Hop scores for 0..3 hops, edge priors, freshness of expired lifecycle edges.",
        "fusion": "Score-weighted RRF: w * sqrt(c) / (k + rank), then the importance prior and"
        " the speaker and time-window boosts.",
        "retrieval": "Candidates per retriever by budget; the type filter widens below this.",
        "index": "Exact search below hnsw_threshold vectors per namespace, HNSW above.",
        "optimizer": 'mode: "rule" (plan per query), "cached" (rule + result cache), '
        '"off" (balanced plan), "learned" (a model trained on feedback ranks; rules without one).',
        "learned": "fivefold train: feedback needed, held-out parts, ridge penalty; scope:\n"
        '"namespace" (one model, checked on users it was not fit on) or "user" (one per user);'
        "\nmax_user_share: the most of a namespace model's recalls one user may give.",
        "cache": 'Result cache, used when optimizer.mode = "cached"; 0 disables.',
        "rerank": 'provider: "onnx" (model_path = a cross-encoder folder, ONNX + tokenizer.json;'
        ' "" = no rerank),\n"http" (url, model: POST {url}/rerank, Cohere or Jina style; the key'
        " comes from the variable named by api_key_env).",
        "mmr": "Diversity: lambda * relevance - (1 - lambda) * redundancy.",
        "rewrite": 'Query rewrites; endpoint "" = offline feedback rewrites.\n'
        f"The API key comes from the environment variable {API_KEY_ENV}, never from this file.",
        "serve": "fivefold serve: address, worker processes, per-request limits.\n"
        "API keys are [[keys]] tables, managed with `fivefold keys` (never printed here).",
        "embed": 'provider: "minilm" (packaged, offline), "onnx" (path = a folder with a model'
        ' and tokenizer.json),\n"openai" (url, model, dim: POST {url}/embeddings; the key comes'
        ' from the variable named by api_key_env),\n"sentence-transformers" (path = a saved'
        " sentence-transformers folder; the st extra).\nA store keeps the model it was built"
        " with; `fivefold reembed` moves it to another.",
    }
)


# -- where the file is -----------------------------------------------------------------------------
def default_config_path() -> Path:
    """``config.toml`` in the user's config directory (it need not exist)."""
    from platformdirs import user_config_path

    return user_config_path("fivefold", appauthor=False) / FILE_NAME


def config_in_effect(given: Path | None) -> Path | None:
    """The file an entry point should load: the one given (which must exist), else the default
    file if it exists, else ``None`` for the built-in defaults."""
    if given is not None:
        if given.is_dir():
            raise ConfigError(f"{given}: a directory, not a config file")
        if not given.is_file():
            raise ConfigError(f"{given}: no such config file")
        return given
    default = default_config_path()
    return default if default.is_file() else None


def settings_in_effect(given: Path | None) -> Config:
    """What an entry point runs with: the file in effect (or the defaults) plus the rewrite
    API key from the environment, the one secret, which never lives in the file."""
    import os

    path = config_in_effect(given)
    config = Config() if path is None else load_config(path)
    if api_key := os.environ.get(API_KEY_ENV):
        config = replace(config, rewrite=replace(config.rewrite, api_key=api_key))
    return config


# -- reading ---------------------------------------------------------------------------------------
def load_config(path: Path) -> Config:
    """Read and validate one TOML file. A relative ``rerank.model_path`` is taken relative to
    the file's directory, so a config can travel with its model."""
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: no such config file") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    config = _build(document, str(path))
    model = config.rerank.model_path
    if model is not None and not Path(model).expanduser().is_absolute():
        model = str(path.parent.absolute() / model)
        config = replace(config, rerank=replace(config.rerank, model_path=model))
    folder = config.embed.path
    if folder is not None and not Path(folder).expanduser().is_absolute():
        folder = str(path.parent.absolute() / folder)
        config = replace(config, embed=replace(config.embed, path=folder))
    return config


def config_from_toml(text: str, *, source: str = "<string>") -> Config:
    """Parse and validate TOML text; ``source`` names it in error messages."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from exc
    return _build(document, source)


def _build(document: Mapping[str, Any], source: str) -> Config:
    base = Config()
    hints = _hints(Config)
    changes: dict[str, Any] = {}
    for key, raw in document.items():
        if key == KEYS:
            continue  # the server's API keys: fivefold.serve.keys reads and checks them
        if key == "temporal":
            changes["temporal"], changes[_NAMESPACE_FIELD] = _temporal(raw, source)
        elif key in _file_fields(Config):
            name = _file_fields(Config)[key]
            current = getattr(base, name)
            if is_dataclass(hints[name]):
                changes[name] = _section(current, raw, key, key, source)
            else:
                changes[name] = _value(raw, hints[name], current, key, key, source)
        else:
            known = list(_file_fields(Config))
            table = isinstance(raw, dict)
            raise _unknown(source, "", key, known, table=table, moved=_MOVED.get(key))
    try:
        config = replace(base, **changes)
    except InvalidSetting as exc:  # between settings: each one was checked as it was read
        raise _error(source, exc.key, exc.reason) from None
    return config


def _temporal(raw: object, source: str) -> tuple[TemporalConfig, Mapping[str, TemporalConfig]]:
    if not isinstance(raw, dict):
        raise _error(source, "temporal", f"expected a table ([temporal]), got {describe_kind(raw)}")
    table = dict(raw)
    namespaces = table.pop(NAMESPACES, {})
    overall = _section(TemporalConfig(), table, "temporal", "temporal", source)
    key = f"temporal.{NAMESPACES}"
    if not isinstance(namespaces, dict):
        raise _error(
            source, key, f"expected a table per namespace, got {describe_kind(namespaces)}"
        )
    per_namespace: dict[str, TemporalConfig] = {}
    for name, sub in namespaces.items():
        where = f"{key}.{toml_key(name)}"
        if not name.strip():
            raise _error(source, where, "a namespace name cannot be empty")
        # A namespace inherits what it does not override from [temporal], not from the defaults.
        per_namespace[name] = _section(overall, sub, where, "temporal", source)
    return overall, MappingProxyType(per_namespace)


def _section(default: D, raw: object, key: str, rule: str, source: str) -> D:
    if not isinstance(raw, dict):
        raise _error(source, key, f"expected a table ([{key}]), got {describe_kind(raw)}")
    hints = _hints(type(default))
    names = _file_fields(type(default))
    changes: dict[str, Any] = {}
    for name, value in raw.items():
        dotted, rule_key = f"{key}.{toml_key(name)}", f"{rule}.{name}"
        if rule_key in _SECRETS:
            raise _error(source, dotted, _SECRETS[rule_key])
        if name not in names:
            raise _unknown(source, key, name, list(names), moved=_MOVED.get(rule_key))
        field = names[name]
        changes[field] = _value(
            value, hints[field], getattr(default, field), dotted, rule_key, source
        )
    return replace(default, **changes)


def _value(raw: object, hint: Any, current: object, key: str, rule: str, source: str) -> object:
    origin = typing.get_origin(hint)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        if not isinstance(raw, list) or not raw:
            raise _error(source, key, f"expected {expected(hint, rule)}, got {describe_kind(raw)}")
        return tuple(_scalar(v, item, f"{key}[{i}]", rule, source) for i, v in enumerate(raw))
    if origin is Mapping:
        return _enum_table(raw, hint, current, key, rule, source)
    return _scalar(raw, hint, key, rule, source)


def _enum_table(
    raw: object, hint: Any, current: object, key: str, rule: str, source: str
) -> Mapping[StrEnum, object]:
    """A table keyed by an enum's values (``[fusion.weights]``, ``[retrieval.depth]``); keys
    left out keep their current value."""
    names, item = typing.get_args(hint)
    if not isinstance(raw, dict):
        raise _error(source, key, f"expected {expected(hint, rule)}, got {describe_kind(raw)}")
    known = [member.value for member in names]
    merged: dict[StrEnum, object] = dict(current) if isinstance(current, Mapping) else {}
    for name, value in raw.items():
        if name not in known:
            raise _unknown(source, key, name, known)
        merged[names(name)] = _scalar(value, item, f"{key}.{name}", rule, source)
    return MappingProxyType({member: merged[member] for member in names if member in merged})


def _scalar(raw: object, hint: Any, key: str, rule: str, source: str) -> object:
    try:
        return stored_scalar(raw, hint, key, rule)
    except InvalidSetting as exc:
        raise _error(source, exc.key, exc.reason) from None


# -- checks across keys ----------------------------------------------------------------------------
def check_config(config: Config, *, source: str = "config") -> None:
    """Constraints between settings, which no single range can state (a ``Config`` is checked
    against them when made; this says so again under ``source``)."""
    broken = constraint_broken(config)
    if broken is not None:
        raise _error(source, *broken)


# -- writing ---------------------------------------------------------------------------------------
def config_to_toml(config: Config) -> str:
    """Every setting as TOML, defaults included; an unset optional string is ``""``. Secrets
    (the rewrite API key) are never written. ``load(dump(c)) == c`` for every config whose enum
    tables (weights, depths) are complete, as every loaded config's are."""
    lines = ["# fivefold settings; `fivefold config show --defaults` prints the built-in ones."]
    tables: list[str] = []
    for field in fields(Config):
        value = getattr(config, field.name)
        if field.name == _NAMESPACE_FIELD:
            continue
        if not is_dataclass(value):
            lines.append(f"{toml_key(_toml_name(field.name))} = {_format(value)}")
            continue
        comment = [f"# {line}" for line in _COMMENTS[field.name].splitlines()]
        tables += ["", *comment, f"[{field.name}]"]
        tables += _dump_table(field.name, value)
        if field.name == "temporal":
            for name, window in config.namespace_temporal.items():
                where = f"temporal.{NAMESPACES}.{toml_key(name)}"
                tables += ["", f"[{where}]", *_dump_table("temporal", window)]
    return "\n".join(lines + tables) + "\n"


def _dump_table(key: str, section: Any) -> list[str]:
    scalars: list[str] = []
    tables: list[str] = []
    for field in fields(section):
        name = _toml_name(field.name)
        if f"{key}.{name}" in _SECRETS:
            continue
        value = getattr(section, field.name)
        if isinstance(value, Mapping):
            tables += ["", f"[{key}.{name}]"]
            tables += [f"{toml_key(str(k))} = {_format(v)}" for k, v in value.items()]
        else:
            scalars.append(f"{name} = {_format(value)}")
    return scalars + tables


def _format(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return '""'
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_format(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


# -- helpers ---------------------------------------------------------------------------------------
@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@cache
def _file_fields(cls: type) -> dict[str, str]:
    """TOML key -> field name (``lambda`` for ``lambda_``), without the fields spelled
    elsewhere (``temporal.namespaces``)."""
    return {_toml_name(f.name): f.name for f in fields(cls) if f.name != _NAMESPACE_FIELD}


def _toml_name(field_name: str) -> str:
    return field_name.rstrip("_")


def _error(source: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"{source}: {key}: {message}")


def _unknown(
    source: str,
    prefix: str,
    name: str,
    known: list[str],
    *,
    table: bool = False,
    moved: str | None = None,
) -> ConfigError:
    """Name the unknown key, the closest known one (a typo is the usual cause) and them all.
    Top-level tables are spelled as TOML writes them: ``[optimizer]``."""
    dotted = f"{prefix}.{toml_key(name)}" if prefix else f"[{name}]" if table else toml_key(name)
    close = difflib.get_close_matches(name, known, n=1)
    if moved or not close:
        advice = f"; {moved}" if moved else ""
    elif prefix:
        advice = f"; did you mean {prefix}.{close[0]}?"
    else:
        section = is_dataclass(_hints(Config).get(_file_fields(Config)[close[0]]))
        advice = f"; did you mean {f'[{close[0]}]' if section else close[0]}?"
    where = f"in [{prefix}]" if prefix else "at the top level"
    return ConfigError(
        f"{source}: unknown key {dotted}{advice} (known {where}: {', '.join(known)})"
    )
