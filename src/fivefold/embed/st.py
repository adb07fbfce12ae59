"""A local sentence-transformers model folder (``SentenceTransformer.save`` writes one: its
``modules.json``, config and weights), run on the CPU with torch. Only a folder on disk is
read: ``local_files_only``, never a model name looked up on a hub.

The store records the model by a digest of its weights and module list, so two folders holding
the same model are one model, and weights replaced in place are another.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fivefold.embed.base import KnownModel, Vectors, normalize_rows
from fivefold.errors import EmbedderError

__all__ = ["SentenceTransformerEmbedder"]

_WEIGHTS = ("model.safetensors", "pytorch_model.bin")


class SentenceTransformerEmbedder(KnownModel):
    """Batched and thread-safe. The model loads at once: the dimension is read from it, and a
    store must not be made with a dimension the model does not give."""

    def __init__(self, folder: Path, *, batch_size: int = 64, threads: int | None = None) -> None:
        if not (folder / "modules.json").is_file():
            raise EmbedderError(
                f"{folder}: no modules.json (embed.path names a sentence-transformers model's "
                "folder, as SentenceTransformer.save writes it)"
            )
        self._folder = folder
        self._batch_size = batch_size
        self._lock = threading.Lock()
        name = f"sentence-transformers:{folder.name}@sha256:{_digest(folder)}"
        self._model = _load(folder, threads)
        # Renamed in sentence-transformers 6; 5 has the old name only.
        dimension = getattr(self._model, "get_embedding_dimension", None)
        dim = (dimension or self._model.get_sentence_embedding_dimension)()
        if not isinstance(dim, int) or dim < 2:
            raise EmbedderError(f"{folder}: the model gives no fixed dimension ({dim!r})")
        super().__init__(name, dim)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(
                list(texts),
                batch_size=self._batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        out = np.asarray(vectors, dtype=np.float32)
        if out.shape != (len(texts), self._dim):
            raise EmbedderError(f"{self._folder}: gave vectors of shape {out.shape}")
        return normalize_rows(out)


def _load(folder: Path, threads: int | None) -> Any:
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbedderError(
            'the "sentence-transformers" provider needs the st extra: pip install "fivefold[st]"'
        ) from exc
    if threads is not None:
        # Process-wide in torch: a server's bound holds for every torch model in the process.
        torch.set_num_threads(threads)
    try:
        return SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    except Exception as exc:
        raise EmbedderError(
            f"could not load the sentence-transformers model in {folder}: {exc}"
        ) from exc


def _digest(folder: Path) -> str:
    """Of the weights and the module list: what decides the vectors a folder gives."""
    weights = next((folder / n for n in _WEIGHTS if (folder / n).is_file()), None)
    if weights is None:
        raise EmbedderError(f"{folder}: no {' or '.join(_WEIGHTS)}")
    modules = (folder / "modules.json").read_bytes()
    with weights.open("rb") as handle:
        return hashlib.file_digest(handle, lambda: hashlib.sha256(modules)).hexdigest()[:16]
