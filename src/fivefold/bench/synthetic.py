"""A deterministic synthetic corpus for the latency-and-scale benchmark.

``SyntheticCorpus(size, seed=...)`` describes a world (people, orgs, projects with codenames,
places; their relations and aliases) and ``size`` memories of every type, each a pure function of
``(seed, index)``: memory 700,000 can be regenerated without generating the 699,999 before it,
so a million-memory corpus streams in batches and queries can point at any memory. Same seed,
same generator version -> byte-identical corpus (``digest``).

Entities are picked with a skew (a few colleagues are named in thousands of memories, most in a
handful), slot fillers come from lists of a few hundred phrases plus unique identifiers, so BM25
document frequencies and graph hubs look like a real agent's store rather than every memory
sharing the same ten words. (``fivefold.bench.latency.SyntheticVectors`` gives each memory a
vector derived from a pool of real embeddings.)
"""

from __future__ import annotations

import hashlib
import json
import random
from bisect import bisect_right
from collections import Counter
from collections.abc import Collection, Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from itertools import accumulate
from typing import Any

from fivefold.bench.synthetic_world import (
    NOW,
    PLACES,
    SPAN_DAYS,
    TEMPLATES,
    Slots,
    build_world,
    pick,
    skewed,
)
from fivefold.text import normalize_name
from fivefold.types import MemoryType

__all__ = [
    "GENERATOR_VERSION",
    "NOW",
    "QueryKind",
    "SyntheticAlias",
    "SyntheticCorpus",
    "SyntheticMemory",
    "SyntheticQuery",
    "SyntheticRelation",
]

# Bump whenever a change alters the generated corpus (here or in ``synthetic_world``): cached
# benchmark stores are keyed by it.
GENERATOR_VERSION = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class SyntheticMemory:
    index: int
    template: str
    content: str
    type: MemoryType
    predicate: str | None
    event_at: datetime | None
    created_at: datetime
    entities: tuple[str, ...]
    identifier: str | None
    session_id: str
    slots: tuple[tuple[str, str], ...]

    def embed_text(self) -> str:
        """What the engine embeds for this memory (content, plus a predicate it lacks)."""
        if self.predicate and self.predicate not in self.content:
            return f"{self.content}\n{self.predicate}"
        return self.content

    def item(self, namespace: str, *, inferred: bool = False) -> dict[str, Any]:
        """A ``remember_many`` item. ``inferred`` leaves type, entities and predicate to the
        engine's extractors, as a caller that only has text would."""
        out: dict[str, Any] = {
            "content": self.content,
            "namespace": namespace,
            "created_at": self.created_at,
            "session_id": self.session_id,
        }
        if self.event_at is not None:
            out["event_at"] = self.event_at
        if not inferred:
            out["type"] = self.type.value
            out["entities"] = list(self.entities)
            if self.predicate is not None:
                out["predicate"] = self.predicate
        return out


@dataclass(frozen=True, slots=True)
class SyntheticRelation:
    source: str
    relation: str
    target: str
    kind: str
    confidence: float = 1.0
    valid_from: datetime | None = None
    valid_to: datetime | None = None


@dataclass(frozen=True, slots=True)
class SyntheticAlias:
    name: str
    alias: str


class QueryKind(StrEnum):
    IDENTIFIER = "identifier"
    PARAPHRASE = "paraphrase"
    ENTITY = "entity"
    RELATION = "relation"
    TEMPORAL = "temporal"
    TYPE_CUED = "type_cued"
    # type-cued, with the caller forcing ``types=``: the only way the type retriever runs
    # until the optimizer sets type hints itself
    TYPED = "typed"
    NEGATION = "negation"
    VAGUE = "vague"


@dataclass(frozen=True, slots=True, kw_only=True)
class SyntheticQuery:
    text: str
    kind: QueryKind
    types: tuple[str, ...] = ()
    # corpus index of the one memory that answers it, for queries with a unique answer
    target: int | None = None


