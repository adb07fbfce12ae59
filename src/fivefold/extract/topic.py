"""Whether two statements speak of the same thing, when the frame rules read nothing from one of
them: "Handicap 19 after the spring season" and "My handicap is 21" do, "The kidney dataset has
88 samples" and "The liver dataset has 64 samples" do not.

Two statements do when they share a word of what they are about (not a name, a unit, a date or
a verb any sentence may use), the word is not qualified differently on each side, neither names
someone the other does not, their owners agree ("my" is not "Noor's"), their contexts agree
("work" is not "home"), and the newer does not say it adds to what holds ("also").
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import lru_cache

from fivefold.extract.attributes import singular
from fivefold.text import STOP_WORDS, UPDATE_CUES

_TOKEN = re.compile(r"[£€$]?\d[\d,]*(?:\.\d+)?(?:[^\W\d_]+\d*|[-/:]\d+)*%?|[^\W\d_][\w'’-]*")
_POSSESSIVE = re.compile(r"['’]s?$")
_CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday "
    "saturday sunday morning afternoon evening night weekend week month year day today tomorrow "
    "yesterday am pm".split()
)
_FIRST_PERSON = frozenset("i my me we our us mine ours i'm we're i've we've i'll we'll i'd".split())
# Words any statement of a value may use, whatever it is about.
_ANY = frozenset(
    "is are was were be been being am has have had got get gets getting do does did will would "
    "can could should just also still about around only really very much more most less than "
    "then there here this that these those it its it's cost costs run runs use uses used pay "
    "pays paid charge charges take takes took make makes made go goes going went keep keeps "
    "kept set say says said put give gives need needs want wants like likes per each every total "
    "number amount price thing things one two three four five six seven eight nine ten eleven "
    "twelve first last next other same back up down out off over".split()
)
_CONTEXTS = frozenset(
    "work personal home private business office school gym spare second backup".split()
)


@dataclass(frozen=True, slots=True)
class Topic:
    words: frozenset[str]  # what it is about: "atlas", "cell", "handicap"
    names: frozenset[str]  # who or what it names ("noor", "kyoto")
    owners: frozenset[str]  # names it gives something of ("noor" of "Noor's extension")
    first_person: bool  # "I", "my", "we"


_ENDS = frozenset(".!?;:")


@lru_cache(maxsize=4096)  # the same candidates come back for recall after recall
def topic(text: str) -> Topic:
    """What ``text`` speaks of: its words (lower case, singular), names, owners, and whether it
    speaks in the first person. A capitalized word opening a sentence is a word, not a name,
    unless it owns something ("Tobi's")."""
    cues = {m.group(1).lower() for m in UPDATE_CUES.finditer(text)}
    found = list(_TOKEN.finditer(text))
    units = {
        singular(found[i + 1].group(0).lower())
        for i, m in enumerate(found[:-1])
        if m.group(0)[0].isdigit() or m.group(0)[0] in "£€$"
    }
    words: set[str] = set()
    names: set[str] = set()
    owners: set[str] = set()
    first = False
    for i, m in enumerate(found):
        raw = m.group(0)
        low = raw.lower()
        base = _POSSESSIVE.sub("", low)
        if low in _FIRST_PERSON:
            first = True
            continue
        if not raw[0].isalpha() or base in _CALENDAR or low in cues:
            continue
        opener = i == 0 or text[found[i - 1].end() : m.start()].strip()[-1:] in _ENDS
        possessive = base != low
        if raw[0].isupper() and (not opener or possessive):
            names.add(base)
            if possessive:
                owners.add(base)
            continue
        if base in STOP_WORDS or base in _ANY:
            continue
        word = singular(base)
        if word not in units:
            words.add(word)
    return Topic(frozenset(words), frozenset(names), frozenset(owners), first)


# A newer statement that says it adds to what holds ("Sam also coaches ...").
_ADDING = re.compile(r"\b(?:also|too|as well|another|alongside|besides|both)\b", re.I)


def _modifiers(text: str, shared: frozenset[str]) -> dict[str, str]:
    """Per shared word, the word right before it when that is a word of what it is about
    ("kidney" of "kidney dataset")."""
    found = [m.group(0) for m in _TOKEN.finditer(text)]
    out = {}
    for before, word in itertools.pairwise(found):
        w, b = singular(word.lower()), before.lower()
        if (
            w in shared
            and b.isalpha()
            and b not in STOP_WORDS
            and b not in _ANY
            and b not in _FIRST_PERSON
        ):
            out[w] = singular(b)
    return out


def same_topic(old: str, new: str) -> bool:
    """Whether the newer statement ``new`` may be the change of ``old`` (see the module)."""
    a, b = topic(old), topic(new)
    shared = a.words & b.words
    if not shared or _ADDING.search(new):
        return False
    ma, mb = _modifiers(old, shared), _modifiers(new, shared)
    if any(
        w in mb
        and ma[w] != mb[w]
        and ma[w] not in b.words | shared
        and mb[w] not in a.words | shared
        for w in ma
    ):
        return False
    if a.names - b.names and b.names - a.names:
        return False
    if a.owners != b.owners and (_owned_apart(a, b) or _owned_apart(b, a)):
        return False
    return (a.words & _CONTEXTS) == (b.words & _CONTEXTS)


def _owned_apart(a: Topic, b: Topic) -> bool:
    """``a`` gives something of someone that ``b`` gives of someone else or of the speaker."""
    return bool(a.owners) and (bool(b.owners) or b.first_person)
