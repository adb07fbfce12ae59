"""The values the time parser works with: the moment a query is read at, a span of time an
expression denotes, an expression found in a text, and a rule that finds and resolves one."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import TypeAlias

from fivefold.config import TemporalConfig

# When the previous session ended, or how to read it: most queries never ask, so a recall need
# not read it unless an expression like "since last time" does.
SessionEnd: TypeAlias = datetime | Callable[[], datetime | None] | None


@dataclass(frozen=True, slots=True)
class Ctx:
    now: datetime  # always tz-aware
    config: TemporalConfig
    given_session_end: SessionEnd

    @property
    def today(self) -> date:
        return self.now.date()

    @property
    def session_end(self) -> datetime | None:
        end = self.given_session_end
        if callable(end):
            end = end()
        if end is None:
            return None
        if end.tzinfo is None:
            end = end.replace(tzinfo=UTC)
        return end.astimezone(self.now.tzinfo)


@dataclass(frozen=True, slots=True)
class Span:
    start: datetime
    end: datetime
    precision: float
    # The instant a day-precise (or narrower) expression names; what infer_event_at returns.
    point: datetime | None = None


@dataclass(frozen=True, slots=True)
class Found:
    begin: int
    end: int
    span: Span


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: re.Pattern[str]
    resolve: Callable[[re.Match[str], Ctx], Span | None]
