"""The words and patterns of time expressions: month, weekday and season names, number words,
and the regular-expression pieces ``temporal.py`` builds its rules from."""

from __future__ import annotations

FULL_MONTHS = [
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
]  # fmt: skip
MONTHS = (
    {name: i for i, name in enumerate(FULL_MONTHS, 1)}
    | {name[:3]: i for i, name in enumerate(FULL_MONTHS, 1) if name != "may"}
    | {"sept": 9}
)
# Also verbs or other words ("May I ask", "we march on", "3 dec places"): lowercase ones count
# only when the date is unmistakable.
AMBIGUOUS = frozenset({"may", "march"} | {name for name in MONTHS if len(name) < 5})
WEEKDAYS = {
    "monday": 0, "mon": 0, "tuesday": 1, "tue": 1, "tues": 1, "wednesday": 2, "wed": 2,
    "weds": 2, "thursday": 3, "thu": 3, "thur": 3, "thurs": 3, "friday": 4, "fri": 4,
    "saturday": 5, "sat": 5, "sunday": 6, "sun": 6,
}  # fmt: skip
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip

MONTH_RE = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\b\.?"
FULL_MONTH_RE = r"(?P<month>" + "|".join(FULL_MONTHS) + r")\b"
# Digits glued to "$", "#", ".", ":", "/" or "-" are money, ids, versions, ports or phone numbers.
YEAR_RE = r"(?<![\w$#.:/-])(?P<year>(?:19|20)\d\d)(?![\w$%]|[.:/-]\d)"
DAY_RE = r"(?<![\w$#.:/-])(?P<day>[0-3]?\d)(?P<sfx>st|nd|rd|th)?(?![\w%]|[.:/-]\d)"
COUNT_RE = r"\d{1,3}|" + "|".join(NUMBERS) + r"|(?:a\s+)?couple(?:\s+of)?"
FEW_RE = r"(?:a\s+)?few|several"
UNIT_RE = r"(?P<unit>hour|day|week|month|year)s?\b"

__all__ = [
    "AMBIGUOUS",
    "COUNT_RE",
    "DAY_RE",
    "FEW_RE",
    "FULL_MONTHS",
    "FULL_MONTH_RE",
    "MONTHS",
    "MONTH_RE",
    "NUMBERS",
    "SEASONS",
    "UNIT_RE",
    "WEEKDAYS",
    "YEAR_RE",
]
