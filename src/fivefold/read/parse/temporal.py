"""Time expressions: the window a query names (read path) and the day a memory names (write path).

Detection is a table of explicit regular expressions, each with a small resolver that turns the
matched text into dates with ``datetime`` arithmetic. Free-text date search (``dateparser.search``)
is deliberately not used: it reads "we", "may", ports and version numbers as dates, and a wrong
window silently filters good memories out of a recall.

Overlapping matches are settled longest first. Expressions joined by "and", "or", "," or "/" merge
into their hull; "between A and B" / "from A to B" is a range; "since X" opens X up to now. When a
query holds several separate expressions the most precise one wins.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta
from enum import Enum

from fivefold.config import TemporalConfig
from fivefold.read.parse.time_span import Ctx, Found, Rule, SessionEnd, Span
from fivefold.read.parse.time_words import (
    AMBIGUOUS,
    COUNT_RE,
    DAY_RE,
    FEW_RE,
    FULL_MONTH_RE,
    MONTH_RE,
    MONTHS,
    NUMBERS,
    SEASONS,
    UNIT_RE,
    WEEKDAYS,
    YEAR_RE,
)
from fivefold.types import TimeWindow

__all__ = ["find_window", "infer_event_at"]

# TimeWindow.precision by granularity; the planner reads it as the temporal feature.
P_DAY = 1.0
P_DAYS = 0.8  # 2 to 7 days
P_MONTH = 0.6
P_QUARTER = 0.5  # a quarter or a season
P_YEAR = 0.4
P_OPEN = 0.4  # "since X": open-ended, as vague as a year
P_FUZZY = 0.3

_DEFAULT_CONFIG = TemporalConfig()
_TICK = timedelta(microseconds=1)
_BY_LENGTH = tuple((timedelta(days=d), p) for d, p in ((1, P_DAY), (7, P_DAYS), (31, P_MONTH),
                                                        (92, P_QUARTER)))  # fmt: skip


class _Mode(Enum):
    """Which occurrence of a recurring period (a month, quarter, season) an expression means."""

    IN = "in"  # the latest one that has started ("in March", "in Q3", "in the summer")
    LAST = "last"  # the latest one that has ended
    THIS = "this"  # the one under way, else the one of the current year
    NEXT = "next"  # the first one that has not started


_MODE_OF = (
    {"this": _Mode.THIS}
    | dict.fromkeys(("last", "past", "previous", "this past"), _Mode.LAST)
    | dict.fromkeys(("next", "coming", "this coming"), _Mode.NEXT)
)


def _at(ctx: Ctx, day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=ctx.now.tzinfo)


def _eod(ctx: Ctx, day: date) -> datetime:
    return datetime.combine(day, time.max, tzinfo=ctx.now.tzinfo)


def _day(ctx: Ctx, day: date) -> Span:
    start = _at(ctx, day)
    return Span(start, _eod(ctx, day), P_DAY, point=start)


def _days(ctx: Ctx, first: date, last: date, precision: float) -> Span:
    return Span(_at(ctx, first), _eod(ctx, last), precision)


def _shift(year: int, month: int, months: int) -> tuple[int, int]:
    index = year * 12 + month - 1 + months
    return index // 12, index % 12 + 1


def _shift_dt(moment: datetime, months: int) -> datetime:
    year, month = _shift(moment.year, moment.month, months)
    last = (date(*_shift(year, month, 1), 1) - timedelta(days=1)).day
    return moment.replace(year=year, month=month, day=min(moment.day, last))


def _months(ctx: Ctx, year: int, month: int, count: int, precision: float) -> Span:
    end = date(*_shift(year, month, count), 1) - timedelta(days=1)
    return _days(ctx, date(year, month, 1), end, precision)


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _quarter_start(day: date) -> date:
    return date(day.year, (day.month - 1) // 3 * 3 + 1, 1)


def _length_precision(start: datetime, end: datetime) -> float:
    return next((p for limit, p in _BY_LENGTH if end - start <= limit), P_YEAR)


def _pick(ctx: Ctx, mode: _Mode, occurrence: Callable[[int], Span]) -> Span | None:
    now = ctx.now
    spans = [occurrence(year) for year in range(now.year - 2, now.year + 2)]
    match mode:
        case _Mode.IN:
            return max((s for s in spans if s.start <= now), key=lambda s: s.start, default=None)
        case _Mode.LAST:
            return max((s for s in spans if s.end < now), key=lambda s: s.start, default=None)
        case _Mode.NEXT:
            return min((s for s in spans if s.start > now), key=lambda s: s.start, default=None)
    return next((s for s in spans if s.start <= now <= s.end), spans[2])


def _weekday(ctx: Ctx, weekday: int, mode: _Mode) -> date:
    today = ctx.today
    match mode:
        case _Mode.THIS:
            return _monday(today) + timedelta(days=weekday)
        case _Mode.NEXT:
            return today + timedelta(days=(weekday - today.weekday() - 1) % 7 + 1)
    # A weekday named on that same weekday means a week ago, not today.
    return today - timedelta(days=(today.weekday() - weekday - 1) % 7 + 1)


def _few(ctx: Ctx, unit: str) -> tuple[datetime, datetime]:
    """Earliest and latest moment of "a few <unit>s ago": 2 to 6 hours, days or weeks, the
    configured months, 2 to 5 years."""
    today, now, cfg = ctx.today, ctx.now, ctx.config
    match unit:
        case "hour":
            return now - timedelta(hours=6), now - timedelta(hours=2)
        case "day":
            return _at(ctx, today - timedelta(days=6)), _eod(ctx, today - timedelta(days=2))
        case "week":
            return _at(ctx, today - timedelta(weeks=6)), _eod(ctx, today - timedelta(weeks=2))
        case "month":
            return (
                now - timedelta(days=cfg.few_months_from_days),
                now - timedelta(days=cfg.few_months_to_days),
            )
    return _shift_dt(now, -60), _shift_dt(now, -24)


def _part(ctx: Ctx, offset: int, first_hour: int, hours: int) -> Span:
    start = _at(ctx, ctx.today + timedelta(days=offset)) + timedelta(hours=first_hour)
    return Span(start, start + timedelta(hours=hours) - _TICK, P_DAY, point=start)


def _yesterday(ctx: Ctx) -> Span:
    # [start of yesterday, now] rather than [now - 1d, now]: it holds the whole calendar day,
    # which is what people mean.
    start = _at(ctx, ctx.today - timedelta(days=1))
    return Span(start, ctx.now, P_DAY, point=start)


def _last_weekend(ctx: Ctx) -> Span:
    # The latest weekend over before today: on a Sunday that is the previous one.
    sunday = ctx.today - timedelta(days=(ctx.today.weekday() + 1) % 7 or 7)
    return _days(ctx, sunday - timedelta(days=1), sunday, P_DAYS)


def _weekend_before_last(ctx: Ctx) -> Span:
    last = _last_weekend(ctx)
    return replace(last, start=last.start - timedelta(weeks=1), end=last.end - timedelta(weeks=1))


def _calendar(ctx: Ctx, unit: str, step: int) -> Span:
    """Last/this/next calendar month, quarter or year. "Last" and "this" run up to now, so that
    "last month" covers both the previous calendar month and the rolling month before now."""
    today = ctx.today
    size, precision, first = {
        "month": (1, P_MONTH, today.replace(day=1)),
        "quarter": (3, P_QUARTER, _quarter_start(today)),
        "year": (12, P_YEAR, today.replace(month=1, day=1)),
    }[unit]
    year, month = _shift(first.year, first.month, step * size)
    if step > 0:
        return _months(ctx, year, month, size, precision)
    return Span(_at(ctx, date(year, month, 1)), ctx.now, precision)


def _calendar_of(unit: str, step: int) -> Callable[[Ctx], Span]:
    return lambda c: _calendar(c, unit, step)


def _week_days(ctx: Ctx, weeks: int, first: int, last: int) -> Span:
    monday = _monday(ctx.today) + timedelta(weeks=weeks)
    return _days(ctx, monday + timedelta(days=first), monday + timedelta(days=last), P_DAYS)


_PHRASE_TABLE: tuple[tuple[tuple[str, ...], Callable[[Ctx], Span]], ...] = (
    (("today", "earlier today"), lambda c: _day(c, c.today)),
    (("this morning",), lambda c: _part(c, 0, 0, 12)),
    (("this afternoon",), lambda c: _part(c, 0, 12, 6)),
    (("this evening", "tonight"), lambda c: _part(c, 0, 18, 6)),
    (("last night",), lambda c: _part(c, -1, 18, 12)),
    (("yesterday",), _yesterday),
    (("yesterday morning",), lambda c: _part(c, -1, 0, 12)),
    (("yesterday afternoon",), lambda c: _part(c, -1, 12, 6)),
    (("yesterday evening",), lambda c: _part(c, -1, 18, 6)),
    (("the day before yesterday",), lambda c: _day(c, c.today - timedelta(days=2))),
    (("tomorrow",), lambda c: _day(c, c.today + timedelta(days=1))),
    (("the day after tomorrow",), lambda c: _day(c, c.today + timedelta(days=2))),
    # "last week" = [now - 7d, now]: the seven days before now, not the previous calendar week.
    (("last week", "previous week", "this past week"),
     lambda c: Span(c.now - timedelta(days=7), c.now, P_DAYS)),
    (("this week", "earlier this week"),
     lambda c: Span(_at(c, _monday(c.today)), c.now, P_DAYS)),
    (("next week",), lambda c: _week_days(c, 1, 0, 6)),
    (("last weekend", "this past weekend"), _last_weekend),
    (("the weekend before last", "weekend before last"), _weekend_before_last),
    (("this weekend",), lambda c: _week_days(c, 0, 5, 6)),
    (("recently", "lately"),
     lambda c: Span(c.now - timedelta(days=c.config.recent_days), c.now, P_FUZZY)),
    (("the other day",), lambda c: Span(*_few(c, "day"), P_FUZZY)),
)  # fmt: skip
_CALENDAR_WORDS = {"last": -1, "previous": -1, "this": 0, "earlier this": 0, "next": 1}
_PHRASES = {name: resolve for names, resolve in _PHRASE_TABLE for name in names} | {
    f"{word} {unit}": _calendar_of(unit, step)
    for unit in ("month", "quarter", "year")
    for word, step in _CALENDAR_WORDS.items()
}


def _phrase(m: re.Match[str], ctx: Ctx) -> Span:
    return _PHRASES[" ".join(m.group(0).lower().split())](ctx)


def _month_number(token: str, *, sure: bool) -> int | None:
    word = token.rstrip(".").lower()
    if word in AMBIGUOUS and not (sure or token[0].isupper()):
        return None
    return MONTHS[word]


def _calendar_day(ctx: Ctx, month: int, day: int, year: str | None) -> Span | None:
    """A named day; without a year, the latest one not after today."""
    years = [int(year)] if year else range(ctx.today.year, ctx.today.year - 8, -1)
    for candidate in years:
        try:
            named = date(candidate, month, day)
        except ValueError:
            continue
        if year or named <= ctx.today:
            return _day(ctx, named)
    return None


def _iso(m: re.Match[str], ctx: Ctx) -> Span | None:
    return _calendar_day(ctx, int(m["month"]), int(m["day"]), m["year"])


def _month_day(m: re.Match[str], ctx: Ctx) -> Span | None:
    sure = bool(m["sfx"] or m["year"] or m["prep"])
    month = _month_number(m["month"], sure=sure)
    return _calendar_day(ctx, month, int(m["day"]), m["year"]) if month else None


def _month_year(m: re.Match[str], ctx: Ctx) -> Span | None:
    month = _month_number(m["month"], sure=True)
    return _months(ctx, int(m["year"]), month, 1, P_MONTH) if month else None


def _words(text: str | None) -> str:
    return " ".join((text or "").lower().split())


def _period(m: re.Match[str], ctx: Ctx, first: int, size: int, precision: float) -> Span | None:
    """A month, quarter or season: of the year named, else the occurrence its modifier picks.
    A period belongs to the year it starts in: winter 2024 = Dec 2024 - Feb 2025."""
    groups = m.groupdict()
    if groups.get("year"):
        return _months(ctx, int(groups["year"]), first, size, precision)
    mode = _MODE_OF.get(_words(groups.get("anchor")), _Mode.IN)
    return _pick(ctx, mode, lambda y: _months(ctx, y, first, size, precision))


def _anchored_month(m: re.Match[str], ctx: Ctx) -> Span | None:
    # Prepositions make a lowercase "may"/"march" a month; "this may be" does not.
    sure = _words(m.groupdict().get("anchor")) in {"", "in", "during", "since", "throughout"}
    month = _month_number(m["month"], sure=sure)
    return _period(m, ctx, month, 1, P_MONTH) if month else None


def _week_of_month(m: re.Match[str], ctx: Ctx) -> Span | None:
    """ "The last week of May" is read as May: memories are dated when they were said, and what
    is said of a week is often said days before or after it."""
    number = _month_number(m["month"], sure=True)
    return _period(m, ctx, number, 1, P_MONTH) if number else None


def _quarter(m: re.Match[str], ctx: Ctx) -> Span | None:
    return _period(m, ctx, int(m["q"]) * 3 - 2, 3, P_QUARTER)


def _season(m: re.Match[str], ctx: Ctx) -> Span | None:
    if not (m["anchor"] or m["prep"] or m["year"]):  # "spring" and "fall" are common words
        return None
    return _period(m, ctx, SEASONS[m["season"].lower()], 3, P_QUARTER)


def _year(m: re.Match[str], ctx: Ctx) -> Span | None:
    year = int(m["year"])
    if year > ctx.today.year + 10:  # "in 2048 bytes": too far ahead to be a plan
        return None
    return _months(ctx, year, 1, 12, P_YEAR)


def _named_weekday(m: re.Match[str], ctx: Ctx) -> Span | None:
    word, mod = m["wd"].rstrip(".").lower(), _words(m["anchor"])
    if len(word) < 6 and mod in {"", "on"}:  # "sun", "sat", "wed" are ordinary words
        return None
    return _day(ctx, _weekday(ctx, WEEKDAYS[word], _MODE_OF.get(mod, _Mode.LAST)))


def _count(text: str) -> int:
    word = text.lower()
    return 2 if "couple" in word else NUMBERS.get(word) or int(word)


def _ago(m: re.Match[str], ctx: Ctx) -> Span | None:
    unit = m["unit"].lower()
    if m["few"]:
        return Span(*_few(ctx, unit), P_FUZZY)
    n, today = _count(m["n"]), ctx.today
    match unit:
        case "day":
            return _day(ctx, today - timedelta(days=n))
        case "week":  # the week centred on that day
            middle = today - timedelta(weeks=n)
            return _days(ctx, middle - timedelta(days=3), middle + timedelta(days=3), P_DAYS)
        case "month":
            return _months(ctx, *_shift(today.year, today.month, -n), 1, P_MONTH)
        case "year":
            return _months(ctx, today.year - n, 1, 12, P_YEAR)
    point = ctx.now - timedelta(hours=n)  # said loosely, so an hour either side
    return Span(point - timedelta(hours=1), min(ctx.now, point + timedelta(hours=1)), P_DAY, point)


def _past(m: re.Match[str], ctx: Ctx) -> Span | None:
    unit, now = m["unit"].lower(), ctx.now
    if m["few"]:
        return Span(_few(ctx, unit)[0], now, P_FUZZY)
    # Bare "last month" is the calendar phrase; "last day" alone is too often not a time at all.
    if not (m["n"] or m["dir"].lower() == "past" or m["prep"]):
        return None
    n = _count(m["n"]) if m["n"] else 1
    if unit in {"month", "year"}:
        start = _shift_dt(now, -n * (12 if unit == "year" else 1))
    else:
        start = now - timedelta(**{f"{unit}s": n})
    return Span(start, now, _length_precision(start, now))


def _session(m: re.Match[str], ctx: Ctx) -> Span | None:
    end = ctx.session_end
    return Span(end, ctx.now, P_OPEN) if end is not None and end <= ctx.now else None


def _rule(regex: str, resolve: Callable[[re.Match[str], Ctx], Span | None]) -> Rule:
    return Rule(re.compile(regex, re.IGNORECASE), resolve)


_ISO = _rule(
    r"(?<![\w$#.:/-])(?P<year>(?:19|20)\d\d)-(?P<month>[01]?\d)-(?P<day>[0-3]?\d)(?!\w|[.:/-]\d)",
    _iso,
)
_MDY = _rule(rf"\b(?:(?P<prep>on|since)\s+)?{MONTH_RE}\s+{DAY_RE}(?:,?\s+{YEAR_RE})?", _month_day)
_DMY = _rule(
    rf"\b(?:(?P<prep>on|since)\s+)?(?:the\s+)?{DAY_RE}\s+(?:of\s+)?{MONTH_RE}(?:,?\s+{YEAR_RE})?",
    _month_day,
)
_MY = _rule(rf"\b{MONTH_RE},?\s+(?:of\s+)?{YEAR_RE}", _month_year)
_WEEKDAY = _rule(
    r"\b(?:(?P<anchor>last|this\s+past|past|previous|this\s+coming|coming|this|next|on)\s+)?"
    r"(?P<wd>" + "|".join(sorted(WEEKDAYS, key=len, reverse=True)) + r")\b\.?",
    _named_weekday,
)
_RULES = (
    _ISO,
    _MDY,
    _DMY,
    _MY,
    _WEEKDAY,
    _rule(
        r"\b(?:"
        + "|".join(k.replace(" ", r"\s+") for k in sorted(_PHRASES, key=len, reverse=True))
        + r")\b",
        _phrase,
    ),
    _rule(
        r"\bthe\s+(?P<nth>first|second|third|fourth|last)\s+week\s+of\s+"
        rf"{FULL_MONTH_RE}(?:,?\s+{YEAR_RE})?",
        _week_of_month,
    ),
    _rule(
        r"\b(?P<anchor>in|during|since|throughout|of|last|this|next|past|previous|early|mid|late)"
        rf"[\s-]+(?:the\s+month\s+of\s+)?{FULL_MONTH_RE}",
        _anchored_month,
    ),
    _rule(
        r"\b(?:(?P<anchor>in|during|since|throughout|for|by|this|last|next)\s+(?:the\s+)?)?"
        rf"\bQ(?P<q>[1-4])\b(?:\s+(?:of\s+)?{YEAR_RE})?",
        lambda m, c: _quarter(m, c) if m["anchor"] or m["year"] else None,
    ),
    _rule(rf"\b{YEAR_RE}\s+Q(?P<q>[1-4])\b", _quarter),
    _rule(
        r"\b(?P<anchor>in|during|since|throughout|the\s+year)\s+(?:(?:early|mid|late)[\s-]+)?"
        + YEAR_RE
        + r"(?!\s*(?:ms|s|secs?|seconds|mins?|minutes|hours|[kmgt]b|px|bytes|tokens|rows)\b)",
        _year,
    ),
    _rule(
        r"\b(?:(?P<anchor>last|this\s+past|past|this|next|coming)\s+|"
        r"(?P<prep>in|during|over|since|throughout)\s+the\s+)?"
        rf"(?P<season>spring|summer|autumn|fall|winter)\b(?:\s+(?:of\s+)?{YEAR_RE})?",
        _season,
    ),
    _rule(rf"\b(?:(?P<few>{FEW_RE})|(?P<n>{COUNT_RE}))\s+{UNIT_RE}\s+(?:ago|back)\b", _ago),
    _rule(
        r"\b(?:(?P<prep>in|over|during|within|for)\s+)?(?:the\s+)?"
        rf"(?P<dir>past|last|previous|prior)\s+(?:(?P<few>{FEW_RE})\s+|(?P<n>{COUNT_RE})\s+)?"
        + UNIT_RE,
        _past,
    ),
    _rule(
        r"\bsince\s+(?:we\s+(?:last\s+)?(?:talked|spoke|chatted|met)(?:\s+last(?:\s+time)?)?"
        r"|(?:the\s+)?last\s+time(?:\s+we\s+(?:talked|spoke|chatted|met))?"
        r"|(?:our|the)\s+(?:last|previous)\s+(?:conversation|chat|session|talk|call))\b",
        _session,
    ),
)
# The ends of "between A and B" / "from A to B", where the range words anchor bare names.
_RANGE_ENDS = (
    _ISO, _MDY, _DMY, _MY, _WEEKDAY,
    _rule(FULL_MONTH_RE, _anchored_month),
    _rule(rf"Q(?P<q>[1-4])\b(?:\s+{YEAR_RE})?", _quarter),
    _rule(YEAR_RE, _year),
)  # fmt: skip
_RANGE_START = re.compile(r"\b(?:between|from)\s+", re.IGNORECASE)
_RANGE_JOIN = re.compile(r"\s*[-–]\s*|\s+(?:and|to|until|till|through|thru)\s+", re.IGNORECASE)
_UNION_JOIN = re.compile(r"\s*(?:,\s*)?(?:(?:and|or|&|/)\s*)?", re.IGNORECASE)
_SINCE_BEFORE = re.compile(r"\b(?:ever\s+)?since\s+$", re.IGNORECASE)


def _resolve(rule: Rule, m: re.Match[str], ctx: Ctx) -> Span | None:
    """An expression whose date falls off the calendar ("next week" on 9998-12-31, "yesterday"
    on 0001-01-01) denotes no window, rather than an OverflowError."""
    try:
        return rule.resolve(m, ctx)
    except (OverflowError, ValueError):
        return None


def _matches(text: str, ctx: Ctx) -> Iterator[Found]:
    for rule in _RULES:
        for m in rule.pattern.finditer(text):
            span = _resolve(rule, m, ctx)
            if span is not None and span.start <= span.end:
                yield Found(m.start(), m.end(), span)


def _range_end(text: str, pos: int, ctx: Ctx) -> tuple[int, Span] | None:
    best: tuple[int, Span] | None = None
    for rule in _RANGE_ENDS:
        m = rule.pattern.match(text, pos)
        if m and (best is None or m.end() > best[0]) and (span := _resolve(rule, m, ctx)):
            best = (m.end(), span)
    return best


def _ranges(text: str, ctx: Ctx) -> Iterator[Found]:
    for keyword in _RANGE_START.finditer(text):
        first = _range_end(text, keyword.end(), ctx)
        join = _RANGE_JOIN.match(text, first[0]) if first else None
        last = _range_end(text, join.end(), ctx) if join else None
        if first is None or last is None:
            continue
        if first[1].start > last[1].start:
            # "between March and May" in March: the March before that May, not this one.
            first = _range_end(text, keyword.end(), replace(ctx, now=last[1].end))
        if first is not None and first[1].start <= last[1].end:
            start, end = first[1].start, last[1].end
            yield Found(keyword.start(), last[0], Span(start, end, _length_precision(start, end)))


def _open_since(text: str, found: Found, ctx: Ctx) -> Found | None:
    before = _SINCE_BEFORE.search(text, max(0, found.begin - 16), found.begin)
    if before is None and not text[found.begin : found.end].lower().startswith("since"):
        return found
    if found.span.start > ctx.now:
        return None
    begin = before.start() if before else found.begin
    return Found(begin, found.end, Span(found.span.start, ctx.now, P_OPEN))


def _scan(text: str, ctx: Ctx) -> list[Found]:
    """Non-overlapping expressions in text order; longer matches win overlaps."""
    candidates = sorted([*_matches(text, ctx), *_ranges(text, ctx)],
                        key=lambda f: (f.begin - f.end, f.begin))  # fmt: skip
    chosen: list[Found] = []
    for found in candidates:
        if all(found.end <= c.begin or found.begin >= c.end for c in chosen):
            chosen.append(found)
    opened = (_open_since(text, found, ctx) for found in chosen)
    return sorted((f for f in opened if f is not None), key=lambda f: f.begin)


def _merge(text: str, found: list[Found]) -> list[Found]:
    """Join expressions separated only by "and", "or", "," or "/" into their hull."""
    groups: list[Found] = []
    for item in found:
        if groups and _UNION_JOIN.fullmatch(text, groups[-1].end, item.begin):
            prev = groups[-1]
            start, end = min(prev.span.start, item.span.start), max(prev.span.end, item.span.end)
            precision = min(prev.span.precision, item.span.precision, _length_precision(start, end))
            groups[-1] = Found(prev.begin, item.end, Span(start, end, precision))
        else:
            groups.append(item)
    return groups


def _context(now: datetime, config: TemporalConfig, session_end: SessionEnd) -> Ctx:
    aware = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    return Ctx(aware, config, session_end)


def find_window(
    text: str,
    *,
    now: datetime,
    config: TemporalConfig = _DEFAULT_CONFIG,
    last_session_end: SessionEnd = None,
) -> TimeWindow | None:
    """The closed interval a query's time expression denotes, in ``now``'s timezone (naive means
    UTC), or None. Of several separate expressions the most precise wins, then the earliest.
    ``last_session_end`` may be a function: it is called only if an expression needs it."""
    ctx = _context(now, config, last_session_end)
    groups = _merge(text, _scan(text, ctx))
    if not groups:
        return None
    best = max(groups, key=lambda g: (g.span.precision, -g.begin))
    expression = text[best.begin : best.end]
    return TimeWindow(best.span.start, best.span.end, expression, best.span.precision)


def infer_event_at(text: str, *, reference: datetime) -> datetime | None:
    """When a memory says something happened (or will): the start of the first day-precise or
    narrower expression, read relative to ``reference`` (when it was said). None for vague ones."""
    ctx = _context(reference, _DEFAULT_CONFIG, None)
    return next((f.span.point for f in _scan(text, ctx) if f.span.point is not None), None)
