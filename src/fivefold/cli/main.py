"""The ``fivefold`` command line. Errors of the library become one line on stderr and an exit
code (2 bad input, 3 not found, 4 store problem, 1 anything else of ours); never a traceback."""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, ParamSpec, TypeVar

import click
from rich.console import Console

from fivefold import errors
from fivefold.cli.context import default_dim, open_memory, require_store, settings_of
from fivefold.cli.errors import friendly
from fivefold.cli.render import (
    explanation_json,
    metrics_json,
    print_explanation,
    print_hits,
    print_metrics,
    print_stats,
    result_json,
)
from fivefold.config import Config
from fivefold.config.file import config_in_effect, config_to_toml
from fivefold.write.prepare import check
from fivefold.write.relations import alias_of, relation_of

if TYPE_CHECKING:
    from fivefold.cli.importers import ImportReport
    from fivefold.types import TrainReport

P = ParamSpec("P")
R = TypeVar("R")


def _scope_options(command: Callable[P, R]) -> Callable[P, R]:
    command = click.option("--agent", "agent_id", default=None, help="Agent id scope.")(command)
    command = click.option("--user", "user_id", default=None, help="User id scope.")(command)
    return click.option("--namespace", "-n", default="default", show_default=True)(command)


class _Cli(click.Group):
    """The ``fivefold`` group: every command's library errors as one line and an exit code
    (``friendly``); an option of its own given after the command is named as such (click said
    "No such option: --db" and no more); the commands that serve and benchmark are imported
    only when one of them runs, so a recall loads neither."""

    lazy: ClassVar[Mapping[str, tuple[str, str]]] = {
        "bench": ("fivefold.bench.cli", "bench"),
        "serve": ("fivefold.cli.serve", "serve"),
        "mcp": ("fivefold.cli.serve", "mcp"),
        "keys": ("fivefold.cli.serve", "keys"),
        "reembed": ("fivefold.cli.reembed", "reembed_command"),
        "export": ("fivefold.cli.scoped", "export_command"),
        "forget-scope": ("fivefold.cli.scoped", "forget_scope_command"),
        "history": ("fivefold.cli.scoped", "history_command"),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, name = self.lazy[cmd_name]
            command = getattr(importlib.import_module(module), name)
            assert isinstance(command, click.Command)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with friendly():
                return super().invoke(ctx)
        except click.NoSuchOption as exc:
            # ``bench`` takes no store or settings of fivefold's: the hint would mislead there.
            if exc.option_name not in ("--db", "--config") or ctx.invoked_subcommand == "bench":
                raise
            raise click.UsageError(
                f"{exc.option_name} is an option of fivefold itself: it goes before the "
                f"command (fivefold {exc.option_name} ... {ctx.invoked_subcommand} ...)",
                ctx=exc.ctx,
            ) from None


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    envvar="FIVEFOLD_DB",
    default=None,
    help="Store path or URL (env FIVEFOLD_DB); default: memory.db in the user data directory.",
)
@click.option(
    "--config",
    "config_path",
    envvar="FIVEFOLD_CONFIG",
    type=click.Path(path_type=Path),
    default=None,
    help="Settings file (env FIVEFOLD_CONFIG); default: config.toml in the user config "
    "directory if it exists, else the built-in defaults.",
)
@click.version_option(package_name="fivefold")
@click.pass_context
def cli(ctx: click.Context, db: str | None, config_path: Path | None) -> None:
    """fivefold: long-term memory for AI agents (remember, relate, recall)."""
    ctx.obj = {"db": db, "config_path": config_path}


