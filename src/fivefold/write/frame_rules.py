"""The rules behind ``frames``: each reads one clause shape ("X lives in Y", "X moved Y to Z",
"X is Y") and states what it says as (subject, attribute, value) frames.

A rule's frame is a ``Found`` tuple; ``frames`` turns them into ``Frame`` objects. Rules run on
every clause in order; the catch-all copula ("X is Y") runs only when no other rule read the
clause, so a clause is read by the rule that knows its verb.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from fivefold.write import attributes as lex
from fivefold.write.phrases import (
    Context,
    Phrase,
    clauses,
    cut,
    key,
    name_value,
    phrase,
    words,
    words_value,
)
from fivefold.write.values import (
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
_TEAM_WORDS = r"(?:team|ward|unit|icu|squad|department|crew|desk|pod|tribe|rota)"
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
    if found is None or found.kind == "none" and not found.words:
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


def _place_like(value: str) -> bool:
    return bool(re.search(r"[A-Z0-9]", value)) or bool(re.match(r"with (?:us|me|my|our)\b", value))


# --- where people live, work, and whom they report to ------------------------------------


def _lives(m: re.Match[str], ctx: Context) -> list[Found]:
    who = phrase(m.group("s"), ctx)
    value = cut(m.group("v"))
    if who is None or not _place_like(value):
        return []
    if who.kind in ("user", "person"):
        return _found(who.owner, "residence", _place(value))
    return _found(thing_key(who), "location", _place(value))


def _place(value: str) -> str:
    return words_value(re.sub(r"^(?:in|at|on|to|into|near)\s+", "", value, flags=_I))


def _moved(m: re.Match[str], ctx: Context) -> list[Found]:
    who = phrase(m.group("s"), ctx)
    value = cut(m.group("v"))
    if who is None or re.match(r"(?:run|be|work|take|help|open|start|do|lead)\b", value, _I):
        return []
    if re.search(rf"\b{_TEAM_WORDS}\b", value, _I) and who.kind in ("user", "person"):
        return _found(who.owner, "team", _team(value))
    when = when_value(value)
    if when is not None and _starts_with_when(value):
        return _found(thing_key(who), "schedule", when)
    if not _place_like(value):
        return []
    if who.kind in ("user", "person"):
        return _found(who.owner, "residence", _place(value))
    return _found(thing_key(who), "location", _place(value))


def _starts_with_when(value: str) -> bool:
    value = re.sub(r"^[A-Z]{2}\d{2,4},?\s+(?:leaving\s+|departing\s+)?", "", value)  # a flight
    head = re.sub(r"^(?:(?:on|at|for|to|until|till|every|from|by|the|this|next|first|last|"
                  r"second)\s+)+", "", value, flags=_I).split()
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


def _retired(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_person_key(_who(m.group("s"), ctx)), "employer", "retired")


def _reports(m: re.Match[str], ctx: Context) -> list[Found]:
    boss = name_value(m.group("v"))
    return _found(_person_key(_who(m.group("s"), ctx)), "manager", boss or "")


def _managed_by(m: re.Match[str], ctx: Context) -> list[Found]:
    who = phrase(m.group("s"), ctx)
    boss = name_value(m.group("v"))
    if who is None or boss is None:
        return []
    attribute = "manager" if who.kind != "none" else "owner"
    return _found(who.owner or thing_key(who), attribute, boss)


def _team(text: str) -> str:
    found = words_value(text)
    return re.sub(r"\s+(?:team|squad|crew)$", "", found)


def _on_team(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_person_key(_who(m.group("s"), ctx)), "team", _team(m.group("v")))


def _plays_for(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_person_key(_who(m.group("s"), ctx)), "team", _team(m.group("v")))


def _role(text: str) -> str:
    text = re.split(r"\s+(?:at|on|in|for|with|since|from|because|after)\s+|,", cut(text))[0]
    parts = [p for p in re.split(r"\s+and\s+", text) if set(words(p)) & lex.ROLE_HEADS]
    return words_value(" and ".join(parts)) if parts else ""


def _promoted(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_person_key(_who(m.group("s"), ctx)), "role", _role(m.group("v")))


# --- changes: "X moved Y to Z", "Y slipped to Z", "Y changed to Z" ---------------------------


def _changed(m: re.Match[str], ctx: Context) -> list[Found]:
    target = m.group("o")
    if len(target.split()) > 7 or re.match(r"(?:to|into|in|over|up|back)\b", target, _I):
        return []
    obj = phrase(target, ctx)
    if obj is None or obj.kind in ("user", "person") and not obj.words:
        return []  # "IT upgraded us to MedChart 9" says nothing of where we live
    ctx.thing = obj
    return _valued(obj, m.group("v"), ctx)


def _valued(obj: Phrase, raw: str, ctx: Context) -> list[Found]:
    """What ``obj`` is now, read from the value it was changed to."""
    value = cut(raw)
    if re.match(r"(?:run|be|work|take|help|open|start|do|lead|live|look|join|manage|cook)\b",
                value, _I):
        return []  # "Yesenia moved to run Azulito's kitchen"
    named = _named_attribute(obj, ctx)
    if named is not None:
        subject, attribute, detail = named
        if attribute in _DEVICES and re.match(r"(?:macos|ios|android|windows)\b", value, _I):
            return []  # "upgraded the work laptop to macOS Sequoia" is a version
        return _found(subject, attribute, _read(attribute, value), detail)
    when = when_value(value)
    subject = thing_key(obj)
    if when is not None and (_starts_with_when(value) or obj.kind not in ("user", "person")):
        return _found(subject, "schedule", when)
    amount = amount_value(value)
    if amount is not None and re.match(r"[£€$+\d]", value):
        return _found(subject, "price" if re.search(r"[£€$]|peso|euro|dollar", value) else "number", amount)
    product = lex.category(words(value))
    if product is not None:
        return _found(obj.owner if obj.kind == "user" else "user", product, words_value(value))
    if obj.kind in ("user", "person") and _place_like(value):
        return _found(obj.owner, "residence", _place(value))
    if _place_like(value):
        return _found(subject, "location", _place(value))
    return []


def _slipped(m: re.Match[str], ctx: Context) -> list[Found]:
    obj = phrase(m.group("o"), ctx)
    if obj is None:
        return []
    ctx.thing = obj
    value = m.groupdict().get("v") or ""
    if not value:
        shift = relative_shift(m.group(0))
        return _found(thing_key(obj), "schedule", f"moved {shift}") if shift else []
    return _valued(obj, value, ctx)


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
    if "name" == " ".join(own[-1:]) and obj.tail:  # "the name of the Tlaquepaque place"
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
        return obj.owner, attribute.name, mods
    if attribute.name in _THING_IDS and mods and re.match(r"[a-z]", obj.text.split()[-len(mods) - 1]):
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


_READERS: dict[str, Callable[[str], str | None]] = {}


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


# --- "X is Y": the copula, read by what X names and what Y looks like ------------------------


def _copula(m: re.Match[str], ctx: Context, *, colon: bool = False) -> list[Found]:
    """ "X is Y" (or "X: Y", read only when X names an attribute: "Work email: ...")."""
    subject_text, value = m.group("s"), m.group("v").strip()
    inverse = [] if colon else _inverse(subject_text, value, ctx)
    if inverse:
        return inverse
    obj = phrase(subject_text, ctx)
    if obj is None:
        return []
    named = _named_attribute(obj, ctx)
    found = _attribute_value(named, obj, value) if named is not None else []
    if found or colon or named is not None and obj.kind in ("user", "person"):
        return found
    if obj.kind == "user" and not obj.words:
        return _person_predicate(obj.owner, value)
    if obj.kind == "user":
        return _thing_predicate(obj, value, ctx)  # "my passport is in the desk drawer"
    found = _person_predicate(obj.owner, value) if obj.kind in ("person", "name") else []
    return found or _alias(obj, value) or _thing_predicate(obj, value, ctx)


def _alias(obj: Phrase, value: str) -> list[Found]:
    """ "Cardiac ICU is Ward 7C": a place's code names it, and a renaming changes that name."""
    code = re.fullmatch(r"(?:(?-i:[A-Z])\w*\s+){1,2}\d+\w*|\d+\w*", value.strip(" ."))
    if code is None or obj.kind not in ("name", "person", "thing"):
        return []
    return _found(key(value), "name", thing_key(obj))


