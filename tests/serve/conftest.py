"""Real servers for the serve tests: ``fivefold serve`` in a child process on a free loopback
port, with the real embedding model, a store file and a config file of its own."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from fivefold.serve.keys import add_key

READY_SECONDS = 90


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    db: Path
    config: Path
    log: Path
    tokens: dict[str, str] = field(default_factory=dict)

    def headers(self, name: str) -> dict[str, str]:
        return {"authorization": f"Bearer {self.tokens[name]}"}

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_server(
    folder: Path,
    *,
    keys: dict[str, dict[str, str]] | None = None,
    settings: str = "",
    workers: int = 1,
) -> Server:
    """``keys`` maps a test's name for a key to its scope (namespace, user_id, agent_id)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "config.toml"
    port = free_port()
    config.write_text(f"[serve]\nport = {port}\nworkers = {workers}\n{settings}\n")
    tokens = {name: add_key(config, **scope)[1] for name, scope in (keys or {}).items()}
    log = folder / "server.log"
    db = folder / "memory.db"
    command = [sys.executable, "-c", "from fivefold.cli.main import main; main()"]
    command += ["--db", str(db), "--config", str(config), "serve"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIVEFOLD_")}
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    server = Server(f"http://127.0.0.1:{port}", process, db, config, log, tokens)
    _wait_ready(server, workers)
    return server


def _wait_ready(server: Server, workers: int) -> None:
    """Until /readyz answers and every worker has started (one ready worker answers first)."""
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"the server exited: {server.log.read_text()}")
        started = server.log.read_text().count("Application startup complete")
        try:
            if started >= workers and httpx.get(f"{server.url}/readyz", timeout=2).is_success:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    server.stop(signal.SIGKILL)
    raise RuntimeError(f"the server was not ready in {READY_SECONDS} s: {server.log.read_text()}")


@pytest.fixture(scope="session")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """No keys: loopback only, every request names its own scope."""
    server = start_server(tmp_path_factory.mktemp("open-server"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Three tenants: two namespaces, and one user inside the first."""
    keys = {
        "alpha": {"namespace": "alpha"},
        "beta": {"namespace": "beta"},
        "alpha-u1": {"namespace": "alpha", "user_id": "u1"},
    }
    server = start_server(tmp_path_factory.mktemp("keyed-server"), keys=keys)
    yield server
    server.stop()