# Templates are drawn by weight; the running sums turn one uniform draw into a template.
_CUMULATIVE = tuple(accumulate(t.weight for t in TEMPLATES))


def _when(rng: random.Random) -> datetime:
    """A working-hours moment 1 to SPAN_DAYS days before NOW (never in NOW's future)."""
    day = (NOW - timedelta(days=rng.randrange(1, SPAN_DAYS + 1))).replace(hour=8, minute=0)
    return day + timedelta(minutes=rng.randrange(0, 600))


class SyntheticCorpus:
    """``size`` memories in one namespace, their world, and a labelled query mix."""

    def __init__(self, size: int, *, seed: int = 7, namespace: str = "default") -> None:
        if size < 1:
            raise ValueError("a corpus needs at least one memory")
        self.size = size
        self.seed = seed
        self.namespace = namespace
        self.world = build_world(size, seed)

    def memory(self, index: int) -> SyntheticMemory:
        if not 0 <= index < self.size:
            raise IndexError(f"memory {index} is outside a corpus of {self.size}")
        rng = random.Random(f"{self.seed}:m:{index}")
        template = TEMPLATES[bisect_right(_CUMULATIVE, rng.randrange(_CUMULATIVE[-1]))]
        slots = Slots(self.world, self.seed, rng, index)
        content = template.content.format_map(slots)
        predicate = None if template.predicate is None else template.predicate.format_map(slots)
        moment = _when(rng)
        event_at = moment if template.type is MemoryType.EVENT else None
        # An event is written down a little after it happened; capped so nothing is "future".
        created = min(moment + timedelta(minutes=rng.randrange(5, 3 * 24 * 60)), NOW)
        return SyntheticMemory(
            index=index,
            template=template.name,
            content=content,
            type=template.type,
            predicate=predicate,
            event_at=event_at,
            created_at=created,
            entities=tuple(dict.fromkeys(slots[e] for e in template.entities)),
            identifier=None if template.identifier is None else slots[template.identifier],
            session_id=f"s-{created.date().isoformat()}",
            slots=tuple(sorted(slots.items())),
        )

    def memories(self, start: int = 0, stop: int | None = None) -> Iterator[SyntheticMemory]:
        for index in range(start, self.size if stop is None else min(stop, self.size)):
            yield self.memory(index)

    def relations(self) -> list[SyntheticRelation]:
        """Org chart, memberships, ownership (structural), mentoring (semantic) and where people
        live (lifecycle; a quarter of them moved, so an expired edge exists too)."""
        w, rng = self.world, random.Random(f"{self.seed}:relations")
        out: list[SyntheticRelation] = []
        for i, p in enumerate(w.people):
            out.append(SyntheticRelation(p.name, "works_at", w.orgs[p.org], "structural"))
            out.append(SyntheticRelation(p.name, "member_of", w.projects[p.project], "structural"))
            if p.manager is not None:
                boss = w.people[p.manager].name
                out.append(SyntheticRelation(p.name, "reports_to", boss, "structural"))
            since = NOW - timedelta(days=rng.randrange(200, 1500))
            out.append(
                SyntheticRelation(p.name, "lives_in", p.place, "lifecycle", valid_from=since)
            )
            if i % 4 == 0:
                before = pick(rng, PLACES)
                out.append(
                    SyntheticRelation(
                        p.name, "lived_in", before, "lifecycle", valid_to=since, valid_from=None
                    )
                )
            if i % 7 == 3:
                mentor = w.people[skewed(rng, len(w.people))].name
                if mentor != p.name:
                    out.append(SyntheticRelation(mentor, "mentors", p.name, "semantic", 0.8))
        for j, project in enumerate(w.projects):
            out.append(
                SyntheticRelation(project, "owned_by", w.orgs[w.project_orgs[j]], "structural")
            )
        return out

    def aliases(self) -> list[SyntheticAlias]:
        w = self.world
        out = [SyntheticAlias(p, p.removeprefix("Project ")) for p in w.projects]
        out += [SyntheticAlias(o, a) for o, a in zip(w.orgs, w.org_aliases, strict=True) if a]
        # Every tenth person has a nickname: "Sarah C." for Sarah Chen.
        out += [SyntheticAlias(p.name, _nickname(p.name)) for p in w.people[::10]]
        # An alias names one entity (``Memory.alias`` refuses a second): a nickname two people
        # share ("Farah A."), or a short form that is another name, is left out, as a user
        # setting them up would.
        keys = Counter(normalize_name(a.alias) for a in out)
        names = {normalize_name(n) for n in (*w.orgs, *w.projects, *(p.name for p in w.people))}
        return [
            a
            for a in out
            if keys[normalize_name(a.alias)] == 1 and normalize_name(a.alias) not in names
        ]

    def lines(self) -> Iterator[str]:
        """The whole corpus as JSON lines (relations, aliases, memories), for hashing."""
        for relation in self.relations():
            yield json.dumps({"relation": _relation_record(relation)}, sort_keys=True)
        for alias in self.aliases():
            yield json.dumps({"alias": [alias.name, alias.alias]})
        for memory in self.memories():
            yield json.dumps(asdict(memory), default=datetime.isoformat, sort_keys=True)

    def digest(self) -> str:
        sha = hashlib.sha256()
        for line in self.lines():
            sha.update(line.encode("utf-8") + b"\n")
        return sha.hexdigest()

    def queries(self, count: int, *, salt: str = "timed") -> list[SyntheticQuery]:
        """``count`` distinct queries, kinds mixed by ``QUERY_MIX``; ``salt`` draws another,
        independent mix (warm-up queries must not repeat timed ones: a cache would serve them)."""
        rng = random.Random(f"{self.seed}:queries:{salt}")
        kinds, weights = zip(*QUERY_MIX.items(), strict=True)
        out: list[SyntheticQuery] = []
        seen: set[tuple[str, tuple[str, ...]]] = set()
        for _ in range(count * 50):
            if len(out) == count:
                break
            query = _make_query(self, rng, rng.choices(kinds, weights)[0])
            if query is not None and (query.text, query.types) not in seen:
                seen.add((query.text, query.types))
                out.append(query)
        return out