def _attribute_value(
    named: tuple[str, str, tuple[str, ...]], obj: Phrase, value: str
) -> list[Found]:
    subject, attribute, detail = named
    if attribute in _NAMES and _starts_with_when(value):  # "the dentist is on 10 September"
        return _found(thing_key(obj), "schedule", when_value(cut(value)) or "")
    read = _read(attribute, value)
    if attribute == "phone number" and not read and obj.words[-1:] in (("phone",), ("mobile",)):
        read, attribute = words_value(value), "phone model"  # "my phone is a Pixel 7"
    if attribute in _DEVICES and re.match(r"(?:macos|ios|android|windows)\b", value, _I):
        return []  # "upgraded the work laptop to macOS Sequoia" is a version
    titled = re.match(r"(?:Miss|Mrs|Ms|Mr)\s+[A-Z][\w-]+", value)
    if titled is not None:  # "Zara's teacher is Miss Clarke": a name a marriage may change
        return _found(subject, attribute, read, detail) + _found(read, "name", read)
    return _found(subject, attribute, read, detail)


def _inverse(subject_text: str, value: str, ctx: Context) -> list[Found]:
    """ "Priyanka Shah is my line manager", "Suya is my favourite snack"."""
    value = re.sub(r"^been\s+", "", value)  # "he's been my manager for six years"
    value = re.sub(r"\s+(?:for|since)\s+(?:\w+\s+)?(?:years?|months?|weeks?|ages)$", "", value)
    m = re.match(r"^(?P<np>(?:my|our|[A-Z][\w-]*'s)\s+[\w -]+?)(?:\s+(?:now|too|again))?$", value)
    if m is None or re.match(r"(?:my|our|the|this|it|that)\b", subject_text, _I):
        return []
    obj = phrase(m.group("np"), ctx)
    named = _named_attribute(obj, ctx) if obj is not None else None
    if named is None:
        return []
    subject, attribute, detail = named
    who = phrase(subject_text, ctx)
    if who is not None and who.kind in ("person", "name") and len(subject_text.split()) <= 2:
        subject_text = who.text or who.owner  # "so she's my manager now": the one named before
    found = name_value(subject_text, last=True) if attribute in _NAMES else None
    return _found(subject, attribute, found or words_value(subject_text), detail)


