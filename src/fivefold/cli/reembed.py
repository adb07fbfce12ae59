"""Move a store to another embedding model (``fivefold reembed SRC DST``): every memory is
copied, in write order and under its own id, into a new store with a vector of the configured
model, which the new store records; then what ``migrate`` copies beside the memories.

The source is read, never written, so a store stays usable until its copy is verified. Each
batch notes how far the copy has come in its own transaction (``Store.progress``): run again
after a kill, it goes on after the last batch written. The copy is then verified: the counts
of every namespace, a vector of the new model for every memory, and a sample of them equal to
the model's embedding of the memory's text.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime

import click
import numpy as np

from fivefold.cli.migrate import (
    NamespaceCounts,
    OnProgress,
    _as_new,
    _by_namespace,
    _chunks,
    _counts,
    _oldest_first,
    check_source,
    copy_beside,
    echo_verification,
)
from fivefold.embed.base import KnownModel, Vectors
from fivefold.errors import EmbedderError, EmbeddingModelMismatch, InvalidInput
from fivefold.memory import Memory
from fivefold.store.protocol import Store
from fivefold.store.records import Progress
from fivefold.types import MemoryRecord
from fivefold.write.vectors import embed_text

__all__ = ["RecordedModel", "ReembedReport", "reembed", "reembed_command"]

PROGRESS_KEY = "reembed"
MARK = "reembed from "
# A stored vector and a fresh embedding of the same text agree to float32 noise.
SAME_VECTOR = 0.999


class RecordedModel(KnownModel):
    """Stands in for the model a store was built with, so that it opens to be read: its name
    and dimension, and no vectors (the source of a copy embeds nothing)."""

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise EmbedderError(f"the model {self._name!r} is not loaded: this store is only read")


@dataclass(frozen=True, slots=True)
class ReembedReport:
    namespaces: dict[str, NamespaceCounts]
    model: str
    copied: int
    resumed_after: int | None  # the last id an earlier, killed run wrote
    missing_vectors: int
    sampled: int
    same_vectors: int
    aliases_left_out: tuple[str, ...] = ()

    @property
    def verified(self) -> bool:
        counts = all(c.equal for c in self.namespaces.values())
        return counts and not self.missing_vectors and self.same_vectors == self.sampled


def reembed(
    source: Memory,
    target: Memory,
    *,
    batch: int = 256,
    sample: int = 20,
    on_progress: OnProgress | None = None,
) -> ReembedReport:
    """Copy ``source`` into ``target`` (empty, or the unfinished copy of an earlier run of
    this source) with ``target``'s embedder, then verify it."""
    if batch < 1:
        raise InvalidInput(f"batch must be at least 1, got {batch}")
    src, dst = source.store, target.store
    if src.embedding_model == dst.embedding_model:
        raise InvalidInput(
            f"{src.location} is embedded with {src.embedding_model!r} already: set [embed] in "
            "the config to the model to move it to"
        )
    resumed = _resume_point(source, dst)
    namespaces = src.admin.held_namespaces()
    listed = sorted((i, ns) for ns in namespaces for i in _oldest_first(src, ns))
    if resumed is None:
        check_source(source, keyed_names=dst.keyed_names)
        begun = f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC"
        dst.admin.mark_copy(f"{MARK}{src.location}, begun {begun}")
    copied = _present(dst, [p for p in listed if resumed is not None and p[0] <= resumed])
    todo = [p for p in listed if resumed is None or p[0] > resumed]
    total, done = len(listed), len(listed) - len(todo)
    noted = dst.admin.progress(PROGRESS_KEY)
    for chunk in _chunks(todo, batch):
        records: dict[int, MemoryRecord] = {}
        for namespace, ids in _by_namespace(chunk).items():
            records.update(src.reads.get_memories(namespace, ids))
        kept = [i for i, _ in chunk if i in records]  # not one forgotten since it was listed
        memories = [_as_new(records[i]) for i in kept]
        vectors = target.embedder.embed([embed_text(m) for m in memories])
        note = Progress(PROGRESS_KEY, str(chunk[-1][0]), noted)
        if kept:
            dst.writes.insert_memories(memories, vectors, ids=kept, progress=note)
            noted = note.value
        copied.update(kept)
        done += len(chunk)
        if on_progress is not None:
            on_progress(done, total)
    dst.admin.next_memory_id(at_least=src.admin.next_memory_id())
    left_out = copy_beside(src, dst, namespaces, copied)[4]
    counts = {
        ns: _counts(src, dst, ns) for ns in sorted({*namespaces, *src.admin.held_namespaces()})
    }
    missing, sampled, same = _check_vectors(target, listed, sample)
    dst.admin.mark_copy(None)
    return ReembedReport(
        counts,
        dst.embedding_model,
        len(copied),
        resumed,
        missing,
        sampled,
        same,
        tuple(left_out),
    )


