"""The server as a process: SIGTERM drains without losing an acknowledged write, several
workers share one store file and one /metrics, keys are managed from the command line, and a
server without keys refuses to listen beyond loopback."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from click.testing import CliRunner
from tests.serve.conftest import Server, start_server

import fivefold
from fivefold.cli import cli


def _writer(server: Server, name: str, acknowledged: list[int], stop: threading.Event) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        n = 0
        while not stop.is_set():
            try:
                response = http.post("/v1/memories", json={"content": f"{name} wrote note {n}"})
            except httpx.HTTPError:
                return  # the server has stopped listening
            if response.status_code == 201:
                acknowledged.append(response.json()["id"])
            n += 1


def test_sigterm_drains_and_loses_no_acknowledged_write(
    tmp_path: Path, minilm: fivefold.MiniLMEmbedder
) -> None:
    server = start_server(tmp_path)
    acknowledged: list[int] = []
    stop = threading.Event()
    writers = [
        threading.Thread(target=_writer, args=(server, f"w{i}", acknowledged, stop))
        for i in range(6)
    ]
    for thread in writers:
        thread.start()
    deadline = time.monotonic() + 60
    while len(acknowledged) < 30 and time.monotonic() < deadline:
        time.sleep(0.05)
    # uvicorn drains, shuts the application down, then re-raises the signal it caught.
    assert server.stop(signal.SIGTERM) in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in server.log.read_text()
    stop.set()
    for thread in writers:
        thread.join(60)
    assert len(acknowledged) >= 30
    with fivefold.Memory.open(server.db, embedder=minilm) as memory:
        stored = {m.id for m in memory.browse(limit=1000)}
    assert set(acknowledged) <= stored


def test_two_workers_share_the_store_and_the_metrics(tmp_path: Path) -> None:
    server = start_server(tmp_path, workers=2)
    try:
        made = httpx.post(
            server.url + "/v1/memories", json={"content": "Both workers know Zephyr's id 8812"}
        )
        assert made.status_code == 201
        for _ in range(20):  # a new connection each time lands on either worker
            found = httpx.post(server.url + "/v1/recall", json={"query": "Zephyr id"}, timeout=30)
            assert found.status_code == 200, found.text
            assert found.json()["hits"][0]["memory"]["id"] == made.json()["id"], found.text
        text = httpx.get(server.url + "/metrics").text
        counted = sum(
            float(v) for v in re.findall(r"^fivefold_recalls_total\{[^}]*\} (\S+)$", text, re.M)
        )
        assert counted == 20, text
        assert server.log.read_text().count("Started server process") == 2, server.log.read_text()
        assert "fivefold_store_bytes" in text
    finally:
        server.stop()


def test_keys_add_list_revoke(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("# my settings\n[serve]\nport = 9000  # the team's port\n")
    runner = CliRunner()
    added = runner.invoke(
        cli, ["--config", str(config), "keys", "add", "-n", "team", "--label", "bot"]
    )
    assert added.exit_code == 0, added.output
    token = added.stdout.strip()
    assert re.fullmatch(r"ff_[0-9a-f]{8}_[A-Za-z0-9-]{40,}", token)
    text = config.read_text()
    assert token.split("_")[2] not in text  # only the digest is stored
    assert "# the team's port" in text  # the rest of the file is kept as it was
    assert config.stat().st_mode & 0o077 == 0
    key_id = token.split("_")[1]
    listed = runner.invoke(cli, ["--config", str(config), "keys", "list"])
    assert key_id in listed.stdout
    assert "team" in listed.stdout
    revoked = runner.invoke(cli, ["--config", str(config), "keys", "revoke", key_id])
    assert revoked.exit_code == 0
    assert key_id not in runner.invoke(cli, ["--config", str(config), "keys", "list"]).stdout
    again = runner.invoke(cli, ["--config", str(config), "keys", "revoke", key_id])
    assert again.exit_code == 3
    assert "no API key" in again.stderr
    assert runner.invoke(cli, ["--config", str(config), "config", "show"]).exit_code == 0


def test_without_keys_the_server_refuses_a_public_address(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "from fivefold.cli import main; main()"]
    command += ["--db", str(tmp_path / "m.db"), "serve", "--host", "0.0.0.0"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "binds only to loopback" in done.stderr
    assert "Traceback" not in done.stderr
