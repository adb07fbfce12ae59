"""Query features and specificity:

    spec = 0.35 * entity_density + 0.25 * temporal_precision + 0.25 * lexical_rarity
           + 0.15 * type_cues

Each feature is in [0, 1] and quantized (0.05 steps by default) before any rule reads it, so a
small rewording ("what's" / "what is", one more stop word) cannot flip the plan.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fivefold.types import MemoryType, ParsedQuery

WEIGHTS = (0.35, 0.25, 0.25, 0.15)

# Type cues (the words that trigger a type), with how strongly each predicts the memory type.
_CUES: tuple[tuple[re.Pattern[str], MemoryType, float], ...] = (
    (
        re.compile(r"\b(prefer(?:s|red|ence|ences)?|my default|favou?rite)\b", re.I),
        MemoryType.PREFERENCE,
        1.0,
    ),
    (
        re.compile(r"\b(like|likes|want|wants|settings?|configure[ds]?)\b", re.I),
        MemoryType.PREFERENCE,
        0.6,
    ),
    (re.compile(r"\b(when did|at what time|happened|occurred)\b", re.I), MemoryType.EVENT, 1.0),
    (re.compile(r"\b(was it|did i|did we)\b", re.I), MemoryType.EVENT, 0.6),
    (re.compile(r"\b(who is|who's|tell me about)\b", re.I), MemoryType.ENTITY, 0.6),
)
# "what's my badge number": an identifier lookup is a strong cue of *what* is asked, though it
# names no memory type (identifiers are stored as facts).
_IDENTIFIER = re.compile(
    r"\b(id|ids|number|no|code|key|password|pin|plate|account|handle|address|email|phone)\b", re.I
)


@dataclass(frozen=True, slots=True)
class Features:
    entity_density: float
    temporal_precision: float
    lexical_rarity: float
    type_cues: float

    @property
    def specificity(self) -> float:
        values = (self.entity_density, self.temporal_precision, self.lexical_rarity, self.type_cues)
        return round(sum(w * v for w, v in zip(WEIGHTS, values, strict=True)), 6)

    def quantized(self, step: float) -> Features:
        def q(value: float) -> float:
            return round(round(min(max(value, 0.0), 1.0) / step) * step, 6)

        return Features(
            q(self.entity_density),
            q(self.temporal_precision),
            q(self.lexical_rarity),
            q(self.type_cues),
        )

    def as_dict(self) -> dict[str, float]:
        return {
            "entity_density": self.entity_density,
            "temporal_precision": self.temporal_precision,
            "lexical_rarity": self.lexical_rarity,
            "type_cues": self.type_cues,
            "specificity": self.specificity,
        }


def entity_density(query: ParsedQuery, specificity: Mapping[int, float]) -> float:
    """The strongest reference's confidence times its entity's specificity, scaled down when
    entities are a small part of a long query:
    ``max(conf x spec) x min(1, 3 x entity_words / content_words)``. It stays near the
    resolution confidence for short queries ("Sarah" at 0.93 -> 0.9); a name that half the
    memories carry makes no query specific."""
    if not query.entity_refs:
        return 0.0
    entity_words = {w for ref in query.entity_refs for w in ref.text.lower().split()}
    content_words = max(len(query.terms), 1)
    share = min(1.0, 3.0 * len(entity_words) / content_words)
    strongest = max(r.confidence * specificity.get(r.entity_id, 1.0) for r in query.entity_refs)
    return strongest * share


def lexical_rarity(terms: Sequence[str], total: int, frequencies: Mapping[str, int]) -> float:
    """Mean normalized IDF, ``ln(N / df) / ln(N)``, of the query terms the store holds. A term
    no memory contains adds 0, not 1: it is rare, but BM25 cannot find anything with it."""
    if not terms or total <= 1:
        return 0.0
    scale = math.log(total)
    values = []
    for term in terms:
        df = frequencies.get(term, 0)
        values.append(0.0 if df == 0 else min(1.0, max(0.0, math.log(total / df) / scale)))
    return sum(values) / len(values)


def type_cues(text: str) -> tuple[float, tuple[MemoryType, ...]]:
    """Cue strength and the memory types the wording points at (several when several match)."""
    strength = 0.0
    hinted: dict[MemoryType, None] = {}
    for pattern, mtype, weight in _CUES:
        if pattern.search(text):
            strength = max(strength, weight)
            hinted.setdefault(mtype, None)
    if _IDENTIFIER.search(text):
        strength = max(strength, 0.4)
    return strength, tuple(hinted)
