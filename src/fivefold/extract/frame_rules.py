"""The rules behind ``frames``: each reads one clause shape ("X lives in Y", "X moved Y to Z",
"X is Y") and states what it says as (subject, attribute, value) frames.

A rule's frame is a ``Found`` tuple; ``frames`` turns them into ``Frame`` objects. Rules run on
every clause in order; the catch-all copula ("X is Y") runs only when no other rule read the
clause, so a clause is read by the rule that knows its verb.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from fivefold.extract import attributes as lex
from fivefold.extract.phrases import (
    Context,
    Phrase,
    cut,
    key,
    name_value,
    phrase,
    words,
    words_value,
)
from fivefold.extract.values import (
    amount_value,
    code_value,
    email_value,
    phone_value,
    relative_shift,
    when_value,
)

# subject, attribute, value, single, detail (the words that qualify the attribute)
Found = tuple[str, str, str, bool, tuple[str, ...]]
Rule = Callable[[re.Match[str], Context], list[Found]]

_I = re.IGNORECASE
_TEAM_WORDS = r"(?:team|ward|unit|icu|squad|department|crew|desk|pod|tribe|rota|lab|group|division)"
_CLUB = re.compile(r"\b(?:under-?\d+s?|u\d\d|club|fc|cf|academy|team|squad|ward|icu|unit)\b", _I)


def _found(subject: str, name: str, value: str, detail: tuple[str, ...] = ()) -> list[Found]:
    if not subject or not value:
        return []
    attribute = lex.attribute(name)
    return [(subject, attribute.name, value, attribute.single, detail)]


def _additive(subject: str, name: str, value: str) -> list[Found]:
    return [(subject, name, value, False, ())] if subject and value else []


def _who(text: str, ctx: Context) -> Phrase | None:
    """A clause's subject when it must be the user or a person (or a name)."""
    found = phrase(text, ctx)
    if found is None or (found.kind == "none" and not found.words):
        return None
    return found


def _person_key(found: Phrase | None) -> str:
    if found is None:
        return ""
    if found.kind in ("user", "person", "name"):
        return found.owner
    return ""


def thing_key(found: Phrase | None) -> str:
    """The key of a thing or event a phrase names: its possessor's key and its own words."""
    if found is None:
        return ""
    own = tuple(
        w for w in found.words if w not in ("a", "an", "the") and w not in lex.SUBJECT_QUALIFIERS
    )
    if found.kind == "user":
        return " ".join(own)
    return " ".join(w for w in (found.owner, *own) if w)


_HOMELY = re.compile(
    r"with (?:us|me|my|our)\b|(?:in|at) (?:a|an) (?:[\w-]+ )?(?:home|flat|house)\b"
)


def _names_a_team(value: str) -> bool:
    head = re.split(r"\s+(?:in|at|on|for|with|after|during|since)\s+", value.strip(" ."))[0]
    return re.search(rf"\b{_TEAM_WORDS}$", head, _I) is not None


def _place_like(value: str) -> bool:
    return bool(re.search(r"[A-Z0-9]", value)) or _HOMELY.match(value) is not None


# --- where people live, work, and whom they report to ------------------------------------


def _lives(m: re.Match[str], ctx: Context) -> list[Found]:
    who = phrase(m.group("s"), ctx)
    value = cut(m.group("v"))
    if who is None or not _place_like(value) or _starts_with_when(value[3:]):
        return []  # "went live on 10 September" is no place
    if _names_a_team(value):
        return []  # "moved into the Energy and Mining unit in the reorg" is no home
    if who.kind in ("user", "person") and not who.words:
        return _found(who.owner, "residence", _place(value))
    return _found(thing_key(who), "location", _place(value))


_TRIP = re.compile(
    r"\bfor (?:a|the|two|three|\d+) (?:conference|trip|week|weekend|month|few|couple|holiday|"
    r"vacation|visit|summer|night|day)",
    _I,
)


