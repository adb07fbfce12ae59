"""Recall latency on LoCoMo with and without session context, on one quiet machine.

Ingests the public LoCoMo conversations twice (default settings; ``context.window = 0``), then
recalls every question of categories 1-4 on both stores, interleaved, in three rounds with the
heap frozen (as ``fivefold bench locomo`` times its policies); a question's latency is its
fastest round. Usage: ``python scripts/context_latency.py [path/to/locomo_public.json]``.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path

import fivefold
from fivefold.bench.datasets import load_locomo
from fivefold.bench.runner import ingest
from fivefold.config import Config, ContextConfig

DEFAULT_DATA = Path(__file__).resolve().parents[1] / "../shared/data/locomo/locomo_public.json"


def main() -> None:
    dataset = load_locomo(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DATA)
    embedder = fivefold.MiniLMEmbedder()
    questions = [q for q in dataset.queries if q.category in {"1", "2", "3", "4"}]
    settings = {"context": Config(), "no-context": Config(context=ContextConfig(window=0))}
    stores = {}
    for name, config in settings.items():
        stores[name] = fivefold.Memory.open(":memory:", embedder=embedder, config=config)
        ingest(stores[name], dataset)
    gc.collect()
    gc.freeze()
    best = {name: [float("inf")] * len(questions) for name in stores}
    for _ in range(3):
        for i, q in enumerate(questions):
            for name, mem in stores.items():
                start = time.perf_counter()
                mem.recall(q.text, k=10, namespace=q.namespace, now=q.now)
                best[name][i] = min(best[name][i], (time.perf_counter() - start) * 1000.0)
    for name, values in best.items():
        ordered = sorted(values)
        print(
            f"{name}: mean {statistics.fmean(values):.1f} ms, p50 {statistics.median(values):.1f}"
            f" ms, p99 {ordered[int(0.99 * len(ordered))]:.1f} ms"
        )


if __name__ == "__main__":
    main()
