"""``fivefold bench serve --soak-minutes N``: the serve mix for N minutes, reported a window
(a minute) at a time: the server's RSS (its processes together, at the window's end and at
most during it) and the recall p99 of the window, and how much the RSS grew from the first
window to the last. A server that leaks shows it as growth that does not level off."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import click

from fivefold.read.metrics import percentile

__all__ = ["SoakReport", "Window", "render_soak", "soak"]

MB = 1 << 20


@dataclass(frozen=True, slots=True)
class Window:
    minute: int
    rss_mb: float
    peak_rss_mb: float
    recalls: int
    recall_p99_ms: float
    errors: int


@dataclass(frozen=True, slots=True)
class SoakReport:
    windows: tuple[Window, ...]
    window_seconds: float
    # The RSS at the end of the last window over the first's, in percent.
    rss_growth_percent: float


class _Rss:
    """The RSS of a process and its children (a multi-worker server's workers), sampled every
    ``every`` seconds on a thread; ``peak`` since the last ``reset``."""

    def __init__(self, pid: int, every: float = 0.25) -> None:
        try:
            import psutil  # type: ignore[import-untyped]
        except ImportError as exc:  # pragma: no cover - a dev dependency
            raise click.ClickException(
                "--soak-minutes reads RSS with psutil: pip install psutil"
            ) from exc
        self._process: Any = psutil.Process(pid)
        self._error: type[Exception] = psutil.Error
        self._every = every
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-rss", daemon=True)

    def now(self) -> int:
        try:
            processes = [self._process, *self._process.children(recursive=True)]
            return sum(int(p.memory_info().rss) for p in processes)
        except self._error:
            return 0

    def reset(self) -> None:
        self.peak = self.now()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.peak = max(self.peak, self.now())

    def __enter__(self) -> _Rss:
        self.reset()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def soak(
    pid: int,
    drive: Callable[[float], Coroutine[Any, Any, tuple[Any, float]]],
    *,
    minutes: float,
    window_seconds: float = 60.0,
    say: Callable[[str], None],
) -> SoakReport:
    """Drive the server (``drive(seconds)`` returns a tally of latencies and errors) window
    after window for ``minutes``, the last window what is left."""
    windows: list[Window] = []
    left = minutes * 60.0
    with _Rss(pid) as rss:
        while left > 0.0:
            seconds = min(window_seconds, left)
            left -= seconds
            rss.reset()
            tally, _ = asyncio.run(drive(seconds))
            recalls = sorted(tally.latencies.get("recall", []))
            window = Window(
                minute=len(windows) + 1,
                rss_mb=round(rss.now() / MB, 1),
                peak_rss_mb=round(max(rss.peak, rss.now()) / MB, 1),
                recalls=len(recalls),
                recall_p99_ms=round(percentile(recalls, 99), 1) if recalls else 0.0,
                errors=sum(tally.errors.values()),
            )
            windows.append(window)
            say(
                f"minute {window.minute}: RSS {window.rss_mb:.0f} MB (peak "
                f"{window.peak_rss_mb:.0f}), recall p99 {window.recall_p99_ms:.1f} ms"
            )
    first, last = windows[0].rss_mb, windows[-1].rss_mb
    growth = round((last - first) / first * 100.0, 1) if first else 0.0
    return SoakReport(tuple(windows), window_seconds, growth)


def render_soak(report: SoakReport) -> str:
    lines = [
        f"soak: {len(report.windows)} windows of {report.window_seconds:g} s; RSS grew "
        f"{report.rss_growth_percent:+.1f}% from the first window to the last",
        "",
        "| minute | RSS MB | peak RSS MB | recalls | recall p99 ms | errors |",
        "|---|---|---|---|---|---|",
    ]
    for w in report.windows:
        lines.append(
            f"| {w.minute} | {w.rss_mb:.0f} | {w.peak_rss_mb:.0f} | {w.recalls} | "
            f"{w.recall_p99_ms:.1f} | {w.errors} |"
        )
    return "\n".join(lines)
