"""Values as ``frames`` reads and compares them: dates and times, amounts, codes, e-mail
addresses and phone numbers.

A value is stored as normalized text ("17 november 13:25", "1150 euro month", "40417"); two
values are the same when the parts that carry them agree (the dates and times, the numbers, the
code), else when the words of one hold the other's ("pieter" and "pieter de wit").
"""

from __future__ import annotations

import re

_MONTHS = (
    "january february march april may june july august september october november december"
).split()
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DAY_NAMES = "monday tuesday wednesday thursday friday saturday sunday".split()
_WEEKDAY = r"(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?s?"
_DATE = re.compile(
    rf"\b(?:(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m1>{_MONTH})\b|"
    rf"(?P<m2>{_MONTH})\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\b(?!:)|"
    r"(?P<iso>\d{4}-\d{2}-\d{2}))",
    re.I,
)
_MONTH_ONLY = re.compile(rf"\b(?:in|by|until|from|since|for|of)\s+(?P<m>{_MONTH})\b", re.I)
_YEAR = re.compile(r"\b(?P<y>20\d\d|19\d\d)\b")
_DAY = re.compile(rf"\b(?P<w>{_WEEKDAY})\b", re.I)
_TIME = re.compile(
    r"\b(?:(?P<h>\d{1,2})(?::(?P<mi>\d{2}))?\s*(?P<ap>am|pm|a\.m\.|p\.m\.)|"
    r"(?<![\d:])(?P<h2>\d{1,2})[:h](?P<mi2>\d{2})(?!:)|(?P<word>noon|midday|midnight)|"
    r"(?<=\bat )(?P<h3>\d{1,2})(?![\d:.,%]|\s*(?:kg|km|pesos?|euros?|people|percent)))\b",
    re.I,
)
_PART = re.compile(r"\b(?P<p>morning|afternoon|evening|night|lunchtime)s?\b", re.I)
_RELATIVE = re.compile(
    r"\b(?P<n>a|an|one|two|three|four|five|six|\d+)\s+(?P<u>day|week|month)s?\b", re.I
)


def when_parts(text: str) -> dict[str, frozenset[str]]:
    """The dates, weekdays, times, months and parts of day ``text`` names, by kind."""
    parts: dict[str, set[str]] = {}
    for m in _DATE.finditer(text):
        if m.group("iso"):
            parts.setdefault("date", set()).add(m.group("iso"))
        else:
            day, month = m.group("d1") or m.group("d2"), m.group("m1") or m.group("m2")
            parts.setdefault("date", set()).add(f"{int(day)} {_month(month)}")
    for m in _DAY.finditer(text):
        parts.setdefault("weekday", set()).add(_weekday(m.group("w")))
    for m in _TIME.finditer(text):
        parts.setdefault("time", set()).add(_clock(m))
    if "date" not in parts:
        for m in _MONTH_ONLY.finditer(text):
            parts.setdefault("month", set()).add(_month(m.group("m")))
    for m in _PART.finditer(text):
        parts.setdefault("part", set()).add(m.group("p").lower())
    return {kind: frozenset(found) for kind, found in parts.items()}


def _month(name: str) -> str:
    name = name.lower()
    return next(m for m in _MONTHS if m.startswith(name[:3]))


def _weekday(name: str) -> str:
    name = name.lower()
    return next(d for d in _DAY_NAMES if d.startswith(name[:3]))


def _clock(m: re.Match[str]) -> str:
    if m.group("word"):
        return "00:00" if m.group("word").lower() == "midnight" else "12:00"
    hour = int(m.group("h") or m.group("h2") or m.group("h3"))
    minute = m.group("mi") or m.group("mi2") or "00"
    meridiem = (m.group("ap") or "").lower().replace(".", "")
    if meridiem == "pm" and hour < 12:
        hour += 12
    if meridiem == "am" and hour == 12:
        hour = 0
    return f"{hour:02d}:{minute}"


def when_value(text: str) -> str | None:
    """``text``'s dates and times as one normalized value, or None when it names none."""
    parts = when_parts(text)
    if not parts or set(parts) == {"part"}:
        return None
    order = ("date", "month", "weekday", "part", "time")
    found = " ".join(" ".join(sorted(parts[k])) for k in order if k in parts)
    codes = " ".join(c.lower() for c in re.findall(r"\b[A-Z]{2}\d{2,4}\b", text))
    return f"{codes} {found}".strip()


