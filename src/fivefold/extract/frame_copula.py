"""The catch-all reader of ``frames``: "X is Y", read by what X names (an attribute: "my
manager", a person, a thing or event) and what Y looks like (a name, a date, a status, a place,
an amount)."""

from __future__ import annotations

import re

from fivefold.extract import attributes as lex
from fivefold.extract.frame_habits import process_status
from fivefold.extract.frame_rules import (
    _DEVICES,
    _NAMES,
    _WHENS,
    MONEY,
    Found,
    _found,
    _job_role,
    _named_attribute,
    _org,
    _product,
    _read,
    _role,
    _starts_with_when,
    thing_key,
)
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
from fivefold.extract.values import amount_value, when_value

_I = re.IGNORECASE


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
    if not found and obj.kind in ("user", "person") and obj.words:
        found = _coded(obj, value)
    if found or colon or (named is not None and obj.kind in ("user", "person")):
        return found
    if obj.kind == "user" and not obj.words:
        return _person_predicate(obj.owner, value)
    if obj.kind == "user":
        return _thing_predicate(obj, value, ctx)  # "my passport is in the desk drawer"
    person = obj.kind in ("person", "name") and not obj.words  # not "Tomas's audition"
    found = _person_predicate(obj.owner, value) if person else []
    return found or _alias(obj, value) or _thing_predicate(obj, value, ctx)


def _coded(obj: Phrase, value: str) -> list[Found]:
    """ "My library card number is 55120": a code names its own slot, the words that hold it."""
    code = re.fullmatch(r"(?:now\s+)?#?(?P<c>[A-Z0-9]*\d[\w-]*)(?:\s+now)?", cut(value), _I)
    own = [w for w in obj.words if w not in lex.QUALIFIERS and w not in ("a", "an", "the")]
    if code is None or not own or own[-1] not in _CODE_HEADS:
        return []
    return _found(obj.owner, " ".join(own), code.group("c").lower())


_CODE_HEADS = frozenset("number code id pin reference ref no".split())


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
    if attribute in _DEVICES and re.match(r"(?:in|at|on|under|inside|behind|next to)\s", value):
        return _located(thing_key(obj), value)  # "my bike is in the hallway": where, not which
    if re.match(r"(?:being\s+)?\w+ing\b", value) and not re.match(r"(?:morning|evening)", value):
        return []  # "the Kestrel team is hiring two engineers" says what it does
    if attribute not in _WHENS and _starts_with_when(value):  # "the dentist is on 10 September"
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
    pronoun = re.match(r"(?:so\s+|and\s+)?(?:he|she|they|it)$", subject_text, _I)
    if who is not None and who.kind in ("person", "name") and len(subject_text.split()) <= 2:
        subject_text = who.text or who.owner  # "so she's my manager now": the one named before
    elif pronoun:
        return []  # nobody named before to be "she"
    found = name_value(subject_text, last=True) if attribute in _NAMES else None
    return _found(subject, attribute, found or words_value(subject_text), detail)


_DIET = re.compile(
    r"^(?:now\s+|fully\s+|strictly\s+|mostly\s+|still\s+|a\s+)*(?P<d>vegetarian|vegan|"
    r"pescatarian|pescetarian|keto|gluten[- ]free|dairy[- ]free|halal|kosher|plant[- ]based|"
    r"flexitarian|carnivore|paleo|teetotal)\b",
    _I,
)
_RELATIONSHIP = re.compile(
    r"^(?:now\s+|finally\s+)?(?P<r>married|engaged|divorced|separated|"
    r"single|widowed)\b",
    _I,
)
_DUTY = re.compile(r"^(?:the\s+|our\s+)?(?P<r>[a-z][\w' -]{2,40}?)\s+(?:for|of)\s+(?P<n>.+)$")
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
    if re.match(r"(?:my|our|been|an?|one|some|part|on|in|at)\s", role, _I):
        return False  # "my manager for six years" is the user's manager, read elsewhere
    if len(words(role)) > 4 or set(words(role)) & _NOT_IN_A_DUTY or role.split()[0].endswith("ing"):
        return False  # "a biologist at the University of the Algarve" is a job
    named = re.match(r"(?:the|our|my)\s|[A-Z]", scope)
    return (
        bool(head)
        and len(words(cut(scope))) <= 5
        and (named is not None or head[0] in lex.ROLE_HEADS or head[0] in ("commander", "champion"))
    )


_NOT_IN_A_DUTY = frozenset("at in on to with and or but from by".split())


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
    planned = re.sub(
        r"^(?:planned|scheduled|set|booked|due|pencilled in|penciled in|moved|confirmed)\s+"
        r"(?:for\s+|on\s+|to\s+)?",
        "",
        value,
        flags=_I,
    )
    if _starts_with_when(planned):
        return _found(subject, "schedule", when_value(cut(planned)) or "")
    version = re.match(r"(?:at\s+|on\s+)?(?:version|v)\s*(?P<n>\d+(?:\.\d+)*)\b", value, _I)
    if version is not None:
        return _found(_product(subject), "version", version.group("n"))
    status = _status(value) or process_status(value)
    if status:
        return _found(subject, "status", status)
    if obj.kind == "person" and not obj.words:
        return _amount(subject, value)  # "Raj is in the lab next door": where a person is now
    return _located(subject, value) or _amount(subject, value)


def _status(value: str) -> str:
    head = " ".join(cut(value).lower().split()[:8])
    phrases = [p for p in lex.STATUS_PHRASES.findall(head) if p not in lex.HEALTH_PHRASES]
    tokens = [t.strip(".,;:!?") for t in head.split()]  # "rk_live_" holds no status
    found = [w for w in tokens if w in lex.STATUS_WORDS and w not in lex.HEALTH]
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
    place = re.split(r",\s+(?=[a-z])", cut(where.group("place")))[0]  # ", third floor, no lift"
    if not re.match(r"(?:the|my|our|his|her|their)\s|.*[A-Z0-9]", place):
        return []  # "on a month", "in shock": no place
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
    return _found(subject, "price" if MONEY.search(value) else "number", amount)