@cli.command()
@click.argument("content")
@click.option("--type", "mtype", type=click.Choice(["fact", "preference", "event", "entity"]))
@click.option("--predicate", help='Short structured phrase, e.g. "badge ID is 47821".')
@click.option("--event-at", help="When it happened (ISO 8601).")
@click.option("--entity", "entities", multiple=True, help="An entity named (repeatable).")
@click.option("--importance", type=float, help="Prior in [0, 1].")
@click.option("--session", "session_id", help="Conversation session id.")
@click.option("--metadata", help="A JSON object stored with the memory.")
@_scope_options
@click.pass_context
def remember(ctx: click.Context, /, content: str, mtype: str | None, **opts: Any) -> None:
    """Store one memory; print its id and what was inferred."""
    metadata = _json_object(opts.pop("metadata"))
    entities = list(opts.pop("entities")) or None
    given = {"content": content, "type": mtype, "metadata": metadata, "entities": entities, **opts}
    # Refused before the store is opened: a refused write at a new path left an empty store.
    check(
        {k: v for k, v in given.items() if v is not None},
        max_entities=settings_of(ctx).write.max_entities,
        dim=default_dim(ctx),
    )
    with open_memory(ctx) as mem:
        rec = mem.remember(content, type=mtype, metadata=metadata, entities=entities, **opts)
    click.echo(
        json.dumps(
            {
                "id": rec.id,
                "type": rec.type.value,
                "predicate": rec.predicate,
                "event_at": rec.event_at.isoformat() if rec.event_at else None,
                "entities": list(rec.entities),
            }
        )
    )


@cli.command()
@click.argument("query")
@click.option("-k", default=10, show_default=True, help="Number of memories to return.")
@click.option("--now", help="Reference time for 'yesterday', 'last week' (ISO 8601).")
@click.option("--type", "types", multiple=True, help="Force a type filter (repeatable).")
@click.option("--budget", type=click.Choice(["low", "mid", "high"]), default="mid")
@click.option("--session", "session_id", help="Current session (for 'since we last talked').")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--explain", is_flag=True, help="Show each retriever's list and the fusion terms.")
@_scope_options
@click.pass_context
def recall(
    ctx: click.Context,
    /,
    query: str,
    types: tuple[str, ...],
    as_json: bool,
    explain: bool,
    **opts: Any,
) -> None:
    """Recall the memories that answer QUERY."""
    with open_memory(ctx, existing=True) as mem:
        if explain:
            explanation = mem.explain(query, types=list(types) or None, **opts)
            if as_json:
                click.echo(json.dumps(explanation_json(explanation), indent=2))
            else:
                # The hits' records, for the memory that superseded each (explain has no such).
                scope = {k: opts[k] for k in ("namespace", "user_id", "agent_id")}
                records = {h.id: mem.get(h.id, **scope) for h in explanation.hits}
                print_explanation(Console(), explanation, records)
            return
        result = mem.recall(query, types=list(types) or None, **opts)
    if as_json:
        click.echo(json.dumps(result_json(result), indent=2))
    else:
        print_hits(Console(), result)


@cli.command()
@click.argument("source")
@click.argument("relation")
@click.argument("target")
@click.option(
    "--kind", type=click.Choice(["structural", "semantic", "lifecycle"]), default="structural"
)
@click.option("--confidence", type=float, default=1.0, show_default=True)
@click.option("--valid-from", help="ISO 8601 start of validity.")
@click.option("--valid-to", help="ISO 8601 end of validity (lifecycle edges fade after it).")
@click.option("--no-record", is_flag=True, help="Add the edge only; store no fact memory.")
@_scope_options
@click.pass_context
def relate(ctx: click.Context, /, no_record: bool, **opts: Any) -> None:
    """Add a typed edge SOURCE -RELATION-> TARGET between two entities."""
    settings_of(ctx)  # a broken config file is said first
    relation_of(record=not no_record, **opts)  # refused before a store is made
    with open_memory(ctx) as mem:
        edge = mem.relate(record=not no_record, **opts)
    click.echo(json.dumps({"id": edge.id, "memory_id": edge.memory_id}))


@cli.command()
@click.argument("name")
@click.argument("alias")
@click.option("--namespace", "-n", default="default", show_default=True)
@click.pass_context
def alias(ctx: click.Context, /, name: str, alias: str, namespace: str) -> None:
    """Make ALIAS another name of the entity NAME."""
    settings_of(ctx)  # a broken config file is said first
    alias_of(name, alias, namespace=namespace)  # refused before a store is made
    with open_memory(ctx) as mem:
        entity = mem.alias(name, alias, namespace=namespace)
    click.echo(json.dumps({"entity": entity.name, "aliases": list(entity.aliases)}))


@cli.command()
@click.argument("memory_id", type=int)
@click.option(
    "--namespace", "-n", default="default", show_default=True, help="The memory's namespace."
)
@click.pass_context
def forget(ctx: click.Context, /, memory_id: int, namespace: str) -> None:
    """Delete memory MEMORY_ID (of the namespace) and everything derived from it."""
    with open_memory(ctx, existing=True) as mem:
        mem.forget(memory_id, namespace=namespace)
    click.echo(f"forgot {memory_id}")


