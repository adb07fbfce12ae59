"""Vectors a caller gives with its memories, checked and scaled to unit length, and the text the
model embeds for the others."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fivefold.errors import InvalidInput
from fivefold.store.records import NewMemory
from fivefold.write.prepare import given_vector


def embed_text(memory: NewMemory) -> str:
    """A memory's content, with its predicate when the content does not already hold it."""
    if memory.predicate and memory.predicate not in memory.content:
        return f"{memory.content}\n{memory.predicate}"
    return memory.content


def unit_vectors(raws: Sequence[Any], dim: int, positions: Sequence[int]) -> np.ndarray:
    """``unit_vector`` of each, in a few array operations when every one is ``dim`` finite,
    non-zero numbers (a bulk load gives thousands); else one at a time, so the first bad one
    is named. Each row's arithmetic is ``unit_vector``'s, in the same order."""
    vectors: np.ndarray | None
    try:
        vectors = np.array(raws, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):  # Overflow: an int past a float's range
        vectors = None
    if vectors is None or vectors.shape != (len(raws), dim) or not np.all(np.isfinite(vectors)):
        return np.array([unit_vector(r, dim, p) for r, p in zip(raws, positions, strict=True)])
    scales = np.max(np.abs(vectors), axis=1)
    if not np.all(scales > 0.0):
        return np.array([unit_vector(r, dim, p) for r, p in zip(raws, positions, strict=True)])
    scaled = vectors / scales[:, None]
    norms = np.sqrt(np.vecdot(scaled, scaled))  # each row's own dot, as ``unit_vector``'s
    unit: np.ndarray = (scaled / norms[:, None]).astype(np.float32)
    return unit


def unit_vector(raw: Any, dim: int, position: int) -> np.ndarray:
    try:
        vector = given_vector(raw, dim)
    except InvalidInput as exc:
        raise InvalidInput(exc.detail, item=position) from None
    scaled = vector / float(np.max(np.abs(vector)))  # no overflow in the norm of [1e300, ...]
    return (scaled / np.linalg.norm(scaled)).astype(np.float32)
