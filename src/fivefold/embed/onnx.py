"""A local ONNX embedding model: a folder with a ``*.onnx`` file and the model's
``tokenizer.json`` (a sentence-transformers export, for one), run offline with onnxruntime.

The store records the model by a digest of its file, so two folders holding the same model are
one model, and a model file replaced in place is another.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fivefold.config import Pooling
from fivefold.embed.base import Budget, KnownModel, Vectors, normalize_rows
from fivefold.embed.minilm import (
    MODEL_NAME,
    Released,
    by_length,
    load_session,
    packaged_model_file,
    run_within,
)
from fivefold.errors import EmbedderError

__all__ = ["OnnxEmbedder", "model_file", "same_model"]


class OnnxEmbedder(KnownModel):
    """Batched and thread-safe. The session loads at once: the dimension is read from the
    model, and a store must not be made with a dimension the model does not give."""

    def __init__(
        self,
        folder: Path,
        *,
        pooling: Pooling = Pooling.MEAN,
        max_tokens: int = 256,
        batch_size: int = 64,
        threads: int | None = None,
        budget: Budget | None = None,
    ) -> None:
        self._model = model_file(folder)
        self._tokenizer_file = folder / "tokenizer.json"
        if not self._tokenizer_file.is_file():
            raise EmbedderError(f"{folder}: no tokenizer.json beside the model")
        self._pooling = pooling
        self._max_tokens = max_tokens
        self._batch_size = batch_size
        self._threads = threads
        self._budget = budget
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: frozenset[str] = frozenset()
        # The dimension is the model's, read when it loads.
        super().__init__(f"onnx:{folder.name}@sha256:{_digest(self._model)}:{pooling.value}", 0)
        self._ensure_loaded()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        self._ensure_loaded()
        return by_length(texts, self._dim, self._batch_size, self._run)

    def _ensure_loaded(self) -> None:
        with self._lock:
            if self._session is None:
                self._load()

    def _load(self) -> None:
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(self._tokenizer_file))
        except Exception as exc:
            raise EmbedderError(f"could not read {self._tokenizer_file}: {exc}") from exc
        padding = tokenizer.padding or {}
        tokenizer.enable_truncation(self._max_tokens)
        # Padded to the longest text of each batch, whatever fixed length the export chose.
        tokenizer.enable_padding(
            pad_id=padding.get("pad_id", 0), pad_token=padding.get("pad_token", "[PAD]")
        )
        session, one_at_a_time = load_session(self._model, self._threads)
        if one_at_a_time:
            self._batch_size = 1
        self._inputs = frozenset(i.name for i in session.get_inputs())
        if not {"input_ids", "attention_mask"} <= self._inputs:
            raise EmbedderError(
                f"{self._model} takes {sorted(self._inputs)}; an embedding model takes "
                "input_ids and attention_mask"
            )
        width = session.get_outputs()[0].shape[-1]
        if not isinstance(width, int) or width < 2:
            raise EmbedderError(f"{self._model}: its output has no fixed width ({width!r})")
        self._dim = width
        self._tokenizer, self._session = tokenizer, session

    def _run(self, texts: list[str], released: Released, *, last: bool) -> Vectors:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        options = released.options(ids.size, last=last)
        output = run_within(
            self._budget, ids.size, lambda: self._session.run(None, feeds, options)
        )[0]
        if output.ndim == 2:  # the export pools already
            return normalize_rows(output)
        if self._pooling is Pooling.CLS:
            return normalize_rows(output[:, 0])
        weights = mask[..., None].astype(np.float32)
        pooled = (output * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return normalize_rows(pooled)


def model_file(folder: Path) -> Path:
    """``model.onnx`` in the folder (or its ``onnx/``), else its only ``*.onnx`` file."""
    if not folder.is_dir():
        raise EmbedderError(f"{folder}: no such folder (embed.path names a model's folder)")
    for candidate in (folder / "model.onnx", folder / "onnx" / "model.onnx"):
        if candidate.is_file():
            return candidate
    found = sorted(folder.glob("*.onnx"))
    if len(found) != 1:
        what = "no .onnx file" if not found else f"{len(found)} .onnx files and no model.onnx"
        raise EmbedderError(f"{folder}: {what}")
    return found[0]


def _digest(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()[:16]


def same_model(name: str, other: str) -> bool:
    """Whether two embedders' names are one model: the same name, or the packaged MiniLM and
    the onnx provider given its very file (mean pooling), which embed alike."""
    if name == other:
        return True
    if MODEL_NAME not in (name, other):
        return False
    local = other if name == MODEL_NAME else name
    return local.startswith("onnx:") and local.endswith(f"@sha256:{_packaged_digest()}:mean")


@functools.cache
def _packaged_digest() -> str:
    try:
        return _digest(packaged_model_file())
    except EmbedderError:  # no packaged model: nothing is the same as it
        return "-"
