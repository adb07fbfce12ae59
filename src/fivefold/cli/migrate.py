"""Copy a store into another, on either backend (``fivefold migrate SRC DST``).

Memories go over in write order (their ids' order, across namespaces) under their own ids and
with their own embeddings, so the destination derives the same session context, mentions and
co-mention edges, and an id saved from the source names the same memory in the copy; then per
namespace the explicit edges (``relate``, each pointing at its fact memory), the declared
aliases, learned fusion's feedback and the namespace's ranking models (its newest accepted one,
and each user's own).
The copy is then verified: the counts of every namespace, and a sample of recalls whose
rankings (ids and scores) must agree.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

import click
import numpy as np

from fivefold import validate
from fivefold.errors import FivefoldError, InvalidInput, StoreError
from fivefold.memory import Memory
from fivefold.store.protocol import Store
from fivefold.store.records import NewEdge, NewMemory
from fivefold.store.shared.batch import IdTaken
from fivefold.types import MemoryRecord, Scope

PAGE = 1000
T = TypeVar("T")
OnProgress = Callable[[int, int], None]  # (done, total)


@dataclass(frozen=True, slots=True)
class NamespaceCounts:
    memories: tuple[int, int]
    entities: tuple[int, int]
    edges: tuple[int, int]

    @property
    def equal(self) -> bool:
        return all(a == b for a, b in (self.memories, self.entities, self.edges))

    def said(self, namespace: str) -> str:
        """The line a copy's verification prints for ``namespace``."""
        return (
            f"{'ok' if self.equal else 'MISMATCH'}: namespace {namespace!r}: memories "
            f"{self.memories[0]} -> {self.memories[1]}, entities {self.entities[0]} -> "
            f"{self.entities[1]}, edges {self.edges[0]} -> {self.edges[1]}"
        )


def echo_verification(
    namespaces: Mapping[str, NamespaceCounts],
    summary: str,
    aliases_left_out: Sequence[str],
    *,
    verified: bool,
) -> None:
    """What a copy prints once it is verified: a line per namespace, ``summary``, and the
    aliases it left out (on stderr); a copy that did not verify is an error."""
    for namespace, counts in namespaces.items():
        click.echo(counts.said(namespace))
    click.echo(summary)
    for line in aliases_left_out:
        click.echo(f"left out: {line}", err=True)
    if not verified:
        raise FivefoldError("the copy did not verify (see above)")


@dataclass(frozen=True, slots=True)
class MigrationReport:
    """Source and destination counts per namespace, and how many sampled recalls agreed."""

    namespaces: dict[str, NamespaceCounts]
    relations: int
    aliases: int
    sampled: int
    same_rankings: int
    feedback: int = 0
    models: int = 0
    # Aliases the destination refused: a store made before ``alias`` refused one that names
    # two entities can hold such; the copy keeps the first, as the source's reads resolved it.
    aliases_left_out: tuple[str, ...] = ()

    @property
    def verified(self) -> bool:
        counts = all(c.equal for c in self.namespaces.values())
        return counts and self.same_rankings == self.sampled


def check_source(source: Memory, *, keyed_names: bool) -> None:
    """Refuse a source that cannot be copied into a store of ``keyed_names`` (``Store``'s:
    Postgres), before the destination is opened (the CLI: a refused copy makes no store)."""
    if (note := source.store.admin.copy_mark()) is not None:
        raise InvalidInput(
            f"{source.store.location} is a copy that did not finish ({note}): copied on, it "
            "would look whole; copy its own source again"
        )
    if keyed_names and not source.store.keyed_names:  # what it holds, the destination may not
        _check_names(source.store, source.store.admin.held_namespaces())