def _place(value: str) -> str:
    if _TRIP.search(value):
        return ""  # "moved to Berlin for a conference" is a trip
    value = re.split(r"\s+and\s+(?=[a-z])", value)[0]  # "Kungsbacka and takes the train in"
    return words_value(re.sub(r"^(?:in|at|on|to|into|near)\s+", "", value, flags=_I))


def _starts_with_when(value: str) -> bool:
    value = re.sub(r"^[A-Z]{2}\d{2,4},?\s+(?:leaving\s+|departing\s+)?", "", value)  # a flight
    head = re.sub(
        r"^(?:(?:on|at|for|to|until|till|every|from|by|the|this|next|first|last|"
        r"second)\s+)+",
        "",
        value,
        flags=_I,
    ).split()
    if head and re.fullmatch(_MONTH_NAMES, head[0].lower()):
        return True
    return when_value(" ".join(head[:2])) is not None


def _keys_to(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found("user", "residence", _place(cut(m.group("v"))))


def _works(m: re.Match[str], ctx: Context) -> list[Found]:
    who = _who(m.group("s"), ctx)
    subject = _person_key(who)
    where = m.group("v")
    found = _found(subject, "employer", _org(where))
    role = m.group("r") or (re.search(r",\s+as\s+(.+)$", where) or [None, None])[1]
    return found + (_job_role(subject, role) if role else [])


def _job_role(subject: str, role: str) -> list[Found]:
    """The role a job statement names in passing ("works at Finbolt as a backend engineer"):
    kept, but too loose to replace or be replaced by a title ("I'm a Band 5 staff nurse")."""
    return _additive(subject, "role", _role(role))


def _org(text: str) -> str:
    text = re.split(r",|\s+(?:in|as|on|since|from|until|for|and|near|where)\s+", cut(text))[0]
    return name_value(text) or words_value(text)


def _joined(m: re.Match[str], ctx: Context) -> list[Found]:
    subject = _person_key(_who(m.group("s"), ctx))
    where = cut(m.group("v"))
    if _CLUB.search(where) or re.search(rf"\b{_TEAM_WORDS}\b", where, _I):
        return _found(subject, "team", _team(where))
    if not re.match(r"(?:the\s+)?[A-Z]", where):
        return []
    found = _found(subject, "employer", _org(where))
    role = m.groupdict().get("r")
    return found + (_job_role(subject, role) if role else [])


def _employer_only(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_person_key(_who(m.group("s"), ctx)), "employer", _org(m.group("v")))


def _work_from(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_person_key(_who(m.group("s"), ctx)), "work location", key(m.group("v")))


def _school(m: re.Match[str], ctx: Context) -> list[Found]:
    school = name_value(m.group("v")) or key(cut(m.group("v")))
    return _found(_person_key(_who(m.group("s"), ctx)), "school", school)


def _retired(m: re.Match[str], ctx: Context) -> list[Found]:
    who = _person_key(_who(m.group("s"), ctx))  # retiring ends the job and its title
    return _found(who, "employer", "retired") + _found(who, "role", "retired")


def _reports(m: re.Match[str], ctx: Context) -> list[Found]:
    boss = name_value(m.group("v"))
    return _found(_person_key(_who(m.group("s"), ctx)), "manager", boss or "")


def _team(text: str) -> str:
    text = re.split(r"\s+(?:as|this|last|next|since|from|for|with|after|when)\b", text)[0]
    found = words_value(text)
    return re.sub(r"\s+(?:team|squad|crew)$", "", found)


def _on_team(m: re.Match[str], ctx: Context) -> list[Found]:
    team = _team(m.group("v"))
    if team in ("lab", "group", "division"):
        return []  # "Raj is in the lab next door" is where he is, not whose lab
    return _found(_person_key(_who(m.group("s"), ctx)), "team", team)


def _plays_for(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_person_key(_who(m.group("s"), ctx)), "team", _team(m.group("v")))


def _role(text: str) -> str:
    text = re.split(r"\s+(?:at|on|in|for|with|since|from|because|after)\s+|,", cut(text))[0]
    parts = [p for p in re.split(r"\s+and\s+", text) if set(words(p)) & lex.ROLE_HEADS]
    return words_value(" and ".join(parts)) if parts else ""


def _promoted(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_person_key(_who(m.group("s"), ctx)), "role", _role(m.group("v")))


# --- changes: "X moved Y to Z", "Y slipped to Z", "Y changed to Z" ---------------------------


_INTENT = re.compile(
    r"\b(?:to|about|of|might|may|could|would|should|wants?|plans?|planning|considering|"
    r"thinking|hopes?|hoping|if)\s*$",
    _I,
)


def _changed(m: re.Match[str], ctx: Context) -> list[Found]:
    if _INTENT.search(m.group("s")):
        return []  # "our project to move the stream to Kafka" is a plan, not a change
    target = m.group("o")
    if len(target.split()) > 7 or re.match(r"(?:to|into|in|over|up|back|from)\b", target, _I):
        return []
    obj = phrase(target, ctx)
    if obj is None or (obj.kind in ("user", "person") and not obj.words):
        return []  # "IT upgraded us to MedChart 9" says nothing of where we live
    ctx.thing = obj
    return _valued(obj, m.group("v"), ctx)


MONEY = re.compile(r"[£€$]|\b(?:pesos?|euros?|dollars?|pounds|yen|dirhams?|rupees?)\b", _I)
# What a person moves to at work, not home: "moved to the Tangier office", "to the night desk".
_WORKPLACE = re.compile(
    r"\b(?:office|branch|site|desk|floor|room|job|role|position|shift|project|phase|stage|"
    r"campus|account|territory|region|locker|rota)s?\b",
    _I,
)
_CODED = re.compile(
    r"^(?:the\s+|a\s+|an\s+|my\s+|our\s+)?(?P<n>[a-z][a-z -]*?)\s+(?:number\s+|no\s+)?"
    r"(?P<c>#?[A-Z0-9]*\d[\w-]*)$",
    _I,
)


def _slot_in(owner: str, value: str) -> list[Found] | None:
    """A value that names its own slot: "moved to locker 87" (a code after an identifier's
    noun) or "moved to the Okoye lab" (a team)."""
    coded = _CODED.match(value)
    if coded is not None:
        found = lex.noun_attribute(words(coded.group("n")))
        if found is not None and found[0].name in _CODES:
            return _found(owner, found[0].name, coded.group("c").lower())
    if re.search(rf"\b{_TEAM_WORDS}s?$", value, _I) and re.match(r"(?:the|our|my)\s", value, _I):
        return _found(owner, "team", _team(re.sub(r"^\w+\s+", "", value)))
    return None


def _valued(obj: Phrase, raw: str, ctx: Context, *, moved: bool = False) -> list[Found]:
    """What ``obj`` is now, read from the value it was changed to (``moved``: by a verb of
    moving, which alone makes a person's new place a home)."""
    value = cut(raw)
    if re.match(
        r"(?:run|be|work|take|help|open|start|do|lead|live|look|join|manage|cook)\b", value, _I
    ):
        return []  # "Yesenia moved to run Azulito's kitchen"
    named = _named_attribute(obj, ctx)
    if named is not None:
        subject, attribute, detail = named
        if attribute in _DEVICES and re.match(r"(?:macos|ios|android|windows)\b", value, _I):
            return []  # "upgraded the work laptop to macOS Sequoia" is a version
        if attribute not in _WHENS and _starts_with_when(value):  # "the release moved to May"
            return _found(thing_key(obj), "schedule", when_value(value) or "")
        return _found(subject, attribute, _read(attribute, value), detail)
    when = when_value(value)
    subject = thing_key(obj)
    if _starts_with_when(value) or (when is not None and obj.kind not in ("user", "person")):
        return _found(subject, "schedule", when or words_value(value))  # "postponed to June"
    amount = amount_value(value)
    if amount is not None and re.match(r"[£€$+\d]", value):
        return _found(subject, "price" if MONEY.search(value) else "number", amount)
    product = lex.category(words(value))
    if product is not None:
        return _found(obj.owner if obj.kind == "user" else "user", product, words_value(value))
    person = obj.kind in ("user", "person") and not obj.words
    slot = _slot_in(obj.owner if person else subject, value)
    if slot is not None:
        return slot
    if person:  # a person moved: a home only by a verb of moving, to a place named
        homely = (
            moved
            and _place_like(value)
            and not _WORKPLACE.search(value)
            and not _names_a_team(value)
        )
        return _found(obj.owner, "residence", _place(value)) if homely else []
    if _place_like(value) or re.match(r"(?:the|a|an|our|my|his|her|their)\s+[a-z]", value, _I):
        return _found(subject, "location", _place(value))  # "the lab moved to the sixth floor"
    return []


def _slipped(m: re.Match[str], ctx: Context) -> list[Found]:
    if _INTENT.search(m.group("o")):
        return []  # "he's thinking about moving back to Sweden"
    obj = phrase(m.group("o"), ctx)
    if obj is None:
        return []
    ctx.thing = obj
    value = m.groupdict().get("v") or ""
    if not value:
        shift = relative_shift(m.group(0))
        return _found(thing_key(obj), "schedule", f"moved {shift}") if shift else []
    return _valued(obj, value, ctx, moved=_MOVING.search(m.group(0)) is not None)


_MOVING = re.compile(r"\b(?:moved|moving|relocated|relocating|emigrated)\b", _I)


def _pushed_it(m: re.Match[str], ctx: Context) -> list[Found]:
    """ "Pen test findings pushed Tidewater GA again": what "it" means in the next clause."""
    obj = phrase(m.group("o"), ctx)
    if obj is not None:
        ctx.thing = obj
    return []


def _named_attribute(obj: Phrase, ctx: Context) -> tuple[str, str, tuple[str, ...]] | None:
    """The subject, attribute and detail of a phrase whose last words name an attribute."""
    own = obj.words
    if obj.kind in ("name", "person") and not own:
        own = tuple(obj.owner.split())
        obj = Phrase("", "none", own, obj.tail, text=obj.text)
    if " ".join(own[-1:]) == "name" and obj.tail:  # "the name of the Tlaquepaque place"
        return key(" ".join(w for w in obj.tail if w not in ("the", "a"))), "name", ()
    favourite = _favourite(own, obj.text)
    if favourite is not None:
        return (obj.owner or "user"), favourite, ()
    found = lex.noun_attribute(own)
    if found is None:
        return None
    attribute, size = found
    mods = tuple(w for w in own[:-size] if w not in lex.QUALIFIERS and w not in ("a", "an", "the"))
    return _owner_of(obj, attribute, mods, ctx)


def _owner_of(
    obj: Phrase, attribute: lex.Attribute, mods: tuple[str, ...], ctx: Context
) -> tuple[str, str, tuple[str, ...]] | None:
    if attribute.name in lex.KINDED and mods:
        attribute, mods = lex.Attribute(f"{' '.join(mods)} {attribute.name}", True, True), ()
    if obj.kind == "thing" and attribute.personal and attribute.name not in _THING_IDS:
        return "user", attribute.name, (*obj.owner.split(), *mods)  # "the car's reg"
    if obj.kind == "user" and mods and not attribute.personal:
        return " ".join(mods), attribute.name, ()  # "our beef supplier" is the beef's
    if obj.kind in ("user", "person", "name", "thing"):
        if attribute.personal:  # "my locker at the gym" is not "my locker at work"
            mods = (*mods, *(w for w in obj.tail if w not in ("the", "a", "an", "my", "our")))
        return obj.owner, attribute.name, mods
    if (
        attribute.name in _THING_IDS
        and mods
        and re.match(r"[a-z]", obj.text.split()[-len(mods) - 1])
    ):
        return " ".join(mods), attribute.name, ()  # "the restaurant number": the restaurant's
    if attribute.personal:
        return (ctx.lead_org or "user"), attribute.name, mods
    subject = " ".join(mods) or ctx.lead_org or "user"
    return subject, attribute.name, ()


def _favourite(own: tuple[str, ...], text: str) -> str | None:
    for marker in ("favourite", "favorite", "go to"):
        joined = " ".join(own)
        if f"{marker} " in f"{joined} " and joined.split(marker)[-1].strip():
            return "favourite " + joined.split(marker)[-1].strip()
    if re.search(r"\bof choice\b", text, _I) and own:
        return "favourite " + own[-1]
    return None


def _read(attribute: str, value: str) -> str:
    """An attribute's value read from the text after its verb."""
    value = re.sub(r"^(?:now|still|currently|also|just|officially)\s+", "", value.strip(), flags=_I)
    if attribute == "phone number":
        return phone_value(value) or ""
    if attribute == "email":
        return email_value(value) or ""
    if attribute in ("password", "username"):
        return value.split()[0].strip(".,;").lower() if value.split() else ""
    if attribute in _CODES:
        code = code_value(re.sub(r"^(?:number|no|#)\s*", "", value, flags=_I)) or ""
        plate = attribute == "plate" and not re.search(r"[a-z].*\d|\d.*[a-z]", code)
        return "" if plate else code
    if attribute == "pb":
        duration = re.search(r"\d{1,2}:\d{2}(?::\d{2})?", value)
        return duration.group(0) if duration else ""
    if attribute in _AMOUNTS:
        return amount_value(value) or ""
    if attribute in _WHENS:
        return when_value(value) or ""
    if attribute in _NAMES:
        value = _before_tail(re.sub(r"^(?:with|by|through|via|at)\s+", "", value, flags=_I))
        definite = re.match(r"(?:the|our|my|a|an)\s", value, _I)
        return name_value(value) or (words_value(value) if definite else "")
    if attribute == "role":
        return _role(value)
    if attribute == "team":
        return _team(value)
    if attribute == "residence":
        return _place(value) if _place_like(value) else ""
    if attribute in _DEVICES:
        value = value.split(",")[0]  # "a red Volvo V60, registration KLM 48T"
    return words_value(re.sub(r"^(?:with|by|on|at|in)\s+", "", value, flags=_I))


def _before_tail(value: str) -> str:
    return re.split(r"\s+(?:at|on|in|for|from|since|because)\s+(?=[a-z])|,", value)[0]


_MONTH_NAMES = (
    r"january|february|march|april|may|june|july|august|september|october|november|december"
)


def _set(spec: str) -> frozenset[str]:
    return frozenset(item.strip() for item in spec.split(",") if item.strip())


_CODES = _set(
    "badge number, employee number, locker, desk, extension, membership number, account number,"
    "pin, username, password, plate, bleep"
)
_AMOUNTS = _set(
    "rent, salary, weight, mortgage payment, shoe size, rate limit, budget, price, rate,"
    "headcount, slo, bill, cover, capacity, a1c, reading glasses, pb, number"
)
_THING_IDS = _set("phone number, email, password, username")
_DEVICES = _set("phone model, laptop, car, bike, watch")
_WHENS = _set("birthday, bedtime, schedule, opening hours, expiry")
_NAMES = _set(
    "manager, general manager, head chef, dentist, doctor, accountant, plumber, hairdresser,"
    "childminder, teacher, coach, insurer, bank, phone carrier, internet provider, supplier,"
    "owner, employer, point of sale, ci, school"
)


def _product(subject: str) -> str:
    parts = [w for w in subject.split() if w not in ("app", "release", "install", "our")]
    return " ".join(parts) or subject