@cli.command(name="import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", "jsonl", "chat", "export", "locomo"]),
    default="auto",
    show_default=True,
)
@click.option(
    "--namespace", "-n", default=None, help="Namespace (default: per record / per conversation)."
)
@click.option("--batch-size", default=256, show_default=True, type=click.IntRange(1))
@click.option(
    "--on-error",
    type=click.Choice(["stop", "skip"]),
    default="stop",
    show_default=True,
    help="At a bad record: stop there (earlier batches stay imported) or leave it out.",
)
@click.option(
    "--again",
    is_flag=True,
    help="Import every record, even those an earlier import of them into this store did.",
)
@click.pass_context
def import_(
    ctx: click.Context,
    /,
    path: Path,
    fmt: str,
    namespace: str | None,
    batch_size: int,
    on_error: Literal["stop", "skip"],
    again: bool,
) -> None:
    """Import memories from a JSONL file (one remember() record per line, a chat per line,
    or a `fivefold export`) or LoCoMo JSON. Each batch is one transaction; a bad record is
    reported with its line number. Run again (after an interrupt, a fixed line, or on a file
    that has grown), it starts after the records an earlier import of them wrote to this
    store. Chats and exports are checked whole first: a bad line and nothing is imported."""
    from fivefold.cli.chats import sniff
    from fivefold.cli.importers import ImportInterrupted, ImportReport, import_file

    if fmt == "auto" and path.suffix.lower() in (".jsonl", ".ndjson"):
        fmt = sniff(path)
    if fmt in ("chat", "export"):
        from fivefold.cli.scoped import import_whole

        settings_of(ctx)  # a broken config file is said first
        if on_error == "skip":  # checked whole: a bad line stops it with nothing written
            raise errors.InvalidInput(f"--on-error skip does not apply to --format {fmt}")
        import_whole(ctx, path, fmt, namespace, batch_size=batch_size)
        return

    report = ImportReport()  # filled as batches commit: read after an interrupt too
    checked = functools.partial(
        check, max_entities=settings_of(ctx).write.max_entities, dim=default_dim(ctx)
    )  # the settings first: a broken config file is said before any record is read
    try:
        with ExitStack() as opened:
            import_file(
                lambda: opened.enter_context(open_memory(ctx)),  # by the first batch it writes
                path,
                fmt=fmt,
                namespace=namespace,
                batch_size=batch_size,
                on_error=on_error,
                checked=checked,
                report=report,
                again=again,
            )
    except ImportInterrupted as stopped:
        _said_earlier(path, report)
        for where, problem in report.skipped:
            click.echo(f"skipped {path}: {where}: {problem}", err=True)
        left_out = f"; {len(report.skipped)} bad records left out" if report.skipped else ""
        done = f"{report.imported} memories from {path} were imported"
        if stopped.first is None:
            said = f"all {done}{left_out}"
        elif stopped.last is None:
            said = f"{done} (of the records before {stopped.first}){left_out}; nothing from "
            said += f"{stopped.first} on was"
        else:
            said = f"{done} (of the records before {stopped.first}){left_out}; the batch "
            said += f"{stopped.first} to {stopped.last} may or may not have been (`fivefold "
            said += "stats` counts them); nothing after it was"
        if stopped.first is not None:
            said += "; the same command imports the rest"
        click.echo(f"interrupted: {said}", err=True)
        ctx.exit(130)
    except KeyboardInterrupt:
        # Outside the batches: while the file was read (nothing written), or after the last one
        # (each committed; the store's closing, which its next open finishes, cut short).
        for where, problem in report.skipped:
            click.echo(f"skipped {path}: {where}: {problem}", err=True)
        if report.imported:
            said = f"all {report.imported} memories from {path} were imported"
        else:
            said = f"nothing from {path} was imported"
        click.echo(f"interrupted: {said}", err=True)
        ctx.exit(130)
    _said_earlier(path, report)
    for where, problem in report.skipped:
        click.echo(f"skipped {path}: {where}: {problem}", err=True)
    count = len(report.skipped)
    skipped = f"; skipped {count} bad record{'s' * (count != 1)}" if count else ""
    memories = "memory" if report.imported == 1 else "memories"
    repeats = f" ({report.repeats} repeated stored ones: written once)" if report.repeats else ""
    click.echo(f"imported {report.imported} {memories} from {path}{repeats}{skipped}")


