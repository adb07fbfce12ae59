"""The server as a process: SIGTERM drains without losing an acknowledged write, several
workers share one store file and one /metrics, keys are managed from the command line, and a
server without keys refuses to listen beyond loopback."""

from __future__ import annotations

import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from tests.serve.conftest import Server, start_server

import fivefold
from fivefold.cli.main import cli


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


@pytest.mark.slow
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


@pytest.mark.slow
def test_two_workers_share_the_store_and_the_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = tmp_path / "tmp"  # where the workers' metrics folder is made
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    server = start_server(tmp_path, workers=2)
    folders = [p for p in temp.iterdir() if p.name.startswith("fivefold-metrics-")]
    try:
        assert len(folders) == 1
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
    assert not folders[0].exists()  # removed when the server stopped (each run left one)


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
    before = config.read_text()
    for scope in (["-n", ""], ["-n", "team", "--user", ""]):  # bad input: exit 2, as elsewhere
        refused = runner.invoke(cli, ["--config", str(config), "keys", "add", *scope])
        assert refused.exit_code == 2, refused.output
        assert "is empty" in refused.stderr
    assert config.read_text() == before


@pytest.mark.slow
def test_without_keys_the_server_refuses_a_public_address(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "from fivefold.cli.main import main; main()"]
    command += ["--db", str(tmp_path / "m.db"), "serve", "--host", "0.0.0.0"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "binds only to loopback" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_port_in_use_is_one_line_before_the_banner(tmp_path: Path) -> None:
    """uvicorn said it among its log lines after "fivefold serve: http://...", and exited 3."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [sys.executable, "-c", "from fivefold.cli.main import main; main()"]
        command += ["--db", str(tmp_path / "m.db"), "serve", "--port", str(port)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}")
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "m.db").exists()


def test_a_privileged_port_blames_the_port(monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from fivefold.errors import ConfigError
    from fivefold.serve.run import check_port

    def refused(self: socket.socket, where: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(socket.socket, "bind", refused)  # as a user who is not root sees it
    with pytest.raises(ConfigError, match=r"ports below 1024 need privileges: --port"):
        check_port("127.0.0.1", 80)


@pytest.mark.slow
def test_a_store_that_cannot_open_is_one_line_before_the_banner(tmp_path: Path) -> None:
    """It printed the banner, then a worker's 39-line traceback, and exited 3."""
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    command = [sys.executable, "-c", "from fivefold.cli.main import main; main()"]
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    command += ["--db", str(garbage), "serve", "--port", str(port)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 4
    assert done.stderr.startswith("error: ")
    assert done.stderr.count("\n") == 1


def test_an_address_not_of_this_machine_blames_the_host() -> None:
    from fivefold.errors import ConfigError
    from fivefold.serve.run import address, check_port

    with pytest.raises(
        ConfigError,
        match=r"192\.0\.2\.1:8420: .* \(not an address of this machine: --host or serve\.host\)",
    ):
        check_port("192.0.2.1", 8420)  # TEST-NET-1: never an address of this machine
    assert address("::1", 8420) == "[::1]:8420"
    assert address("127.0.0.1", 8420) == "127.0.0.1:8420"


class _Batch:
    """A batch posted from a thread of its own: its answer, or the error that came instead."""

    def __init__(self, server: Server, items: list[dict[str, str]]) -> None:
        self.answered: list[httpx.Response] = []
        self.failed: list[BaseException] = []
        url = f"{server.url}/v1/memories/batch"

        def post() -> None:
            try:
                self.answered.append(httpx.post(url, json={"items": items}, timeout=600))
            except httpx.HTTPError as exc:
                self.failed.append(exc)

        self.thread = threading.Thread(target=post)
        self.thread.start()


def _stored(server: Server) -> int:
    with closing(sqlite3.connect(server.db)) as conn:
        count: int = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    return count


@pytest.mark.slow
def test_sigterm_finishes_a_write_that_outlasts_uvicorns_graceful_timeout(
    tmp_path: Path,
) -> None:
    """A batch still writing 30 s after SIGTERM (uvicorn's graceful timeout was 30 s, then it
    cancelled the request with a 500 while the write went on to commit: four
    stored batches were answered 500) is finished and answered 201."""
    server = start_server(tmp_path)
    words = " ".join(f"word{j}" for j in range(60))
    items = [{"content": f"item {i} {words}"} for i in range(1_000)]  # ~30 s of the model here
    batch = _Batch(server, items)
    time.sleep(1.0)
    began = time.monotonic()
    assert server.stop(signal.SIGTERM, timeout=600) in (0, -signal.SIGTERM)
    batch.thread.join(600)
    (response,) = batch.answered
    assert response.status_code == 201, response.text
    assert len(response.json()) == 1_000
    assert _stored(server) == 1_000
    print(f"drained in {time.monotonic() - began:.1f} s")  # past 30 s: the old limit


@pytest.mark.slow
def test_a_second_ctrl_c_quits_and_answers_nothing(tmp_path: Path) -> None:
    """The batch is still embedding when Ctrl-C comes twice: the process ends at once, the
    client gets no answer (uvicorn's own handling answered 500, then let the write commit)."""
    server = start_server(tmp_path)
    items = [{"content": f"note {i} " + "lorem " * 50} for i in range(400)]
    batch = _Batch(server, items)
    time.sleep(1.0)
    began = time.monotonic()
    server.process.send_signal(signal.SIGINT)
    time.sleep(0.5)
    server.process.send_signal(signal.SIGINT)
    assert server.process.wait(60) == 128 + signal.SIGINT
    assert time.monotonic() - began < 10  # not the batch's ~12 s
    batch.thread.join(60)
    assert batch.answered == []  # no answer: neither a 2xx nor a 500 (uvicorn's 2nd Ctrl-C)
    assert len(batch.failed) == 1
    assert _stored(server) == 0  # the write had not committed: it went with the process


@pytest.mark.slow
def test_a_repeated_sigterm_drains_as_the_first(tmp_path: Path) -> None:
    """A wrapper forwarding SIGTERM to its process group can deliver it twice: only a second
    Ctrl-C quits at once (as uvicorn escalates), so the write is finished and answered."""
    server = start_server(tmp_path)
    items = [{"content": f"note {i} " + "lorem " * 50} for i in range(300)]
    batch = _Batch(server, items)
    time.sleep(1.0)
    server.process.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    assert server.stop(signal.SIGTERM, timeout=600) in (0, -signal.SIGTERM)
    batch.thread.join(600)
    assert [r.status_code for r in batch.answered] == [201]
    assert _stored(server) == 300


@pytest.mark.parametrize("args", [["add", "-n", "team"], ["revoke", "abcd1234"]])
def test_keys_without_the_serve_extra_say_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """The base install has no tomlkit: one line naming the extra, not a traceback."""
    monkeypatch.setitem(sys.modules, "tomlkit", None)  # its import raises ImportError
    config = tmp_path / "config.toml"
    config.write_text("[serve]\nport = 9000\n")
    result = CliRunner().invoke(cli, ["--config", str(config), "keys", *args])
    assert result.exit_code != 0
    assert "fivefold[serve]" in result.stderr
    assert "tomlkit" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert config.read_text() == "[serve]\nport = 9000\n"


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads Linux's /proc")
def test_workers_of_a_killed_server_stop_and_free_the_port(
    tmp_path: Path, minilm: fivefold.MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL reaches the supervisor alone: its workers must notice and drain, not go on
    serving the port and the store with nothing to stop them. The next multi-worker server
    removes the metrics folder the killed one could not."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    server = start_server(tmp_path, workers=2)
    (left,) = temp.glob("fivefold-metrics-*")
    workers = {  # uvicorn's workers, not multiprocessing's resource tracker
        pid
        for pid in _children(server.process.pid)
        if "resource_tracker" not in Path(f"/proc/{pid}/cmdline").read_text()
    }
    try:
        assert len(workers) == 2, workers
        made = httpx.post(server.url + "/v1/memories", json={"content": "written before the kill"})
        assert made.status_code == 201
        server.stop(signal.SIGKILL)
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in workers)
        with closing(socket.socket()) as sock:  # the port is free again
            sock.bind(("127.0.0.1", int(server.url.rsplit(":", 1)[1])))
    finally:  # a failure leaves no server or worker running
        server.stop(signal.SIGKILL)
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    with fivefold.Memory.open(server.db, embedder=minilm) as memory:
        assert memory.get(made.json()["id"]).content == "written before the kill"
    assert left.is_dir()
    # Another server running meanwhile keeps its folder: its lock is held (a pid checked from
    # another PID namespace sharing /tmp looked gone).
    running = start_server(tmp_path / "running", workers=2)
    try:
        (kept,) = set(temp.glob("fivefold-metrics-*")) - {left}
        again = start_server(tmp_path / "again", workers=2)
        try:
            assert not left.exists()
            assert kept.is_dir()
            assert len(list(temp.glob("fivefold-metrics-*"))) == 2  # the running ones
        finally:
            again.stop()
    finally:
        running.stop()


def test_a_single_worker_server_watches_no_inherited_supervisor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The variable a multi-worker server hands its workers, inherited by a single-worker
    server, made it drain at once: its parent is no such supervisor."""
    from fivefold.config import Config
    from fivefold.serve import run

    class Started:
        started = True

        def run(self) -> None:
            assert run.SUPERVISOR_ENV not in os.environ  # what its application will read

    for name in (run.DB_ENV, run.CONFIG_ENV, run.HOST_ENV):  # serve sets them: restored after
        monkeypatch.setenv(name, "")
    monkeypatch.setenv(run.SUPERVISOR_ENV, "1")
    monkeypatch.setattr(run, "_quitting_server", lambda config: Started())
    run.serve(str(tmp_path / "m.db"), None, Config())
    assert run.SUPERVISOR_ENV not in os.environ
