"""Whether two statements speak of the same thing where the frame rules did not judge them:
"Handicap 19 after the spring season" and "My handicap is 21" do, "The kidney dataset has 88
samples" and "The liver dataset has 64 samples" do not; and whether two statements give one
thing of two owners ("my samples", "Aisha's samples"), which no rule may take for a change.

Two statements speak of the same thing when they share a word of what they are about (not a
name, a unit, a date or a verb any sentence may use), the word is not qualified differently on
each side, neither names someone the other does not, no thing is owned by another on each side,
their contexts agree ("work" is not "home"), and the newer does not say it adds ("also").
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import lru_cache

from fivefold.extract.attributes import KIN, singular
from fivefold.text import STOP_WORDS, UPDATE_CUES, dictionary_words

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
# What joins a statement's subject to its value ("My tutor is Mr. Idrissi"), as a colon does.
_COPULAS = frozenset("is are was were am i'm we're i’m we’re".split())
_CONTEXTS = frozenset(
    "work personal home private business office school gym spare second backup".split()
)


@dataclass(frozen=True, slots=True)
class Topic:
    words: frozenset[str]  # what it is about: "atlas", "cell", "handicap"
    names: frozenset[str]  # who or what it names ("noor", "kyoto")
    # Of them, the ones said only as the value, after the copula: "idrissi" of "Lina's tutor is
    # Mr. Idrissi".
    values: frozenset[str]
    first_person: bool  # "I", "my", "we"
    owned: frozenset[tuple[str, str]]  # who owns which word: ("noor", "desk"), ("i", "badge")


_ENDS = frozenset(".!?;:")


@lru_cache(maxsize=4096)  # the same candidates come back for recall after recall
def topic(text: str) -> Topic:
    """What ``text`` speaks of: its words (lower case, singular), names, whether it speaks in
    the first person, and who owns what. A capitalized word opening a sentence is a word, not a
    name, unless it owns something ("Tobi's") or no dictionary holds it ("Zara")."""
    cues = {m.group(1).lower() for m in UPDATE_CUES.finditer(text)}
    found = list(_TOKEN.finditer(text))
    units = {
        singular(found[i + 1].group(0).lower())
        for i, m in enumerate(found[:-1])
        if m.group(0)[0].isdigit() or m.group(0)[0] in "£€$"
    }
    words: set[str] = set()
    names: set[str] = set()
    subjects: set[str] = set()  # names before the copula
    first = False
    copula = False
    for i, m in enumerate(found):
        raw = m.group(0)
        low = raw.lower()
        base = _POSSESSIVE.sub("", low)
        copula = copula or _joins(text, found, i)
        if low in _FIRST_PERSON:
            first = True
            continue
        if not raw[0].isalpha() or singular(base) in _CALENDAR or low in cues:
            continue
        opener = i == 0 or text[found[i - 1].end() : m.start()].strip()[-1:] in _ENDS
        possessive = base != low
        if raw[0].isupper() and (not opener or possessive or base not in dictionary_words()):
            names.add(base)
            if not copula:
                subjects.add(base)
            continue
        if base in STOP_WORDS or base in _ANY:
            continue
        word = singular(base)
        if word not in units:
            words.add(word)
    values = frozenset(names - subjects) if copula else frozenset[str]()
    return Topic(frozenset(words), frozenset(names), values, first, _owned(found))


def _joins(text: str, found: list[re.Match[str]], i: int) -> bool:
    """Whether the ``i``th token joins the subject to its value: a copula ("is", "I'm"), not
    an auxiliary ("I'm meeting Ana": a doing, whose names are no value), or a colon before it."""
    low = found[i].group(0).lower()
    if low in _COPULAS:
        after = found[i + 1].group(0).lower() if i + 1 < len(found) else ""
        return not after.endswith("ing")
    return i > 0 and ":" in text[found[i - 1].end() : found[i].start()]


_MINE = frozenset("my our".split())
# Words before a kin word that leave its owner unsaid ("his mum", "a friend").
_OTHERS = frozenset("his her their its your a an the one some whose".split())


def _owned(found: list[re.Match[str]]) -> frozenset[tuple[str, str]]:
    """Who owns which word: ("noor", "desk") of "Noor's desk extension" takes the word right
    after the owner; "my" and "our" own for the speaker ("i"), as does a kin word no one owns
    ("Mum lives in Leeds")."""
    out = set()
    tokens = [m.group(0) for m in found]
    for before, word in itertools.pairwise(["", *tokens]):
        low = word.lower()
        if not word[0].isalpha() or low in STOP_WORDS or low in _FIRST_PERSON:
            continue
        thing = KIN.get(low) or singular(low)
        if before.lower() in _MINE:
            out.add(("i", thing))
        elif before[:1].isupper() and _POSSESSIVE.search(before) and before[-1] in "sS'’":
            out.add((_POSSESSIVE.sub("", before.lower()), thing))
        elif low in KIN and before.lower() not in _OTHERS and not _POSSESSIVE.search(before):
            out.add(("i", thing))
    return frozenset(out)


# A newer statement that says it adds to what holds ("Sam also coaches ...").
_ADDING = re.compile(r"\b(?:also|too|as well|another|alongside|besides|both)\b", re.I)


def _modifiers(text: str, shared: frozenset[str]) -> dict[str, str]:
    """Per shared word, the word right before it when that is a word of what it is about
    ("kidney" of "kidney dataset")."""
    found = [m.group(0) for m in _TOKEN.finditer(text)]
    out = {}
    for before, word in itertools.pairwise(found):
        w, b = singular(_POSSESSIVE.sub("", word.lower())), before.lower()
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
    only_a, only_b = a.names - b.names, b.names - a.names
    # Two statements naming different people are two facts ("Ines visits Porto", "Marek
    # visits Porto"), unless the names are each one's value ("Lina's tutor is Mr. Idrissi").
    if only_a and only_b and not (only_a <= a.values and only_b <= b.values):
        return False
    if owned_apart(old, new):
        return False
    return (a.words & _CONTEXTS) == (b.words & _CONTEXTS)


def owned_apart(old: str, new: str) -> bool:
    """Whether the two give one thing of different owners: "Noor's extension" and "Pieter's
    extension", or "my samples" and "Aisha's samples"."""
    a, b = topic(old).owned, topic(new).owned
    return any(word == other and owner != them for owner, word in a for them, other in b)