def _said_earlier(path: Path, report: ImportReport) -> None:
    if report.earlier:
        which = "all" if report.earlier == report.records else f"the first {report.earlier:,} of"
        click.echo(
            f"{which} {report.records:,} records of {path}: imported into this store by an "
            "earlier run, not again (--again imports them again)",
            err=True,
        )


@cli.command()
@click.argument("recall_id")
@click.option("--relevant", type=int, multiple=True, help="A memory that answered (repeatable).")
@click.option("--used", type=int, multiple=True, help="A memory the agent used (repeatable).")
@click.pass_context
def feedback(
    ctx: click.Context, /, recall_id: str, relevant: tuple[int, ...], used: tuple[int, ...]
) -> None:
    """Say which memories answered the recall RECALL_ID (from `recall --json`), for `train`."""
    with open_memory(ctx, existing=True) as mem:
        made = mem.feedback(recall_id, relevant=list(relevant), used=list(used))
    click.echo(json.dumps({"feedback": made}))


@cli.command()
@click.option("--namespace", "-n", default="default", show_default=True)
@click.pass_context
def train(ctx: click.Context, /, namespace: str) -> None:
    """Fit learned fusion on the namespace's feedback; keep it only if it beats the rules on
    held-out recalls, of users it was not fit on (optimizer.mode = "learned" ranks with it;
    learned.scope = "user": a model per user)."""
    with open_memory(ctx, existing=True) as mem:
        report = mem.train(namespace=namespace)
    for one in report.per_user or (report,):
        click.echo(_trained(one))


def _trained(report: TrainReport) -> str:
    verdict = "accepted: it ranks" if report.accepted else "not accepted: the rules keep ranking"
    whose = f"namespace {report.namespace!r}"
    if report.user_id is not None:
        whose = f"user {report.user_id!r} of {whose}"
    held = f"held out {report.held_out}"
    if report.held_out_users:
        held += f" ({report.held_out_users} users, each ranked by a model fit on the others')"
    capped = f" ({report.capped} left out by learned.max_user_share)" if report.capped else ""
    note = f" ({report.note})" if report.note else ""
    return (
        f"model v{report.version} of {whose}, fit on {report.recalls} recalls{capped}; {held}: "
        f"recall@10 {report.model_recall:.3f} (rules {report.rules_recall:.3f}); {verdict}{note}"
    )


@cli.command()
@click.option("--repair", is_flag=True, help="Rebuild every index found out of step.")
@click.pass_context
def doctor(ctx: click.Context, /, repair: bool) -> None:
    """Check the store: its pages and rows, the lexical indexes, each namespace's dense index
    and saved HNSW graph. Exit 0 when all is well (or repaired), 4 when a problem remains."""
    from fivefold.store.sqlite.files import Damaged

    try:
        with open_memory(ctx, existing=True) as mem:
            findings = mem.store.admin.check(repair=repair)
    except Damaged:
        from fivefold.store import local_file
        from fivefold.store.sqlite.check import check_unopened

        # Too damaged to open: its pages can still be checked (only then: another program's
        # database, a newer schema or a FIFO is said as the open said it).
        file = local_file(ctx.obj["db"])
        unopened = None if file is None else check_unopened(file)
        if unopened is None:
            raise
        findings = unopened
    for finding in findings:
        state = "repaired" if finding.repaired and finding.ok else "ok" if finding.ok else "problem"
        click.echo(f"{state}: {finding.part}: {finding.detail}")
    failing = {finding.part for finding in findings if not finding.ok}
    if failing:
        # Rows and an unfinished copy are not repaired: their findings say what to do.
        rebuilt = not repair and failing - {"database", "copy", "indexes", "tables", "rows"}
        raise errors.StoreError("problems remain" + ("; --repair rebuilds indexes" * bool(rebuilt)))


