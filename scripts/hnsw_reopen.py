"""Reopen and catch-up times of the dense index at scale (issue: reopen < 3 s at 100k; a
recall after another process's write within 2x the usual p99). Not a test: a measurement.

    .venv/bin/python scripts/hnsw_reopen.py --size 100000 --folder /tmp/reopen

Builds a store of random unit vectors (precomputed, with a hashing embedder of the same
dimension, so the model's time is not in the figures), then times: the first search after a
clean reopen (saved graph adopted), searches as usual (p50/p99), the first search after another
process wrote one memory (caught up from the change log), and the first search after a writer
was killed with SIGKILL mid-batch (saved graph adopted and patched).
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import fivefold
from fivefold import Memory, Scope

DIM = 384


def _open(path: Path) -> Memory:
    return Memory.open(path, embedder=fivefold.HashingEmbedder(dim=DIM))


def _batch(rng: np.random.Generator, start: int, count: int) -> list[dict[str, object]]:
    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    return [
        {"content": f"memory number {start + i} token{start + i}x", "vector": v}
        for i, v in enumerate(vectors)
    ]


def _search(memory: Memory, rng: np.random.Generator) -> float:
    query = rng.standard_normal((1, DIM)).astype(np.float32)
    query /= np.linalg.norm(query)
    began = time.perf_counter()
    memory.store.vector_search(Scope(), query, 10)
    return (time.perf_counter() - began) * 1000.0


WRITER = """
import sys, numpy as np, fivefold
from pathlib import Path
mem = fivefold.Memory.open(Path(sys.argv[1]), embedder=fivefold.HashingEmbedder(dim=384))
rng = np.random.default_rng(int(sys.argv[2]))
n = 0
size = 1 if sys.argv[3] == "once" else 50  # once: one memory, as a CLI `remember` writes
while True:
    v = rng.standard_normal((size, 384)).astype("float32")
    mem.remember_many([{"content": f"late {n + i}", "vector": x} for i, x in enumerate(v)])
    n += size
    if sys.argv[3] == "once":
        break
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--folder", type=Path, default=Path("/tmp/fivefold-reopen"))
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    db = args.folder / f"reopen-{args.size}.db"
    rng = np.random.default_rng(1)
    out: dict[str, float] = {}
    if not db.exists():
        with _open(db) as memory:
            began = time.perf_counter()
            for start in range(0, args.size, 5000):
                memory.remember_many(_batch(rng, start, min(5000, args.size - start)))
            out["ingest_s"] = time.perf_counter() - began
            began = time.perf_counter()
            _search(memory, rng)
            out["first_build_s"] = time.perf_counter() - began
    began = time.perf_counter()
    with _open(db) as memory:
        _search(memory, rng)
        out["reopen_clean_s"] = time.perf_counter() - began
        times = sorted(_search(memory, rng) for _ in range(300))
        out["search_p50_ms"] = statistics.median(times)
        out["search_p99_ms"] = times[int(len(times) * 0.99) - 1]
        subprocess.run([sys.executable, "-c", WRITER, str(db), "7", "once"], check=True)
        out["after_other_write_ms"] = _search(memory, rng)
        out["reloads"] = memory.store.reloads  # type: ignore[attr-defined]
        out["catch_ups"] = memory.store.catch_ups  # type: ignore[attr-defined]
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db), "8", "loop"])
    time.sleep(4.0)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    began = time.perf_counter()
    with _open(db) as memory:
        _search(memory, rng)
        out["reopen_after_kill_s"] = time.perf_counter() - began
        out["memories"] = memory.stats().memories
    print(json.dumps({k: round(v, 3) for k, v in out.items()}, indent=2))


if __name__ == "__main__":
    main()
