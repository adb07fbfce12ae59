"""Datetimes are stored as UTC epoch seconds (REAL): compact, and range scans on the B-tree
compare numbers instead of parsing strings."""

from __future__ import annotations

from datetime import UTC, datetime


def to_ts(value: datetime) -> float:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def from_ts(value: float) -> datetime:
    return datetime.fromtimestamp(value, tz=UTC)
