"""The embedder protocol, and a deterministic test double shipped with the library (as httpx
ships ``MockTransport``): it needs no model file, so tests of storage and fusion stay fast."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized float32 vectors of a fixed dimension.

    ``name`` identifies model *and* version: a store records it at creation and refuses to be
    opened with another, because cosines across two models are meaningless.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return an array of shape ``(len(texts), dim)``, each row of unit length."""
        ...


class Budget(Protocol):
    """Word pieces shared by concurrent embedding calls: a local model holds a batch's
    (texts times padded length) while it runs, waiting until they are free."""

    def acquire(self, tokens: int) -> None: ...

    def release(self, tokens: int) -> None: ...


class KnownModel:
    """An embedder's identity, fixed when it is made: its model's name and dimension (a
    subclass that learns the dimension from the model it loads sets ``_dim`` then)."""

    def __init__(self, name: str, dim: int) -> None:
        self._name = name
        self._dim = dim

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim


_TOKEN = re.compile(r"\w+", re.UNICODE)


def normalize_rows(vectors: npt.NDArray[np.floating]) -> Vectors:
    """L2-normalize each row; all-zero rows stay zero instead of becoming NaN."""
    out = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    normalized: Vectors = (out / norms).astype(np.float32, copy=False)
    return normalized


class HashingEmbedder(KnownModel):
    """Bag-of-words feature hashing: texts that share words get a positive cosine.

    Not a semantic model; it exists so that tests can exercise the store, the dense index
    and fusion deterministically and without loading ONNX.
    """

    def __init__(self, dim: int = 64) -> None:
        if dim < 2:
            raise ValueError("dim must be at least 2")
        super().__init__(f"hashing-bow-{dim}", dim)

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN.findall(text.lower()):
                digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                sign = 1.0 if value & 1 else -1.0
                out[row, (value >> 1) % self._dim] += sign
        return normalize_rows(out)
