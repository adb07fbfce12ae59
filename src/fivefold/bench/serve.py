"""``fivefold bench serve``: the server under load, end to end over loopback HTTP.

A synthetic store (the latency bench's corpus, reused from ``--store-dir``) is served by a real
``fivefold serve`` child process; N concurrent clients (one asyncio loop, one connection each)
send a mix of recalls and remembers for a fixed time. Reported: throughput, p50/p99 per
endpoint, and every non-2xx or transport error. The load generator shares the machine with
the server, as a sidecar agent on the same host would.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import click
import httpx

from fivefold.bench.latency_store import build_store, read_manifest, store_name
from fivefold.bench.soak import render_soak, soak
from fivefold.bench.synthetic import SyntheticCorpus
from fivefold.read.metrics import percentile

__all__ = ["LoadReport", "serve"]

READY_SECONDS = 120


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    requests: int
    errors: int
    p50_ms: float
    p99_ms: float


@dataclass(frozen=True, slots=True)
class LoadReport:
    memories: int
    clients: int
    workers: int
    seconds: float
    write_share: float
    offered_per_second: float
    requests: int
    per_second: float
    recalls_per_second: float
    errors: int
    error_kinds: dict[str, int]
    endpoints: tuple[Endpoint, ...]
    # CPU time per request answered: the server's (every worker; None without psutil) apart
    # from this driver's own, which shares the machine with it.
    server_cpu_ms: float | None = None
    driver_cpu_ms: float = 0.0


@dataclass
class _Tally:
    latencies: dict[str, list[float]]
    errors: dict[str, int]


async def _client(url: str, load: _Load, until: float, seed: int, tally: _Tally) -> None:
    """One client: sends on a fixed schedule (``interval`` apart, from a random phase), and
    times each request from when it was due, so a slow server is charged for the requests
    that waited behind it (no coordinated omission). With no interval it sends back to back."""
    rng = random.Random(seed)
    due = time.perf_counter() + rng.random() * load.interval
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        n = 0
        while due < until:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            writing = rng.random() < load.share
            name = "remember" if writing else "recall"
            text = load.queries[(seed * 7919 + n * load.clients) % len(load.queries)]
            body: dict[str, object]
            if writing:
                path, body = "/v1/memories", {"content": f"load note {seed}-{n}: {text}"}
            else:
                path, body = "/v1/recall", {"query": text, "k": 10}
            try:
                response = await http.post(path, json=body)
                status = str(response.status_code) if response.is_error else ""
            except httpx.HTTPError as exc:
                status = type(exc).__name__
            elapsed = (time.perf_counter() - due) * 1000.0
            if status:
                tally.errors[f"{name} {status}"] = tally.errors.get(f"{name} {status}", 0) + 1
            else:
                tally.latencies.setdefault(name, []).append(elapsed)
            n += 1
            due = due + load.interval if load.interval else time.perf_counter()


@dataclass(frozen=True, slots=True)
class _Load:
    queries: list[str]
    clients: int
    share: float
    # Seconds between one client's requests (clients / rate); 0: back to back.
    interval: float


async def drive(url: str, load: _Load, seconds: float) -> tuple[_Tally, float]:
    tally = _Tally({}, {})
    began = time.perf_counter()
    until = began + seconds
    await asyncio.gather(*(_client(url, load, until, i, tally) for i in range(load.clients)))
    return tally, time.perf_counter() - began


def _report(
    tally: _Tally,
    elapsed: float,
    *,
    memories: int,
    clients: int,
    workers: int,
    share: float,
    rate: float,
) -> LoadReport:
    endpoints = []
    for name in ("recall", "remember"):
        times = sorted(tally.latencies.get(name, []))
        errors = sum(v for k, v in tally.errors.items() if k.startswith(name))
        endpoints.append(
            Endpoint(
                name,
                len(times) + errors,
                errors,
                percentile(times, 50) if times else 0.0,
                percentile(times, 99) if times else 0.0,
            )
        )
    ok = sum(len(v) for v in tally.latencies.values())
    errors = sum(tally.errors.values())
    return LoadReport(
        memories=memories,
        clients=clients,
        workers=workers,
        seconds=elapsed,
        write_share=share,
        offered_per_second=rate,
        requests=ok + errors,
        per_second=(ok + errors) / elapsed,
        recalls_per_second=len(tally.latencies.get("recall", [])) / elapsed,
        errors=errors,
        error_kinds=dict(tally.errors),
        endpoints=tuple(endpoints),
    )


def render(report: LoadReport) -> str:
    lines = [
        f"{report.memories:,} memories, {report.clients} clients, {report.workers} worker(s), "
        f"{report.seconds:.0f} s, {report.write_share:.0%} remember, offered "
        f"{report.offered_per_second or 'unpaced'} requests/s",
        f"throughput {report.per_second:.1f} requests/s ({report.recalls_per_second:.1f} "
        f"recalls/s); errors {report.errors}",
        f"CPU per request: server {_ms(report.server_cpu_ms)} (every worker), "
        f"this driver {_ms(report.driver_cpu_ms)}",
        "",
        "| endpoint | requests | errors | p50 ms | p99 ms |",
        "|---|---|---|---|---|",
    ]
    for e in report.endpoints:
        lines.append(f"| {e.name} | {e.requests} | {e.errors} | {e.p50_ms:.1f} | {e.p99_ms:.1f} |")
    if report.error_kinds:
        lines.append("")
        lines += [f"- {kind}: {count}" for kind, count in sorted(report.error_kinds.items())]
    return "\n".join(lines)


def _store(memories: int, store_dir: Path, say: Callable[[str], None]) -> Path:
    from fivefold.embed.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    corpus = SyntheticCorpus(memories)
    path = store_dir / store_name(memories, corpus.seed, embedder.name)
    if read_manifest(path) is None:
        build_store(corpus, path, embedder, say)
    return path


def _copy_store(built: Path, db: Path) -> None:
    """The store file and its index folders: without them the server's first recalls would
    build the indexes again, inside the timed run."""
    shutil.copyfile(built, db)
    for sidecar in (".lexical", ".vindex"):
        source = built.with_name(built.name + sidecar)
        if source.is_dir():
            shutil.copytree(source, db.with_name(db.name + sidecar))


def _start(db: Path, folder: Path, workers: int) -> tuple[subprocess.Popen[bytes], str]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = folder / "config.toml"
    config.write_text(f"[serve]\nport = {port}\nworkers = {workers}\n")
    command = [sys.executable, "-c", "from fivefold.cli.main import main; main()"]
    command += ["--db", str(db), "--config", str(config), "serve"]
    with (folder / "server.log").open("wb") as log:  # the child writes its own copy
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise click.ClickException(f"the server did not start: {(folder / 'server.log').read_text()}")


def _ms(value: float | None) -> str:
    return "n/a (psutil is not installed)" if value is None else f"{value:.1f} ms"


def _cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds of the server and its workers so far (None without psutil,
    a dev dependency)."""
    try:
        import psutil  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - a dev dependency
        return None
    root = psutil.Process(pid)
    total = 0.0
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:  # a worker that ended: its time is gone with it
            continue
        total += times.user + times.system
    return total