def _nickname(name: str) -> str:
    first, last = name.split(" ", 1)
    return f"{first} {last[0]}."


def _relation_record(r: SyntheticRelation) -> list[Any]:
    when = [None if t is None else t.isoformat() for t in (r.valid_from, r.valid_to)]
    return [r.source, r.relation, r.target, r.kind, r.confidence, *when]


QUERY_MIX: Mapping[QueryKind, int] = {
    QueryKind.IDENTIFIER: 14,
    QueryKind.PARAPHRASE: 14,
    QueryKind.ENTITY: 12,
    QueryKind.RELATION: 10,
    QueryKind.TEMPORAL: 16,
    QueryKind.TYPE_CUED: 8,
    QueryKind.TYPED: 6,
    QueryKind.NEGATION: 8,
    QueryKind.VAGUE: 12,
}

# Kinds made from one memory's slots, by template. Paraphrases avoid the memory's names and
# most of its wording: the topic carries the meaning.
_FROM_MEMORY: Mapping[QueryKind, Mapping[str, tuple[str, ...]]] = {
    QueryKind.IDENTIFIER: {
        "badge": ("whose badge ID is {badge}?", "who has badge {badge}?"),
        "ticket": ("what is ticket {ticket} about?", "which project is {ticket} filed against?"),
        "api_key": ("what is {key} the key for?", "which environment uses the key {key}?"),
        "order": ("what did I buy with order {order}?", "what was order number {order}?"),
    },
    QueryKind.PARAPHRASE: {
        "project_tool": ("what do we run {topic} on?", "which system handles our {topic}?"),
        "owner": ("who is responsible for the {topic} runbook?", "who maintains {topic} docs?"),
        "met": ("who did I sit down with about {topic}?", "which meeting covered {topic}?"),
        "presented": ("who gave the talk on {topic}?", "was there a review of {topic}?"),
        "prefer_tool": ("which tool do I like better for {topic}?", "my pick for {topic}?"),
        "default_setting": ("how is my {setting} usually set?", "what {setting} do I use?"),
        "trip": ("where did I travel for the {topic} offsite?", "which trip was about {topic}?"),
        "person_bio": ("who on the team works on {topic}?", "who is our expert in {topic}?"),
    },
}
# Kinds made from the world: entities are drawn with the corpus's own skew.
_FORMS: Mapping[QueryKind, tuple[str, ...]] = {
    QueryKind.ENTITY: (
        "tell me about {person}", "who is {person}?", "what does {first} do?",
        "what is {project} about?", "what's the latest on {codename}?",
        "what do we know about {org}?",
    ),
    QueryKind.RELATION: (
        "who does {person} report to?", "who reports to {person}?",
        "who works on {person_project}?", "which project is {person} on?",
        "who works at {person_org} with {person}?", "who mentors {person}?",
        "who is connected to {person} through {person_project}?",
    ),
    QueryKind.TEMPORAL: (
        "what did I do last week?", "what happened yesterday?", "anything recently?",
        "what did I do a few months ago?", "what did I work on this month?",
        "what happened last {weekday}?", "what happened in {month} {year}?",
        "what did I work on in Q{quarter} {year}?", "what happened on {month} {day}, {year}?",
        "what happened between {month} and {month2} {year}?",
        "when did I meet {person} in {month} {year}?", "what did {person} present last month?",
        "which trips did I take in {year}?",
    ),
    QueryKind.NEGATION: (
        "which tools do we use for {topic}, except {tool}?",
        "who did I meet about {topic}, not {person}?",
        "what did we ship to {env} other than {project}?",
        "what did I discuss that wasn't related to {topic}?",
    ),
    QueryKind.VAGUE: (
        "anything about {word}?", "what was that thing about {word}?",
        "remind me about the {word} stuff", "did we ever talk about {word}?",
        "what was I worried about?", "what's new?", "what should I remember from before?",
        "any notes on {word}?",
    ),
}  # fmt: skip
_TYPE_CUED = (
    ("what do I prefer for {topic}?", MemoryType.PREFERENCE),
    ("what's my default {setting}?", MemoryType.PREFERENCE),
    ("what does {person} like for lunch?", MemoryType.PREFERENCE),
    ("how do I like my {setting} configured?", MemoryType.PREFERENCE),
    ("when did I last meet {person}?", MemoryType.EVENT),
    ("when did the {topic} review happen?", MemoryType.EVENT),
)