def migrate(
    source: Memory,
    target: Memory,
    *,
    batch: int = 500,
    sample: int = 20,
    on_progress: OnProgress | None = None,
    source_checked: bool = False,
) -> MigrationReport:
    """Copy ``source`` into the empty ``target`` and verify the copy. ``source_checked``: the
    caller ran ``check_source`` for the target's kind (a scan of every memory, not repeated)."""
    if batch < 1:
        raise InvalidInput(f"batch must be at least 1, got {batch}")
    if not source_checked:
        check_source(source, keyed_names=target.store.keyed_names)
    if (note := target.store.admin.copy_mark()) is not None:
        raise InvalidInput(
            f"{target.store.location} holds a copy that did not finish ({note}): migrate into "
            "an empty store (a new file, or a new Postgres schema)"
        )
    if held := target.store.admin.held_namespaces():
        raise InvalidInput(
            f"{target.store.location} already holds data (namespace {held[0][:40]!r}): "
            "migrate into an empty store"
        )
    src, dst = source.store, target.store
    namespaces = src.admin.held_namespaces()
    # Every namespace's ids in one ascending list: a store's ids are its own across namespaces,
    # and the destination takes given ids only from its next one on (never one it gave).
    listed = sorted((i, ns) for ns in namespaces for i in _oldest_first(src, ns))
    if listed and (after := dst.admin.next_memory_id()) > listed[0][0]:
        raise InvalidInput(
            f"{dst.location} has given ids up to {after - 1} (to memories forgotten since): "
            f"a copy keeps its source's ids, from {listed[0][0]}, and no store gives an id "
            "twice: migrate into a new store"
        )
    # Marked until the copy is whole: a copy killed half way leaves a store `fivefold doctor`
    # reports (it said "ok" of the part copied) and this function refuses to copy into or
    # from. Claimed at once with the emptiness: of two copies into one store, one goes on.
    dst.admin.mark_copy(f"from {src.location}, begun {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC")
    total, done = src.admin.stats().memories, 0
    copied: set[int] = set()
    for chunk in _chunks(listed, batch):
        records: dict[int, MemoryRecord] = {}
        vectors: dict[int, Any] = {}
        for namespace, ids in _by_namespace(chunk).items():
            records.update(src.reads.get_memories(namespace, ids))
            vectors.update(src.search.vectors(namespace, ids))
        # A memory forgotten since the ids were listed (or a row the source cannot read) is
        # not copied: the counts below compare the stores as they end.
        kept = [i for i, _ in chunk if i in records and i in vectors]
        if kept:
            try:
                dst.writes.insert_memories(
                    [_as_new(records[i]) for i in kept],
                    np.stack([vectors[i] for i in kept]),
                    ids=kept,
                )
            except IdTaken as exc:  # its ids passed the copy's: another writer's
                raise StoreError(
                    f"{dst.location}: another process wrote into it during the copy ({exc}); "
                    "the copy stopped there, unfinished: migrate into a new store"
                ) from exc
            copied.update(kept)
        done += len(chunk)
        if on_progress is not None:
            on_progress(done, total)
    # The source's next id too: one it gave a memory forgotten since is not given anew here.
    dst.admin.next_memory_id(at_least=src.admin.next_memory_id())
    relations, aliases, feedback, models, left_out = copy_beside(src, dst, namespaces, copied)
    # Every namespace the source holds now: one another process began meanwhile (or memories
    # it added to one already copied) shows as a mismatch, not as a verified copy.
    counts = {
        ns: _counts(src, dst, ns) for ns in sorted({*namespaces, *src.admin.held_namespaces()})
    }
    dst.admin.mark_copy(None)
    # Scores compare only when both stores' statistics count the current rows alone (the
    # embedded store's lexical index keeps counting a replaced or forgotten text until merged).
    src.admin.compact()
    dst.admin.compact()
    sampled, same = _compare_recalls(source, target, namespaces, sample)
    return MigrationReport(
        counts, relations, aliases, sampled, same, feedback, models, tuple(left_out)
    )


def copy_beside(
    src: Store, dst: Store, namespaces: Sequence[str], copied: set[int]
) -> tuple[int, int, int, int, list[str]]:
    """What a copy takes beside the memories, per namespace: the explicit edges, the
    declared aliases, the feedback and the namespace's ranking model. Their counts (relations,
    aliases, feedback, models) and the aliases left out."""
    relations = aliases = feedback = models = 0
    left_out: list[str] = []
    for namespace in namespaces:
        for edge in src.admin.relations(namespace):
            memory_id = edge.memory_id if edge.memory_id in copied else None
            dst.writes.add_edge(replace(edge, memory_id=memory_id))
            relations += 1
        for name, alias in src.admin.aliases(namespace):
            try:
                # As the source resolved it: an alias naming two entities there folds none.
                dst.writes.add_alias(namespace, name, alias, merge=False)
            except InvalidInput as exc:  # an older store's alias naming two entities
                left_out.append(f"namespace {namespace!r}: alias {alias!r} of {name!r}: {exc}")
                continue
            aliases += 1
        for entry in src.models.feedback(namespace):
            labels = {i: v for i, v in entry.labels.items() if i in copied}
            dst.models.add_feedback(namespace, entry.query, entry.args, labels, entry.created_at)
            feedback += 1
        # The model that ranks the namespace, so both stores rank alike (its older versions
        # and the ones training refused stay behind).
        saved = src.models.learned_model(namespace)
        if saved is not None:
            dst.models.save_model(namespace, saved[1], accepted=True)
            models += 1
        for user in src.models.model_users(namespace):  # each user's own, likewise
            mine = src.models.learned_model(namespace, user)
            if mine is not None:
                dst.models.save_model(namespace, mine[1], accepted=True, user_id=user)
                models += 1
    return relations, aliases, feedback, models, left_out


