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
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from itertools import accumulate
from typing import Any

from fivefold.model import MemoryType

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

# Bump whenever a change alters the generated corpus: cached benchmark stores are keyed by it.
GENERATOR_VERSION = 1
# The fixed "now" of the corpus: events fall in the two years before it, queries resolve
# "last week" against it, so a run next year measures the same windows.
NOW = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)
SPAN_DAYS = 730
# Entity popularity: index = n * u**SKEW, so the top 10% of people get ~30% of the mentions.
SKEW = 2.0


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def _phrases(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(";") if p.strip())


FIRST = _words(
    "Aisha Alejandro Amara Ana Anders Arjun Astrid Ayumi Beatriz Bilal Bruno Camille Chen "
    "Chiara Dara Daniel Diego Dmitri Elena Emeka Esther Farah Felix Freya Gabriel Hana Hiroshi "
    "Ines Ingrid Isaac Ivan Jamal Jana Javier Jonas Julia Kai Karim Kavya Keiko Lars Leila "
    "Lucia Malik Marco Mateo Maya Mei Mira Nadia Naveen Nia Nikolai Noor Olga Omar Oscar Pablo "
    "Priya Rafael Rania Ravi Rosa Sahil Samir Sana Sarah Sofia Stefan Tariq Tomas Valentina "
    "Wei Yara Yusuf Zainab Zoe"
)
LAST = _words(
    "Abara Adeyemi Alvarez Andersen Bauer Bianchi Brennan Castillo Chen Costa Dubois Eriksen "
    "Fischer Fontaine Garcia Gupta Haddad Hansen Hoffman Ibrahim Ivanova Jensen Kapoor Kato "
    "Keller Kim Kowalski Larsen Lindqvist Mendes Moreau Murphy Nakamura Novak Okafor Oliveira "
    "Park Patel Petrov Quinn Rahman Reyes Rossi Sato Schmidt Silva Singh Sokolov Suzuki Tanaka "
    "Torres Varga Vasquez Volkov Wagner Walsh Weber Yamamoto Yilmaz Zhang Ziegler"
)
PLACES = _phrases(
    "Lisbon; Berlin; Toronto; Nairobi; Osaka; Austin; Madrid; Warsaw; Dublin; Seoul; Lagos; "
    "Montreal; Oslo; Prague; Chennai; Denver; Porto; Vienna; Helsinki; Bogota; Cape Town; "
    "Singapore; Melbourne; Edinburgh; Krakow; Lyon; Munich; Zurich; Tallinn; Boston; Seattle; "
    "Kyoto; Hanoi; Lima; Accra; Athens; Bristol; Ghent; Gothenburg; Valencia"
)
ORG_HEADS = _words(
    "North Blue Iron Silver Bright Clear Swift Red Stone Oak River Summit Harbor Falcon Cedar "
    "Pine Copper Maple Polar Delta Orbit Vector Quartz Nimbus Lumen Tidal Atlas Ember Crest Aurora"
)
ORG_TAILS = _words("wind field gate line point bridge works forge path stack ridge light wave")
ORG_KINDS = _words("Analytics Labs Systems Logistics Health Robotics Capital Media Energy Foods")
SYLLABLES = _words("ka mar ven tor li sa rho qui del fen zo bra nix tal or ely mo vik sen dra")
ROLES = _phrases(
    "staff engineer; product manager; data scientist; designer; engineering manager; "
    "site reliability engineer; security lead; recruiter; finance partner; tech writer; "
    "solutions architect; QA lead; research scientist; support lead; platform engineer"
)
TOPICS = _phrases(
    "database migration; quarterly budget; onboarding docs; search relevance; billing retries; "
    "mobile release; incident postmortem; access reviews; cost dashboards; hiring loop; "
    "latency regression; data retention; feature flags; pricing experiment; load testing; "
    "accessibility audit; customer churn; vendor contract; backup restore; schema changes; "
    "API versioning; caching layer; on-call rotation; design system; SSO rollout; "
    "payments reconciliation; warehouse ETL; fraud signals; localization; SDK deprecation; "
    "log retention; release train; capacity planning; GPU quota; privacy review; "
    "error budgets; dependency upgrades; offline sync; push notifications; test flakiness; "
    "partner integration; compliance evidence; rate limiting; recommendation model; "
    "annual planning; office move; hackathon judging; team offsite; performance reviews; "
    "roadmap review"
)
TOOLS = _words(
    "Postgres MySQL SQLite Redis Kafka RabbitMQ Terraform Ansible Kubernetes Nomad Grafana "
    "Prometheus Datadog Sentry Airflow Dagster dbt Snowflake BigQuery DuckDB Spark Flink "
    "Elasticsearch OpenSearch Vitess Jenkins CircleCI Buildkite Bazel Gradle Vite Webpack "
    "Figma Notion Jira Linear Slack Zoom Vault Consul Envoy Nginx Caddy Pulumi Metabase"
)
FOODS = _phrases(
    "ramen; tacos; falafel wraps; sushi; dumplings; pizza; poke bowls; pho; curry; "
    "burritos; bibimbap; salad bowls; shawarma; empanadas; dim sum; banh mi; noodles; pierogi"
)
SETTINGS = {
    "editor theme": _words("dark light solarized high-contrast"),
    "meeting length": _phrases("25 minutes; 50 minutes; 15 minutes"),
    "notification mode": _phrases("digest; mentions only; all activity"),
    "code review style": _phrases("small PRs; stacked diffs; pair review"),
    "timezone display": _words("UTC local both"),
    "calendar view": _words("week agenda month"),
    "shell": _words("zsh fish bash"),
    "font size": _words("12pt 14pt 16pt"),
}
ITEMS = _phrases(
    "standing desk; monitor arm; laptop dock; noise-cancelling headset; ergonomic chair; "
    "webcam; mechanical keyboard; whiteboard; label printer; travel adapter"
)
INDUSTRIES = _phrases(
    "logistics; healthcare software; fintech; robotics; renewable energy; media; retail "
    "analytics; biotech; insurance; gaming"
)
ENVS = _words("staging production sandbox canary")
DAYPARTS = _words("morning afternoon evening")
NOTES = _phrases(
    "before the holiday freeze; after the outage review; per the new policy; ahead of the "
    "board meeting; as a follow-up to the retro; once legal signs off; pending security "
    "review; with the platform team; for the EU customers; during the migration window; to "
    "unblock the mobile team; after two rounds of feedback; as agreed in the planning doc; "
    "with a rollback plan; under the new budget; in time for the launch; for the audit "
    "trail; despite the vendor delay; to cut cloud costs; with help from support"
)
WEEKDAYS = _words("Monday Tuesday Wednesday Thursday Friday")
MONTHS = _words(
    "January February March April May June July August September October November December"
)


