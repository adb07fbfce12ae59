"""Starting the server: uvicorn with N worker processes, each opening the store itself.

Workers are separate processes (uvicorn imports ``app_from_env`` in each), so what they need
travels in environment variables set by ``fivefold serve``. SIGTERM (or Ctrl-C) stops
accepting connections and lets every request in flight finish, however long it takes: a write
is committed before its 2xx is sent, so a drained server has lost nothing it acknowledged, and
none is cut off with a 500 while its write goes on to commit (uvicorn cancels a request at its
graceful timeout, but the thread running its write cannot be stopped, so a stored batch would
be answered 500). A second Ctrl-C quits at once: the requests in flight
get no answer, and a write not yet committed is rolled back with the process. (A client that
never finishes sending its request holds the drain until then, or a supervisor's SIGKILL.)
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from fivefold.config import Config
from fivefold.config.file import settings_in_effect
from fivefold.errors import ConfigError
from fivefold.memory import Memory
from fivefold.serve.budget import TokenBudget
from fivefold.serve.keys import KeyRing, load_keys
from fivefold.serve.loopback import loopback

__all__ = ["app_from_env", "check_binding", "serve"]

DB_ENV = "FIVEFOLD_SERVE_DB"
CONFIG_ENV = "FIVEFOLD_SERVE_CONFIG"
HOST_ENV = "FIVEFOLD_SERVE_HOST"  # the address bound (``--host`` wins over the file's)
SUPERVISOR_ENV = "FIVEFOLD_SERVE_SUPERVISOR"  # the pid of a multi-worker server's supervisor
PARENT_CHECK_S = 0.5


def app_from_env() -> Any:
    """The application of one worker process (uvicorn's ``factory``)."""
    from fivefold.serve.app import create_app

    _one_blas_thread()
    if (supervisor := os.environ.get(SUPERVISOR_ENV, "")).isdigit():
        _drain_when_orphaned(int(supervisor))
    given = os.environ.get(CONFIG_ENV)
    path = Path(given) if given else None
    config = settings_in_effect(path)
    if host := os.environ.get(HOST_ENV):
        config = replace(config, serve=replace(config.serve, host=host))
    db = os.environ.get(DB_ENV) or None
    budget = TokenBudget(config.serve.max_inflight_tokens)
    return create_app(
        lambda: Memory.open(db, config=config, embedder=_embedder(config, budget)),
        settings=config.serve,
        keys=KeyRing(load_keys(path)),
        budget=budget,
    )


def _drain_when_orphaned(supervisor: int) -> None:
    """A worker whose supervisor is gone (killed: SIGKILL reaches no child) drains and exits
    as on SIGTERM. uvicorn's workers would go on serving, holding the port and the store, and
    the next ``fivefold serve`` could not listen."""

    def watch() -> None:
        while os.getppid() == supervisor:
            time.sleep(PARENT_CHECK_S)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="fivefold-supervisor-watch", daemon=True).start()


def _one_blas_thread() -> None:
    """numpy's OpenBLAS starts a thread per core for each matrix product; with requests and
    workers already side by side those threads only contend, and a recall is slower with
    them than with one."""
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    threadpool_limits(limits=1, user_api="blas")


def _embedder(config: Config, budget: TokenBudget) -> Any:
    """The configured model, a local one with one ONNX thread per worker: requests run side
    by side on the worker's threads and the workers side by side on the cores, so an intra-op
    pool per call only adds threads that spin-wait for each other (bench serve: see
    BENCHMARKS.md). Its batches share the worker's ``budget`` of word pieces."""
    from fivefold.embed.providers import build_embedder

    return build_embedder(config.embed, threads=1, budget=budget)


def check_binding(host: str, keys: KeyRing) -> str:
    """Without keys the server must not be reachable from another machine: refuse a
    non-loopback address, and say what the server is about to do either way."""
    if keys:
        return f"API keys required ({len(keys)} configured)"
    if not loopback(host):
        raise ConfigError(
            f"no API keys are configured, so the server binds only to loopback, not {host}; "
            "add one with `fivefold keys add --namespace NAME`"
        )
    return "no API keys configured: no authentication, loopback only"


