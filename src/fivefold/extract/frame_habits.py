"""Rules of ``frames`` read from a clause's shape rather than its vocabulary: the tool used for
a purpose ("I use Logseq for my notes"), a preference and what it is a preference for ("I
prefer the late shift"), how one takes a thing ("I like my eggs poached") and the state a
participle gives a thing ("the manuscript was accepted").

Each keys its attribute by the head noun the clause itself names (the purpose, the preferred
thing), so two statements only meet when they speak of the same thing.
"""

from __future__ import annotations

import re

from fivefold.extract import attributes as lex
from fivefold.extract.attributes import singular
from fivefold.extract.frame_rules import Found, _found, _place, _starts_with_when, thing_key
from fivefold.extract.phrases import Context, cut, phrase, words, words_value
from fivefold.extract.values import when_value

_I = re.IGNORECASE


def _owner(text: str, ctx: Context) -> str:
    found = phrase(text, ctx)
    if found is None or found.kind not in ("user", "person") or found.words:
        return ""
    return found.owner


def _head(text: str) -> tuple[str, ...]:
    """The head noun of a purpose or a preferred thing: its last word before a preposition
    ("notes", "analysis", "team chat" -> "chat"); a gerund stands for itself ("running")."""
    own = [w for w in words(text) if w not in ("the", "a", "an", "my", "our", "all", "his", "her")]
    if own and own[0].endswith("ing") and (len(own) == 1 or own[1] in _STOP):
        return (own[0],)  # "running in the evening", not "morning swim session"
    for i, w in enumerate(own):
        if w in _STOP:
            own = own[:i]
            break
    return (singular(own[-1]),) if own else ()


_STOP = frozenset(
    "in on at for to with from by of over than instead now these days when while".split()
)
_TOOL = r"(?P<v>(?-i:[A-Z])[\w.+#-]*(?:\s+(?-i:[A-Z0-9])[\w.+#-]*){0,2}|a\s+paper\s+\w+)"


def tool_for(m: re.Match[str], ctx: Context) -> list[Found]:
    """ "I use Zotero for references", "We switched to Teams for team chat"."""
    owner = _owner(m.group("s"), ctx)
    purpose = _head(cut(m.group("p")))
    if not owner or not purpose:
        return []
    return _found(owner, "tool", words_value(m.group("v")), purpose)


def tool_in(m: re.Match[str], ctx: Context) -> list[Found]:
    """ "I do my analysis in R", "We track leads in HubSpot", "I edit photos in Darktable"."""
    owner = _owner(m.group("s"), ctx)
    task = m.group("p")
    if not owner or re.match(r"(?:it|them|this|that|so|well|best)\b", task, _I):
        return []
    purpose = _head(task)
    if not purpose or purpose[0] in _TIME_WORDS:
        return []  # "I do it in June", "we plan things in advance"
    return _found(owner, "tool", words_value(m.group("v")), purpose)


_TIME_WORDS = frozenset("time day week month year morning evening night".split())


def preference(m: re.Match[str], ctx: Context) -> list[Found]:
    """ "I prefer the late shift now": a preference for the kind of thing its head names."""
    owner = _owner(m.group("s"), ctx)
    value = cut(re.split(r"\s+(?:to|over|than|instead of|rather than)\s+", m.group("v"))[0])
    known = lex.category(words(value))
    head = (known,) if known else _head(value)
    if not owner or not head:
        return []
    return _found(owner, "preference", words_value(value), head)


def taken(m: re.Match[str], ctx: Context) -> list[Found]:
    """ "I like my steak rare", "I take my eggs poached": how one has a thing."""
    owner = _owner(m.group("s"), ctx)
    value = cut(m.group("v"))
    if not owner or len(value.split()) > 3 or _NOT_A_WAY.match(value):
        return []
    return _found(owner, f"{singular(m.group('d').lower())} preference", words_value(value))


_NOT_A_WAY = re.compile(r"(?:a lot|very|so|too|more|less|as|at|in|on|to|for|and|but)\b", _I)


def participle(m: re.Match[str], ctx: Context) -> list[Found]:
    """ "The fellowship application was rejected", "the contract is signed": the state a past
    participle gives a thing (not a person's, not a verb of placing or naming)."""
    verb = m.group("v").lower().removeprefix("being ")
    planned = verb in ("planned", "scheduled", "booked") and m.group("end") is not None
    if (verb in _NOT_STATES and not planned) or len(verb) < 4:
        return []  # "scheduled for May" is a date, "the repair is scheduled" a state
    obj = phrase(m.group("s"), ctx)
    if obj is None or (obj.kind in ("user", "person") and not obj.words):
        return []  # "Nikau is blamed": a person's state is not a thing's
    subject = thing_key(obj) if obj.words or obj.kind == "thing" else obj.owner
    state = m.group(0)[m.start("v") - m.start() :].lower()  # "being processed" stays whole
    state = state if state.startswith("being ") else verb
    return _found(subject, "status", state) if subject and subject != "user" else []


# Participles that place, name, plan or describe: each has a rule of its own, or no state.
_NOT_STATES = frozenset(
    """
    based located stored kept hidden parked housed booked scheduled planned pencilled penciled
    called named renamed rebranded married engaged divorced separated insured owned handled
    managed organised organized covered supplied delivered registered moved changed switched
    pushed slipped delayed postponed rescheduled rebooked bumped shifted raised lowered reduced
    increased upgraded downgraded extended transferred relocated reissued replaced promoted
    retired hired fired used needed interested excited tired worried bored pleased surprised
    involved obsessed allowed supposed expected required
    """.split()
)
_PROCESS = re.compile(
    r"^(?:now\s+|still\s+|currently\s+)?(?P<v>(?:in|under)\s+(?:[a-z]+(?:ion|ment)|review|"
    r"progress|testing|draft|repair|repairs|discussion|construction))$",
    _I,
)


def process_status(value: str) -> str:
    """ "in negotiation", "under construction": a thing's state as a process it is in."""
    m = _PROCESS.match(cut(value))
    return words_value(m.group("v")) if m else ""


def meets(m: re.Match[str], ctx: Context) -> list[Found]:
    """ "The book club meets at the library", "the guided tour starts at 10 am": when a thing
    happens, or where when the place is named."""
    obj = phrase(m.group("s"), ctx)
    if obj is None or (obj.kind == "user" and not obj.words):
        return []
    subject, value = thing_key(obj), cut(m.group("v"))
    if _starts_with_when(value):
        return _found(subject, "schedule", when_value(value) or "")
    if re.match(r"(?:at|in)\s+(?:the|a|an|my|our|his|her|their|(?-i:[A-Z]))", value, _I):
        return _found(subject, "location", _place(value))
    return []
