"""Embedders: the ``Embedder`` protocol, the default int8 MiniLM, and a hashing test double."""

from fivefold.embed.base import Embedder, HashingEmbedder
from fivefold.embed.minilm import MiniLMEmbedder

__all__ = ["Embedder", "HashingEmbedder", "MiniLMEmbedder"]
