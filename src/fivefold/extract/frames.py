"""What a memory states, as (subject, attribute, value) frames, and whether a newer memory
replaces an older one: "We moved to Utrecht in January" supersedes "I live in Lisbon".

Offline and deterministic: rules over the text (``frame_rules``, ``frame_verbs``), no model.
A false supersession hides a true fact, so every rule errs towards reading nothing: a new value
replaces an old one only for an attribute that holds one value at a time, or, for an additive
one (likes, speaks, leads), only when the text says it switched ("instead of", "no longer").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from fivefold.extract.attributes import KIN, singular
from fivefold.extract.frame_table import extract
from fivefold.extract.topic import owned_apart
from fivefold.extract.values import same_value
from fivefold.text import UPDATE_CUES, update_cue

__all__ = ["Frame", "Statement", "Supersession", "frames", "slot_keys", "supersedes"]


@dataclass(frozen=True, slots=True)
class Frame:
    subject: str  # "user", a person ("tom"), a thing or event ("leeds office", "tidewater ga")
    attribute: str  # canonical key: "residence", "badge number", "schedule", "rate limit", ...
    value: str  # normalized text: "utrecht", "40417", "17 november"
    single: bool  # one value at a time (a new one replaces the old); False for additive ones
    detail: tuple[str, ...] = ()  # words that qualify the attribute ("work" of "work email")
    cue: str = ""  # the switching cue of the statement ("instead", "no longer"), if any


@dataclass(frozen=True, slots=True)
class Statement:
    text: str
    frames: tuple[Frame, ...]  # frames(text)
    said_at: datetime  # when it was written (or the date it states), for order


@dataclass(frozen=True, slots=True)
class Supersession:
    reason: str  # "same subject and attribute (user, residence), new value utrecht (was lisbon)"


# The cues that say an additive fact stopped being true ("I switched from tea to coffee").
_SWITCHING = frozenset(
    "no longer,not anymore,not any more,anymore,any more,instead of,instead,switched,switch to,"
    "switched to,swapped,replaced,changed to,changed,stopped,dropped,gave up,traded,traded in"
    .split(",")
)  # fmt: skip


def _switching_cue(text: str) -> str:
    for m in UPDATE_CUES.finditer(text):
        if m.group(1).lower() in _SWITCHING:
            return m.group(1).lower()
    return ""


def frames(text: str) -> tuple[Frame, ...]:
    """What a memory states, as (subject, attribute, value) frames; () when it states nothing
    the rules know."""
    cue = _switching_cue(text)
    return tuple(
        Frame(subject, attribute, value, single, detail, cue)
        for subject, attribute, value, single, detail in extract(text)
    )


def slot_keys(found: Sequence[Frame]) -> tuple[str, ...]:
    """The keys under which the engine indexes a memory to find the older memories it may
    supersede: f"{subject}|{attribute}" of each single-valued frame (and of additive ones when
    the text carries a switching cue). A subject of several words is also keyed by each word,
    so "standup" finds "platform reliability standup"; ``supersedes`` then checks that one
    subject's words hold the other's."""
    keys: dict[str, None] = {}
    for frame in found:
        if not (frame.single or frame.cue):
            continue
        parts = [singular(p) for p in frame.subject.split()]
        keys.setdefault(f"{' '.join(parts)}|{frame.attribute}", None)
        if len(parts) > 1:
            for part in parts:
                if part not in KIN:
                    keys.setdefault(f"{part}|{frame.attribute}", None)
    return tuple(keys)


def supersedes(old: Statement, new: Statement) -> Supersession | None:
    """Whether the newer statement replaces what the older one states (new.said_at >=
    old.said_at is the caller's business). Never for another subject; never when the new one
    restates the old value; for an additive attribute only on a switching cue that names the
    old value."""
    if owned_apart(old.text, new.text):
        return None
    cued = update_cue(new.text) is not None
    for theirs in old.frames:
        matching = [ours for ours in new.frames if _same_slot(theirs, ours, cued=cued)]
        counted = theirs.attribute not in _WORDED
        if any(same_value(theirs.value, ours.value, counted=counted) for ours in matching):
            continue  # restated: this part of the old memory still holds
        for ours in matching:
            reason = _replacement(theirs, ours, new.text)
            if reason is not None:
                return Supersession(reason)
    return None


# Attributes whose values are words that may hold a number ("eu-west-1", "Catharijnesingel 54").
_WORDED = frozenset({"residence", "location", "employer", "team", "role", "name", "school"})


def _same_slot(old: Frame, new: Frame, *, cued: bool) -> bool:
    """One subject and one qualified attribute. A place's subject keeps its head noun ("the
    lab" is not "the lab meeting"); an unqualified attribute stands for one qualified by a
    context ("my phone", "my work phone") only when the new text says it changed."""
    old_subject = [singular(w) for w in old.subject.split()]
    new_subject = [singular(w) for w in new.subject.split()]
    if old.attribute in _PLACES and old_subject[-1:] != new_subject[-1:]:
        return False
    context = not (old.detail and new.detail) and bool(_CONTEXTS & {*old.detail, *new.detail})
    return (
        old.attribute == new.attribute
        and _holds(old_subject, new_subject)
        and _holds(list(old.detail), list(new.detail), empty=cued or not context)
    )


_PLACES = frozenset({"location", "residence"})
# Qualifiers that name a second one of a kind: a work phone beside the phone, a gym locker.
_CONTEXTS = frozenset(
    "work personal home private business office school gym spare second backup".split()
)


def _holds(a: list[str], b: list[str], *, empty: bool = False) -> bool:
    """Whether one word list holds the other: "standup" and "platform reliability standup";
    a relative's key ("daniel mother") never matches the person ("daniel")."""
    if not a or not b:
        return empty or a == b
    a, b = _initials(b, a), _initials(a, b)
    small, large = (set(a), set(b)) if len(a) <= len(b) else (set(b), set(a))
    if not small <= large:
        return False
    return not any(word in KIN for word in large - small)


def _initials(mine: list[str], other: list[str]) -> list[str]:
    """``other``'s runs of words spelled out where ``mine`` holds their initials ("acp msc"
    against "advanced clinical practice msc")."""
    out = list(other)
    for word in mine:
        if 2 <= len(word) <= 5 and word not in other:
            for i in range(len(other) - len(word) + 1):
                run = other[i : i + len(word)]
                if "".join(w[0] for w in run) == word:
                    out[i : i + len(word)] = [word]
                    return out
    return out


def _replacement(old: Frame, new: Frame, text: str) -> str | None:
    slot = f"({new.subject}, {new.attribute})"
    if new.single and old.single:
        cue = update_cue(text)
        said = f"; cue '{cue}'" if cue else ""
        return f"same subject and attribute {slot}, new value {new.value} (was {old.value}){said}"
    if not new.cue:
        return None
    named = new.value == f"not {old.value}" or _mentions(text, old.value)
    if not named:
        return None
    return (
        f"same subject and additive attribute {slot}, switched to {new.value} "
        f"(was {old.value}); cue '{new.cue}'"
    )


def _mentions(text: str, value: str) -> bool:
    """Whether ``text`` names ``value`` (its main word at least: "spin" of "spin class")."""
    lowered = text.lower()
    main = [w for w in value.split() if len(w) > 2 and w not in ("not", "the", "and")]
    return bool(main) and re.search(rf"\b{re.escape(main[0])}", lowered) is not None
