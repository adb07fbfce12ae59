"""Temporal parsing: exact windows for every expression class, and no windows from look-alikes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fivefold.config import TemporalConfig
from fivefold.read.parse.temporal import find_window, infer_event_at
from fivefold.types import TimeWindow

NOW = datetime(2026, 3, 20, 15, 30, tzinfo=UTC)  # a Friday
TOKYO = timezone(timedelta(hours=9))


def day(y: int, m: int, d: int, h: int = 0, mi: int = 0, tz: timezone = UTC) -> datetime:
    return datetime(y, m, d, h, mi, tzinfo=tz)


def eod(y: int, m: int, d: int, tz: timezone = UTC) -> datetime:
    return datetime(y, m, d, 23, 59, 59, 999_999, tzinfo=tz)


def window(
    text: str, start: datetime, end: datetime, expression: str, precision: float
) -> tuple[str, TimeWindow]:
    return (text, TimeWindow(start, end, expression, precision))


ABSOLUTE = [
    window("what happened on March 15th?", day(2026, 3, 15), eod(2026, 3, 15),
           "on March 15th", 1.0),
    # Not after today, so last year's.
    window("on March 25th", day(2025, 3, 25), eod(2025, 3, 25), "on March 25th", 1.0),
    window("notes from March 15, 2024", day(2024, 3, 15), eod(2024, 3, 15), "March 15, 2024", 1.0),
    window("notes of 15 March 2024", day(2024, 3, 15), eod(2024, 3, 15), "15 March 2024", 1.0),
    window("since 8 May, 2023 or so", day(2023, 5, 8), NOW, "since 8 May, 2023", 0.4),
    window("on 8 May, 2023", day(2023, 5, 8), eod(2023, 5, 8), "on 8 May, 2023", 1.0),
    window("the 3rd of June", day(2025, 6, 3), eod(2025, 6, 3), "the 3rd of June", 1.0),
    window("on Feb 29th", day(2024, 2, 29), eod(2024, 2, 29), "on Feb 29th", 1.0),
    window("log of 2024-03-15", day(2024, 3, 15), eod(2024, 3, 15), "2024-03-15", 1.0),
    window("what did I do in March", day(2026, 3, 1), eod(2026, 3, 31), "in March", 0.6),
    window("in April", day(2025, 4, 1), eod(2025, 4, 30), "in April", 0.6),
    window("last March", day(2025, 3, 1), eod(2025, 3, 31), "last March", 0.6),
    window("budget of March 2024", day(2024, 3, 1), eod(2024, 3, 31), "March 2024", 0.6),
    window("in Q3 2024", day(2024, 7, 1), eod(2024, 9, 30), "in Q3 2024", 0.5),
    window("revenue in Q3", day(2025, 7, 1), eod(2025, 9, 30), "in Q3", 0.5),
    window("in Q1", day(2026, 1, 1), eod(2026, 3, 31), "in Q1", 0.5),
    window("2024 Q4 goals", day(2024, 10, 1), eod(2024, 12, 31), "2024 Q4", 0.5),
    window("trips in 2023", day(2023, 1, 1), eod(2023, 12, 31), "in 2023", 0.4),
    window("during 2022", day(2022, 1, 1), eod(2022, 12, 31), "during 2022", 0.4),
    # "May" resolves to May 2025 (the latest May begun), "March" to the March before it.
    window("between March and May", day(2025, 3, 1), eod(2025, 5, 31),
           "between March and May", 0.5),
    window("from January to February", day(2026, 1, 1), eod(2026, 2, 28),
           "from January to February", 0.5),
    window("between 2022 and 2024", day(2022, 1, 1), eod(2024, 12, 31),
           "between 2022 and 2024", 0.4),
    window("since 2024", day(2024, 1, 1), NOW, "since 2024", 0.4),
    window("since March", day(2026, 3, 1), NOW, "since March", 0.4),
    window("ever since March 15th", day(2026, 3, 15), NOW, "since March 15th", 0.4),
    window("last summer", day(2025, 6, 1), eod(2025, 8, 31), "last summer", 0.5),
    window("plans for this summer", day(2026, 6, 1), eod(2026, 8, 31), "this summer", 0.5),
    window("in the spring", day(2026, 3, 1), eod(2026, 5, 31), "in the spring", 0.5),
    window("in the summer of 2023", day(2023, 6, 1), eod(2023, 8, 31),
           "in the summer of 2023", 0.5),
    window("last winter", day(2025, 12, 1), eod(2026, 2, 28), "last winter", 0.5),
    window("since last summer", day(2025, 6, 1), NOW, "since last summer", 0.4),
]  # fmt: skip

RELATIVE = [
    window("what did I do today", day(2026, 3, 20), eod(2026, 3, 20), "today", 1.0),
    # [start of yesterday, now]: [now - 1d, now] plus the whole calendar day.
    window("yesterday", day(2026, 3, 19), NOW, "yesterday", 1.0),
    window("the day before yesterday", day(2026, 3, 18), eod(2026, 3, 18),
           "the day before yesterday", 1.0),
    window("this morning", day(2026, 3, 20), datetime(2026, 3, 20, 11, 59, 59, 999_999, UTC),
           "this morning", 1.0),
    window("last night", day(2026, 3, 19, 18), datetime(2026, 3, 20, 5, 59, 59, 999_999, UTC),
           "last night", 1.0),
    window("tomorrow", day(2026, 3, 21), eod(2026, 3, 21), "tomorrow", 1.0),
    window("last week", NOW - timedelta(days=7), NOW, "last week", 0.8),
    window("this week", day(2026, 3, 16), NOW, "this week", 0.8),
    window("next week", day(2026, 3, 23), eod(2026, 3, 29), "next week", 0.8),
    window("last month", day(2026, 2, 1), NOW, "last month", 0.6),
    window("this month", day(2026, 3, 1), NOW, "this month", 0.6),
    window("last year", day(2025, 1, 1), NOW, "last year", 0.4),
    window("earlier this year", day(2026, 1, 1), NOW, "earlier this year", 0.4),
    window("this quarter", day(2026, 1, 1), NOW, "this quarter", 0.5),
    window("last Tuesday", day(2026, 3, 17), eod(2026, 3, 17), "last Tuesday", 1.0),
    window("on Tuesday", day(2026, 3, 17), eod(2026, 3, 17), "on Tuesday", 1.0),
    window("on Friday", day(2026, 3, 13), eod(2026, 3, 13), "on Friday", 1.0),  # not today
    window("this Tuesday", day(2026, 3, 17), eod(2026, 3, 17), "this Tuesday", 1.0),
    window("next Friday", day(2026, 3, 27), eod(2026, 3, 27), "next Friday", 1.0),
    window("last weekend", day(2026, 3, 14), eod(2026, 3, 15), "last weekend", 0.8),
    window("what did I do the weekend before last?", day(2026, 3, 7), eod(2026, 3, 8),
           "the weekend before last", 0.8),
    # A week of a month is read as the month (what is said of a week is often said days before
    # or after it), not as "the last week" (the seven days before now) joined to May.
    window("where was I in the last week of February?", day(2026, 2, 1), eod(2026, 2, 28),
           "the last week of February", 0.6),
    window("the second week of March", day(2026, 3, 1), eod(2026, 3, 31),
           "the second week of March", 0.6),
    window("the first week of May 2025", day(2025, 5, 1), eod(2025, 5, 31),
           "the first week of May 2025", 0.6),
    window("the last week of May", day(2025, 5, 1), eod(2025, 5, 31), "the last week of May", 0.6),
    window("3 days ago", day(2026, 3, 17), eod(2026, 3, 17), "3 days ago", 1.0),
    window("two weeks ago", day(2026, 3, 3), eod(2026, 3, 9), "two weeks ago", 0.8),
    window("2 months ago", day(2026, 1, 1), eod(2026, 1, 31), "2 months ago", 0.6),
    window("a year ago", day(2025, 1, 1), eod(2025, 12, 31), "a year ago", 0.4),
    window("in the past 3 days", NOW - timedelta(days=3), NOW, "in the past 3 days", 0.8),
    window("in the last 2 weeks", NOW - timedelta(weeks=2), NOW, "in the last 2 weeks", 0.6),
    window("over the past month", day(2026, 2, 20, 15, 30), NOW, "over the past month", 0.6),
    window("in the past 24 hours", NOW - timedelta(hours=24), NOW, "in the past 24 hours", 1.0),
]  # fmt: skip

JOINED = [
    window("last Tuesday and Wednesday", day(2026, 3, 17), eod(2026, 3, 18),
           "last Tuesday and Wednesday", 0.8),
    window("Monday or Tuesday", day(2026, 3, 16), eod(2026, 3, 17), "Monday or Tuesday", 0.8),
    window("on Monday, Tuesday, or Wednesday", day(2026, 3, 16), eod(2026, 3, 18),
           "on Monday, Tuesday, or Wednesday", 0.8),
    window("yesterday and today", day(2026, 3, 19), eod(2026, 3, 20), "yesterday and today", 0.8),
    # Separate expressions: the most precise one wins.
    window("what did Sarah say last week about the demo on Tuesday", day(2026, 3, 17),
           eod(2026, 3, 17), "on Tuesday", 1.0),
    window("what we decided in 2023 and what happened yesterday", day(2026, 3, 19), NOW,
           "yesterday", 1.0),
]  # fmt: skip

FUZZY = [
    window("recently", NOW - timedelta(days=30), NOW, "recently", 0.3),
    window("what has Sarah been up to lately", NOW - timedelta(days=30), NOW, "lately", 0.3),
    window("a few months ago", NOW - timedelta(days=90), NOW - timedelta(days=30),
           "a few months ago", 0.3),
    # Documented choices: a few days = 2 to 6 days ago, a few weeks = 2 to 6 weeks ago.
    window("a few days ago", day(2026, 3, 14), eod(2026, 3, 18), "a few days ago", 0.3),
    window("the other day", day(2026, 3, 14), eod(2026, 3, 18), "the other day", 0.3),
    window("a few weeks ago", day(2026, 2, 6), eod(2026, 3, 6), "a few weeks ago", 0.3),
    window("in the past few weeks", day(2026, 2, 6), NOW, "in the past few weeks", 0.3),
]  # fmt: skip

NOT_DATES = [
    "what port is 8080 used for",
    "connect to localhost:5432",
    "my badge 47821",
    "badge E-47821",
    "status of JIRA-9921",
    "close ticket #2023",
    "upgrade to v2.3.1",
    "Python 3.11 features",
    "version 2024.1 release notes",
    "call 555-123-4567",
    "call +1 (555) 201-2024",
    "meet in room 1204",
    "it cost $2024",
    "we talked about the design",
    "May I ask what you think",
    "I may have said that",
    "you may go ahead",
    "this may be wrong",
    "we march on",
    "the second attempt worked",
    "a date with Sarah",
    "3 dec places",
    "it takes in 2000 ms",
    "in spring boot",
    "prices fall sharply",
    "sitting on sun loungers",
    "the last day of the sale",
    "the March meeting",
    "2024",
    "in the past, I preferred tea",
    "since I joined",
]


@pytest.mark.parametrize(("text", "expected"), ABSOLUTE + RELATIVE + JOINED + FUZZY)
def test_find_window(text: str, expected: TimeWindow) -> None:
    assert find_window(text, now=NOW) == expected


@pytest.mark.parametrize("text", NOT_DATES)
def test_no_window_from_look_alikes(text: str) -> None:
    assert find_window(text, now=NOW) is None


@pytest.mark.parametrize(
    "text",
    ["since we last talked", "since last time", "since our last conversation",
     "what's new since we spoke last?"],
)  # fmt: skip
def test_since_last_session(text: str) -> None:
    end = NOW - timedelta(days=2, hours=3)
    found = find_window(text, now=NOW, last_session_end=end)
    assert found is not None
    assert (found.start, found.end, found.precision) == (end, NOW, 0.4)
    assert find_window(text, now=NOW) is None


def test_a_session_end_given_as_a_function_is_read_only_when_asked_for() -> None:
    end = NOW - timedelta(days=2)
    asked: list[datetime | None] = []

    def read() -> datetime | None:
        asked.append(end)
        return end

    assert find_window("what did I do in March?", now=NOW, last_session_end=read) is not None
    assert asked == []
    found = find_window("since last time", now=NOW, last_session_end=read)
    assert found is not None
    assert (found.start, found.end) == (end, NOW)
    assert asked == [end]
    assert find_window("since last time", now=NOW, last_session_end=lambda: None) is None


def test_session_end_is_read_in_nows_timezone() -> None:
    naive = datetime(2026, 3, 18, 9, 0)
    assert find_window("since last time", now=NOW, last_session_end=naive) == TimeWindow(
        day(2026, 3, 18, 9), NOW, "since last time", 0.4
    )
    tokyo_now = NOW.astimezone(TOKYO)
    found = find_window("since last time", now=tokyo_now, last_session_end=day(2026, 3, 18, 9))
    assert found is not None
    assert found.start == day(2026, 3, 18, 18, tz=TOKYO)
    assert found.start.utcoffset() == timedelta(hours=9)


def test_session_end_after_now_gives_no_window() -> None:
    later = NOW + timedelta(hours=1)
    assert find_window("since we last talked", now=NOW, last_session_end=later) is None


def test_fuzzy_windows_follow_config() -> None:
    config = TemporalConfig(recent_days=7, few_months_from_days=120, few_months_to_days=60)
    assert find_window("recently", now=NOW, config=config) == TimeWindow(
        NOW - timedelta(days=7), NOW, "recently", 0.3
    )
    assert find_window("a few months ago", now=NOW, config=config) == TimeWindow(
        NOW - timedelta(days=120), NOW - timedelta(days=60), "a few months ago", 0.3
    )


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        # 01:00 on the 20th in Tokyo is still the 19th in UTC: days follow now's timezone.
        ("today", day(2026, 3, 20, tz=TOKYO), eod(2026, 3, 20, tz=TOKYO)),
        ("yesterday", day(2026, 3, 19, tz=TOKYO), day(2026, 3, 20, 1, tz=TOKYO)),
        ("last Tuesday", day(2026, 3, 17, tz=TOKYO), eod(2026, 3, 17, tz=TOKYO)),
        ("in March", day(2026, 3, 1, tz=TOKYO), eod(2026, 3, 31, tz=TOKYO)),
    ],
)
def test_windows_use_the_timezone_of_now(text: str, start: datetime, end: datetime) -> None:
    found = find_window(text, now=day(2026, 3, 20, 1, tz=TOKYO))
    assert found is not None
    assert (found.start, found.end) == (start, end)
    assert found.start.utcoffset() == found.end.utcoffset() == timedelta(hours=9)


def test_naive_now_means_utc() -> None:
    found = find_window("today", now=datetime(2026, 3, 20, 15, 30))
    assert found == TimeWindow(day(2026, 3, 20), eod(2026, 3, 20), "today", 1.0)
    assert found.start.tzinfo is UTC


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went hiking yesterday", day(2026, 3, 19)),
        ("meeting Sarah next Friday", day(2026, 3, 27)),
        ("on March 3rd we shipped the beta", day(2026, 3, 3)),
        ("on March 25th we signed", day(2025, 3, 25)),
        ("On 8 May, 2023 I joined Acme", day(2023, 5, 8)),
        ("the launch is on 2026-04-02", day(2026, 4, 2)),
        ("dinner with Ana tomorrow", day(2026, 3, 21)),
        ("last night we watched a film", day(2026, 3, 19, 18)),
        ("I called mom two hours ago", NOW - timedelta(hours=2)),
        ("3 days ago I lost my keys", day(2026, 3, 17)),
        ("last Tuesday the build broke, and on Monday too", day(2026, 3, 17)),
    ],
)
def test_infer_event_at(text: str, expected: datetime) -> None:
    assert infer_event_at(text, reference=NOW) == expected


@pytest.mark.parametrize(
    "text",
    ["I like coffee", "recently I started running", "last year I moved to Berlin",
     "busy last week", "in March we hired two people", "a few days ago", "since yesterday",
     "my badge is 47821", "I may have lost it", "we use Python 3.11"],
)  # fmt: skip
def test_infer_event_at_ignores_vague_or_missing_times(text: str) -> None:
    assert infer_event_at(text, reference=NOW) is None


def test_infer_event_at_reads_days_in_the_reference_timezone() -> None:
    said = day(2026, 3, 20, 1, tz=TOKYO)
    assert infer_event_at("I went hiking yesterday", reference=said) == day(2026, 3, 19, tz=TOKYO)


_WORDS = st.sampled_from(
    ["in", "on", "since", "last", "this", "next", "the", "of", "and", "or", "between", "from",
     "to", "ago", "past", "few", "a", "days", "weeks", "months", "March", "may", "May", "Q3",
     "summer", "fall", "Tuesday", "wed", "yesterday", "today", "recently", "2024", "15th", "8",
     "2023-02-30", "2024-03-15", "we", "last", "talked", "time", ",", "-", "v2.3", "#2023"]
)  # fmt: skip


@given(st.text() | st.lists(_WORDS | st.text(max_size=4), max_size=12).map(" ".join))
def test_any_text_gives_a_valid_window_or_none(text: str) -> None:
    found = find_window(text, now=NOW, last_session_end=NOW - timedelta(days=1))
    assert found is None or (found.start <= found.end and 0.0 <= found.precision <= 1.0)
    assert found is None or found.expression in text
    infer_event_at(text, reference=NOW)
