"""The vocabulary of ``frames``: which nouns name an attribute, which hold one value at a time,
who counts as kin, and the small word classes the rules test (roles, statuses, products).

Everything is lower case, accent-folded and singular: ``noun_attribute`` is given the words of a
noun phrase as ``words`` makes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fivefold.text import fold_accents


def singular(word: str) -> str:
    """``word`` without a plural ending ("keys" -> "key", "classes" -> "class")."""
    if len(word) <= 3 or not word.endswith("s") or word.endswith(("ss", "us", "is", "os")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    return word[:-1]


@dataclass(frozen=True, slots=True)
class Attribute:
    name: str  # the canonical key ("badge number")
    single: bool  # one value at a time
    personal: bool  # a person's own ("my work email"): modifiers qualify it, never own it


def _table(spec: str, *, single: bool = True, personal: bool = True) -> dict[str, Attribute]:
    """``"canonical: synonym, synonym; ..."`` as a synonym -> Attribute table."""
    table: dict[str, Attribute] = {}
    for entry in spec.split(";"):
        name, _, synonyms = entry.partition(":")
        attribute = Attribute(name.strip(), single, personal)
        for synonym in (name, *synonyms.split(",")):
            if synonym.strip():
                table[" ".join(singular(w) for w in synonym.split())] = attribute
    return table


# A person's own attributes: "my X", "Tom's X"; a thing named before them only qualifies them
# ("my Harbor Labs badge number" is the user's badge number).
_PERSONAL = _table(
    """
    residence: address, home address;
    employer: workplace, company;
    manager: line manager, boss, ward manager, supervisor, direct manager;
    role: title, job title, position, job;
    team: unit, squad;
    badge number: badge, badge id, badge no, id badge;
    employee number: employee id, staff number, staff id, employee no;
    phone number: phone no, mobile number, mobile, cell, cell number, cellphone, telephone,
        number, phone;
    email: email address, e mail, mail address;
    locker: locker number;
    desk: desk number;
    extension: desk extension, extension number;
    membership number: membership card, member number, membership id;
    account number: iban;
    pin: pin number;
    username: user name, handle, login;
    password: wi fi password, wifi password, passcode;
    plate: plates, licence plate, license plate, number plate, reg, registration, car reg;
    bleep: pager;
    rent: monthly rent;
    salary: pay, wage, income;
    weight: body weight;
    mortgage payment: mortgage, payment, monthly payment;
    shoe size: shoe;
    pb: personal best, best time, record;
    birthday: birth date, date of birth;
    bedtime;
    editor: text editor, code editor, ide;
    coffee: coffee order;
    tea;
    diet;
    seat: seat preference;
    music: playlist, listening;
    dentist: dental practice;
    doctor: gp, pediatrician, paediatrician, physician, family doctor;
    accountant: tax adviser, tax advisor, bookkeeper;
    plumber;
    hairdresser: barber;
    childminder: nanny, babysitter;
    teacher: class teacher, form teacher;
    coach: trainer;
    insurer: insurance, health insurance, health insurer, car insurance;
    bank: current account, bank account, main bank, business account;
    phone carrier: carrier, sim, phone contract, phone plan, mobile plan, mobile provider;
    internet provider: internet, broadband, home internet, isp;
    laptop: machine, computer, notebook;
    car: vehicle, motor;
    bike: bicycle;
    watch: smartwatch, fitness tracker, tracker;
    name: surname, last name, married name;
    school;
    a1c: hba1c;
    reading glasses: glasses, prescription
    """
)

# A thing's attributes: the words before them name the thing ("the public API rate limit").
_OF_THINGS = _table(
    """
    rate limit: limit, request limit, quota;
    budget: cloud budget, monthly budget;
    price: cost;
    rate: hourly rate, pay rate;
    headcount: staff count, team size;
    slo: availability slo, sla;
    bill: electricity bill, energy bill;
    cover;
    schedule: date, time, due date, deadline, start date, slot;
    opening hours: hours, opening time;
    version: release;
    status;
    location;
    owner: maintainer;
    supplier;
    point of sale: pos, till;
    ci: ci system, build system;
    general manager: gm;
    head chef: chef;
    capacity: seating
    """,
    personal=False,
)

_NOUNS: dict[str, Attribute] = {**_PERSONAL, **_OF_THINGS}
_LONGEST = max(len(k.split()) for k in _NOUNS)


def noun_attribute(words: tuple[str, ...]) -> tuple[Attribute, int] | None:
    """The attribute a noun phrase ends with, and how many of its last words name it."""
    for size in range(min(_LONGEST, len(words)), 0, -1):
        found = _NOUNS.get(" ".join(words[-size:]))
        if found is not None:
            if words[-size:] == ("number",) and words[:-1] and words[-2] not in _PHONE_WORDS:
                return None  # "my IMSS number", "the policy number": a number of its own kind
            return found, size
    return None


# What may stand before a bare "number" that is still a phone number.
_PHONE_WORDS = frozenset(
    "phone mobile cell home work office contact landline direct new old".split()
)


_CANONICAL = {a.name: a for a in _NOUNS.values()}


def attribute(name: str) -> Attribute:
    """The canonical attribute ``name`` (a rule's fixed attribute)."""
    return _CANONICAL.get(name) or Attribute(name, True, False)


# Attributes a modifier splits into kinds: a swimming teacher is not the class teacher.
KINDED = frozenset({"teacher", "coach"})


# Kin words and their canonical key; "my mum" and "Mamá" are one person.
KIN = {
    **dict.fromkeys(("mum", "mom", "mother", "mama", "mam", "mummy", "ma"), "mother"),
    **dict.fromkeys(("dad", "father", "papa", "daddy"), "father"),
    **dict.fromkeys(("parents", "parent", "folks"), "parents"),
    **dict.fromkeys(("husband", "wife", "partner", "spouse"), "partner"),
    **{
        w: w
        for w in (
            "sister brother son daughter grandmother grandfather grandma grandpa aunt uncle "
            "auntie cousin niece nephew boyfriend girlfriend fiance fiancee neighbour neighbor "
            "friend colleague flatmate roommate kids kid children child"
        ).split()
    },
}

# Head words of a job title ("senior staff nurse", "Director of Engineering").
ROLE_HEADS = frozenset(
    """
    engineer developer designer manager director nurse sister matron chef cook waitress waiter
    owner lead teacher principal pharmacist student doctor architect analyst consultant officer
    coordinator administrator receptionist intern researcher scientist professor lecturer ceo
    cto cfo coo vp president head founder partner associate specialist technician supervisor
    sommelier bartender barista editor writer accountant lawyer solicitor paramedic midwife
    therapist physiotherapist surgeon registrar consultant fellow postdoc candidate volunteer
    docent curator librarian clerk secretary assistant deputy chief staff leader
    """.split()
)

# Words of a status ("on hold", "resolved"); a status value is the ones a statement holds.
STATUS_WORDS = frozenset(
    """
    open closed resolved done finished complete completed live pending cancelled canceled approved
    rejected accepted declined blocked paused active shipped merged fixed healed healthy fine
    better recovered recovering home hospital engaged married divorced separated single
    retired waiting planned ongoing underway started stalled dead broken working
    """.split()
)
STATUS_PHRASES = re.compile(
    r"\b(on hold|back on|in progress|in review|under review|in hospital|on the waiting list|"
    r"waiting list|in the build phase|build phase|signed off|fully healed|back to normal|"
    r"on (?:national )?shortage|on back ?order|"
    r"out of hospital|walking (?:with|without) (?:a )?\w+|on full duties|light duties|off sick)\b"
)

# A person's health, not a thing's state: "the coffee kiosk in the hospital lobby" is no status.
HEALTH = frozenset("fine better healed healthy recovered recovering home hospital".split())
HEALTH_PHRASES = frozenset({"in hospital", "out of hospital", "fully healed"})

# Words for people counted in a headcount ("6 engineers", "22 people").
PEOPLE = frozenset(
    """
    people person staff employee engineer nurse developer member cook waiter chef worker hire
    student volunteer doctor teacher designer analyst agent rep
    """.split()
)

# What a product named alone is ("I use Neovim", "traded it in for a Nissan"), so that a new
# statement that never says "editor" or "car" still lands on the old one's attribute.
_CATEGORIES = {
    "editor": "vs code, vscode, visual studio code, vim, neovim, nvim, emacs, zed, sublime, "
    "sublime text, intellij, pycharm, webstorm, cursor, helix, nano, atom, xcode, notepad",
    "car": "vauxhall, nissan, ford, toyota, volkswagen, vw, skoda, honda, mazda, bmw, audi, "
    "renault, peugeot, fiat, kia, hyundai, tesla, volvo, chevrolet, citroen, mercedes, opel, "
    "subaru, mini, dacia, seat ibiza, jeep, lexus, suzuki, mitsubishi, polo, golf, corsa, "
    "qashqai, octavia, jetta, berlingo, prius, yaris",
    "phone model": "iphone, pixel, fairphone, samsung galaxy, galaxy, motorola, nokia, oneplus, "
    "xiaomi, huawei, sony xperia",
    "laptop": "thinkpad, macbook, macbook air, macbook pro, framework, xps, surface, chromebook",
    "watch": "fitbit, garmin, apple watch, polar, coros, suunto, forerunner",
    "ci": "jenkins, github actions, gitlab ci, buildkite, circleci, circle ci, travis, "
    "teamcity, drone, azure pipelines",
    "database": "postgres, postgresql, mysql, mariadb, mongodb, mongo, redis, cassandra, "
    "dynamodb, sqlite, cockroachdb, oracle, sql server, elasticsearch, clickhouse",
    "drinks": "tea, coffee, juice, water, beer, wine, milk, soda, cola, kombucha, matcha",
}
CATEGORY_OF = {
    fold_accents(name): category
    for category, names in _CATEGORIES.items()
    for name in (n.strip() for n in names.split(","))
}
_CATEGORY_LONGEST = max(len(k.split()) for k in CATEGORY_OF)


def category(words: tuple[str, ...]) -> str | None:
    """The product class of the first words of a value that name one ("neovim", "nissan")."""
    for start in range(min(3, len(words))):
        for size in range(_CATEGORY_LONGEST, 0, -1):
            found = CATEGORY_OF.get(" ".join(words[start : start + size]))
            if found is not None:
                return found
    return None


COFFEE_WORDS = frozenset(
    "espresso latte lattes flat white whites cappuccino americano cortado macchiato mocha "
    "cafe coffee filter".split()
)
OS_NAMES = frozenset("macos ios android windows ubuntu debian fedora ipados watchos".split())

# Modifiers that qualify without naming a thing: "my new manager", "the main editor".
QUALIFIERS = frozenset(
    """
    new old current main primary usual regular own latest previous former first proper actual
    real normal default official current
    """.split()
)

SUBJECT_QUALIFIERS = QUALIFIERS - {"first", "last", "next", "previous", "former", "old", "own"}

# Words that say the statement adds to what is known rather than replacing it.
ADDITIVE = re.compile(
    r"\b(also|another|too|as well|alongside|on top of|in addition|besides|one-off|one off|"
    r"a second|our second|my second|extra|additional)\b(?!-)",
    re.IGNORECASE,
)