_DIET = re.compile(
    r"^(?:now\s+|fully\s+|strictly\s+|mostly\s+|still\s+|a\s+)*(?P<d>vegetarian|vegan|"
    r"pescatarian|pescetarian|keto|gluten[- ]free|dairy[- ]free|halal|kosher|plant[- ]based|"
    r"flexitarian|carnivore|paleo|teetotal)\b",
    _I,
)
_RELATIONSHIP = re.compile(r"^(?:now\s+|finally\s+)?(?P<r>married|engaged|divorced|separated|"
                           r"single|widowed)\b", _I)
_DUTY = re.compile(r"^(?:the\s+|our\s+|a\s+|an\s+)?(?P<r>[a-z][\w' -]{2,40}?)\s+(?:for|of)\s+(?P<n>.+)$")
_HEALTH = re.compile(
    r"^(?:now\s+|still\s+|fully\s+|finally\s+)*(?P<h>(?:fine|better|healed|recovered|recovering|"
    r"home|ill|sick|pregnant|okay|ok|in hospital|on the waiting list|walking \w+ (?:a )?\w+|"
    r"back on full duties|on full duties|on light duties|off sick)\b.*)$",
    _I,
)


def _person_predicate(who: str, value: str) -> list[Found]:
    if not who:
        return []
    value = re.sub(r"^(?:now|still|currently|also|officially)\s+", "", cut(value), flags=_I)
    for pattern, attribute, group in (
        (_DIET, "diet", "d"),
        (_RELATIONSHIP, "relationship", "r"),
    ):
        found = pattern.match(value)
        if found is not None:
            return _found(who, attribute, found.group(group).lower())
    if re.match(r"(?:now\s+)?retired\b", value, _I):
        return _found(who, "employer", "retired")
    health = _HEALTH.match(value)
    if health is not None:
        return _found(who, "status", words_value(health.group("h")))
    if re.match(r"(?:now\s+)?(?:Mrs|Ms|Miss|Mr|Mx)\s+[A-Z]", value):
        return _found(who, "name", name_value(value) or "")
    duty = _DUTY.match(value)
    if duty is not None and _is_duty(duty.group("r"), duty.group("n")):
        subject = " ".join((*words(duty.group("r")), *words(cut(duty.group("n")))))
        return _found(_drop_articles(subject), "owner", who)
    role = _role(value) if re.match(r"(?:now\s+)?(?:a|an|the|our|my|[A-Z])", value) else ""
    employer = re.search(r"\s(?:at|for|with)\s+(?P<o>(?:the\s+)?[A-Z].*)$", value)
    if role and employer is not None:  # "I'm an ICU nurse at Northgate General Hospital"
        return _found(who, "employer", _org(employer.group("o"))) + _job_role(who, role)
    return _found(who, "role", role)


