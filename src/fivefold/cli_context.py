"""What every ``fivefold`` command takes from the click context: the settings in effect and the
store they open. Shared by ``cli.py`` and ``cli_serve.py``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

from fivefold.config import Config
from fivefold.config_file import settings_in_effect
from fivefold.memory import Memory


@contextmanager
def open_memory(ctx: click.Context) -> Iterator[Memory]:
    with Memory.open(ctx.obj["db"], config=settings_of(ctx)) as mem:
        yield mem


def settings_of(ctx: click.Context) -> Config:
    """The config file in effect (loaded once per invocation, and only by commands that need
    it, so that `config path` works with a broken file), plus the rewrite API key from the
    environment: the one secret, which never lives in the file."""
    if "config" not in ctx.obj:
        ctx.obj["config"] = settings_in_effect(ctx.obj["config_path"])
    loaded: Config = ctx.obj["config"]
    return loaded
