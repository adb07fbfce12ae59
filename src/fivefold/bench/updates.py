"""``fivefold bench updates``: facts that change and facts that coexist (the data in
``bench/data/updates``, written for fivefold). Every memory of a user is written into that
user's scope in the order and at the time it was said, then every question is asked at the
file's ``now``:

- a question about the present must be answered first by a chain's newest statement (current
  first), not by an older one (stale first);
- a question about the past must find the older statement it asks for in the top 3;
- a coexisting pair's questions must find their statement (top 1), as must a user's question
  about an attribute another user states in their own scope (``shared_scope.json``);
- no memory may be marked superseded by one that does not replace it, a later statement of its
  own chain (false supersessions, over every memory).

Systems, from one run: ``fivefold`` (the default: repeats stored once, supersession inferred,
recall with time in mind); ``history-off`` (``write.supersede = "off"`` and ``write.dedup =
"off"``: the engine without its history, as it was); ``recency`` (history-off's top 5 ordered
newest first); ``bm25`` (the lexical leg alone). Users are split: lena, amara and diego are the
users the detection rules were written against; priya, kenji and omar are held out from the
write path's rules (the read path's same-topic test was written looking at them too); sofia and
tunde were written later, by hand, without sight of any rule, and are held out from both.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import click

from fivefold.config import Config
from fivefold.embed.base import Embedder
from fivefold.memory import Memory
from fivefold.types import Dedup, RetrieverName, Supersession

DEV_USERS = ("lena", "amara", "diego")
HELD_OUT_USERS = ("priya", "kenji", "omar")
FRESH_USERS = ("sofia", "tunde")
SYSTEMS = ("fivefold", "history-off", "recency", "bm25")
DEPTH = 50
RECENCY_HEAD = 5


@dataclass(frozen=True, slots=True)
class Said:
    key: str
    content: str
    written_at: datetime
    event_at: datetime | None


@dataclass(frozen=True, slots=True)
class Question:
    key: str
    text: str
    kind: str  # "present", "past" or "coexisting"
    relevant: tuple[str, ...]  # the answer (present: the newest statement)
    stale: tuple[str, ...] = ()  # present: the chain's older statements


@dataclass(frozen=True, slots=True)
class User:
    name: str
    now: datetime
    memories: tuple[Said, ...]
    questions: tuple[Question, ...]
    chains: tuple[tuple[str, ...], ...]  # statement keys, oldest first
    successors: Mapping[str, frozenset[str]]  # per memory, the ones that may supersede it


def load_users(folder: Path | None = None) -> list[User]:
    """Every user file of the data folder (the packaged one by default), sorted by name."""
    root = folder or Path(str(resources.files("fivefold.bench").joinpath("data/updates")))
    shared = json.loads((root / "shared_scope.json").read_text(encoding="utf-8"))["pairs"]
    users = []
    for path in sorted(root.glob("*.json")):
        if path.name != "shared_scope.json":
            users.append(_user(json.loads(path.read_text(encoding="utf-8")), shared))
    return users


def _said(entry: Mapping[str, Any]) -> Said:
    event = entry.get("event_at")
    return Said(
        str(entry["id"]),
        str(entry["content"]),
        datetime.fromisoformat(str(entry["written_at"])),
        None if event is None else datetime.fromisoformat(str(event)),
    )


def _user(data: Mapping[str, Any], shared: Sequence[Mapping[str, Any]]) -> User:
    memories = [_said(b) for b in data["background"]]
    questions: list[Question] = []
    chains = []
    for chain in data["chains"]:
        said = [_said(s) for s in chain["statements"]]
        memories += said
        keys = tuple(s.key for s in said)
        chains.append(keys)
        for q in chain["present"]:
            questions.append(Question(q["id"], q["text"], "present", keys[-1:], keys[:-1]))
        for q in chain["past"]:
            questions.append(Question(q["id"], q["text"], "past", (q["answer"],)))
    for pair in data["coexisting"]:
        said = [_said(s) for s in pair["statements"]]
        memories += said
        for q in pair["questions"]:
            questions.append(Question(q["id"], q["text"], "coexisting", tuple(q["relevant"])))
    for pair in shared:  # the same attribute another user states in their own scope
        memories += [_said(pair[s]) for s in "ab" if pair[s]["user"] == data["user"]]
        for n, q in enumerate(pair["questions"]):
            if q["user"] == data["user"]:
                key = f"{pair['id']}:q{n + 1}"
                questions.append(Question(key, q["text"], "coexisting", tuple(q["relevant"])))
    memories.sort(key=lambda m: (m.written_at, m.key))
    return User(
        str(data["user"]),
        datetime.fromisoformat(str(data["now"])),
        tuple(memories),
        tuple(questions),
        tuple(chains),
        _successors(memories, chains),
    )


def _successors(
    memories: Sequence[Said], chains: Sequence[tuple[str, ...]]
) -> dict[str, frozenset[str]]:
    """Any later statement of a memory's own chain may supersede it; nothing else may."""
    out = {m.key: frozenset[str]() for m in memories}
    for chain in chains:
        for i, key in enumerate(chain):
            out[key] = frozenset(chain[i + 1 :])
    return out


