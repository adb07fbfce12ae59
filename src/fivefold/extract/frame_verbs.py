"""The verb rules of ``frames`` (amounts, schedules, versions, tastes, statuses, places,
duties, tools, devices, names) and the table that runs every rule over a memory's clauses."""

from __future__ import annotations

import re

from fivefold.extract import attributes as lex
from fivefold.extract import frame_rules as fr
from fivefold.extract.attributes import singular
from fivefold.extract.frame_rules import Found, Rule, _found, thing_key
from fivefold.extract.phrases import (
    Context,
    cut,
    key,
    name_value,
    phrase,
    words,
    words_value,
)
from fivefold.extract.values import amount_value, when_parts, when_value

_I = re.IGNORECASE


def _subject(text: str, ctx: Context) -> str:
    found = phrase(text, ctx)
    return "" if found is None else (found.owner if found.kind != "none" else thing_key(found))


# --- amounts ------------------------------------------------------------------------------


def _weighs(m: re.Match[str], ctx: Context) -> list[Found]:
    return _found(
        _subject(m.group("s") or "", ctx) or "user", "weight", amount_value(m.group("v")) or ""
    )


def _headcount(m: re.Match[str], ctx: Context) -> list[Found]:
    if singular(m.group("u")) not in lex.PEOPLE:
        return []
    unit = (singular(m.group("u").lower()),)  # six engineers and twelve designers: two counts
    return _found(_subject(m.group("s"), ctx), "headcount", amount_value(m.group("n")) or "", unit)


def _we_are(m: re.Match[str], ctx: Context) -> list[Found]:
    team = m.group("t")
    subject = thing_key(phrase(team, ctx)) if team else "user"
    return _found(subject, "headcount", amount_value(m.group("n")) or "")


def _rate_limit(m: re.Match[str], ctx: Context) -> list[Found]:
    own = [w for w in words(m.group("s")) if w not in _UNIT_WORDS and w not in ("the", "our")]
    return _found(" ".join(own), "rate limit", amount_value(m.group("v")) or "")


_UNIT_WORDS = frozenset(
    "key keys client clients user users customer customers account token".split()
)
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
    if unit in _MEASURES:
        return []  # "we'll do 30 minutes every Thursday" counts no thing
    if m.group("verb").lower().startswith("seat"):
        unit = "capacity"
    elif unit in lex.PEOPLE:
        unit = "headcount"
    days = " ".join(sorted(when_parts(m.group("rest") or "").get("weekday", ())))
    owner = _subject(m.group("s"), ctx) or "user"
    if owner == "user" and days and unit not in ("headcount", "capacity"):
        owner = days  # "120 covers on a Saturday" are the Saturday covers
    return _found(owner, unit, m.group("n").replace(",", ""))


_MEASURES = frozenset(
    "minute hour day week month year time second km mile metre meter kilometre lap rep set "
    "percent kg gram page".split()
)
_DAYS = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday weekend weekday".split()
)


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
    value = cut(m.group("v"))
    month = words_value(value) if fr._starts_with_when(value) else ""  # "planned for April"
    return _found(thing_key(obj), "schedule", when_value(value) or month)


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
        named = thing_key(phrase(cut(of.group("p")), ctx))
        return _found(fr._product(named), "version", of.group("n"), _owner_words(clause, ctx))
    for m in _PRODUCT_VERSION.finditer(clause):
        product = _product_words(m, clause)
        if product:
            number = m.group("n") or m.group("d") or m.group("b")
            owner = _owner_words(clause[: m.start()], ctx)
            return _found(fr._product(" ".join(product[-2:])), "version", number, owner)
    return _named_release(clause, ctx)


