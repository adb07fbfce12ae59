"""The verb rules of ``frames`` (amounts, schedules, versions, tastes, statuses, places,
duties, tools, devices, names) and the table that runs every rule over a memory's clauses."""

from __future__ import annotations

import re

from fivefold.write import attributes as lex
from fivefold.write import frame_rules as fr
from fivefold.write.frame_rules import Found, Rule, _found, thing_key
from fivefold.write.phrases import Context, Phrase, clauses, cut, key, name_value, phrase, singular, words
from fivefold.write.phrases import words_value
from fivefold.write.values import amount_value, version_number, when_parts, when_value

_I = re.IGNORECASE


def _subject(text: str, ctx: Context) -> str:
    found = phrase(text, ctx)
    return "" if found is None else (found.owner if found.kind != "none" else thing_key(found))


# --- amounts ------------------------------------------------------------------------------


def _weighs(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_subject(m.group("s") or "", ctx) or "user", "weight", amount_value(m.group("v")) or "")


def _headcount(m: re.Match[str], ctx: Context) -> list[Found]:
    if singular(m.group("u")) not in lex.PEOPLE:
        return []
    return _found(_subject(m.group("s"), ctx), "headcount", amount_value(m.group("n")) or "")


def _we_are(m: re.Match[str], ctx: Context) -> list[Found]:
    team = m.group("t")
    subject = thing_key(phrase(team, ctx)) if team else "user"
    return _found(subject, "headcount", amount_value(m.group("n")) or "")


def _rate_limit(m: re.Match[str], ctx: Context) -> list[Found]:
    own = [w for w in words(m.group("s")) if w not in _UNIT_WORDS and w not in ("the", "our")]
    return _found(" ".join(own), "rate limit", amount_value(m.group("v")) or "")


_UNIT_WORDS = frozenset("key keys client clients user users customer customers account token".split())
_HOMES = frozenset("flat house apartment place space room home studio bungalow unit".split())


def _costs(m: re.Match[str], ctx: Context) -> list[Found]:
    obj = phrase(m.group("s"), ctx)
    value = m.group("v")
    amount = amount_value(value)
    if obj is None or amount is None:
        return []
    monthly = re.search(r"\b(?:a|per|each|every)\s+month\b|monthly", value, _I)
    if monthly and (set(obj.words) & _HOMES or m.group("verb").lower().startswith("rent")):
        return _found("user", "rent", amount)
    if re.search(r"\b(?:an|per)\s+hour\b", value, _I):
        return _found(thing_key(obj), "rate", amount)
    return _found(thing_key(obj), "price", amount)


def _counted(m: re.Match[str], ctx: Context) -> list[Found]:
    """ "We do about 120 covers on a Saturday", "Chapultepec seats 85 people"."""
    unit = singular(m.group("u").lower())
    if m.group("verb").lower().startswith("seat"):
        unit = "capacity"
    elif unit in lex.PEOPLE:
        unit = "headcount"
    days = " ".join(sorted(when_parts(m.group("rest") or "").get("weekday", ())))
    owner = _subject(m.group("s"), ctx) or "user"
    if owner == "user" and days and unit not in ("headcount", "capacity"):
        owner = days  # "120 covers on a Saturday" are the Saturday covers
    return _found(owner, unit, m.group("n").replace(",", ""))


_DAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday weekend weekday".split())