def _say(text: str) -> None:
    click.echo(text, err=True)


@click.command(name="serve")
@click.option("--memories", default=10_000, show_default=True, help="Store size.")
@click.option("--clients", default=32, show_default=True, help="Concurrent clients.")
@click.option("--seconds", default=60.0, show_default=True, help="How long to drive.")
@click.option("--workers", default=2, show_default=True, help="Server worker processes.")
@click.option("--write-share", default=0.1, show_default=True, help="Share of remembers.")
@click.option(
    "--rate",
    default=170.0,
    show_default=True,
    help="Requests per second offered by all clients together (0: each sends back to back).",
)
@click.option("--store-dir", type=click.Path(path_type=Path), help="Reuse built stores here.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--soak-minutes",
    type=click.FloatRange(0.0, min_open=True),
    default=None,
    help="Drive this long instead of --seconds, reporting RSS and recall p99 per minute.",
)
@click.option(
    "--window-seconds",
    type=click.FloatRange(0.0, min_open=True),
    default=60.0,
    show_default=True,
    help="The soak's reporting window.",
)
def serve(
    memories: int,
    clients: int,
    seconds: float,
    workers: int,
    write_share: float,
    rate: float,
    store_dir: Path | None,
    as_json: bool,
    soak_minutes: float | None,
    window_seconds: float,
) -> None:
    """Drive a real `fivefold serve` with N concurrent clients (recall / remember mix); with
    --soak-minutes, for that long, reporting the server's RSS and recall p99 each minute."""
    if soak_minutes is not None:
        seconds = soak_minutes * 60.0
    with tempfile.TemporaryDirectory(prefix="fivefold-bench-serve-") as scratch:
        folder = Path(scratch)
        built = _store(memories, store_dir or folder, _say)
        db = folder / "served.db"  # the load writes: serve a copy, keep the built store clean
        _copy_store(built, db)
        process, url = _start(db, folder, workers)
        try:
            # Distinct queries, none repeated within a paced run: no cache answers for the engine.
            count = max(1000, int((rate or 200) * seconds * 1.2))
            drawn = SyntheticCorpus(memories).queries(count, salt="serve")
            queries = list(dict.fromkeys(q.text for q in drawn))
            load = _Load(queries, clients, write_share, clients / rate if rate else 0.0)
            _say(
                f"driving {url}: {clients} clients, {rate or 'unpaced'} requests/s, {seconds:.0f} s"
            )
            if soak_minutes is not None:
                soaked = soak(
                    process.pid,
                    lambda window: drive(url, load, window),
                    minutes=soak_minutes,
                    window_seconds=window_seconds,
                    say=_say,
                )
                click.echo(json.dumps(asdict(soaked), indent=2) if as_json else render_soak(soaked))
                return
            server_before, driver_before = _cpu_seconds(process.pid), time.process_time()
            tally, elapsed = asyncio.run(drive(url, load, seconds))
            server_after = _cpu_seconds(process.pid)
            driver_cpu = time.process_time() - driver_before
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(60)
    report = _report(
        tally,
        elapsed,
        memories=memories,
        clients=clients,
        workers=workers,
        share=write_share,
        rate=rate,
    )
    answered = max(report.requests, 1)
    report = replace(
        report,
        server_cpu_ms=None
        if server_before is None or server_after is None
        else (server_after - server_before) * 1000.0 / answered,
        driver_cpu_ms=driver_cpu * 1000.0 / answered,
    )
    click.echo(json.dumps(asdict(report), indent=2) if as_json else render(report))