def _product_words(m: re.Match[str], clause: str) -> list[str]:
    """The product a version number follows (its last words before the number), or [] when
    the number is no version: a bare one must follow a verb of running ("uses MedChart 8") and
    no name in title case ("is on Calle Libertad 1820" is an address)."""
    named = list(words(m.group("p")))
    product: list[str] = []
    while named and named[-1] not in _NOT_PRODUCT:
        product.insert(0, named.pop())
    if not product or not m.group("b"):
        return product
    written = " ".join(m.group("p").split()[-len(product) :])
    lead = clause[: m.start("p")] + " ".join(m.group("p").split()[: -len(product)])
    titled = re.fullmatch(r"[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*", written)
    located = re.search(r"\b(?:is|are|'s|lives?|located|based)\s+(?:on|at|in)\s*$", lead)
    if not _VERSION_VERB.search(lead) or (titled and (len(product) > 1 or located)):
        return []
    return product


_RELEASE = re.compile(r"\b(?P<os>(?i:macos|ios|android|windows|ubuntu))\s+(?P<r>[A-Z0-9][\w.]*)")


def _named_release(clause: str, ctx: Context) -> list[Found]:
    """ "My work laptop runs macOS Sonoma": an operating system's release named by a word."""
    m = _RELEASE.search(clause)
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
    if not subject or (owner not in ("user", subject) and owner):
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
    (
        re.compile(
            r"\b(?:in the car|commut\w*|on the way to work|driving|on the tram|on the bus)\b", _I
        ),
        "commute",
    ),
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
    part: list[str] = []
    for w in words(m.group("o")):
        if w.endswith("ing") or w in ("at", "in", "on", "while", "with", "when", "during"):
            break  # "my left ankle falling off a boulder"
        if w not in ("my", "his", "her", "their", "a", "left", "right"):
            part.append(w)
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
    if obj is None or (obj.kind == "user" and not obj.words):
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
    found = phrase(m.group("s"), ctx)
    if found is None or found.kind not in ("user", "person") or found.words:
        return []  # "the enclosed park in Monsanto" is a noun
    who = found.owner
    place = cut(re.sub(r"^(?:in|at|on)\s+", "", m.group("v"), flags=_I))
    return _found("parking" if who == "user" else f"{who} parking", "location", words_value(place))


# --- duties, tools and providers ------------------------------------------------------------

_DUTY_PROVIDERS = {
    **dict.fromkeys(
        ("accounting", "account", "taxe", "taxes", "tax", "return", "book"), "accountant"
    ),
    **dict.fromkeys(("hair", "braid", "nail"), "hairdresser"),
    "kitchen": "head chef",
}


def _duty(text: str, holder: str, ctx: Context) -> list[Found]:
    obj = phrase(cut(text), ctx)
    if obj is None or not holder:
        return []
    subject = thing_key(obj)
    provider = _DUTY_PROVIDERS.get(singular(subject.split()[-1])) if subject else None
    plain = len([w for w in obj.words if w not in ("a", "an", "the")]) <= 1
    if provider is not None and obj.kind != "thing" and plain:  # not "the northern accounts"
        owner = obj.owner if obj.kind == "person" and obj.words else "user"
        return _found(owner, provider, holder)
    return _found(subject, "owner", holder)


def _does(m: re.Match[str], ctx: Context) -> list[Found]:
    who = phrase(re.split(r"\s+(?:in|at|from|on)\s+", m.group("v"))[0], ctx)  # "Funmi in Moss Side"
    if who is None or who.kind == "none":
        return []
    holder = who.owner
    task = m.group("s")
    if holder == "user" and re.match(r"my\s", task, _I):
        return []  # "I do my best work late at night"
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
    scope = [w for w in words(m.group("s") or "") if w not in ("the", "a", "our", "my")]
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
    if obj is None or (obj.kind == "user" and not obj.words) or obj.owner in lex.KIN.values():
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


def _switched_from(m: re.Match[str], ctx: Context) -> list[Found]:
    """ "I switched from tea to coffee": the kind of thing both are names the attribute."""
    new = re.split(r"\s+(?:on|for|at|because|since|after)\s+|,", cut(m.group("y")))[0]
    product = lex.category(words(new)) or lex.category(words(m.group("x")))
    if product is None:
        return []
    if product == "drinks":
        return fr._additive("user", product, words_value(new))
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
    detail = tuple(
        w for w in words(m.group("rest")) if w in ("personal", "work", "home", "private")
    )
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