@cli.command()
@click.argument("source")
@click.argument("destination")
@click.option("--batch", default=500, show_default=True, help="Memories per transaction.")
@click.option("--sample", default=20, show_default=True, help="Recalls compared after copying.")
@click.pass_context
def migrate(ctx: click.Context, /, source: str, destination: str, batch: int, sample: int) -> None:
    """Copy the store SOURCE into the empty store DESTINATION (file paths or postgresql://
    URLs, either way), then verify: counts per namespace and a sample of recalls. Exit 0 when
    verified, 1 when not."""
    from rich.progress import Progress

    from fivefold.cli.migrate import check_source, echo_verification
    from fivefold.cli.migrate import migrate as copy_store
    from fivefold.embed.providers import build_embedder
    from fivefold.memory import Memory
    from fivefold.store import keyed_names

    require_store(source)  # a mistyped source would be an empty store, "copied" as verified
    config = settings_of(ctx)
    embedder = build_embedder(config.embed)  # one model for both stores
    with ExitStack() as stack:
        src = stack.enter_context(Memory.open(source, embedder=embedder, config=config))
        check_source(src, keyed_names=keyed_names(destination))  # before a destination is made
        dst = stack.enter_context(Memory.open(destination, embedder=embedder, config=config))
        console = Console(stderr=True)  # the bar on a terminal only: a log gets no blank line
        progress = stack.enter_context(
            Progress(console=console, transient=True, disable=not console.is_terminal)
        )
        task = progress.add_task("copying memories", total=None)

        def on_progress(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        try:
            report = copy_store(
                src, dst, batch=batch, sample=sample, on_progress=on_progress, source_checked=True
            )
        except KeyboardInterrupt:
            progress.stop()
            if dst.store.admin.copy_mark() is not None:
                said = (
                    f"{destination} holds part of the copy, marked unfinished (`fivefold "
                    "doctor` reports it, migrate refuses it): copy again into a new, empty store"
                )
            elif dst.stats().memories:  # copied whole, cut off while it was being verified
                said = (
                    f"the copy into {destination} was made, not verified (`fivefold doctor` "
                    "and `stats` check it)"
                )
            else:
                said = f"nothing was copied into {destination}"
            click.echo(f"interrupted: {said}", err=True)
            ctx.exit(130)
    echo_verification(
        report.namespaces,
        f"relations {report.relations}, aliases {report.aliases}, feedback {report.feedback}, "
        f"models {report.models}; "
        f"{report.same_rankings}/{report.sampled} sampled recalls ranked the same",
        report.aliases_left_out,
        verified=report.verified,
    )


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def stats(ctx: click.Context, /, as_json: bool) -> None:
    """Counts, namespaces, types, embedding model and size of the store, and this process's
    recall metrics."""
    with open_memory(ctx, existing=True) as mem:
        store_stats = mem.stats()
        metrics = mem.metrics()
    if as_json:
        payload = {**asdict(store_stats), "metrics": metrics_json(metrics)}
        click.echo(json.dumps(payload, indent=2, default=dict))
    else:
        console = Console()
        print_stats(console, store_stats)
        print_metrics(console, metrics)


@cli.command()
@click.option("-k", default=3, show_default=True, help="Hits shown per query.")
@click.pass_context
def demo(ctx: click.Context, /, k: int) -> None:
    """Load the bundled sample of a fictional engineer's memories into a throwaway store and
    run queries of every kind, showing plan and top hits."""
    from fivefold.cli.demo import run_demo

    # Misses are part of what the demo shows, not a failure of the command.
    run_demo(Console(), k=k, config=settings_of(ctx))


@cli.group(name="config")
def config_group() -> None:
    """Show the settings in effect and which file they come from."""


@config_group.command(name="show")
@click.option("--defaults", is_flag=True, help="Print the built-in defaults instead.")
@click.pass_context
def config_show(ctx: click.Context, /, defaults: bool) -> None:
    """Print the effective settings as TOML (every key; never the API key)."""
    click.echo(config_to_toml(Config() if defaults else settings_of(ctx)), nl=False)


@config_group.command(name="path")
@click.pass_context
def config_path(ctx: click.Context, /) -> None:
    """Print the config file in effect, or "built-in defaults"."""
    path = config_in_effect(ctx.obj["config_path"])
    click.echo("built-in defaults" if path is None else str(path))


def _json_object(raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise errors.InvalidInput(f"--metadata is not valid JSON: {exc}") from exc
    except RecursionError:
        raise errors.InvalidInput("--metadata is nested too deeply") from None
    if not isinstance(value, dict):
        raise errors.InvalidInput("--metadata must be a JSON object")
    return value


def main() -> None:
    cli(prog_name="fivefold")
