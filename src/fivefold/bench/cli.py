"""``fivefold bench``: retrieval quality (LoCoMo, LongMemEval, BEIR) and latency at scale."""

from __future__ import annotations

import click

from fivefold.bench.facts_cli import facts
from fivefold.bench.latency_cli import latency
from fivefold.bench.quality_cli import COMMANDS
from fivefold.bench.serve import serve
from fivefold.bench.updates import updates


@click.group()
def bench() -> None:
    """Benchmarks: quality of every system on a dataset, and latency at scale."""


for _command in (*COMMANDS, facts, latency, serve, updates):
    bench.add_command(_command)