@dataclass(frozen=True, slots=True)
class Person:
    name: str
    org: int
    role: str
    project: int
    manager: int | None
    place: str


@dataclass(frozen=True, slots=True)
class World:
    people: tuple[Person, ...]
    orgs: tuple[str, ...]
    org_aliases: tuple[str, ...]
    projects: tuple[str, ...]
    project_orgs: tuple[int, ...]


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


# -- memory templates --------------------------------------------------------------------------


def _pick(rng: random.Random, items: Sequence[str]) -> str:
    return items[rng.randrange(len(items))]


def _skewed(rng: random.Random, count: int) -> int:
    return int(count * rng.random() ** SKEW)


@dataclass(frozen=True, slots=True)
class Template:
    """``content`` and ``predicate`` are format strings over slots; ``entities`` and
    ``identifier`` name slots. ``weight`` is the template's share of the corpus, in percent."""

    name: str
    type: MemoryType
    weight: int
    content: str
    predicate: str | None = None
    entities: tuple[str, ...] = ()
    identifier: str | None = None


_F, _P, _E, _N = MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.EVENT, MemoryType.ENTITY
# ~12% of memories carry a unique identifier; weights sum to 100.
TEMPLATES = (
    Template("works_at", _F, 5, "{person} works at {person_org} as a {person_role}.", None,
             ("person", "person_org")),
    Template("project_tool", _F, 8, "{project} uses {tool} for {topic}, {note}.", None,
             ("project",)),
    Template("owner", _F, 5, "{person} owns the {topic} runbook for {project}.", None,
             ("person", "project")),
    Template("badge", _F, 3, "{person}'s badge ID is {badge}.", "badge ID is {badge}",
             ("person",), "badge"),
    Template("ticket", _F, 5, "Ticket {ticket} tracks the {topic} issue in {project}.",
             "ticket is {ticket}", ("project",), "ticket"),
    Template("api_key", _F, 2, "The {env} API key for {project} is {key}.",
             "{env} API key is {key}", ("project",), "key"),
    Template("office", _F, 3, "The {org} office in {place} is on floor {floor}, room {room}.",
             None, ("org", "place")),
    Template("prefer_tool", _P, 6, "I prefer {tool} over {tool2} for {topic} work.",
             "prefers {tool} for {topic}"),
    Template("likes_food", _P, 4, "{person} likes {food} for team lunches.", None, ("person",)),
    Template("default_setting", _P, 4, "My default {setting} is {value} {note}.",
             "default {setting} is {value}"),
    Template("meeting_pref", _P, 3, "I'd rather meet {person} in the {daypart}, {note}.", None,
             ("person",)),
    Template("met", _E, 12, "Met {person} in {place} to discuss {topic} for {project}.", None,
             ("person", "place", "project")),
    Template("shipped", _E, 8, "Shipped {project} {version} to {env} {note}.", None,
             ("project",)),
    Template("presented", _E, 8, "{person} presented the {topic} review to the {person_org} "
             "team.", None, ("person", "person_org")),
    Template("trip", _E, 5, "Flew to {place} for the {org} offsite about {topic}.", None,
             ("place", "org")),
    Template("order", _E, 2, "Ordered a {item} from {org}, order number {order}.",
             "order number is {order}", ("org",), "order"),
    Template("person_bio", _N, 8, "{person} is a {person_role} at {person_org} who focuses on "
             "{topic}, based in {person_place}.", None, ("person", "person_org", "person_place")),
    Template("project_bio", _N, 5, "{project} is the {topic} initiative of {project_org}, led "
             "by {person}.", None, ("project", "project_org", "person")),
    Template("org_bio", _N, 3, "{org} is a {industry} company headquartered in {place}.", None,
             ("org", "place")),
)  # fmt: skip
_CUMULATIVE = tuple(accumulate(t.weight for t in TEMPLATES))