def relative_shift(text: str) -> str | None:
    """ "slipped two weeks": the shift a statement gives instead of a new date."""
    m = _RELATIVE.search(text)
    return f"{m.group('n').lower()} {m.group('u').lower()}" if m else None


_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}
_AMOUNT = re.compile(
    r"(?P<cur>[£€$])?\s?(?P<n>[+-]?\d[\d,]*(?:\.\d+)?)\s?(?P<k>k\b|m\b|%)?"
    r"(?P<unit>(?:\s*(?:-\s*)?[a-z]+){0,3})",
    re.I,
)
_UNIT_STOP = re.compile(
    r"\b(?:on|at|in|for|with|after|because|from|and|but|so|to|since|over|under|across|"
    r"including|now|again|today|these)\b.*$"
)


def amount_value(text: str) -> str | None:
    """The first amount in ``text`` with its currency and unit ("1150 euro month"), or None."""
    text = re.sub(
        r"\b(" + "|".join(_NUMBER_WORDS) + r")\b(?=\s+[a-z])",
        lambda m: _NUMBER_WORDS[m.group(1).lower()],
        text,
        flags=re.I,
    )
    m = _AMOUNT.search(text)
    if m is None:
        return None
    number = m.group("n").replace(",", "")
    if m.group("k") and m.group("k").lower() == "k":
        number = str(int(float(number) * 1000))
    unit = _UNIT_STOP.sub("", m.group("unit").lower()).replace("-", " ").split()
    unit = [u for u in unit if u not in ("a", "an", "per", "the", "every", "each")]
    currency = {"£": "gbp", "€": "eur", "$": "usd"}.get(m.group("cur") or "", "")
    percent = "%" if m.group("k") == "%" else ""
    return " ".join(x for x in (currency, number + percent, *unit) if x)


EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
PHONE = re.compile(r"(?<![\w+])\+?\d[\d ()-]{6,}\d(?!\w)")


def phone_value(text: str) -> str | None:
    m = PHONE.search(text)
    digits = re.sub(r"\D", "", m.group(0)) if m else ""
    return digits if len(digits) >= 7 else None


def email_value(text: str) -> str | None:
    m = EMAIL.search(text)
    return m.group(0).lower().rstrip(".") if m else None


_CODE = re.compile(
    r"\b(?:[A-Z]{1,3}\d{1,2}\s[A-Z]{3}|[A-Z]{2,3}-\d{2,3}-[A-Z0-9]{1,2}|"
    r"[\w-]*\d[\w-]*|[a-z]+(?:-[a-z]+)+|@[\w.]+)",
)


def code_value(text: str) -> str | None:
    """An identifier: a registration plate, a number, a handle ("MA19 KXR", "0144756")."""
    m = _CODE.search(text)
    return m.group(0).lower().strip(".") if m else None


def _numbers(value: str) -> frozenset[str]:
    return frozenset(t for t in re.findall(r"[\w.@+%:-]+", value) if any(c.isdigit() for c in t))


def same_value(old: str, new: str, *, counted: bool = True) -> bool:
    """Whether two values of one attribute say the same thing. ``counted``: the numbers carry
    the value (an amount, a code), so other words do not count ("1150 eur" is "1150 euros");
    else the numbers are words among the others ("eu west 1" is not "eu central 1")."""
    if old == new:
        return True
    if old.startswith("not ") != new.startswith("not "):
        return False  # "meat" and "not meat"
    if ("without" in old.split()) != ("without" in new.split()):
        return False  # "with sugar" and "without sugar"
    if "@" in old or "@" in new:
        return old == new
    old_when, new_when = when_parts(old), when_parts(new)
    shared = (set(old_when) & set(new_when)) - {"part"}
    if shared:
        return all(old_when[k] == new_when[k] for k in shared | (set(old_when) & set(new_when)))
    old_numbers, new_numbers = _numbers(old), _numbers(new)
    if old_numbers and new_numbers and old_numbers != new_numbers:
        return False
    if old_numbers and new_numbers and counted:
        return True
    a, b = _plain(old), _plain(new)
    return bool(a and b) and (a <= b or b <= a)


_NOISE = frozenset(
    "a an the my our of in at on to for and with is are dr dra mr mrs ms miss don sister "
    "still same new now".split()
)


def _plain(value: str) -> frozenset[str]:
    return frozenset(w for w in value.split() if w not in _NOISE)
