"""The reranker a config names (``[rerank]``): a registry keyed by the provider, built when a
memory is opened, so a missing model folder setting or API key is said before a store is."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from types import MappingProxyType

from fivefold.config import RerankConfig, RerankProvider
from fivefold.errors import ConfigError
from fivefold.read.rerank.base import Reranker

__all__ = ["build_reranker"]


def build_reranker(
    config: RerankConfig, *, environ: Mapping[str, str] | None = None
) -> Reranker | None:
    """The configured reranker, or None (the onnx provider without a ``model_path``). The API
    key is read now from the variable ``api_key_env`` names (``environ``, else the process's)."""
    return _BUILDERS[config.provider](config, os.environ if environ is None else environ)


def close_reranker(reranker: Reranker | None) -> None:
    close = getattr(reranker, "close", None)
    if callable(close):
        close()


def _onnx(config: RerankConfig, environ: Mapping[str, str]) -> Reranker | None:
    if config.model_path is None:
        return None
    from fivefold.read.rerank.cross_encoder import OnnxCrossEncoder

    return OnnxCrossEncoder(config.model_path, max_tokens=config.max_tokens)


def _http(config: RerankConfig, environ: Mapping[str, str]) -> Reranker:
    from fivefold.embed.endpoint import api_key_of
    from fivefold.read.rerank.endpoint import HttpReranker

    if config.url is None or config.model is None:
        raise ConfigError('rerank: the "http" provider needs url and model')
    key = api_key_of(environ, config.api_key_env, section="rerank", holder="rerank endpoint's")
    return HttpReranker(
        url=config.url,
        model=config.model,
        api_key=key,
        timeout_s=config.timeout_s,
        retries=config.retries,
    )


_BUILDERS: Mapping[RerankProvider, Callable[[RerankConfig, Mapping[str, str]], Reranker | None]] = (
    MappingProxyType({RerankProvider.ONNX: _onnx, RerankProvider.HTTP: _http})
)
