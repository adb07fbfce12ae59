"""The people a question names through the user: "my sister", "my former manager's boss". A
question asking about such a person ("Where does my sister live?") is answered by memories
that name them ("Karin's flat in Malmö"), which share no word with it; the user's own
memories say who holds the role ("My older sister Karin is a vet", "Sanna Lund is my climbing
partner"), so the reader finds the holder there and adds the name to the question.

Only a role the question asks something about is resolved: "Who is my manager?" asks for the
holder itself, and the name a stale statement gives would only pull that statement up.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from fivefold.extract.attributes import KIN, ROLE_HEADS
from fivefold.store.protocol import Store
from fivefold.text import content_terms, normalize_name
from fivefold.types import ColumnWeights, Scope

# People a user has: kin, and roles at work, school and in care.
ROLES = (
    frozenset(KIN)
    | ROLE_HEADS
    | frozenset(
        "boss mentor tutor classmate landlord landlady dentist coach trainer advisor adviser "
        "counsellor counselor therapist physio vet".split()
    )
)
# Memories read per role to find who holds it: the best BM25 matches of the role's words.
LOOKUP = 20
# Roles resolved per question: each costs two store reads, and a question names one or two.
MAX_ROLES = 3
# The person someone answers to: "my manager's boss" asks one step up from the holder.
SUPERIORS = frozenset("boss manager supervisor".split())
# Steps up the chain a question may ask for ("my manager's boss's boss"): each costs two reads.
MAX_STEPS_UP = 2
# Words saying which holder of a role that changed the question means.
EARLIER = frozenset("former previous old ex".split())
LATER = frozenset("current new present".split())

_WORD = r"[a-z][a-z-]*"
_PHRASE = re.compile(
    rf"(?:\b(?P<aux>[a-z]+)\s+)?\b(?:my|our)\s+"
    rf"(?:(?P<when>{'|'.join(sorted(EARLIER | LATER))})[\s-]+)?"
    rf"(?P<w1>{_WORD})(?P<p1>['’]s)?(?:\s+(?P<w2>{_WORD}))?",
    re.IGNORECASE,
)
# Before "my <role> <verb>" ("Where does my sister live?"); "When is my dentist check-up?" is
# about a check-up, not the dentist.
_AUXILIARIES = frozenset("do does did will would can could should has have had".split())
# The question asks who the holder is: nothing to resolve.
_WHO_IS = re.compile(
    r"^\s*(?:who|what)(?:['’]s|\s+is|\s+was|\s+are)\s+(?:my|our)\s+[^']*\??\s*$", re.I
)
# A name: capitalized words, a title may come first ("Dr. Liang", "Sanna Lund").
_TITLE = re.compile(r"^(?:Dr|Prof|Mr|Mrs|Ms|Mx)\.?\s+")
_CAPITALIZED = r"[A-Z][\w’'-]*[a-z][\w’'-]*"
_NAME = rf"(?:(?:Dr|Prof|Mr|Mrs|Ms|Mx)\.?\s+)?{_CAPITALIZED}(?:\s+{_CAPITALIZED})?"
# Sentences end at a stop, but not at a title's ("Dr. Mensah").
_SENTENCE_END = re.compile(r"(?<!Dr\.)(?<!Mr\.)(?<!Ms\.)(?<!Mrs\.)(?<!Prof\.)(?<=[.!?;])\s+")
_POSSESSIVE = re.compile(r"\b([^\W\d_][\w’'-]*)['’]s\b")
_NOT_NAMES = frozenset("I The A An My Our We He She They It This That Since After Before".split())


@dataclass(frozen=True, slots=True)
class Role:
    """A role the question names through the user: its words ("climbing partner"), which
    holder it means (``earlier``: a former one), and where it stands in the question."""

    words: str
    head: str
    earlier: bool
    end: int  # where the role's words end in the question (before any "'s")
    # Where each step up from the holder ends ("'s boss", "report to"): a name goes there.
    up: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Holder:
    name: str
    memory_id: int
    said_at: datetime
    current: bool  # the memory that names them is superseded by none
    ended: bool = False  # it says they hold the role no longer


def roles(question: str) -> list[Role]:
    """The roles "my ..." names in ``question`` that it asks something about: "my sister",
    "my climbing partner", "my manager's boss", "does my manager report"."""
    if _WHO_IS.match(question):
        return []
    out = []
    for m in _PHRASE.finditer(question):
        first, second = m.group("w1").lower(), (m.group("w2") or "").lower()
        if not m.group("p1") and second in ROLES:
            words, end = f"{first} {second}", m.end("w2")  # "climbing partner"
        elif first in ROLES and (
            m.group("p1") or not second or (m.group("aux") or "").lower() in _AUXILIARIES
        ):
            words, end = first, m.end("w1")
        else:
            continue
        when = (m.group("when") or "").lower()
        up = _steps_up(question, end)
        out.append(Role(words, words.split()[-1], when in EARLIER, end, up))
    return out


_STEP_UP = re.compile(rf"['’]s\s+(?:{'|'.join(sorted(SUPERIORS))})\b", re.IGNORECASE)
_REPORTS = re.compile(r"\s+report(?:s|ed)?\s+to\b", re.IGNORECASE)


def _steps_up(question: str, end: int) -> tuple[int, ...]:
    """Where each "'s boss" right after a role ends, or its "report to" ("does my manager
    report to"): the steps up the chain the question asks for."""
    ends: list[int] = []
    while len(ends) < MAX_STEPS_UP and (m := _STEP_UP.match(question, end)):
        end = m.end()
        ends.append(end)
    if not ends and (m := _REPORTS.match(question, end)):
        ends.append(m.end())
    return tuple(ends)


def holders_in(
    text: str, role_words: str, selves: frozenset[str] = frozenset()
) -> list[tuple[str, bool]]:
    """The names ``text`` gives as the user's holder of the role ``role_words``, each with
    whether it says they hold it no longer: "My older sister Karin", "My partner is Elias
    Nordin", "Sanna Lund is my climbing partner", "..., so she's my manager" (the sentence's
    first name); "my former manager Helena", "..., though she's no longer my manager".
    ``selves`` are the user's other names (folded): "Kofi's manager is Greg" is theirs too."""
    words = r"\s+".join(re.escape(w) for w in role_words.split())
    earlier = "|".join(sorted(EARLIER))
    before = rf"(?:(?!(?:{earlier})\b){_WORD}\s+){{0,2}}"
    found = []
    for sentence in _SENTENCE_END.split(text):
        if selves:
            sentence = _POSSESSIVE.sub(
                lambda m: "my" if normalize_name(m.group(1)) in selves else m.group(0), sentence
            )
        patterns = (
            (
                rf"\b[Mm]y\s+{before}{words},?\s+(?:is\s+|was\s+)?(?:called\s+|named\s+)?(?P<n>{_NAME})",
                False,
            ),
            (
                rf"(?P<n>{_NAME}),?\s+(?:is\s+|was\s+|has\s+been\s+)?(?:now\s+)?my\s+{before}{words}\b",
                False,
            ),
            (rf"\b[Mm]y\s+(?:{earlier})[\s-]+{before}{words},?\s+(?P<n>{_NAME})", True),
            (
                rf"(?P<n>{_NAME}),?\s+(?:is\s+|was\s+)?my\s+(?:{earlier})[\s-]+{before}{words}\b",
                True,
            ),
        )
        for pattern, ended in patterns:
            for m in re.finditer(pattern, sentence):
                name = m.group("n")
                if name.split()[0] not in _NOT_NAMES:
                    found.append((name, ended))
        for pattern, ended in (
            (
                rf"\b(?:she|he|they)(?:['’]s|\s+is|\s+are|\s+has|\s+have)(?:\s+been)?"
                rf"\s+(?:now\s+)?my\s+{words}\b",
                False,
            ),
            (rf"\bno\s+longer\s+(?:{_WORD}\s+)?my\s+{before}{words}\b", True),
        ):
            if re.search(pattern, sentence, re.I):
                first = re.search(_NAME, sentence)
                if first and first.group(0).split()[0] not in _NOT_NAMES:
                    found.append((first.group(0), ended))
    return found


def choose(role: Role, holders: Sequence[Holder]) -> Holder | None:
    """The holder the question means: the newest one a current memory names and none since
    says has left it; for a former one, the newest other (one said to have left it first)."""
    latest: dict[str, Holder] = {}  # per person, the newest statement, under their fullest name
    for h in sorted(holders, key=lambda h: (h.said_at, h.memory_id)):
        same = next((name for name in latest if _same_person(name, h.name)), None)
        if same is not None:
            full = max(same, h.name, key=len)
            del latest[same]
            h = replace(h, name=full)
        latest[h.name] = h
    holding = [h for h in latest.values() if not h.ended]
    now = max(holding, key=lambda h: (h.current, h.said_at, h.memory_id), default=None)
    if not role.earlier:
        return now
    others = [h for h in latest.values() if now is None or h.name != now.name]
    return max(others, key=lambda h: (h.ended, h.said_at, h.memory_id), default=None)


def _same_person(a: str, b: str) -> bool:
    """ "Helena" and "Helena Ström" are one person; "Dr. Mensah" and "Dr. Liang" are not."""
    x, y = (set(_TITLE.sub("", n).split()) for n in (a, b))
    return bool(x and y) and (x <= y or y <= x)


def _named_in(question: str, name: str) -> bool:
    """Whether the question already names the holder ("my sister Karin")."""
    said = {w.lower() for w in re.findall(r"[\w’'-]+", question)}
    return any(w.lower() in said for w in _TITLE.sub("", name).split())


def with_names(question: str, named: Sequence[tuple[int, str]]) -> str:
    """``question`` with each name put where its role ends ("my sister Karin")."""
    out = question
    for end, name in sorted(named, reverse=True):
        out = f"{out[:end]} {name}{out[end:]}"
    return out


def resolve(
    question: str, scope: Scope, store: Store, weights: ColumnWeights
) -> tuple[str, tuple[str, ...]]:
    """``question`` with the holder of each role it names through the user added (found in the
    scope's memories), and a note per role resolved. A role no memory names stays as it is."""
    asked = roles(question)[:MAX_ROLES]
    named: list[tuple[int, str]] = []
    notes = []
    for role in asked:
        holder = _holder(scope, store, weights, role)
        if holder is None:
            continue
        if not _named_in(question, holder.name):
            named.append((role.end, holder.name))
        which = "former " if role.earlier else ""
        said = f"my {which}{role.words}"
        notes.append(f"{said}: {holder.name} (memory {holder.memory_id})")
        for end in role.up:
            holder = _superior(scope, store, weights, holder.name)
            if holder is None:
                break
            if not _named_in(question, holder.name):
                named.append((end, holder.name))
            said = f"{said}'s boss"
            notes.append(f"{said}: {holder.name} (memory {holder.memory_id})")
    return (with_names(question, named), tuple(notes)) if named else (question, ())


def _holder(scope: Scope, store: Store, weights: ColumnWeights, role: Role) -> Holder | None:
    selves = user_names(scope)
    # "my climbing partner" is named as such; failing that, as any partner of the user.
    for words in dict.fromkeys((role.words, role.head)):
        found = store.search.lexical_search(scope, content_terms(words), LOOKUP, weights=weights)
        records = store.reads.get_memories(scope.namespace, [i for i, _ in found])
        holders = [
            Holder(name, r.id, r.event_at or r.created_at, r.superseded_by is None, ended)
            for r in records.values()
            # Said by the user: a conversation's other speakers' "my sister" is theirs.
            if r.speaker is None or r.speaker.lower() == "user"
            for name, ended in holders_in(r.content, words, selves)
        ]
        if holders:
            return choose(role, holders)
    return None


def superiors_in(text: str, person: str) -> list[str]:
    """The names ``text`` gives as the one ``person`` answers to: "Fatima reports to Robert
    Tremblay", "Greg will report to Dr. Yusuf Ali", "Helena's new boss is Oskar Dahl",
    "Oskar Dahl is Helena's manager"."""
    parts = [re.escape(p) for p in _TITLE.sub("", person).split() if p[:1].isupper()]
    if not parts:
        return []
    who = rf"(?:{'|'.join(sorted(parts, key=len, reverse=True))})"
    heads = "|".join(sorted(SUPERIORS))
    patterns = (
        rf"\b{who}(?:\s+[A-Z][\w’'-]*)?\s+(?:now\s+|still\s+|will\s+)?"
        rf"report(?:s|ed)?\s+(?:directly\s+)?to\s+(?P<n>{_NAME})",
        rf"\b{who}['’]s\s+(?:new\s+)?(?:{heads})\s+(?:is\s+|will\s+be\s+)?(?P<n>{_NAME})",
        rf"(?P<n>{_NAME}),?\s+(?:is\s+|was\s+|has\s+been\s+)?(?:now\s+)?{who}['’]s\s+(?:{heads})\b",
    )
    found = []
    for sentence in _SENTENCE_END.split(text):
        for pattern in patterns:
            for m in re.finditer(pattern, sentence):
                name = m.group("n")
                if name.split()[0] not in _NOT_NAMES and not _same_person(name, person):
                    found.append(name)
    return found


def _superior(scope: Scope, store: Store, weights: ColumnWeights, person: str) -> Holder | None:
    """Who ``person`` answers to now, as the scope's memories say it: the newest statement."""
    terms = content_terms(f"{person} reports {' '.join(sorted(SUPERIORS))}")
    found = store.search.lexical_search(scope, terms, LOOKUP, weights=weights)
    records = store.reads.get_memories(scope.namespace, [i for i, _ in found])
    holders = [
        Holder(name, r.id, r.event_at or r.created_at, r.superseded_by is None)
        for r in records.values()
        if r.speaker is None or r.speaker.lower() == "user"
        for name in superiors_in(r.content, person)
    ]
    return choose(Role("boss", "boss", False, 0), holders) if holders else None


def user_names(scope: Scope) -> frozenset[str]:
    """What memories may call the user besides "I": "the user", and the user id when it is a
    name ("kofi" for "Kofi's manager is Greg Novak")."""
    names = {"user"}
    if scope.user_id:
        own = normalize_name(scope.user_id)
        if own.replace(" ", "").isalpha():
            names |= {own, own.split()[0]}
    return frozenset(names)