def _check_names(store: Store, namespaces: Sequence[str]) -> None:
    """Everything the copy will write into a store of keyed names, checked as a write checks
    it, before anything is written: a store without them (the embedded one, or an older
    version's) can hold names past the write bounds (Postgres could not key them: its index
    rows hold 2,704 bytes) and NUL characters (its text cannot hold one)."""
    for namespace in namespaces:
        try:
            validate.scope(namespace, None, None, written=True)
            for entry in store.reads.catalog(namespace):
                _checked(f"entity {entry.entity_id}", validate.entity_name, entry.name, "name")
            for chunk in _chunks(_oldest_first(store, namespace), PAGE):
                for memory_id, record in store.reads.get_memories(namespace, chunk).items():
                    _checked(f"memory {memory_id}", _check_record, record)
            for edge in store.admin.relations(namespace):
                _checked(f"the relation {edge.relation[:40]!r}", _check_edge, edge)
            for given in store.models.feedback(namespace):
                _checked(f"feedback {given.id}", _no_nul, given.query, "its query")
        except InvalidInput as exc:
            raise InvalidInput(
                f"{store.location}, namespace {namespace[:40]!r}: {exc}; nothing was copied "
                "(forget it, or copy into an embedded store, which takes it)"
            ) from None


def _checked(what: str, check: Callable[..., object], *args: Any) -> None:
    try:
        check(*args)
    except InvalidInput as exc:
        raise InvalidInput(f"{what}: {exc}") from None


def _check_record(record: MemoryRecord) -> None:
    validate.scope(record.namespace, record.user_id, record.agent_id, written=True)
    for value, name in ((record.session_id, "session_id"), (record.speaker, "speaker")):
        if value:
            validate.name_text(value, name)
    for entity in record.entities:
        validate.entity_name(entity, "an entity's name")
    _no_nul(record.content, "content")
    _no_nul(record.predicate, "predicate")


def _check_edge(edge: NewEdge) -> None:
    validate.scope(edge.scope.namespace, edge.scope.user_id, edge.scope.agent_id, written=True)
    validate.entity_name(edge.source, "source")
    validate.entity_name(edge.target, "target")
    validate.name_text(edge.relation, "relation")


def _no_nul(value: str | None, name: str) -> None:
    if value and "\x00" in value:
        raise InvalidInput(f"{name} contains a NUL character, which PostgreSQL cannot store")


def _oldest_first(store: Store, namespace: str) -> list[int]:
    ids: list[int] = []
    before: int | None = None
    while page := store.reads.recent_ids(Scope(namespace), limit=PAGE, before=before):
        ids.extend(page)
        before = page[-1]
    return ids[::-1]


def _chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _by_namespace(chunk: Sequence[tuple[int, str]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for memory_id, namespace in chunk:
        out.setdefault(namespace, []).append(memory_id)
    return out


def _as_new(record: MemoryRecord) -> NewMemory:
    return NewMemory(
        content=record.content,
        type=record.type,
        predicate=record.predicate,
        event_at=record.event_at,
        created_at=record.created_at,
        entities=record.entities,
        importance=record.importance,
        scope=Scope(record.namespace, record.user_id, record.agent_id),
        session_id=record.session_id,
        metadata=dict(record.metadata),
        speaker=record.speaker,
    )


def _counts(src: Store, dst: Store, namespace: str) -> NamespaceCounts:
    a, b = src.admin.stats(namespace), dst.admin.stats(namespace)
    return NamespaceCounts((a.memories, b.memories), (a.entities, b.entities), (a.edges, b.edges))


def _ranking(memory: Memory, query: str, args: dict[str, Any]) -> list[tuple[int, float]]:
    hits = memory.recall(query, **args).hits
    return [(h.memory.id, h.score) for h in hits]


def _same(a: list[tuple[int, float]], b: list[tuple[int, float]]) -> bool:
    """The same memories in the same order, scores equal but for float noise (each backend
    sums float32 vectors in its own order: about 1e-7)."""
    return [c for c, _ in a] == [c for c, _ in b] and all(
        abs(x - y) <= 1e-5 for (_, x), (_, y) in zip(a, b, strict=True)
    )


def _compare_recalls(
    source: Memory, target: Memory, namespaces: Sequence[str], sample: int
) -> tuple[int, int]:
    """Recall the start of ``sample`` memories' own text on both stores; a ranking agrees when
    the same memories (ids) come back in the same order with the same scores (``_same``)."""
    rng = random.Random(0)
    everyone = [(ns, i) for ns in namespaces for i in _oldest_first(source.store, ns)]
    picked = rng.sample(everyone, min(sample, len(everyone)))
    # One forgotten since the ids were listed is not compared (nor a KeyError).
    chosen = [r for ns, i in picked if (r := source.store.reads.get_memories(ns, [i]).get(i))]
    now = datetime.now().astimezone()  # the same clock for both stores
    same = 0
    for record in chosen:
        query = " ".join(record.content.split()[:12])
        args = {"namespace": record.namespace, "k": 10, "now": now}
        same += _same(_ranking(source, query, args), _ranking(target, query, args))
    return len(chosen), same


__all__ = ["MigrationReport", "NamespaceCounts", "check_source", "copy_beside", "migrate"]
