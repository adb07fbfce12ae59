"""The commands that act on a scope's data as a whole or on a memory's history: ``export``
(a scope out, as JSONL ``import`` reads back), ``forget-scope`` (a user's, agent's or
session's every trace) and ``history`` (a memory's supersession chain)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import click

from fivefold import errors
from fivefold.cli.context import open_memory, require_store, settings_of
from fivefold.cli.render import superseded_note


@click.command(name="export")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--namespace", "-n", default=None, help="One namespace (default: every one).")
@click.option("--user", "user_id", default=None, help="Only this user's memories.")
@click.option("--agent", "agent_id", default=None, help="Only this agent's memories.")
@click.option("--session", "session_id", default=None, help="Only this session's memories.")
@click.pass_context
def export_command(
    ctx: click.Context,
    /,
    path: Path,
    namespace: str | None,
    user_id: str | None,
    agent_id: str | None,
    session_id: str | None,
) -> None:
    """Write the store's memories (or a scope's) with their history, relations and aliases to
    PATH as JSONL; `fivefold import PATH` reads it back into another store."""
    from fivefold.cli.export import ExportScope, export_store

    scope = ExportScope(namespace, user_id, agent_id, session_id)
    if namespace is None and not scope.whole:
        raise errors.InvalidInput("--user, --agent and --session narrow one namespace: give -n")
    with open_memory(ctx, existing=True) as mem:
        # Written beside the file and moved over it once whole: a failed export leaves no
        # half file looking like a whole one.
        partial = path.with_name(path.name + ".partial")
        try:
            with partial.open("w", encoding="utf-8") as out:
                counts = export_store(mem, out, scope)
            partial.replace(path)
        finally:
            partial.unlink(missing_ok=True)
    click.echo(
        f"exported {counts.memories} memories, {counts.relations} relations and "
        f"{counts.aliases} aliases to {path}"
    )


def import_whole(
    ctx: click.Context, path: Path, fmt: str, namespace: str | None, *, batch_size: int
) -> None:
    """``import`` of an export or of chats: checked whole, then written (see their modules)."""
    if fmt == "export":
        from fivefold.cli.export import import_export

        if namespace is not None:
            raise errors.InvalidInput("an export keeps its memories' namespaces: -n is not taken")
        # Checked before the store is opened: a refused file makes no store at a new path.
        with ExitStack() as opened:
            counts = import_export(
                lambda: opened.enter_context(open_memory(ctx)),
                path,
                max_entities=settings_of(ctx).write.max_entities,
                batch=batch_size,
            )
        click.echo(
            f"imported {counts.memories} memories, {counts.relations} relations and "
            f"{counts.aliases} aliases from {path}"
        )
        return
    from fivefold.cli.chats import import_chats

    with ExitStack() as opened:
        written = import_chats(
            lambda: opened.enter_context(open_memory(ctx)), path, namespace=namespace
        )
    click.echo(f"imported {written} memories (chat turns) from {path}")


@click.command(name="forget-scope")
@click.option("--namespace", "-n", required=True, help="The namespace.")
@click.option("--user", "user_id", default=None, help="The user whose memories go.")
@click.option("--agent", "agent_id", default=None, help="The agent whose memories go.")
@click.option("--session", "session_id", default=None, help="Only this session's memories.")
@click.option(
    "--all-of-namespace",
    "whole",
    is_flag=True,
    help="With no --user, --agent or --session: forget the whole namespace.",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def forget_scope_command(
    ctx: click.Context,
    /,
    namespace: str,
    user_id: str | None,
    agent_id: str | None,
    session_id: str | None,
    whole: bool,
    yes: bool,
) -> None:
    """Forget every trace of a user, agent or session in a namespace (memories, the entities
    only they named, edges, feedback); print how many memories were removed."""
    narrowed = any(v is not None for v in (user_id, agent_id, session_id))
    if not narrowed and not whole:
        raise errors.InvalidInput(
            "no --user, --agent or --session given: that is the whole namespace; "
            "say --all-of-namespace to forget all of it"
        )
    if narrowed and whole:
        raise errors.InvalidInput("--all-of-namespace takes no --user, --agent or --session")
    require_store(ctx.obj["db"])
    if not yes:
        what = _scope_said(namespace, user_id, agent_id, session_id)
        click.confirm(f"forget every memory of {what}?", abort=True, err=True)
    with open_memory(ctx, existing=True) as mem:
        removed = mem.forget_scope(
            namespace, user_id=user_id, agent_id=agent_id, session_id=session_id
        )
    click.echo(f"forgot {removed} {'memory' if removed == 1 else 'memories'}")


def _scope_said(
    namespace: str, user_id: str | None, agent_id: str | None, session_id: str | None
) -> str:
    said = f"namespace {namespace!r}"
    for name, value in (("user", user_id), ("agent", agent_id), ("session", session_id)):
        if value is not None:
            said += f", {name} {value!r}"
    return said


@click.command(name="history")
@click.argument("memory_id", type=int)
@click.option("--namespace", "-n", default="default", show_default=True)
@click.option("--user", "user_id", default=None, help="User id scope.")
@click.option("--agent", "agent_id", default=None, help="Agent id scope.")
@click.pass_context
def history_command(
    ctx: click.Context, /, memory_id: int, namespace: str, user_id: str | None, agent_id: str | None
) -> None:
    """Print the supersession chain of MEMORY_ID, oldest first."""
    with open_memory(ctx, existing=True) as mem:
        chain = mem.history(memory_id, namespace=namespace, user_id=user_id, agent_id=agent_id)
    for record in chain:
        mark = "*" if record.id == memory_id else " "
        note = superseded_note(record)
        when = (record.event_at or record.created_at).date().isoformat()  # when it held from
        click.echo(f"{mark} #{record.id} {when} {record.content}" + (f"  ({note})" if note else ""))
