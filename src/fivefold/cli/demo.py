"""``fivefold demo``: the bundled corpus in a throwaway store, queries of every kind."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from fivefold import demo
from fivefold.cli.render import print_metrics, print_plan
from fivefold.config import Config
from fivefold.memory import Memory


def run_demo(console: Console, *, k: int = 3, config: Config | None = None) -> int:
    """Run every demo query; return how many put the wrong memory first."""
    with tempfile.TemporaryDirectory(prefix="fivefold-demo-") as tmp:
        path = Path(tmp) / "demo.db"
        with Memory.open(path, config=config) as mem:
            start = time.perf_counter()
            count = demo.load(mem)
            elapsed = time.perf_counter() - start
            console.print(
                f"[bold]Loaded {count} memories[/bold] of Sam Okafor (fictional) into {path} "
                f"in {elapsed:.1f} s; queries run as of {demo.NOW.isoformat()}.\n"
            )
            misses = 0
            for item in demo.queries():
                misses += _show(console, mem, item, k)
            metrics = mem.metrics()
    console.print(f"\n[bold]{misses} queries put another memory first.[/bold]\n")
    print_metrics(console, metrics)
    return misses


def _show(console: Console, mem: Memory, item: demo.DemoQuery, k: int) -> int:
    result = mem.recall(item.query, k=k, namespace=demo.NAMESPACE, now=demo.NOW)
    contents = [hit.memory.content for hit in result.hits]
    verdict = demo.first_hit_matches(contents, item.expect)
    mark = {True: "[green]right first[/green]", False: "[red]miss[/red]", None: "[dim]open[/dim]"}
    console.rule(f"[bold]{item.query}[/bold]  ({item.kind}, {mark[verdict]})")
    print_plan(console, result.plan)
    table = Table(show_header=False, box=None)
    for rank, hit in enumerate(result.hits, start=1):
        sources = " ".join(f"{name}:{r}" for name, r in hit.sources.items())
        table.add_row(f"{rank}.", hit.memory.content, f"[dim]{sources}[/dim]")
    console.print(table)
    if verdict is False:
        console.print(f"  [red]expected first:[/red] ...{item.expect}...")
    return int(verdict is False)