def _make_query(
    corpus: SyntheticCorpus, rng: random.Random, kind: QueryKind
) -> SyntheticQuery | None:
    by_template = _FROM_MEMORY.get(kind)
    if by_template is not None:
        memory = _find(corpus, rng, by_template)
        if memory is None:
            return None
        text = pick(rng, by_template[memory.template]).format_map(dict(memory.slots))
        target = memory.index if kind is QueryKind.IDENTIFIER else None
        return SyntheticQuery(text=text, kind=kind, target=target)
    slots = Slots(corpus.world, corpus.seed, rng, -1)
    if kind in (QueryKind.TYPE_CUED, QueryKind.TYPED):
        form, mtype = _TYPE_CUED[rng.randrange(len(_TYPE_CUED))]
        types = (mtype.value,) if kind is QueryKind.TYPED else ()
        return SyntheticQuery(text=form.format_map(slots), kind=kind, types=types)
    return SyntheticQuery(text=pick(rng, _FORMS[kind]).format_map(slots), kind=kind)


def _find(
    corpus: SyntheticCorpus, rng: random.Random, templates: Collection[str]
) -> SyntheticMemory | None:
    """A random memory made from one of ``templates``; None only in corpora too small to
    hold one (tests)."""
    for _ in range(200):
        memory = corpus.memory(rng.randrange(corpus.size))
        if memory.template in templates:
            return memory
    return None
