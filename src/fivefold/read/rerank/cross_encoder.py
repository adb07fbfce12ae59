"""Cross-encoder rerank from a local model directory: an ONNX export with its ``tokenizer.json``.

No trained cross-encoder ships on the package registries, so none is bundled: the engine runs
without rerank (and says so in the plan's reasons) until config names a directory. Nothing is
ever downloaded. Any sequence-classification export works (e.g. a ms-marco MiniLM cross-encoder
exported with ``optimum-cli export onnx``): inputs ``input_ids``, ``attention_mask`` and
optionally ``token_type_ids``; the output is one relevance logit per pair (or two class logits).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fivefold.errors import ConfigError

BATCH_SIZE = 32


class OnnxCrossEncoder:
    def __init__(self, directory: str | Path, *, max_tokens: int = 256) -> None:
        self._dir = Path(directory).expanduser()
        self._model = _find(self._dir, ("model.onnx", "onnx/model.onnx"))
        self._tokenizer_file = _find(self._dir, ("tokenizer.json",))
        self._max_tokens = max_tokens
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: set[str] = set()

    def _load(self) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(self._tokenizer_file))
            options = ort.SessionOptions()
            options.log_severity_level = 3
            session = ort.InferenceSession(
                str(self._model), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise ConfigError(f"could not load the cross-encoder in {self._dir}: {exc}") from exc
        tokenizer.enable_truncation(self._max_tokens)
        tokenizer.enable_padding()
        self._tokenizer, self._session = tokenizer, session
        self._inputs = {i.name for i in session.get_inputs()}

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        with self._lock:
            if self._session is None:
                self._load()
            out: list[float] = []
            for start in range(0, len(passages), BATCH_SIZE):
                out.extend(self._run(query, passages[start : start + BATCH_SIZE]))
        return out

    def _run(self, query: str, passages: Sequence[str]) -> list[float]:
        encodings = self._tokenizer.encode_batch([(query, p) for p in passages])
        feeds = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        logits = np.asarray(
            self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0],
            dtype=np.float64,
        )
        if logits.ndim == 2 and logits.shape[1] == 2:
            logits = logits[:, 1] - logits[:, 0]  # two-class head: the "relevant" margin
        return [float(v) for v in logits.reshape(len(passages), -1)[:, 0]]


def _find(directory: Path, names: Sequence[str]) -> Path:
    for name in names:
        if (directory / name).is_file():
            return directory / name
    raise ConfigError(
        f"rerank.model_path {directory} holds no {' or '.join(names)}; point it at a directory "
        "with an ONNX cross-encoder and its tokenizer.json"
    )
