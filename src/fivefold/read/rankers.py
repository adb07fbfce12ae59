"""Which packaged model ranks a recall's candidates, and how a model's ranking meets a
question's time window or a code it quotes: functions over the fused candidates, their
attributes and (for a quoted code) a few of their texts."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from fivefold.read.fuse import Fused
from fivefold.store.records import MemoryAttributes
from fivefold.types import MemoryRecord, RetrieverName, RetrieverRun

# How many of the rule fusion's best candidates decide whether the packaged conversation model
# ranks (it does when most of them are conversation turns; else the facts model does).
CONVERSATION_PROBE = 10
# How many of the lexical leg's best are read for a code the question quotes ("SEC-0558829").
CODE_PROBE = 20
_CODE = re.compile(r"(?<![\w-])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)+(?![\w-])")


def window_first(ranked: Sequence[Fused], inside: set[int]) -> list[Fused]:
    """A question about a time asks for what happened in it: the facts model weighs the window
    as one feature among many, and put old memories sharing the question's words above the
    events inside it. Those outside are scaled below the lowest inside (still probabilities,
    each side in the model's order)."""
    low = min((f.score for f in ranked if f.id in inside), default=None)
    high = max((f.score for f in ranked if f.id not in inside), default=0.0)
    if low is None or high <= low:
        return list(ranked)
    scale = low / high * (1.0 - 1e-9)
    out = [f if f.id in inside else Fused(f.id, f.score * scale, f.terms) for f in ranked]
    return sorted(out, key=lambda f: (-f.score, f.id))


def conversation_turns(probe: Sequence[Fused], attributes: Mapping[int, MemoryAttributes]) -> bool:
    """Whether most of the ``probe`` (the best candidates) are conversation turns (they have a
    speaker): the packaged conversation model learned from them, and on memories of another
    kind (the demo's facts) it ranks worse than the rules; a model fit on facts ranks those."""
    top = [attributes.get(f.id) for f in probe]
    spoken = sum(1 for a in top if a is not None and a.speaker is not None)
    return bool(top) and 2 * spoken >= len(top)


def codes(text: str) -> tuple[str, ...]:
    """The codes a text quotes: joined by hyphens or underscores, with a letter and at least
    three digits ("SEC-0558829", "sk-837e012d"; not "COVID-19" or a date)."""
    return tuple(
        code
        for code in _CODE.findall(text)
        if sum(c.isdigit() for c in code) >= 3 and any(c.isalpha() for c in code)
    )


def codes_first(
    ranked: Sequence[Fused],
    question: str,
    runs: Sequence[RetrieverRun],
    read: Callable[[Sequence[int]], Mapping[int, MemoryRecord]],
) -> list[Fused]:
    """A question quoting a code asks about the memory that holds it: a model ranks by
    features, and put other tickets' statements, alike but for the code, above it. Of the
    lexical leg's best, those holding a quoted code go first (each side in the model's order)."""
    quoted = [c.casefold() for c in codes(question)]
    lexical = next((r for r in runs if r.name is RetrieverName.LEXICAL), None)
    if not quoted or lexical is None or not lexical.items:
        return list(ranked)
    said = read([item.id for item in lexical.items[:CODE_PROBE]])
    holders = {
        i
        for i, record in said.items()
        if any(c in codes(record.content.casefold()) for c in quoted)
    }
    return window_first(ranked, holders)
