"""``fivefold bench``: retrieval quality (LoCoMo, LongMemEval, BEIR) and latency at scale."""

from __future__ import annotations

import click

from fivefold.bench.latency_cli import latency
from fivefold.bench.quality_cli import COMMANDS
from fivefold.bench.serve import serve


@click.group()
def bench() -> None:
    """Benchmarks: quality of every system on a dataset, and latency at scale."""


for _command in (*COMMANDS, latency, serve):
    bench.add_command(_command)
