"""What session context costs a write, on LoCoMo: its turns through ``remember_many`` (batches
of 256, as ``fivefold bench locomo`` ingests them) into stores with context (the defaults) and
without (``context.window = 0``), with the embedder in the write path and with precomputed
vectors (the store's own part), best of two rounds each. Usage:
``python scripts/context_ingest.py [path/to/locomo_public.json]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import fivefold
from fivefold.bench.datasets import load_locomo
from fivefold.bench.runner import INGEST_BATCH, item_of
from fivefold.config import Config, ContextConfig

DEFAULT_DATA = Path(__file__).resolve().parents[1] / "../shared/data/locomo/locomo_public.json"
BATCH = INGEST_BATCH


def main() -> None:
    dataset = load_locomo(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DATA)
    embedder = fivefold.MiniLMEmbedder()
    items = [item_of(doc) for doc in dataset.docs]
    start = time.perf_counter()
    vectors = embedder.embed([item["content"] for item in items])
    model = time.perf_counter() - start

    def ingest(config: Config, given: np.ndarray | None) -> float:
        with fivefold.Memory.open(":memory:", embedder=embedder, config=config) as mem:
            start = time.perf_counter()
            for at in range(0, len(items), BATCH):
                batch = items[at : at + BATCH]
                if given is not None:
                    rows = given[at : at + BATCH]
                    batch = [b | {"vector": v} for b, v in zip(batch, rows, strict=True)]
                mem.remember_many(batch)
            # The lexical index's last catch-up is part of the write.
            mem.store.term_document_frequencies(dataset.docs[0].namespace, ["x"])
            return time.perf_counter() - start

    settings = {"context": Config(), "no-context": Config(context=ContextConfig(window=0))}
    took = {
        (name, how): min(ingest(config, given) for _ in range(2))
        for name, config in settings.items()
        for how, given in (("embedder", None), ("vectors", vectors))
    }
    print(f"model alone: {model:.2f} s for {len(items):,} turns")
    for (name, how), seconds in took.items():
        print(f"{name:10s} {how:8s} {seconds:6.2f} s")
    cost = took["context", "vectors"] - took["no-context", "vectors"]
    share = 100 * cost / took["context", "embedder"]
    print(f"session context: {cost:.2f} s of store time, {share:.1f} % of ingest with the embedder")


if __name__ == "__main__":
    main()