@dataclass
class Tally:
    """Per system and user split, the counts each figure is made of."""

    present: int = 0
    current_first: int = 0
    stale_first: int = 0
    past: int = 0
    past_top3: int = 0
    coexisting: int = 0
    coexisting_top1: int = 0
    memories: int = 0
    false_supersessions: int = 0  # marked superseded by a memory that does not replace it
    links: int = 0  # chain statements after the first
    linked: int = 0  # of them, those marked as superseding the one before
    examples: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in (
            "present current_first stale_first past past_top3 coexisting coexisting_top1 "
            "memories false_supersessions links linked"
        ).split():
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.examples += other.examples


def system_config(config: Config, system: str) -> Config:
    """The default engine, or (every other system) the engine without its history."""
    history = system == "fivefold"
    write = replace(
        config.write,
        dedup=Dedup.EXACT if history else Dedup.OFF,
        supersede=Supersession.AUTO if history else Supersession.OFF,
    )
    return replace(config, write=write)


def run_user(mem: Memory, user: User, system: str) -> Tally:
    """One user's memories written (one at a time, as an agent writes them) and questions
    asked, in the system's own namespace of ``mem``."""
    tally = Tally()
    scope = {"namespace": system, "user_id": user.name}
    ids: dict[str, int] = {}
    for said in user.memories:
        item: dict[str, Any] = {"content": said.content, "created_at": said.written_at}
        if said.event_at is not None:
            item["event_at"] = said.event_at
        ids[said.key] = mem.remember_many([{**item, **scope}])[0].id
    for question in user.questions:
        _score(tally, question, _ranking(mem, user, question, system), ids)
    if system == "fivefold":
        _history_counts(tally, mem, system, user, ids)
    return tally


def _ranking(mem: Memory, user: User, question: Question, system: str) -> list[int]:
    if system == "bm25":
        found = mem.explain(
            question.text, k=DEPTH, now=user.now, namespace=system, user_id=user.name
        )
        runs = [r for r in found.runs if r.name is RetrieverName.LEXICAL]
        return [item.id for item in runs[0].items] if runs else []
    result = mem.recall(question.text, k=DEPTH, now=user.now, namespace=system, user_id=user.name)
    hits = list(result.hits)
    if system == "recency":  # the five best, newest first
        head = sorted(hits[:RECENCY_HEAD], key=lambda h: (h.memory.created_at, h.memory.id))
        hits = head[::-1] + hits[RECENCY_HEAD:]
    return [h.memory.id for h in hits]


def _score(tally: Tally, question: Question, ranked: Sequence[int], ids: Mapping[str, int]) -> None:
    wanted = {ids[k] for k in question.relevant}
    top = ranked[0] if ranked else None
    if question.kind == "present":
        tally.present += 1
        tally.current_first += top in wanted
        stale = top in {ids[k] for k in question.stale}
        tally.stale_first += stale
        if stale and len(tally.examples) < 12:
            tally.examples.append(f"stale first: {question.key} {question.text!r}")
    elif question.kind == "past":
        tally.past += 1
        tally.past_top3 += bool(wanted & set(ranked[:3]))
    else:
        tally.coexisting += 1
        tally.coexisting_top1 += top in wanted


