"""What every ``fivefold`` command takes from the click context: the settings in effect and the
store they open. Shared by ``cli.py`` and ``cli_serve.py``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

from fivefold.config import Config
from fivefold.config.file import settings_in_effect
from fivefold.embed.base import Embedder
from fivefold.errors import NotFound
from fivefold.memory import Memory
from fivefold.store import local_file, store_exists


@contextmanager
def open_memory(ctx: click.Context, *, existing: bool = False) -> Iterator[Memory]:
    """The store ``--db`` names; with ``existing``, one that must be there already (a command
    that reads or checks a store does not make an empty one at a mistyped path)."""
    config = settings_of(ctx)  # a broken config file is said first
    if existing:
        require_store(ctx.obj["db"])
    with Memory.open(ctx.obj["db"], config=config, embedder=embedder_of(ctx)) as mem:
        if mem.store.created:
            # A write, a server or an MCP host given a mistyped path starts an empty memory:
            # said on stderr, by the process that made it, so the mistake shows.
            click.echo(f"fivefold: made a new store at {mem.store.location}", err=True)
        yield mem


def default_dim(ctx: click.Context) -> int:
    """The embedding dimension of the stores ``open_memory`` opens (the configured model's;
    the packaged one's weights are not loaded for this)."""
    return embedder_of(ctx).dim


def embedder_of(ctx: click.Context) -> Embedder:
    """The config's embedder, built once per invocation: a local model given no ``dim`` is
    loaded to read it, and a command that checks a vector before it opens the store (the
    dimension) must not load it twice."""
    if "embedder" not in ctx.obj:
        from fivefold.embed.providers import build_embedder

        ctx.obj["embedder"] = build_embedder(settings_of(ctx).embed)
    built: Embedder = ctx.obj["embedder"]
    return built


def require_store(location: str | None) -> None:
    """``NotFound`` when ``location`` names a store that is not there (a file, or a Postgres
    schema with fivefold's tables): nothing is made."""
    if not store_exists(location):
        file = local_file(location)
        if file is None:  # a Postgres URL (its driver is there: it was just asked)
            from fivefold.store.postgres.placement import without_password

            where: object = without_password(str(location))
        else:
            where = file
        raise NotFound(f"no store at {where} (nothing was made there): check the path or --db")


def settings_of(ctx: click.Context) -> Config:
    """The config file in effect (loaded once per invocation, and only by commands that need
    it, so that `config path` works with a broken file), plus the rewrite API key from the
    environment: the one secret, which never lives in the file."""
    if "config" not in ctx.obj:
        ctx.obj["config"] = settings_in_effect(ctx.obj["config_path"])
    loaded: Config = ctx.obj["config"]
    return loaded