def _is_duty(role: str, scope: str) -> bool:
    """ "incident commander for the Kestrel cutover", "tech lead of the ingestion team"; not
    "the oldest of us three" nor "booked out for three weeks"."""
    head = words(role)[-1:]
    if re.match(r"(?:my|our|been)\s", role):
        return False  # "my manager for six years" is the user's manager, read elsewhere
    named = re.match(r"(?:the|our|my)\s|[A-Z]", scope)
    return bool(head) and len(words(cut(scope))) <= 5 and (
        named is not None or head[0] in lex.ROLE_HEADS or head[0] in ("commander", "champion")
    )


def _drop_articles(text: str) -> str:
    return " ".join(w for w in text.split() if w not in ("the", "a", "an", "our", "my"))


_STATUS_START = re.compile(r"^(?:now\s+|still\s+|currently\s+|finally\s+|officially\s+)*", _I)


def _thing_predicate(obj: Phrase, value: str, ctx: Context) -> list[Found]:
    subject = thing_key(obj)
    value = _STATUS_START.sub("", value.strip())
    if not subject or subject in ("user", "it"):
        return []
    if re.match(r"(?:mine|ours)\b", value, _I):
        return _found(subject, "owner", "user")
    expiry = re.match(r"(?:valid|good)\s+(?:until|till|through)\s+(?P<w>.+)$", value, _I)
    if expiry is not None:
        return _found(subject, "expiry", when_value(expiry.group("w")) or "")
    planned = re.sub(r"^(?:planned|scheduled|set|booked|due|pencilled in|penciled in|moved)\s+"
                     r"(?:for\s+|on\s+|to\s+)?", "", value, flags=_I)
    if _starts_with_when(planned):
        return _found(subject, "schedule", when_value(cut(planned)) or "")
    version = re.match(r"(?:at\s+|on\s+)?(?:version|v)\s*(?P<n>\d+(?:\.\d+)*)\b", value, _I)
    if version is not None:
        return _found(_product(subject), "version", version.group("n"))
    status = _status(value)
    if status:
        return _found(subject, "status", status)
    if obj.kind == "person" and not obj.words:
        return _amount(subject, value)  # "Raj is in the lab next door": where a person is now
    return _located(subject, value) or _amount(subject, value)


def _status(value: str) -> str:
    head = " ".join(cut(value).lower().split()[:8])
    phrases = [p for p in lex.STATUS_PHRASES.findall(head) if p not in lex.HEALTH_PHRASES]
    found = [w for w in words(head) if w in lex.STATUS_WORDS and w not in lex.HEALTH]
    if not phrases and not found:
        return ""
    if phrases:
        return " ".join(words(" ".join(phrases)))
    return " ".join(dict.fromkeys(found))


_WHERE = re.compile(
    r"^(?:kept\s+|stored\s+|located\s+|based\s+|hidden\s+|parked\s+|now\s+)?"
    r"(?P<p>in|at|on|under|inside|behind|with|by|next to|above|below)\s+(?P<place>.+)$",
    _I,
)


def _located(subject: str, value: str) -> list[Found]:
    where = _WHERE.match(value)
    if where is None:
        return []
    place = cut(where.group("place"))
    if when_value(place) is not None and _starts_with_when(place):
        return []
    found = _found(subject, "location", words_value(place))
    if where.group("p").lower() == "with":  # "Pest control is with PlagaCero"
        found += _found(subject, "owner", name_value(place) or words_value(place))
    return found


def _amount(subject: str, value: str) -> list[Found]:
    if not re.match(r"(?:about\s+|around\s+|roughly\s+|now\s+|up to\s+)?[£€$+\d]", value, _I):
        return []
    amount = amount_value(value)
    if amount is None:
        return []
    money = re.search(r"[£€$]|\b(?:pesos?|euros?|dollars?|pounds|yen|dirhams?|rupees?)\b", value, _I)
    return _found(subject, "price" if money else "number", amount)


def _product(subject: str) -> str:
    parts = [w for w in subject.split() if w not in ("app", "release", "install", "our")]
    return " ".join(parts) or subject