def _best(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found("user", "pb", m.group("v"))


def _shifts(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_subject(m.group("s"), ctx), "shift pattern", words_value(m.group("v")))


# --- schedules ----------------------------------------------------------------------------


def _has_event(m: re.Match[str], ctx: Context) -> list[Found]:
    owner = _subject(m.group("s"), ctx)
    event = " ".join(words(m.group("e")))
    when = when_value(cut(m.group("v")))
    return _found(f"{owner} {event}".strip(), "schedule", when or "")


def _booked_for(m: re.Match[str], ctx: Context) -> list[Found]:
    obj = phrase(m.group("s"), ctx)
    if obj is None or obj.kind == "user":
        return []
    return _found(thing_key(obj), "schedule", when_value(cut(m.group("v"))) or "")


_GERUND = {"fly": "flight", "flies": "flight", "meet": "meeting", "practise": "practice"}


def _activity(m: re.Match[str], ctx: Context) -> list[Found]:
    """ "Fenna and I climb on Thursdays", "We fly to Lagos on 14 December"."""
    verb = m.group("verb").lower()
    event = _GERUND.get(verb) or _ing(verb.removesuffix("s") if verb.endswith("s") else verb)
    with_whom = [
        w.lower() for w in re.findall(r"\b[A-Z][\w-]+", m.group("s")) if w not in ("I", "We")
    ]
    place = [w for w in words(m.group("o") or "") if w not in ("to", "the", "a")]
    when = when_value(cut(m.group("v")))
    return _found(" ".join((event, *place, *with_whom)), "schedule", when or "")


def _ing(verb: str) -> str:
    if verb.endswith("e") and not verb.endswith("ee"):
        return verb[:-1] + "ing"
    if re.search(r"[^aeiou][aeiou][bdgmnprt]$", verb) and len(verb) <= 4:
        return verb + verb[-1] + "ing"
    return verb + "ing"


def _open(m: re.Match[str], ctx: Context) -> list[Found]:
    """ "Fonda Azul is open 1 pm to 11 pm", "We now open at 8 am": the user's opening hours,
    the place named (if any) as their detail."""
    obj = phrase(m.group("s"), ctx)
    if obj is None:
        return []
    place = () if obj.kind == "user" else tuple(thing_key(obj).split())
    return _found("user", "opening hours", when_value(cut(m.group("v"))) or "", place)


def _music_in(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found("user", "music", words_value(m.group("v")), tuple(words(m.group("room"))))


def _closes(m: re.Match[str], ctx: Context) -> list[Found]:
    days = sorted(when_parts(m.group("v")).get("weekday", ()))
    who = _subject(m.group("s"), ctx)
    return _found(" ".join(("closing", *days)), "owner", who) if days else []


# --- versions -----------------------------------------------------------------------------

_VERSION_OF = re.compile(r"\bversion\s+(?P<n>\d+(?:\.\d+)*)\s+of\s+(?P<p>.+)$", _I)
_PRODUCT_VERSION = re.compile(
    r"(?P<p>(?:[A-Za-z][\w-]*\s+){0,2}[A-Za-z][\w-]*)\s+(?:(?:version\s*|v)(?P<n>\d+(?:\.\d+)*)|"
    r"(?P<d>\d+\.\d+(?:\.\d+)*)|(?P<b>\d+))(?![\w:.,%]|\s*(?:%|kg|am|pm|people|minutes|hours|"
    r"days|weeks|months|years|pesos|euros|requests|nurses|staff|covers)\b)",
    _I,
)
_VERSION_VERB = re.compile(
    r"\b(?:run|runs|running|on|use|uses|using|pins|pin|upgraded|updated|released|pushed|"
    r"installed|migrated|ships|shipped|to)\s*$",
    _I,
)
_NOT_PRODUCT = frozenset(
    "the a an our my is are was at on to of in for and with version v run runs use uses pins "
    "pin upgraded pushed released us all everything finished migration every band year ward "
    "room floor bus tram platform level grade size number shift get gets by about around back "
    "came down up now it from into than over under january february march april may june july "
    "august september october november december jan feb mar apr jun jul aug sep sept oct nov dec "
    "monday tuesday wednesday thursday friday saturday sunday week day".split()
)


def versions(clause: str, ctx: Context) -> list[Found]:
    """ "Our services run on Python 3.11", "drug library v15", "version 2 of the ingestion API".
    A dotted number or "version N" after a product's name; a bare number only right after a
    verb of running or upgrading ("uses MedChart 8", "are on drug library 16")."""
    of = _VERSION_OF.search(clause)
    if of is not None:
        product = thing_key(phrase(cut(of.group("p")), ctx))
        return _found(fr._product(product), "version", of.group("n"), _owner_words(clause, ctx))
    for m in _PRODUCT_VERSION.finditer(clause):
        named = list(words(m.group("p")))
        product: list[str] = []
        while named and named[-1] not in _NOT_PRODUCT:
            product.insert(0, named.pop())
        keyword = m.group("n") is not None
        if not product:
            continue
        lead = re.sub(r"(?:\s*[A-Za-z][\w-]*){%d}\s*$" % len(product), "", clause[: m.start("b")])
        if m.group("b") and (
            not _VERSION_VERB.search(lead)
            or re.fullmatch(r"[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*", " ".join(m.group("p").split()[-len(product) :]))
        ):
            continue  # "is on Calle Libertad 1820" is an address
        before = clause[: m.start()]
        number = m.group("n") or m.group("d") or m.group("b")
        return _found(fr._product(" ".join(product[-2:])), "version", number,
                      _owner_words(before, ctx))
    return _named_release(clause, ctx)


def _named_release(clause: str, ctx: Context) -> list[Found]:
    """ "My work laptop runs macOS Sonoma": an operating system's release named by a word."""
    m = re.search(r"\b(?P<os>macos|ios|android|windows|ubuntu)\s+(?P<r>[A-Z0-9][\w.]*)", clause, _I)
    if m is None:
        return []
    owner = _owner_words(clause[: m.start()], ctx)
    return _found(m.group("os").lower(), "version", m.group("r").lower(), owner)


def _owner_words(before: str, ctx: Context) -> tuple[str, ...]:
    """What runs a version ("the ingest service pins ..."): the thing named before the verb."""
    head = re.split(r"\b(?:run|runs|use|uses|pins|pin|is|are|upgraded|pushed|on)\b", before)[0]
    found = phrase(head.strip(), ctx) if head.strip() else None
    if found is None or found.kind == "user":
        return ()
    own = tuple(w for w in found.words if w not in ("all", "our", "the"))
    return tuple(w for w in (*found.owner.split(), *own) if w and w != "user")


# --- tastes and habits --------------------------------------------------------------------


def _uses(m: re.Match[str], ctx: Context) -> list[Found]:
    """ "I use Neovim now", "We use MongoDB for the event store": a product of a known kind."""
    value = cut(m.group("v"))
    product = lex.category(words(value))
    if product is None or product == "drinks":
        return []
    what = re.split(r"\s+(?:for|on|in|at|because|since|with)\s+|,", value)[0]
    target = re.search(r"\bfor\s+(?:the|our|my)\s+(?P<t>[\w -]+)$", value, _I)
    owner = _subject(m.group("s"), ctx)
    subject = thing_key(phrase(target.group("t"), ctx)) if target else owner
    if not subject or owner not in ("user", subject) and owner:
        subject = owner
    if subject.split()[-1:] == [product]:  # "Harbor Labs CI runs on Jenkins": the user's CI
        subject = "user"
    return _found(subject or "user", product, words_value(what))


def _coffee(m: re.Match[str], ctx: Context) -> list[Found]:
    drink = m.group("d").lower()
    return _found("user", drink, words_value(m.group("v")))


def _drinks(m: re.Match[str], ctx: Context) -> list[Found]:
    value = cut(re.split(r"\s+instead\s+of\s+", m.group("v"), flags=_I)[0])
    tokens = set(words(value)) | set(words(m.group("v")))
    if value.lower() in ("coffee", "tea") or not value:
        return fr._additive("user", "drinks", value.lower())
    if tokens & lex.COFFEE_WORDS:
        return _found("user", "coffee", words_value(value))
    return fr._additive("user", "drinks", words_value(value))


def _sugar(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found("user", m.group("d").lower(), words_value(m.group("v")))


def _seat(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found("user", "seat", m.group("v").lower())


_CONTEXTS = (
    (re.compile(r"\b(?:coding|programming|at work|working)\b", _I), "coding"),
    (re.compile(r"\b(?:in the car|commut\w*|on the way to work|driving|on the tram|on the bus)\b",
                _I), "commute"),
    (re.compile(r"\b(?:running|on runs|at the gym|working out)\b", _I), "exercise"),
)


def _listens(m: re.Match[str], ctx: Context) -> list[Found]:
    value = re.split(r"\s+(?:while|when|in|on|at|during)\s+", cut(m.group("v")), flags=_I)[0]
    context = next((name for p, name in _CONTEXTS if p.search(m.group(0))), None)
    if context is None:
        return fr._additive("user", "listens to", words_value(value))
    return _found("user", "music", words_value(value), (context,))


def _additive_verb(name: str) -> Rule:
    def rule(m: re.Match[str], ctx: Context) -> list[Found]:
        value = words_value(re.split(r"\s+(?:alongside|on top of|instead of)\s+", m.group("v"))[0])
        negated = m.groupdict().get("neg")
        return fr._additive(_subject(m.group("s"), ctx), name, f"not {value}" if negated else value)

    return rule


# --- statuses -----------------------------------------------------------------------------


def _relationship(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_subject(m.group("s"), ctx), "relationship", m.group("v").lower())


def _injured(m: re.Match[str], ctx: Context) -> list[Found]:
    part = [w for w in words(m.group("o")) if w not in ("my", "his", "her", "a", "left", "right")]
    return _found(" ".join(part), "status", m.group("verb").lower()) if part else []


def _status_verb(m: re.Match[str], ctx: Context) -> list[Found]:
    obj = phrase(cut(m.group("o")), ctx)
    label = {"applied for": "applied", "passed": "passed"}.get(m.group("verb").lower(), "accepted")
    if m.group("verb").lower().startswith("signed"):
        label = "lease signed"
    return _found(thing_key(obj), "status", label)


def _course_year(m: re.Match[str], ctx: Context) -> list[Found]:
    obj = phrase(cut(m.group("o")), ctx)
    return _found(thing_key(obj), "status", words_value(f"finished {m.group('y')}"))


def _learning_to(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_subject(m.group("s"), ctx), _ing(m.group("v").lower()), "learning")


def _passed_test(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_subject(m.group("s"), ctx), m.group("v").lower(), "passed")


def _participle_status(m: re.Match[str], ctx: Context) -> list[Found]:
    obj = phrase(m.group("s"), ctx)
    if obj is None or obj.kind == "user" and not obj.words:
        return []
    return _found(thing_key(obj), "status", m.group("v").lower())


# --- places -------------------------------------------------------------------------------


def _holds(m: re.Match[str], ctx: Context) -> list[Found]:
    who = phrase(m.group("s"), ctx)
    holder = "" if who is None else (who.text or who.owner)
    obj = phrase(m.group("o"), ctx)
    return _found(thing_key(obj), "location", words_value(f"with {holder}")) if holder else []


def _put(m: re.Match[str], ctx: Context) -> list[Found]:
    obj = phrase(m.group("o"), ctx)
    place = cut(re.sub(r"^(?:in|into|on|under|inside|behind|at)\s+", "", m.group("v"), flags=_I))
    return _found(thing_key(obj), "location", words_value(place))


def _parks(m: re.Match[str], ctx: Context) -> list[Found]:
    who = _subject(m.group("s"), ctx)
    place = cut(re.sub(r"^(?:in|at|on)\s+", "", m.group("v"), flags=_I))
    return _found("parking" if who == "user" else f"{who} parking", "location", words_value(place))


# --- duties, tools and providers ------------------------------------------------------------

_DUTY_PROVIDERS = {
    **dict.fromkeys(("accounting", "account", "taxe", "taxes", "tax", "return", "book"), "accountant"),
    **dict.fromkeys(("hair", "braid", "nail"), "hairdresser"),
    "kitchen": "head chef",
}


def _duty(text: str, holder: str, ctx: Context) -> list[Found]:
    obj = phrase(cut(text), ctx)
    if obj is None or not holder:
        return []
    subject = thing_key(obj)
    provider = _DUTY_PROVIDERS.get(singular(subject.split()[-1])) if subject else None
    if provider is not None and obj.kind != "thing":
        owner = obj.owner if obj.kind == "person" and obj.words else "user"
        return _found(owner, provider, holder)
    return _found(subject, "owner", holder)


def _does(m: re.Match[str], ctx: Context) -> list[Found]:
    who = phrase(re.split(r"\s+(?:in|at|from|on)\s+", m.group("v"))[0], ctx)  # "Funmi in Moss Side"
    if who is None or who.kind == "none":
        return []
    holder = who.owner if who.kind != "name" else who.owner
    task = m.group("s")
    if re.search(r"\s(?:in|on|with|through|via|using)\s+[A-Z]", task):
        return []  # "We run the books in Contalisto" names a tool, not who does the books
    if not re.match(r"(?:the|our|my|his|her|their|[A-Z]\w*'s)\s", task) and not re.match(
        r"(?:payroll|accounting|bookkeeping|the books|taxes|hiring|ordering|marketing)\b", task, _I
    ):
        return []
    return _duty(task, holder, ctx)


def _owned_by(m: re.Match[str], ctx: Context) -> list[Found]:
    holder = name_value(m.group("v")) or words_value(m.group("v"))
    if m.group("verb").lower() == "managed" and re.match(r"[A-Z]", m.group("s")):
        return _found(_subject(m.group("s"), ctx), "manager", holder)
    return _duty(m.group("s"), holder, ctx)


def _owns(m: re.Match[str], ctx: Context) -> list[Found]:
    who = phrase(m.group("v"), ctx)
    if who is None or who.kind == "user":
        return fr._additive("user", "owns", words_value(m.group("s")))
    holder = who.owner or thing_key(who)
    return _duty(m.group("s"), holder, ctx)


def _on_call(m: re.Match[str], ctx: Context) -> list[Found]:
    who = _subject(m.group("v"), ctx)
    scope = words(m.group("s") or "")
    return _found(" ".join(("on call", *scope)), "owner", who)


def _took_over(m: re.Match[str], ctx: Context) -> list[Found]:
    who = _subject(m.group("v"), ctx)
    task = re.sub(r"^as\s+", "", m.group("s"), flags=_I)
    return _duty(task, who, ctx)


def _hired(m: re.Match[str], ctx: Context) -> list[Found]:
    return _duty(m.group("s"), key(m.group("v")), ctx)


def _banks(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_subject(m.group("s"), ctx), "bank", name_value(m.group("v")) or "")


def _carrier(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found("user", "phone carrier", name_value(m.group("v")) or "")


def _channel(m: re.Match[str], ctx: Context) -> list[Found]:
    task = m.group("s") or ""
    if not task.strip() and m.groupdict().get("verb", "").lower().startswith("deliver"):
        task = "delivery"
    subject = thing_key(phrase(task, ctx)) if task.strip() else ""
    value = re.split(r"\s+(?:at|for|instead|now)\b", cut(m.group("v")))[0]
    return _found(subject, "channel", name_value(value) or words_value(value))


def _books(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found("bookkeeping", "tool", words_value(m.group("v")))


def _insured(m: re.Match[str], ctx: Context) -> list[Found]:
    obj = phrase(m.group("s"), ctx)
    if obj is None:
        return []
    detail = tuple(w for w in (thing_key(obj)).split() if w != "user")
    return _found("user", "insurer", name_value(m.group("v")) or "", detail)


def _supplied(m: re.Match[str], ctx: Context) -> list[Found]:
    obj = phrase(m.group("s"), ctx)
    if obj is None or obj.kind == "user" and not obj.words or obj.owner in lex.KIN.values():
        return []
    source = m.group("v")
    own = re.match(r"(?:our|my)\s+own\b", source, _I)
    return _found(thing_key(obj), "supplier", "own" if own else name_value(source) or "")


def _make_own(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(" ".join(words(cut(m.group("s")))), "supplier", "own")


def _registered(m: re.Match[str], ctx: Context) -> list[Found]:
    value = m.group("v")
    kind = "dentist" if re.search(r"dental|dentist|tandarts", value, _I) else "doctor"
    return _found(_subject(m.group("s"), ctx), kind, name_value(value) or "")


# --- devices and names --------------------------------------------------------------------


def _drives(m: re.Match[str], ctx: Context) -> list[Found]:
    car = re.split(r"\s+(?:with|for|to|from|because|since|and)\s+|,", cut(m.group("v")))[0]
    return _found(_subject(m.group("s"), ctx), "car", words_value(car))


def _got_device(m: re.Match[str], ctx: Context) -> list[Found]:
    value = re.split(r"\s+(?:after|for|because|since|now|to|with|from|and)\b|,", m.group("v"))[0]
    product = lex.category(words(value))
    if product not in ("car", "phone model", "laptop", "watch"):
        return []
    return _found(_subject(m.group("s"), ctx) or "user", product, words_value(value))


def _swapped(m: re.Match[str], ctx: Context) -> list[Found]:
    new = re.split(r"\s+(?:on|for|at|because|since|after)\s+|,", cut(m.group("y")))[0]
    product = lex.category(words(new)) or lex.category(words(m.group("x")))
    if product is None or product == "drinks":
        return []
    return _found("user", product, words_value(new))


def _goes_by(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_subject(m.group("s"), ctx), "name", name_value(m.group("v")) or "")


def _called(m: re.Match[str], ctx: Context) -> list[Found]:
    obj = phrase(m.group("s"), ctx)
    name = name_value(m.group("v")) or words_value(m.group("v"))
    return _found(thing_key(obj) or _subject(m.group("s"), ctx), "name", name)


def _family_name(m: re.Match[str], ctx: Context) -> list[Found]:
    """ "My sister Mara Hoffmann ...": the full name of a relative, which a marriage changes."""
    full = m.group("n")
    return _found(full.split()[0].lower(), "name", key(full))


def _email(m: re.Match[str], ctx: Context) -> list[Found]:
    detail = tuple(w for w in words(m.group("rest")) if w in ("personal", "work", "home", "private"))
    return _found("user", "email", m.group("v").lower().rstrip(".,"), detail)


def _reissued(m: re.Match[str], ctx: Context) -> list[Found]:
    obj = phrase(re.sub(r"^(?:me\s+)?a\s+new\s+", "my ", m.group("o")), ctx)
    return fr._valued(obj, m.group("v"), ctx) if obj is not None else []


def _instead_of(m: re.Match[str], ctx: Context) -> list[Found]:
    """ "I drink oat flat whites instead of black coffee": the old thing names the attribute."""
    found = lex.noun_attribute(words(m.group("n")))
    if found is None:
        return []
    owner = _subject(m.group("s"), ctx) or "user"
    return _found(owner, found[0].name, words_value(m.group("v")))


def _runs_in(m: re.Match[str], ctx: Context) -> list[Found]:
    obj = phrase(m.group("s"), ctx)
    if obj is None or obj.kind in ("user", "person"):
        return []
    return _found(thing_key(obj), "location", words_value(cut(m.group("v"))[3:]))


def _employer_only(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(fr._person_key(fr._who(m.group("s"), ctx)), "employer", fr._org(m.group("v")))


def _work_from(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_subject(m.group("s"), ctx), "work location", key(m.group("v")))


def _school(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(_subject(m.group("s"), ctx), "school", key(cut(m.group("v"))))


_TEAM = r"(?:team|ward|unit|icu|squad|department|crew|pod|tribe)"
_CHANGE = (
    r"(?:changed|change|moved|move|switched|switch|pushed|push|rescheduled|reschedule|rebooked|"
    r"rebook|bumped|raised|raise|cut|lowered|lower|reduced|reduce|increased|increase|upgraded|"
    r"upgrade|downgraded|extended|extend|brought forward|updated|update|reissued|renewed|"
    r"transferred|shifted|delayed|postponed|put back|reset|relocated)"
)
_MOVED = (
    r"(?:moved|changed|slipped|pushed|rescheduled|bumped|shifted|delayed|postponed|"
    r"brought forward|moved up|extended|raised|went up|went down|increased|dropped|fell|rose|"
    r"upgraded|switched|relocated|reissued|emigrated|moving|relocating)"
)
_OS = re.compile(r"\b(?:macos|ios|android|windows|ubuntu)\b")
_ADDITIVE_TRIGGERS = {
    "likes": "love|like|enjoy|adore",
    "learning": "learning|studying|taking",
    "subscriptions": "subscribed",
    "allergies": "allergic",
    "reading": "reading|watching|rewatching|re-watching",
    "leads": "lead|chair",
    "speaks": "speak",
    "supports": "support",
    "wears": "wear",
    "eats": "eat",
    "drinks": "drink",
    "does": "do|play",
    "pets": "have|has|adopted|got",
}
_ADDITIVE_VERBS = {
    "likes": r"(?P<neg>don't |do not |no longer |never )?(?:love|loves|like|likes|enjoy|enjoys"
    r"|adore|adores)",
    "learning": r"(?:learning|studying|taking)(?!\s+to\b)",
    "subscriptions": r"subscribed\s+to",
    "allergies": r"allergic\s+to",
    "reading": r"(?:reading|watching|rewatching|re-watching)(?=\s+[A-Z])",
    "leads": r"(?:lead|leads|chair|chairs)(?=\s+the\b)",
    "speaks": r"speaks?",
    "supports": r"supports?(?=\s+[A-Z])",
    "wears": r"(?P<neg>no longer |don't )?wears?",
    "eats": r"(?P<neg>no longer |don't |do not |never |stopped )?(?:eat|eats|eating)",
    "drinks": r"(?P<neg>no longer |don't |do not |never |stopped )(?:drink|drinks|drinking)",
    "does": r"(?P<neg>no longer |don't |stopped )?(?:do|does|play|plays)(?=\s+(?!the\b|my\b|our\b"
    r"|a\b|an\b|\d)[a-z])",
    "pets": r"(?:have|has|adopted|got)(?=\s+(?:a|an|two|three)\s+(?:[\w-]+\s+)?(?:cat|dog|"
    r"rabbit|goldfish|parrot|hamster|kitten|puppy|fish|bird|tortoise)s?\b)",
}


def _rules() -> list[tuple[str, re.Pattern[str], Rule]]:
    """Each rule: what its clause must hold (lower case), its pattern, its reader."""
    s = r"^(?P<s>.*?)\b"
    table: list[tuple[str, str, Rule]] = [
        ("@", r"^(?:from now on,?\s+)?(?:please\s+)?(?:use|email me at|reach me at|write to|contact "
         r"me at)\s+(?P<v>\S+@\S+)(?P<rest>.*)$", _email),
        ("reissued|issued|gave me|assigned|replaced", s + r"(?:reissued|re-issued|replaced|issued|gave me|assigned)\s+(?P<o>it|them|my\s+"
         r"[\w ]+?|me\s+a\s+new\s+[\w ]+?|a new\s+[\w ]+?)\s+(?:as|with|:|number)?\s*"
         r"(?P<v>[A-Z0-9#][\w-]*.*)$", _reissued),
        ("instead of", s + r"(?:goes|go|going|drink|drinks|use|uses|wear|wears|take|takes|do|does|see|sees|"
         r"have|has)\s+(?P<v>.+?)\s+instead\s+of\s+(?:the\s+|a\s+|an\s+|my\s+|our\s+|her\s+|"
         r"his\s+)?(?P<n>[\w -]+?)(?:\s+now)?$", _instead_of),
        ("liv|resid|based", s + r"(?:live|lives|living|reside|resides|is based|are based|'s based|'re based)\s+"
         r"(?:now\s+|together\s+|mostly\s+)?(?P<v>(?:in|at|on|with|near)\b.+)$", fr._lives),
        ("run|hosted|deployed|sits", s + r"(?:runs|run|is hosted|are hosted|is deployed|are deployed|sits)\s+(?:now\s+)?"
         r"(?P<v>in\s+.+)$", _runs_in),
        ("got the keys", r"\bgot the keys (?:to|for) (?P<v>(?:our|my|the|a)\s+(?:new\s+)?(?:house|flat|home|"
         r"place|apartment|bungalow)\b.*)$", fr._keys_to),
        ("rent|bought|share", s + r"(?:rent|rents|bought|share|shares)\s+(?P<v>(?:a|an|the)\s+(?:[\w-]+\s+){0,3}"
         r"(?:house|flat|apartment|home|place|bungalow|cottage|condo)\s+(?:in|on|at)\s+.+)$",
         fr._lives),
        ("work", s + r"works?\s+(?:remotely\s+)?from\s+(?P<v>[A-Z][\w-]+(?:\s+[A-Z][\w-]+)*)", _work_from),
        ("work", s + rf"works?\s+(?:on|in)\s+(?:the\s+)?(?P<v>[\w' -]+?\s{_TEAM})\b", fr._on_team),
        ("work", s + r"(?:work|works|working)\b(?:\s+(?:part-time|full-time|now|remotely|there))*\s+"
         r"(?:as\s+(?P<r>[^,]+?)\s+)?(?:at|for)\s+(?P<v>.+)$", fr._works),
        ("join|start|new job|is now at|a job", s + r"(?:joined|joins|has joined|have joined|started at|started with|starts at|start at|"
         r"new job at|is now at|(?:took|got) a job(?:\s+as\s+(?P<r>[^,]+?))?\s+(?:at|with))\s+"
         r"(?P<v>.+)$", fr._joined),
        ("retired", r"^(?P<s>.+?)\s+(?:has |have |had |'s |just |finally )?retired\b", fr._retired),
        ("opened", s + r"opened\s+(?:her|his|my|our|their)\s+own\s+(?:[\w-]+\s+)?(?:studio|practice|"
         r"business|company|firm|restaurant|place|shop|agency|clinic|bakery|cafe)(?:,|\s+called)?"
         r"\s+(?P<v>[A-Z].*)$", _employer_only),
        ("manages|runs|leads", s + r"(?:manages|runs|leads)\s+(?:a|the)\s+[\w -]+?\s+(?:for|at)\s+(?P<v>[A-Z].*)$",
         _employer_only),
        ("report", s + r"(?:report|reports|reporting)\s+(?:directly\s+)?(?:in\s+)?to\s+(?P<v>.+)$",
         fr._reports),
        ("team|ward|unit|icu|squad|depart|crew|pod|tribe", s[:-2] + rf"(?:\s+(?:am|is|are|was|were)|'m|'re)\s+(?:now\s+|still\s+|back\s+)?(?:on|in)"
         rf"\s+(?:the\s+)?(?P<v>[\w' -]+?\s{_TEAM})\b", fr._on_team),
        ("team|ward|unit|icu|squad|depart|crew|pod|tribe", s + r"(?:moved|transferred|switched|been moved|moved over|went|joined|rotated|been "
         rf"transferred|been put|gone)\s+(?:over\s+|back\s+)?(?:to|into|onto|on)?\s*(?:the\s+)?"
         rf"(?P<v>[\w' -]+?\s{_TEAM})\b", fr._on_team),
        ("play", s + r"plays?\s+for\s+(?P<v>.+)$", fr._plays_for),
        ("promoted", s + r"(?:got |been |was |has been |have been |'ve been |'s been |just )*promoted\s+to\s+"
         r"(?P<v>.+)$", fr._promoted),
        ("go to|goes to", s + r"(?:goes|go)\s+to\s+(?P<v>(?:the\s+)?[A-Z][\w' -]*?(?:School|Primary|Academy|College|"
         r"Gymnasium|Grundschule|Prepa|Colegio|Kindergarten|Nursery|High)\b.*)$", _school),
        # changes
        ("chang|mov|switch|push|resched|rebook|bump|rais|cut|lower|reduc|increas|upgrad|downgrad|extend|brought forward|updat|reissu|renew|transfer|shift|delay|postpon|put back|reset|relocat", s + _CHANGE + r"\s+(?P<o>[^,;:]+?)\s+(?:up\s+|back\s+|forward\s+|over\s+)?(?:to|as|"
         r"until|till|into)\s+(?P<v>.+)$", fr._changed),
        (":", s + r"(?:rebooked|changed|moved|updated)\s+(?P<o>[^:]+?):\s*(?P<v>.+)$", fr._changed),
        ("mov|chang|slipped|push|resched|bump|shift|delay|postpon|brought forward|extend|rais|went up|went down|increas|dropped|fell|rose|upgrad|switch|relocat|reissu|emigrat", r"^(?P<o>.+?)\s+(?:has |have |had |was |were |got |has been |have been |is being |just |"
         rf"finally |all |'ve |'s |been )*{_MOVED}(?:\s+(?:again|back|up|forward|over|out|house))?"
         r"(?:\s+(?:by\s+)?(?:a|an|one|two|three|four|five|six|\d+)\s+(?:day|week|month|hour)s?)?"
         r",?\s+(?:to|into|until|till|in with|in)\s+(?P<v>.+)$", fr._slipped),
        ("slipped|push|delay|postpon", r"^(?P<o>.+?)\s+(?:has |have |was |got |has been )?(?:slipped|pushed back|was pushed|"
         r"got pushed|delayed|postponed)\s+(?:by\s+)?(?:a|an|one|two|three|four|five|six|\d+)"
         r"\s+(?:day|week|month)s?\s*$", fr._slipped),
        ("push|mov|resched|postpon|delay|bump", s + r"(?:pushed|moved|rescheduled|postponed|delayed|bumped)\s+(?P<o>[^,;]+?)(?:\s+again|"
         r"\s+back)?$", fr._pushed_it),
        # amounts
        ("weigh", s + r"weighs?\s+(?P<v>.+)$", _weighs),
        ("kg|kilo|lb|stone", r"^(?P<s>)(?:(?:down|up|back up|back down|now)\s+to\s+)?(?P<v>\d[\d.,]*\s*(?:kg|kilos?|"
         r"lbs?|stone)\b.*)$", _weighs),
        ("has|have|employ", r"^(?P<s>.+?)\s+(?:has|have|employs|employ)\s+(?:about\s+|around\s+|roughly\s+|now\s+)?"
         r"(?P<n>\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+"
         r"(?P<u>[a-z]+)\b", _headcount),
        ("we", r"^(?:we|we're|we are)\s*(?:now\s+)?(?P<n>\d+)(?:\s+(?:people|of us|strong|staff))?"
         r"(?:\s+now)?(?:\s+on\s+(?P<t>[^,]+?))?(?:\s+now)?(?:\s+with\b.*)?$", _we_are),
        ("request", r"^(?P<s>.+?)\s+(?:gets?|allows?|is capped at|are capped at|is limited to|are limited "
         r"to|have|has)\s+(?P<v>[\d,]+\s+requests?\s+(?:per|a|an)\s+\w+.*)$", _rate_limit),
        ("cost|rent|sell|goes for|go for|pay", r"^(?P<s>.+?)\s+(?P<verb>costs?|costs us|rents? for|rents? at|sells? for|goes for|go "
         r"for|pays?)\s+(?:us\s+)?(?P<v>(?:about\s+|around\s+)?[£€$]?\s?\d.*)$", _costs),
        ("do|serve|see|seat|sell", s + r"(?P<verb>do|does|serve|serves|see|sees|seat|seats|sell|sells)\s+(?:about\s+|around"
         r"\s+|roughly\s+|up to\s+)?(?P<n>\d[\d,]*)\s+(?P<u>[a-z]+)(?P<rest>.*)$", _counted),
        ("best|pb|fastest", r"\b(?P<v>\d{1,2}:\d{2}(?::\d{2})?)\b.*\b(?:my best|personal best|pb|fastest)\b", _best),
        ("shift|night|days|lates|earlies", s + r"(?:do|does|work|works|doing|working|gone onto|go onto|moved onto|am on|'m on|"
         r"is on|are on)\s+(?P<v>(?:permanent\s+|mostly\s+|only\s+|all\s+)?(?:[\w-]+\s+){0,3}?"
         r"(?:shifts|nights|days|lates|earlies))\b", _shifts),
        # schedules
        ("has|have|'s got", r"^(?P<s>[A-Z][\w-]*|(?:my|our)\s+\w+)\s+(?:has|have|has got|'s got)\s+"
         r"(?P<e>[a-z][\w' -]*?)\s+(?P<v>(?:on|at|every)\s+.+)$", _has_event),
        ("booked|scheduled|planned|pencilled|penciled|arranged|due", r"^(?P<s>.+?)\s+(?:is\s+|are\s+|was\s+|'s\s+|got\s+|been\s+)?(?:booked|scheduled|planned|"
         r"pencilled in|penciled in|arranged|due)\s+(?:for|on)?\s*(?P<v>.+)$", _booked_for),
        ("climb|swim|run|train|practi|play|meet|rehears|danc|cycl|ride|fly|flies|sing|walk|hike", s + r"(?P<verb>climb|swim|run|train|practise|practice|play|meet|rehearse|dance|cycle|"
         r"ride|fly|flies|sing|walk|hike)\s+(?P<o>(?:to\s+[A-Z][\w-]*\s*|[a-z]+\s+)?)"
         r"(?P<v>(?:on|every)\s+.+)$", _activity),
        ("open", r"^(?P<s>.+?)\s+(?:is\s+|are\s+|'s\s+|'re\s+)?(?:now\s+)?(?:open|opens)\s+(?:for\s+\w+\s+)?"
         r"(?:from\s+)?(?P<v>(?:at\s+)?\d.+)$", _open),
        ("play", s + r"play\s+(?P<v>.+?)\s+in\s+the\s+(?P<room>dining room|bar|kitchen|shop|store|"
         r"restaurant|office|lobby|waiting room|salon)\b", _music_in),
        ("close|locks up", r"^(?P<s>.+?)\s+(?:closes|close|locks up|will close)\b(?P<v>.*\b(?:on|every)\s+\w+days?"
         r"\b.*)$", _closes),
        ("arriv|come|deliver", r"^(?P<s>.+?)\s+(?:arrives?|comes?|is delivered|are delivered|gets delivered)\b.*?\b"
         r"(?P<v>(?:on|every)\s+(?:mon|tue|wed|thu|fri|sat|sun|day|week).*)$", _booked_for),
        # tastes
        ("use|using|back to|now on|run on|runs on|is on|are on|code in|live in|work in", s + r"(?:use|uses|using|switched to|went back to|back to|now on|run on|runs on|is on|"
         r"are on|code in|live in|work in)\s+(?P<v>.+)$", _uses),
        ("my coffee|my tea", r"\b(?:take|have|like|drink)\s+my\s+(?P<d>coffee|tea)\s+(?P<v>.+)$", _coffee),
        ("my coffee|my tea", r"^(?P<v>.+?)\s+in\s+my\s+(?P<d>coffee|tea)\b", _sugar),
        ("drink", s + r"(?:drink|drinks|drinking)\s+(?P<v>(?!my\b).+)$", _drinks),
        ("seat", r"\b(?:prefer|rather|like|want|always book|always pick|choose|book)\b.*?\b(?P<v>aisle|"
         r"window|middle|exit[- ]row)\s+seats?\b", _seat),
        ("listen", s + r"listen(?:s|ing)?\s+to\s+(?P<v>.+)$", _listens),
        *((_ADDITIVE_TRIGGERS[name], s + pattern + r"\s+(?P<v>.+)$", _additive_verb(name))
          for name, pattern in _ADDITIVE_VERBS.items()),
        ("climb|swim|run|cycle|row", r"^(?P<s>(?:i|we|[A-Z][\w-]*)(?:\s+and\s+(?:i|[A-Z][\w-]*))?)\s+(?:also\s+|now\s+|"
         r"still\s+)?(?P<v>climb|swim|run|cycle|row)s?\s+(?:at|with|in)\s+.+$",
         _additive_verb("does")),
        # statuses
        ("married|engaged|divorced|separated", s + r"(?:got|are|is|'re|'s|just got|have got|are now|got officially)\s+(?P<v>married|"
         r"engaged|divorced|separated)\b", _relationship),
        ("sprain|broke|fractur|hurt|injur|twist|pulled|tore|strain|disloc", s + r"(?P<verb>sprained|broke|fractured|hurt|injured|twisted|pulled|tore|strained|"
         r"dislocated)\s+(?P<o>(?:my|his|her|their|a)\s+[\w ]+?)(?:\s+(?:with|while|at|playing|"
         r"bouldering|running|doing|lifting|in|on)\b.*)?$", _injured),
        ("applied|got a place|got into|accepted|enrolled|signed the lease", s + r"(?P<verb>applied for|got a place on|got a place at|got into|was accepted (?:to|on|"
         r"into)|got accepted (?:to|on|into)|enrolled (?:in|on)|signed the lease (?:for|on))\s+"
         r"(?P<o>.+)$", _status_verb),
        ("learning to", s + r"(?:is|are|am|'m|'re)\s+learning\s+to\s+(?P<v>[a-z]+)\b", _learning_to),
        ("finished|completed|passed", s + r"(?:finished|completed|passed)\s+(?P<y>(?:year|term|semester|module)\s+\w+)\s+of\s+"
         r"(?P<o>.+)$", _course_year),
        ("passed", s + r"passed\s+(?:his|her|my|their|the)\s+(?P<v>[a-z]+)\s+test\b", _passed_test),
        ("renewed|approved|resolved|closed|cancel|rejected|completed|launched|merged|shipped|fixed|paused|shelved|scrapped", r"^(?P<s>(?:(?!\b(?:is|are|was|were|until|and|but|when|if)\b)[^,]){1,40}?)\s+"
         r"(?:was\s+|were\s+|is\s+|are\s+|got\s+|has been\s+|have been\s+)?"
         r"(?P<v>renewed|approved|resolved|closed|cancelled|canceled|rejected|completed|launched|"
         r"merged|shipped|fixed|paused|shelved|scrapped)\b", _participle_status),
        # places
        ("hold|keep|has|have|looking after|looks after", r"^(?P<s>.+?)\s+(?:is holding|are holding|holds|keeps|has|have|is keeping|is looking "
         r"after|looks after)\s+(?P<o>(?:the|our|my)\s+(?:[\w-]+\s+){0,2}(?:keys?|passports?|"
         r"documents|remote|card))\b", _holds),
        ("put|keep|kept|left|stored|store|hid|locked", s + r"(?:put|keep|kept|left|stored|store|hid|hide|locked)\s+(?P<o>(?:my|our|the|his|her)"
         r"\s+[\w' -]+?)\s+(?P<v>(?:in|into|on|under|inside|behind|at)\s+.+)$", _put),
        ("park", s + r"park(?:s|ed)?\s+(?P<v>(?:in|at|on)\s+.+)$", _parks),
        # duties, tools, providers
        (" by ", r"^(?P<s>.+?)\s+(?:is|are|was|were|'s|'re)\s+(?:now\s+|currently\s+)?(?P<verb>owned|run|"
         r"handled|done|written|maintained|managed|led|covered|organised|organized|looked after)"
         r"\s+by\s+(?P<v>.+)$", _owned_by),
        ("own", r"^(?P<v>.+?)(?<!\bhis)(?<!\bher)(?<!\bmy)(?<!\bour)(?<!\btheir)(?<!\bits)\s+"
         r"(?:now\s+)?(?:owns|own)\s+(?P<s>.+)$", _owns),
        ("call", r"^(?P<v>.+?)\s*(?:'m|'re|'s|\s+is|\s+are|\s+am|\s+will be)\s+(?:now\s+)?on[ -]call"
         r"(?:\s+for\s+(?P<s>[\w -]+?))?(?:\s+(?:this|next|tonight|today|until|from)\b.*)?$",
         _on_call),
        ("over", r"^(?P<v>.+?)\s+(?:took|has taken|have taken|is taking|will take)\s+over\s+(?P<s>.+)$",
         _took_over),
        ("hired", r"\bhired\s+(?:an?\s+[\w ]+?,\s+)?(?P<v>[A-Z][^,]*?),?\s+to\s+(?:run|do|handle|manage|"
         r"look after|take care of)\s+(?P<s>.+)$", _hired),
        ("does|do |write|run|handle|manage|organis|organiz|cover|sorts|plans|looks after|takes care|in charge|responsible|will", r"^(?P<v>.+?)\s+(?:does|do|writes|write|runs|run|handles|handle|manages|manage|organises|"
         r"organizes|covers|sorts|plans|looks after|takes care of|is in charge of|are in charge of|"
         r"'s in charge of|is responsible for|are responsible for|will do|will run|will handle)"
         r"\s+(?P<s>.+)$", _does),
        ("bank", s + r"banks?\s+with\s+(?P<v>.+)$", _banks),
        ("deal|plan|contract|tariff", r"^(?=.*\b(?:sim|phone|mobile)\b).*?\b(?:deal|plan|contract|tariff)\s+(?:is\s+)?with\s+"
         r"(?P<v>[A-Z].*)$", _carrier),
        ("through|via", r"^(?P<s>.+?)\s+(?:go|goes|are booked|is booked|are made|is made|are taken|is taken|"
         r"come in|comes in|are done|is done)\s+(?:through|via)\s+(?P<v>.+)$", _channel),
        ("through|via| on | with ", r"^(?P<a>.*?)\b(?P<verb>take|takes|book|books|handle|handles|process|processes|deliver|"
         r"delivers|order|orders)\s+(?P<s>(?:[\w' -]*?\s+)?)(?:only\s+)?(?:through|via|on|with)"
         r"\s+(?P<v>(?:[A-Z]|our own|my own|the\s+[A-Z]).*)$", _channel),
        ("books|accounts|bookkeeping", r"\b(?:run|runs|keep|keeps|do|does)\s+(?:the|our)\s+(?:books|accounts|bookkeeping)\s+"
         r"(?:in|on|with)\s+(?P<v>.+)$", _books),
        ("books|accounts|bookkeeping", r"^(?:the\s+|our\s+)?(?:accounts|books|bookkeeping)\s+(?:are|is)\s+(?:kept\s+|done\s+)?"
         r"(?:in|on)\s+(?P<v>.+)$", _books),
        ("insured", r"^(?P<s>.+?)\s+(?:is|are)\s+(?:now\s+)?insured\s+(?:with|by|through)\s+(?P<v>.+)$",
         _insured),
        ("come|supplied|arriv", r"^(?P<s>.+?)\s+(?:comes?|is supplied|are supplied|arrives?)\s+(?:from|by)\s+(?P<v>.+)$",
         _supplied),
        ("from", r"^(?P<a>.*?)\b(?:buy|buys|get|gets|order|orders|source|sources)\s+(?:our\s+|the\s+|all"
         r"\s+(?:our\s+)?)?(?P<s>[a-z][\w ]*?)\s+from\s+(?P<v>.+)$", _supplied),
        ("back to", r"\bback to\s+(?P<v>[A-Z].+?)\s+for\s+(?P<s>[\w ]+)$", _supplied),
        ("make", r"\bmake\s+(?:our|my)\s+own\s+(?P<s>[\w ]+)", _make_own),
        ("registered|signed up", s + r"(?:registered|signed up)\s+with\s+(?P<v>.+)$", _registered),
        ("see", s + r"sees?\s+(?P<v>(?:Dr|Dra|Doctor)\s+[A-Z].*)$", _registered),
        # devices and names
        ("driv", s + r"(?:drive|drives|driving)\s+(?P<v>(?:a|an|the|my|our)\s+.+)$", _drives),
        ("got|get|bought|buy|have|has|picked up|ordered|run with|runs with|running with|use|using|switched to|upgraded to", s + r"(?:got|get|bought|buy|have|'ve got|has|picked up|ordered|run with|runs with|running"
         r" with|use|uses|using|switched to|upgraded to)\s+(?:myself\s+)?(?:a new|a|an|the|my|our|"
         r"new)\s+(?P<v>.+)$", _got_device),
        ("traded|swapped|exchanged|replaced", r"\b(?:traded|swapped|exchanged|replaced)\s+(?:in\s+)?(?:the\s+|my\s+|our\s+)?(?P<x>.+?)"
         r"\s+(?:in\s+)?(?:for|with)\s+(?:a|an|the|my|our)?\s*(?P<y>.+)$", _swapped),
        (" by", s + r"(?:goes|go|going)\s+by\s+(?P<v>.+)$", _goes_by),
        ("called|named|known as", r"^(?P<s>.+?)\s+(?:is|are|'s|was)\s+(?:now\s+)?(?:called|named|known as)\s+(?P<v>.+)$",
         _called),
        ("call|nam", r"^(?P<a>.*?)\b(?:call|calling|name|naming)\s+(?P<s>(?:the|our|my)\s+[\w ]+?)\s+"
         r"(?P<v>[A-Z].+)$", _called),
        ("renamed|rebranded", r"\b(?:renamed|rebranded)\s+(?P<s>(?:the|our|my)\s+(?-i:[a-z])[\w' ]*?)\s+(?:to\s+|as\s+)?"
         r"(?P<v>(?:the\s+)?[A-Z].+)$", _called),
        ("renamed|rebranded", r"^(?P<s>.+?)\s+(?:has been|have been|was|were|got|is being|has|have)\s+(?:renamed|"
         r"rebranded)\s+(?:to\s+|as\s+)?(?P<v>.+)$", _called),
    ]
    return [
        (triggers, re.compile(_capitals(pattern), _I), rule)
        for triggers, pattern, rule in table
    ]


def _capitals(pattern: str) -> str:
    """A pattern's capital-letter classes kept case-sensitive under IGNORECASE."""
    return re.sub(r"\[A-Z[^\]]*\]", lambda m: f"(?-i:{m.group(0)})", pattern)


_RULES = _rules()


def _trigger_index() -> tuple[re.Pattern[str], dict[str, frozenset[int]]]:
    """One scan finds every rule a clause may match: a lookahead at each position for the
    longest trigger there, and each trigger stands for the rules of every trigger inside it."""
    own: dict[str, set[int]] = {}
    for i, (triggers, _, _) in enumerate(_RULES):
        for trigger in triggers.split("|"):
            own.setdefault(trigger.strip(), set()).add(i)
    rules = {
        t: frozenset(i for u, ids in own.items() if u in t for i in ids) for t in own
    }
    worded = sorted((t for t in own if t[0].isalpha()), key=len, reverse=True)
    alternatives = "|".join(re.escape(t) for t in worded)
    return re.compile(f"\\b(?=({alternatives}))"), rules


_TRIGGER_SCAN, _TRIGGERED = _trigger_index()
_SYMBOLS = tuple(t for t in _TRIGGERED if not t[0].isalpha())  # "@", ":", "'s got"
_DIGIT = re.compile(r"\d")
_COPULAS = (
    re.compile(
        r"^(?P<s>.+?)(?:\s+(?:is|are|am|will be|has been|have been|remains|"
        r"came back at|came in at|comes in at|stands at|is down to|is up to|went down to|went up to)|"
        r"(?<=\bit)'s|(?<=\bhe)'s|(?<=\bshe)'s|(?<=\bthat)'s|(?<=\bthere)'s|'re|'m)\s+(?P<v>.+)$",
        _I,
    ),
    re.compile(r"^(?P<s>[^:]{2,40}):\s+(?P<v>.+)$"),
)
_FAMILY = re.compile(
    r"\b(?:my|our)\s+(?:sister|brother|mother|father|mum|dad|daughter|son|cousin|aunt|uncle|"
    r"niece|nephew|wife|husband|partner)\s+(?P<n>(?-i:[A-Z])[\w-]+\s+(?-i:[A-Z])[\w-]+)",
    _I,
)


def extract(text: str) -> list[Found]:
    """Every frame the rules read in ``text``, first reading of a (subject, attribute) kept."""
    ctx = Context()
    found: list[Found] = []
    parts = clauses(text)
    for n, clause in enumerate(parts, 1):
        ctx.lead_org = ""
        found += _clause(clause, ctx)
        if n < len(parts):
            _remember(clause, ctx)
    for m in _FAMILY.finditer(text):
        found += _family_name(m, ctx)
    kept: dict[tuple[str, str, tuple[str, ...]], Found] = {}
    for frame in found:
        kept.setdefault((frame[0], frame[1], frame[4]), frame)
    return list(kept.values())


def _clause(clause: str, ctx: Context) -> list[Found]:
    found: list[Found] = []
    lowered = clause.lower()
    candidates: set[int] = set()
    for hit in _TRIGGER_SCAN.finditer(lowered):  # most rules never apply: skip their patterns
        candidates |= _TRIGGERED[hit.group(1)]
    for symbol in _SYMBOLS:
        if symbol in lowered:
            candidates |= _TRIGGERED[symbol]
    for i in sorted(candidates):
        _, pattern, rule = _RULES[i]
        m = pattern.search(clause)
        if m is not None:
            found += rule(m, ctx)
    if _DIGIT.search(clause) or _OS.search(lowered):
        found += versions(clause, ctx)
    if not found:
        for pattern in _COPULAS:
            m = pattern.search(clause)
            if m is not None:
                found = fr._copula(m, ctx, colon=pattern is _COPULAS[1])
                break
    if lex.ADDITIVE.search(clause):  # "I also lead ...": adds to what is known
        found = [(s, a, v, False, d) for s, a, v, _, d in found]
    return [f for f in found if f[0] and f[2]]


_FIRST_NAME = re.compile(r"^(?:(?:Dr|Dra|Mr|Mrs|Ms|Miss|Sister) )?[A-Z][\w'-]*(?: [A-Z][\w'-]*)*")
_FIRST_THING = re.compile(
    r"\b(?:my|our|the)\s+(?:(?!(?:at|in|on|for|to|with|from|by|of|and|is|are)\b)[\w'-]+\s*){1,3}",
    _I,
)


def _remember(clause: str, ctx: Context) -> None:
    """What "she" and "it" will mean in the next clause."""
    named = _FIRST_NAME.match(clause)
    if named is not None and named.group(0).split()[0].lower() not in ("i", "we", "the", "my"):
        found = phrase(named.group(0), ctx)
        if found is not None:
            ctx.person = found
    if ctx.thing is None:
        first = _FIRST_THING.search(clause)
        if first is not None:
            ctx.thing = phrase(first.group(0).strip(), ctx)


def _unused(p: Phrase) -> None:  # pragma: no cover - keeps an import for the type checker
    return None