def _history_counts(
    tally: Tally, mem: Memory, namespace: str, user: User, ids: Mapping[str, int]
) -> None:
    records = mem.store.reads.get_memories(namespace, list(ids.values()))
    by_key = {k: records[i] for k, i in ids.items() if i in records}
    keys = {i: k for k, i in ids.items()}
    for key, allowed in user.successors.items():
        tally.memories += 1
        by = by_key[key].superseded_by
        if by is not None and keys.get(by) not in allowed:
            tally.false_supersessions += 1
            if len(tally.examples) < 24:
                tally.examples.append(f"false supersession: {key}")
    for chain in user.chains:
        for older in chain[:-1]:
            tally.links += 1
            tally.linked += keys.get(by_key[older].superseded_by or 0) in user.successors[older]


def run_all(
    users: Sequence[User], opened: Callable[[Config], Memory], config: Config
) -> dict[str, dict[str, Tally]]:
    """Per system, per split ("dev", "held out", "all"), the tallies. ``opened``: the store
    each system writes into (a namespace of its own: the same store may serve every one)."""
    out: dict[str, dict[str, Tally]] = {}
    for system in SYSTEMS:
        splits = {"dev": Tally(), "held out": Tally(), "fresh": Tally(), "all": Tally()}
        with opened(system_config(config, system)) as mem:
            for user in users:
                tally = run_user(mem, user, system)
                splits[_split(user.name)].add(tally)
                splits["all"].add(tally)
        out[system] = splits
    return out


def _split(user: str) -> str:
    if user in DEV_USERS:
        return "dev"
    return "fresh" if user in FRESH_USERS else "held out"


def percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}" if whole else "-"


def table(results: Mapping[str, Mapping[str, Tally]]) -> str:
    """A markdown table: per system and split, each figure in %."""
    lines = [
        "| system | users | current first | stale first | past in top 3 | coexisting top 1 "
        "| false supersessions | chain links marked |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for system, splits in results.items():
        for split, t in splits.items():
            if not (t.present or t.past or t.coexisting):
                continue  # no user of this split in the data
            marked = percent(t.linked, t.links) if system == "fivefold" else "-"
            false = f"{t.false_supersessions}/{t.memories}" if system == "fivefold" else "-"
            lines.append(
                f"| {system} | {split} | {percent(t.current_first, t.present)} "
                f"| {percent(t.stale_first, t.present)} | {percent(t.past_top3, t.past)} "
                f"| {percent(t.coexisting_top1, t.coexisting)} | {false} | {marked} |"
            )
    return "\n".join(lines)


def store_opener(embedder: Embedder, db: str | None) -> Callable[[Config], Memory]:
    """Each system's store: a new in-memory SQLite store, or the one ``db`` names."""

    def opened(config: Config) -> Memory:
        return Memory.open(db or ":memory:", embedder=embedder, config=config)

    return opened


@click.command()
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    help="A folder of user files (default: the packaged bench/data/updates).",
)
@click.option("--db", help="A store (file path or postgresql:// URL) instead of a throwaway one.")
@click.option(
    "--embedder",
    type=click.Choice(["minilm", "hashing"]),
    default="minilm",
    show_default=True,
    help="minilm: the default model. hashing: fast and not semantic, for smoke runs.",
)
@click.option("--json", "json_path", type=click.Path(path_type=Path), help="Write the tallies.")
def updates(data: Path | None, db: str | None, embedder: str, json_path: Path | None) -> None:
    """Facts that change and facts that coexist: current value first, past values findable,
    no false supersession (users the rules were written against, and held out)."""
    from fivefold.embed import HashingEmbedder, MiniLMEmbedder

    model: Embedder = MiniLMEmbedder() if embedder == "minilm" else HashingEmbedder()
    users = load_users(data)
    results = run_all(users, store_opener(model, db), Config())
    click.echo(table(results))
    examples = results["fivefold"]["dev"].examples
    if examples:
        click.echo("\nfivefold, dev users: " + "; ".join(examples))
    if json_path is not None:
        body = {s: {k: asdict(t) for k, t in splits.items()} for s, splits in results.items()}
        json_path.write_text(json.dumps(body, indent=1), encoding="utf-8")