def check_port(host: str, port: int) -> None:
    """Refuse an address the server could not listen on, before anything is said or opened:
    uvicorn told of a port in use among its log lines, after the banner, and exited 3 ("not
    found"). Bound as uvicorn binds it (``SO_REUSEADDR``), then let go for uvicorn."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            # A name that does not resolve is, like an address of no interface here, the host's.
            code = errno.EADDRNOTAVAIL if isinstance(exc, socket.gaierror) else exc.errno
            hint = _HINTS.get(code, "") if code is not None else ""
            raise ConfigError(
                f"cannot listen on {address(host, port)}: {exc.strerror or exc}{hint}"
            ) from exc


_HINTS = {
    errno.EADDRINUSE: " (another server there? --port or serve.port picks another)",
    errno.EACCES: " (ports below 1024 need privileges: --port or serve.port)",
    errno.EADDRNOTAVAIL: " (not an address of this machine: --host or serve.host)",
}


def address(host: str, port: int) -> str:
    """``host:port``, an IPv6 host in brackets (``[::1]:8420``), as a URL writes it."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
METRICS_PREFIX = "fivefold-metrics-"
SUPERVISOR_LOCK = "supervisor.lock"  # in a metrics folder: locked while its server runs


def hold_metrics_folder(folder: str) -> IO[bytes] | None:
    """This process's lock on its metrics folder, held until it exits (the kernel lets go of
    it then, however it ends: SIGKILL too); None where there is no ``flock``."""
    if os.name != "posix":
        return None
    import fcntl  # POSIX only

    held = open(os.path.join(folder, SUPERVISOR_LOCK), "wb")  # noqa: SIM115 (held past here)
    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return held


def sweep_metrics_folders() -> None:
    """Remove this user's metrics folders whose server is gone (killed: nothing else removed
    its folder; its workers drain and exit once it is gone): those whose lock can be taken.
    Not by a pid: one of another PID namespace sharing /tmp looked gone."""
    if os.name != "posix":
        return
    import fcntl  # POSIX only

    for folder in Path(tempfile.gettempdir()).glob(f"{METRICS_PREFIX}*"):
        try:
            if folder.is_symlink() or folder.lstat().st_uid != os.getuid():
                continue
            # Not created here: a folder without one is being made, or of an older fivefold.
            lock = os.open(folder / SUPERVISOR_LOCK, os.O_RDWR | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its server runs
            continue
        else:
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            os.close(lock)


def serve(
    db: str | None, config_path: Path | None, config: Config, *, log_level: str = "info"
) -> None:
    import uvicorn

    settings = config.serve
    os.environ[DB_ENV] = db or ""
    os.environ[CONFIG_ENV] = "" if config_path is None else str(config_path.absolute())
    os.environ[HOST_ENV] = settings.host
    os.environ.pop(SUPERVISOR_ENV, None)  # inherited: a single worker must watch no one
    made, held = None, None
    if settings.workers > 1 and not os.environ.get(METRICS_DIR_ENV):
        # prometheus-client merges the workers' counters through files in this folder: ours
        # to remove when the server stops (each multi-worker run left one in /tmp). Locked by
        # this process while it runs: a later server removes one whose supervisor was killed.
        sweep_metrics_folders()
        made = tempfile.mkdtemp(prefix=METRICS_PREFIX)
        held = hold_metrics_folder(made)
        os.environ[METRICS_DIR_ENV] = made
    options: dict[str, Any] = {
        "factory": True,
        "host": settings.host,
        "port": settings.port,
        "workers": settings.workers,
        "timeout_graceful_shutdown": None,  # every request in flight is finished: see above
        "log_level": log_level,
        "access_log": False,
    }
    if settings.workers > 1:  # uvicorn's supervisor: each worker drains as one server does
        os.environ[SUPERVISOR_ENV] = str(os.getpid())
        try:
            uvicorn.run("fivefold.serve.run:app_from_env", **options)
        finally:
            # A single-worker server run later in this process must not watch this pid.
            os.environ.pop(SUPERVISOR_ENV, None)
            if made is not None:
                shutil.rmtree(made, ignore_errors=True)
            if held is not None:
                held.close()
        return
    server = _quitting_server(uvicorn.Config("fivefold.serve.run:app_from_env", **options))
    server.run()
    if not server.started:
        raise SystemExit(3)  # uvicorn's STARTUP_FAILURE, as ``uvicorn.run`` exits


def _quitting_server(config: Any) -> Any:
    """uvicorn's server, but a second Ctrl-C quits at once. uvicorn's own second Ctrl-C
    cancels the requests in flight, answers each with a 500, and the interpreter then waits
    for the threads still running their writes, which commit: a stored write its client was
    told failed. Ended here, the process takes its uncommitted transactions with it and
    answers nothing. (uvicorn is imported when a server starts, not with the CLI.)"""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            # A second Ctrl-C, as uvicorn escalates: a repeated SIGTERM (a wrapper forwarding
            # one to its process group) drains as the first does.
            if self.should_exit and sig == signal.SIGINT:
                sys.stderr.flush()
                os._exit(128 + sig)
            super().handle_exit(sig, frame)

    return Server(config=config)