class _Slots(dict[str, str]):
    """Draws each slot the first time a template's text names it, so the order of random draws
    (and with it the corpus) is fixed by the template text alone."""

    def __init__(self, world: World, seed: int, rng: random.Random, index: int) -> None:
        super().__init__()
        self.w, self.seed, self.rng, self.index = world, seed, rng, index
        self._person: Person | None = None
        self._project: int | None = None
        self._moment: datetime | None = None

    def __missing__(self, key: str) -> str:
        value = _DRAW[key](self)
        self[key] = value
        return value

    def person(self) -> Person:
        if self._person is None:
            self._person = self.w.people[_skewed(self.rng, len(self.w.people))]
        return self._person

    def project(self) -> int:
        if self._project is None:
            self._project = _skewed(self.rng, len(self.w.projects))
        return self._project

    def moment(self) -> datetime:
        if self._moment is None:
            self._moment = NOW - timedelta(days=self.rng.randrange(1, SPAN_DAYS))
        return self._moment

    def serial(self, prefix: str) -> str:
        # A bijection on [0, 1_000_003) (a prime): identifiers never repeat within a corpus.
        return f"{prefix}-{(self.index * 48271 + self.seed * 7919 + 12345) % 1_000_003:07d}"


def _key(s: _Slots) -> str:
    return "sk-" + hashlib.sha256(f"{s.seed}:{s.index}:key".encode()).hexdigest()[:20]


def _version(s: _Slots) -> str:
    return f"v{s.rng.randrange(1, 6)}.{s.rng.randrange(0, 20)}.{s.rng.randrange(0, 10)}"


