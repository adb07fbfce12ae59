"""``fivefold serve``, ``fivefold mcp`` and ``fivefold keys``: the engine as a service. Their
dependencies (the ``serve`` extra) are imported when a command runs, so the rest of the CLI
works without them."""

from __future__ import annotations

import importlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from fivefold import validate
from fivefold.cli.context import open_memory, settings_of
from fivefold.config.file import config_in_effect, default_config_path
from fivefold.errors import ConfigError

__all__ = ["keys", "mcp", "serve"]


def _need_extra(*modules: str) -> None:
    """The serve extra's modules this command imports (all the server's, by default)."""
    try:
        for module in modules or ("fastapi", "mcp.server", "uvicorn"):
            importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"this command needs the serve extra ({exc.name} is missing): "
            "pip install 'fivefold[serve]'"
        ) from exc


@click.command()
@click.option("--host", help="Address to bind (serve.host; default 127.0.0.1).")
@click.option("--port", type=click.IntRange(1, 65535), help="Port (serve.port; default 8420).")
@click.option("--workers", type=click.IntRange(1, 64), help="Worker processes (serve.workers).")
@click.pass_context
def serve(ctx: click.Context, /, host: str | None, port: int | None, workers: int | None) -> None:
    """Serve the HTTP API (/v1, its OpenAPI schema at /openapi.json), MCP at /mcp and the web page
    at /."""
    _need_extra()
    from fivefold.serve import run
    from fivefold.serve.keys import KeyRing, load_keys

    config = settings_of(ctx)
    given: dict[str, Any] = {"host": host, "port": port, "workers": workers}
    settings = replace(config.serve, **{k: v for k, v in given.items() if v is not None})
    path = config_in_effect(ctx.obj["config_path"])
    notice = run.check_binding(settings.host, KeyRing(load_keys(path)))
    run.check_port(settings.host, settings.port)
    with open_memory(ctx):  # a store that cannot open is one line here, not a worker's traceback
        pass
    click.echo(
        f"fivefold serve: http://{run.address(settings.host, settings.port)}/ "
        f"({settings.workers} worker{'s' if settings.workers > 1 else ''}); {notice}",
        err=True,
    )
    run.serve(ctx.obj["db"], path, replace(config, serve=settings))


@click.command()
@click.option("--namespace", "-n", help="Bind every call to this namespace (else: the call's).")
@click.option("--user", "user_id", help="Bind every call to this user id.")
@click.option("--agent", "agent_id", help="Bind every call to this agent id.")
@click.pass_context
def mcp(
    ctx: click.Context, /, namespace: str | None, user_id: str | None, agent_id: str | None
) -> None:
    """An MCP server over stdio (remember, recall, feedback, relate, forget, explain) for an agent
    host."""
    _need_extra()
    from fivefold.serve.mcp import build_server, fixed_scope
    from fivefold.serve.mcp_stdio import run_stdio

    if namespace is None and (user_id or agent_id):
        raise ConfigError("--user and --agent bind a scope inside a namespace: give --namespace")
    if namespace is not None:  # bound as a key is: to the write bounds, refused before it serves
        validate.scope(namespace, user_id, agent_id, written=True)
    with open_memory(ctx) as memory:
        run_stdio(build_server(lambda: memory, fixed_scope(namespace, user_id, agent_id)))


@click.group()
def keys() -> None:
    """API keys of `fivefold serve`, kept hashed in the config file."""


def _keys_file(ctx: click.Context) -> Path:
    given = ctx.find_root().obj["config_path"]
    return given if given is not None else default_config_path()


@keys.command(name="add")
@click.option("--namespace", "-n", required=True, help="The only namespace the key reaches.")
@click.option("--user", "user_id", help="Bind the key to this user id too.")
@click.option("--agent", "agent_id", help="Bind the key to this agent id too.")
@click.option("--label", default="", help="A note saying who holds the key.")
@click.pass_context
def keys_add(
    ctx: click.Context,
    /,
    namespace: str,
    user_id: str | None,
    agent_id: str | None,
    label: str,
) -> None:
    """Make a key; it is printed once and stored only as a hash."""
    _need_extra("tomlkit")  # rewrites the config file keeping its other lines
    from fivefold.serve.keys import add_key

    path = _keys_file(ctx)
    key, token = add_key(path, namespace=namespace, user_id=user_id, agent_id=agent_id, label=label)
    click.echo(token)
    click.echo(f"key {key.id} for namespace {key.namespace!r} saved in {path}", err=True)
    click.echo("the key is shown only now; running servers accept it after a restart", err=True)


@keys.command(name="list")
@click.pass_context
def keys_list(ctx: click.Context, /) -> None:
    """The keys in the config file (ids and scopes; secrets are never stored)."""
    from fivefold.serve.keys import load_keys

    for key in load_keys(_keys_file(ctx)):
        scope = key.namespace + "".join(
            f" {name}={value}"
            for name, value in (("user", key.user_id), ("agent", key.agent_id))
            if value
        )
        click.echo(f"{key.id}\t{scope}\t{key.created}\t{key.label}")


@keys.command(name="revoke")
@click.argument("key_id")
@click.pass_context
def keys_revoke(ctx: click.Context, /, key_id: str) -> None:
    """Remove a key; running servers refuse it after a restart."""
    _need_extra("tomlkit")
    from fivefold.serve.keys import revoke_key

    key = revoke_key(_keys_file(ctx), key_id)
    click.echo(f"revoked key {key.id} (namespace {key.namespace!r})", err=True)
