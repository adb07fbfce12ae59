"""Memory bounds, measured: a server's RSS around one maximum-size batch, the embedder's
throughput, and an import's peak RSS. Not a test: a measurement (BENCHMARKS.md, "Memory bounds").

    PYTHONPATH=src .venv/bin/python scripts/memory_bounds.py batch
    PYTHONPATH=src .venv/bin/python scripts/memory_bounds.py embed
    PYTHONPATH=src .venv/bin/python scripts/memory_bounds.py import --format jsonl --mb 50 --vectors

``batch`` starts ``fivefold serve`` (default settings, a new store in a temporary folder) on a
free port, and samples the server's RSS every 50 ms: before, during one ``POST
/v1/memories/batch`` of as many ~1.5 KB memories as ``serve.max_body_bytes`` lets through,
and 30 s after it. ``import`` writes a file of that many MB to a temporary folder and runs
``fivefold import`` on it in a child process, sampling its RSS the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil

MB = 1 << 20
WORDS = (
    "the team agreed to move the release after the review because the migration of the billing "
    "service still fails on the staging cluster and Alice wants the OAuth PR merged first while "
    "Bob keeps the on-call rotation and the dashboard shows latency rising every Monday morning"
).split()


def text(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:chars]


class Sampler:
    """The peak RSS of a process (and its children) sampled every ``every`` seconds."""

    def __init__(self, pid: int, every: float = 0.05) -> None:
        self._process = psutil.Process(pid)
        self._every = every
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        try:
            total = self._process.memory_info().rss
            for child in self._process.children(recursive=True):
                total += child.memory_info().rss
        except psutil.Error:
            return 0
        return int(total)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.rss())
            time.sleep(self._every)

    def __enter__(self) -> Sampler:
        self.peak = self.rss()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.rss())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def max_batch(limit: int, chars: int) -> list[dict[str, str]]:
    """As many memories of ``chars`` characters as a body of ``limit`` bytes holds."""
    rng = random.Random(7)
    items: list[dict[str, str]] = []
    while True:
        item = {"content": text(rng, chars)}
        if len(json.dumps({"items": [*items, item]})) > limit:
            return items
        items.append(item)


def batch(args: argparse.Namespace) -> None:
    from fivefold.config import ServeConfig

    settings = ServeConfig()
    with tempfile.TemporaryDirectory(prefix="fivefold-bounds-") as scratch:
        folder = Path(scratch)
        port = free_port()
        config = folder / "config.toml"
        config.write_text(f"[serve]\nport = {port}\n{args.settings}\n")
        command = [sys.executable, "-c", "from fivefold.cli.main import main; main()"]
        command += ["--db", str(folder / "memory.db"), "--config", str(config), "serve"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("FIVEFOLD_")}
        env.update(dict(e.split("=", 1) for e in args.env))
        log = (folder / "server.log").open("wb")
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    if httpx.get(url + "/readyz", timeout=2).is_success:
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)
            items = max_batch(settings.max_body_bytes, args.chars)
            body = json.dumps({"items": items}).encode()
            sampler = Sampler(server.pid)
            time.sleep(2)
            before = sampler.rss()
            with sampler:
                started = time.perf_counter()
                response = httpx.post(
                    url + "/v1/memories/batch",
                    content=body,
                    headers={"content-type": "application/json"},
                    timeout=600,
                )
                took = time.perf_counter() - started
                time.sleep(args.after)
            after = sampler.rss()
        finally:
            server.terminate()
            server.wait(60)
    print(
        json.dumps(
            {
                "status": response.status_code,
                "items": len(items),
                "body_bytes": len(body),
                "seconds": round(took, 2),
                "rss_before_mb": round(before / MB),
                "rss_peak_mb": round(sampler.peak / MB),
                f"rss_after_{args.after:g}s_mb": round(after / MB),
            }
        )
    )


def embed(args: argparse.Namespace) -> None:
    import numpy as np

    from fivefold.embed.minilm import MiniLMEmbedder

    rng = random.Random(11)
    texts = [text(rng, rng.randint(40, 160)) for _ in range(args.texts)]
    embedder = MiniLMEmbedder(threads=1)
    embedder.embed(["warm up"])
    times = []
    for _ in range(3):
        started = time.perf_counter()
        vectors = embedder.embed(texts)
        times.append(time.perf_counter() - started)
    if args.save:
        np.save(args.save, vectors)
    if args.compare:
        other = np.load(args.compare)
        print(json.dumps({"max_abs_difference": float(np.abs(other - vectors).max())}))
    median = statistics.median(times)
    result = {
        "texts": len(texts),
        "median_s": round(median, 3),
        "per_second": round(len(texts) / median),
    }
    print(json.dumps(result))


def write_import(path: Path, fmt: str, size: int, *, vectors: bool) -> int:
    """A file of ``size`` bytes: memories of 1.5 KB (with ``vectors``, each with a random unit
    vector, so that the import's own memory is measured and not the model's time), or chats of
    ten turns of 300 characters."""
    import numpy as np

    rng = random.Random(5)
    draw = np.random.default_rng(5)
    written = records = 0
    with path.open("w", encoding="utf-8") as out:
        while written < size:
            if fmt == "chat":
                turns = [
                    {"role": "user" if i % 2 == 0 else "assistant", "content": text(rng, 300)}
                    for i in range(10)
                ]
                value: dict[str, object] = {"session_id": f"s{records}", "messages": turns}
            else:
                value = {"content": text(rng, 1500), "session_id": f"s{records // 20}"}
                if vectors:
                    vector = draw.standard_normal(384)
                    value["vector"] = [round(float(x), 5) for x in vector / np.linalg.norm(vector)]
            line = json.dumps(value) + "\n"
            out.write(line)
            written += len(line)
            records += 1
    return records


def import_(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="fivefold-bounds-import-", dir="/tmp") as scratch:
        folder = Path(scratch)
        path = folder / f"import-{args.format}.jsonl"
        records = write_import(path, args.format, args.mb * MB, vectors=args.vectors)
        command = [sys.executable, "-c", "from fivefold.cli.main import main; main()"]
        command += ["--db", str(folder / "memory.db"), "import", str(path)]
        command += ["--format", args.format]
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        with Sampler(child.pid) as sampler:
            try:
                output, _ = child.communicate(timeout=args.for_seconds)
            except subprocess.TimeoutExpired:  # the peak so far: the import goes on alike
                child.terminate()
                output, _ = child.communicate()
        took = time.perf_counter() - started
    print(
        json.dumps(
            {
                "format": args.format,
                "file_mb": args.mb,
                "records": records,
                "exit": child.returncode,
                "seconds": round(took),
                "rss_peak_mb": round(sampler.peak / MB),
                "said": output.decode(errors="replace").strip().splitlines()[-1:],
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("batch")
    one.add_argument("--chars", type=int, default=1500)
    one.add_argument("--after", type=float, default=30.0)
    one.add_argument("--settings", default="", help="more [serve] lines of the config file")
    one.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server")
    one.set_defaults(run=batch)
    speed = commands.add_parser("embed")
    speed.add_argument("--texts", type=int, default=2000)
    speed.add_argument("--save", help="save the vectors (.npy)")
    speed.add_argument("--compare", help="the largest difference from saved vectors")
    speed.set_defaults(run=embed)
    bulk = commands.add_parser("import")
    bulk.add_argument("--format", choices=["jsonl", "chat"], default="jsonl")
    bulk.add_argument("--mb", type=int, default=50)
    bulk.add_argument("--vectors", action="store_true", help="memories with their vectors")
    bulk.add_argument("--for-seconds", type=float, help="stop the import after this long")
    bulk.set_defaults(run=import_)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
