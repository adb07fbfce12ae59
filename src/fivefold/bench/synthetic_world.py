"""The world and the memory templates behind ``synthetic.SyntheticCorpus``.

Word lists, the people, orgs and projects built from them, and the templates whose slots are
filled from them. Kept apart from ``synthetic`` (which streams memories, relations and queries)
because this part is mostly data, and edited for different reasons: more vocabulary, another
template. Any change here alters the generated corpus, so it needs a bump of
``synthetic.GENERATOR_VERSION`` (cached benchmark stores are keyed by it).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from fivefold.types import MemoryType

__all__ = [
    "NOW",
    "PLACES",
    "SPAN_DAYS",
    "TEMPLATES",
    "Person",
    "Slots",
    "Template",
    "World",
    "build_world",
    "pick",
    "skewed",
]

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


# -- the world ---------------------------------------------------------------------------------


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


def pick(rng: random.Random, items: Sequence[str]) -> str:
    return items[rng.randrange(len(items))]


def skewed(rng: random.Random, count: int) -> int:
    """An index below ``count``, low ones (the popular entities) far likelier than high ones."""
    return int(count * rng.random() ** SKEW)


def build_world(size: int, seed: int) -> World:
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
        parts = [pick(rng, SYLLABLES) for _ in range(rng.choice((2, 3)))]
        codenames.setdefault("".join(parts).capitalize(), None)
    projects = tuple(f"Project {c}" for c in codenames)
    people = tuple(
        Person(
            name=names[i],
            org=skewed(rng, n_orgs),
            role=pick(rng, ROLES),
            project=skewed(rng, n_projects),
            manager=None if i < 3 else rng.randrange(0, max(1, i // 4)),
            place=pick(rng, PLACES),
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


# -- memory templates --------------------------------------------------------------------------


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


class Slots(dict[str, str]):
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
            self._person = self.w.people[skewed(self.rng, len(self.w.people))]
        return self._person

    def project(self) -> int:
        if self._project is None:
            self._project = skewed(self.rng, len(self.w.projects))
        return self._project

    def moment(self) -> datetime:
        if self._moment is None:
            self._moment = NOW - timedelta(days=self.rng.randrange(1, SPAN_DAYS))
        return self._moment

    def serial(self, prefix: str) -> str:
        # A bijection on [0, 1_000_003) (a prime): identifiers never repeat within a corpus.
        return f"{prefix}-{(self.index * 48271 + self.seed * 7919 + 12345) % 1_000_003:07d}"


def _key(s: Slots) -> str:
    return "sk-" + hashlib.sha256(f"{s.seed}:{s.index}:key".encode()).hexdigest()[:20]


def _version(s: Slots) -> str:
    return f"v{s.rng.randrange(1, 6)}.{s.rng.randrange(0, 20)}.{s.rng.randrange(0, 10)}"


_DRAW: Mapping[str, Callable[[Slots], str]] = {
    "person": lambda s: s.person().name,
    "person_org": lambda s: s.w.orgs[s.person().org],
    "person_role": lambda s: s.person().role,
    "person_place": lambda s: s.person().place,
    "project": lambda s: s.w.projects[s.project()],
    "project_org": lambda s: s.w.orgs[s.w.project_orgs[s.project()]],
    "org": lambda s: s.w.orgs[skewed(s.rng, len(s.w.orgs))],
    "place": lambda s: pick(s.rng, PLACES),
    "topic": lambda s: pick(s.rng, TOPICS),
    "tool": lambda s: pick(s.rng, TOOLS),
    "tool2": lambda s: pick(s.rng, TOOLS),
    "note": lambda s: pick(s.rng, NOTES),
    "env": lambda s: pick(s.rng, ENVS),
    "food": lambda s: pick(s.rng, FOODS),
    "item": lambda s: pick(s.rng, ITEMS),
    "industry": lambda s: pick(s.rng, INDUSTRIES),
    "daypart": lambda s: pick(s.rng, DAYPARTS),
    "setting": lambda s: pick(s.rng, tuple(SETTINGS)),
    "value": lambda s: pick(s.rng, SETTINGS[s["setting"]]),
    "version": _version,
    "floor": lambda s: str(s.rng.randrange(1, 40)),
    "room": lambda s: f"{pick(s.rng, 'ABCDEF')}-{s.rng.randrange(100, 999)}",
    "badge": lambda s: s.serial("B"),
    "ticket": lambda s: s.serial(pick(s.rng, ("INC", "OPS", "SEC", "BUG"))),
    "key": _key,
    "order": lambda s: s.serial("PO"),
    # query slots
    "first": lambda s: s.person().name.split()[0],
    "codename": lambda s: s.w.projects[s.project()].removeprefix("Project "),
    "person_project": lambda s: s.w.projects[s.person().project],
    "word": lambda s: pick(s.rng, TOPICS).split()[-1],
    "weekday": lambda s: pick(s.rng, WEEKDAYS),
    "year": lambda s: str(s.moment().year),
    "quarter": lambda s: str((s.moment().month - 1) // 3 + 1),
    "day": lambda s: str(s.moment().day),
    # months stop at October so that "between {month} and {month2}" stays in one year
    "month": lambda s: MONTHS[min(s.moment().month - 1, 9)],
    "month2": lambda s: MONTHS[MONTHS.index(s["month"]) + s.rng.randrange(1, 3)],
}