def _resume_point(source: Memory, dst: Store) -> int | None:
    """The last id an unfinished run of this copy wrote (-1: none yet); None for a new copy
    into an empty store. Anything else is refused before a row is written."""
    mark = dst.admin.copy_mark()
    if mark is None:
        if held := dst.admin.held_namespaces():
            raise InvalidInput(
                f"{dst.location} already holds data (namespace {held[0][:40]!r}): reembed "
                "into a new store"
            )
        return None
    if not mark.startswith(f"{MARK}{source.store.location}, "):
        raise InvalidInput(
            f"{dst.location} holds another copy that did not finish ({mark}): reembed into a "
            "new store"
        )
    noted = dst.admin.progress(PROGRESS_KEY)
    return -1 if noted is None else int(noted)


def _present(dst: Store, pairs: Sequence[tuple[int, str]]) -> set[int]:
    found: set[int] = set()
    for chunk in _chunks(pairs, 1000):
        for namespace, ids in _by_namespace(chunk).items():
            found.update(dst.reads.get_memories(namespace, ids))
    return found


def _check_vectors(
    target: Memory, listed: Sequence[tuple[int, str]], sample: int
) -> tuple[int, int, int]:
    """Memories of the copy without a vector; then, of ``sample`` memories, how many hold the
    model's own embedding of their text."""
    dst = target.store
    missing = 0
    for chunk in _chunks(listed, 1000):
        for namespace, ids in _by_namespace(chunk).items():
            held = dst.reads.get_memories(namespace, ids)
            missing += len(set(held) - set(dst.search.vectors(namespace, list(held))))
    picked = random.Random(0).sample(list(listed), min(sample, len(listed)))
    records = [
        record for i, ns in picked if (record := dst.reads.get_memories(ns, [i]).get(i)) is not None
    ]
    if not records:
        return missing, 0, 0
    fresh = target.embedder.embed([embed_text(_as_new(r)) for r in records])
    same = 0
    for record, vector in zip(records, fresh, strict=True):
        stored = dst.search.vectors(record.namespace, [record.id]).get(record.id)
        same += int(stored is not None and float(np.dot(stored, vector)) >= SAME_VECTOR)
    return missing, len(records), same


@click.command("reembed")
@click.argument("source")
@click.argument("destination")
@click.option("--batch", default=256, show_default=True, help="Memories per embedding call.")
@click.option("--sample", default=20, show_default=True, help="Vectors checked at the end.")
@click.pass_context
def reembed_command(
    ctx: click.Context, /, source: str, destination: str, batch: int, sample: int
) -> None:
    """Copy the store SOURCE into the new store DESTINATION with the embedding model of the
    config's [embed], then verify the copy; run again after an interruption, it goes on where
    it stopped. SOURCE is left as it was: point --db at DESTINATION once verified. Exit 0 when
    verified, 1 when not."""
    from rich.console import Console
    from rich.progress import Progress as Bar

    from fivefold.cli.context import require_store, settings_of
    from fivefold.embed.providers import build_embedder

    require_store(source)
    config = settings_of(ctx)
    embedder = build_embedder(config.embed)
    try:
        Memory.open(source, embedder=embedder, config=config).close()
    except EmbeddingModelMismatch as exc:
        if exc.stored_model is None or exc.stored_dim is None:
            raise
        recorded = RecordedModel(exc.stored_model, exc.stored_dim)
    else:
        raise InvalidInput(
            f"{source} is embedded with {embedder.name!r} already: set [embed] in the config "
            "to the model to move it to"
        )
    with ExitStack() as stack:
        src = stack.enter_context(Memory.open(source, embedder=recorded, config=config))
        dst = stack.enter_context(Memory.open(destination, embedder=embedder, config=config))
        console = Console(stderr=True)
        bar = stack.enter_context(
            Bar(console=console, transient=True, disable=not console.is_terminal)
        )
        task = bar.add_task(f"embedding with {embedder.name}", total=None)

        def on_progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
            if not console.is_terminal:  # a log gets a line a batch, not a bar
                click.echo(f"reembed: {done}/{total} memories", err=True)

        report = reembed(src, dst, batch=batch, sample=sample, on_progress=on_progress)
    if report.resumed_after is not None:
        click.echo(f"resumed after memory {report.resumed_after}")
    echo_verification(
        report.namespaces,
        f"{report.copied} memories embedded with {report.model!r}; "
        f"{report.missing_vectors} without a vector; "
        f"{report.same_vectors}/{report.sampled} sampled vectors are the model's",
        report.aliases_left_out,
        verified=report.verified,
    )
    click.echo(f"verified: point --db at {destination}")
