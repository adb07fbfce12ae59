"""The embedder a config names (``[embed]``), built the same way by every entry point:
``Memory.open``, the CLI and ``fivefold serve``. A registry keyed by the provider."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from fivefold.config import EmbedConfig, EmbedProvider
from fivefold.embed.base import Budget, Embedder
from fivefold.errors import ConfigError

__all__ = ["build_embedder"]


def build_embedder(
    config: EmbedConfig,
    *,
    threads: int | None = None,
    environ: Mapping[str, str] | None = None,
    budget: Budget | None = None,
) -> Embedder:
    """The configured embedder; ``threads`` bounds a local model's intra-op threads and
    ``budget`` the word pieces its batches run at once (the openai provider's work is not
    this process's). The API key is read now from the variable ``api_key_env`` names
    (``environ``, else the process's): the library reads no other setting from the
    environment."""
    local = _Local(threads, budget)
    return _BUILDERS[config.provider](config, local, os.environ if environ is None else environ)


@dataclass(frozen=True, slots=True)
class _Local:
    threads: int | None
    budget: Budget | None


def _minilm(config: EmbedConfig, local: _Local, environ: Mapping[str, str]) -> Embedder:
    from fivefold.embed.minilm import MiniLMEmbedder

    return MiniLMEmbedder(threads=local.threads, budget=local.budget)


def _onnx(config: EmbedConfig, local: _Local, environ: Mapping[str, str]) -> Embedder:
    from fivefold.embed.onnx import OnnxEmbedder

    if config.path is None:
        raise ConfigError('embed.path: the "onnx" provider needs the model\'s folder')
    return OnnxEmbedder(
        Path(config.path).expanduser(),
        pooling=config.pooling,
        max_tokens=config.max_tokens,
        batch_size=config.batch_size,
        threads=local.threads,
        budget=local.budget,
    )


def _openai(config: EmbedConfig, local: _Local, environ: Mapping[str, str]) -> Embedder:
    from fivefold.embed.endpoint import api_key_of
    from fivefold.embed.openai import OpenAIEmbedder

    if config.url is None or config.model is None or config.dim < 2:
        raise ConfigError('embed: the "openai" provider needs url, model and dim')
    key = api_key_of(environ, config.api_key_env, section="embed", holder="endpoint's")
    return OpenAIEmbedder(
        url=config.url,
        model=config.model,
        dim=config.dim,
        api_key=key,
        batch_size=config.batch_size,
        timeout_s=config.timeout_s,
        retries=config.retries,
    )


def _sentence_transformers(
    config: EmbedConfig, local: _Local, environ: Mapping[str, str]
) -> Embedder:
    from fivefold.embed.st import SentenceTransformerEmbedder

    if config.path is None:
        raise ConfigError(
            'embed.path: the "sentence-transformers" provider needs the model\'s folder'
        )
    return SentenceTransformerEmbedder(
        Path(config.path).expanduser(), batch_size=config.batch_size, threads=local.threads
    )


_BUILDERS: Mapping[EmbedProvider, Callable[[EmbedConfig, _Local, Mapping[str, str]], Embedder]] = (
    MappingProxyType(
        {
            EmbedProvider.MINILM: _minilm,
            EmbedProvider.ONNX: _onnx,
            EmbedProvider.OPENAI: _openai,
            EmbedProvider.SENTENCE_TRANSFORMERS: _sentence_transformers,
        }
    )
)