_DRAW: Mapping[str, Callable[[_Slots], str]] = {
    "person": lambda s: s.person().name,
    "person_org": lambda s: s.w.orgs[s.person().org],
    "person_role": lambda s: s.person().role,
    "person_place": lambda s: s.person().place,
    "project": lambda s: s.w.projects[s.project()],
    "project_org": lambda s: s.w.orgs[s.w.project_orgs[s.project()]],
    "org": lambda s: s.w.orgs[_skewed(s.rng, len(s.w.orgs))],
    "place": lambda s: _pick(s.rng, PLACES),
    "topic": lambda s: _pick(s.rng, TOPICS),
    "tool": lambda s: _pick(s.rng, TOOLS),
    "tool2": lambda s: _pick(s.rng, TOOLS),
    "note": lambda s: _pick(s.rng, NOTES),
    "env": lambda s: _pick(s.rng, ENVS),
    "food": lambda s: _pick(s.rng, FOODS),
    "item": lambda s: _pick(s.rng, ITEMS),
    "industry": lambda s: _pick(s.rng, INDUSTRIES),
    "daypart": lambda s: _pick(s.rng, DAYPARTS),
    "setting": lambda s: _pick(s.rng, tuple(SETTINGS)),
    "value": lambda s: _pick(s.rng, SETTINGS[s["setting"]]),
    "version": _version,
    "floor": lambda s: str(s.rng.randrange(1, 40)),
    "room": lambda s: f"{_pick(s.rng, 'ABCDEF')}-{s.rng.randrange(100, 999)}",
    "badge": lambda s: s.serial("B"),
    "ticket": lambda s: s.serial(_pick(s.rng, ("INC", "OPS", "SEC", "BUG"))),
    "key": _key,
    "order": lambda s: s.serial("PO"),
    # query slots
    "first": lambda s: s.person().name.split()[0],
    "codename": lambda s: s.w.projects[s.project()].removeprefix("Project "),
    "person_project": lambda s: s.w.projects[s.person().project],
    "word": lambda s: _pick(s.rng, TOPICS).split()[-1],
    "weekday": lambda s: _pick(s.rng, WEEKDAYS),
    "year": lambda s: str(s.moment().year),
    "quarter": lambda s: str((s.moment().month - 1) // 3 + 1),
    "day": lambda s: str(s.moment().day),
    # months stop at October so that "between {month} and {month2}" stays in one year
    "month": lambda s: MONTHS[min(s.moment().month - 1, 9)],
    "month2": lambda s: MONTHS[MONTHS.index(s["month"]) + s.rng.randrange(1, 3)],
}


def _build_world(size: int, seed: int) -> World:
    """People, orgs and projects scale with sqrt(size): a store of a million memories knows
    more people than one of ten thousand, but not a hundred times more."""
    rng = random.Random(f"{seed}:world")
    n_people = max(30, min(3000, round(2.0 * size**0.5)))
    n_orgs, n_projects = max(6, n_people // 8), max(8, n_people // 4)
    names = [f"{f} {last}" for f in FIRST for last in LAST]
    rng.shuffle(names)
    combos = [(h + t, k) for h in ORG_HEADS for t in ORG_TAILS for k in ORG_KINDS]
    chosen = [combos[j] for j in rng.sample(range(len(combos)), n_orgs)]
    # The short form ("Northwind" for "Northwind Analytics") is an alias only where it is
    # unambiguous, as a user would set it up.
    shorts = [short for short, _ in chosen]
    codenames: dict[str, None] = {}
    while len(codenames) < n_projects:
        parts = [_pick(rng, SYLLABLES) for _ in range(rng.choice((2, 3)))]
        codenames.setdefault("".join(parts).capitalize(), None)
    projects = tuple(f"Project {c}" for c in codenames)
    people = tuple(
        Person(
            name=names[i],
            org=_skewed(rng, n_orgs),
            role=_pick(rng, ROLES),
            project=_skewed(rng, n_projects),
            manager=None if i < 3 else rng.randrange(0, max(1, i // 4)),
            place=_pick(rng, PLACES),
        )
        for i in range(n_people)
    )
    return World(
        people=people,
        orgs=tuple(f"{short} {kind}" for short, kind in chosen),
        org_aliases=tuple(short if shorts.count(short) == 1 else "" for short in shorts),
        projects=projects,
        project_orgs=tuple(rng.randrange(n_orgs) for _ in projects),
    )


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
        self.world = _build_world(size, seed)

    def memory(self, index: int) -> SyntheticMemory:
        if not 0 <= index < self.size:
            raise IndexError(f"memory {index} is outside a corpus of {self.size}")
        rng = random.Random(f"{self.seed}:m:{index}")
        template = TEMPLATES[bisect_right(_CUMULATIVE, rng.randrange(_CUMULATIVE[-1]))]
        slots = _Slots(self.world, self.seed, rng, index)
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
                before = _pick(rng, PLACES)
                out.append(
                    SyntheticRelation(
                        p.name, "lived_in", before, "lifecycle", valid_to=since, valid_from=None
                    )
                )
            if i % 7 == 3:
                mentor = w.people[_skewed(rng, len(w.people))].name
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
        return out

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
        text = _pick(rng, by_template[memory.template]).format_map(dict(memory.slots))
        target = memory.index if kind is QueryKind.IDENTIFIER else None
        return SyntheticQuery(text=text, kind=kind, target=target)
    slots = _Slots(corpus.world, corpus.seed, rng, -1)
    if kind in (QueryKind.TYPE_CUED, QueryKind.TYPED):
        form, mtype = _TYPE_CUED[rng.randrange(len(_TYPE_CUED))]
        types = (mtype.value,) if kind is QueryKind.TYPED else ()
        return SyntheticQuery(text=form.format_map(slots), kind=kind, types=types)
    return SyntheticQuery(text=_pick(rng, _FORMS[kind]).format_map(slots), kind=kind)


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
