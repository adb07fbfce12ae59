"""A rule-based entity extractor: capitalized name sequences, codenames and known names.

It runs offline on every write that leaves ``entities`` out. It favours recall over precision in
one way only: a known entity or alias of the namespace is always found, in any case. Unknown
names must look like names (capitalized, not a common sentence opener, not a weekday).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping

from fivefold.text import (
    COMMON_WORDS,
    OPENERS,
    STOP_WORDS,
    capital_chars,
    dictionary_words,
    normalize_name,
)
from fivefold.text import words as word_spans
from fivefold.validate import MAX_KEY_BYTES, MAX_NAME_BYTES, MAX_SCOPE_CHARS

# Generic acronyms: naming them would put half the corpus one hop apart.
_GENERIC_ACRONYMS = frozenset(
    """
    api apis url urls pdf ceo cto cfo vp id ids pr prs mvp faq eta tbd fyi asap it hr ui ux
    qa sdk am pm ok tv usa us uk eu ai ml db
    """.split()
)
# "and" is not a connector: "Sarah Chen and Priya Patel" are two people.
_CONNECTOR = r"(?:of|de|da|del|van|von|der|la|le|the|&)"


def _name_seq(capital: str) -> re.Pattern[str]:
    """Capitalized words, joined by spaces and connectors, each opening with ``capital``."""
    word = rf"{capital}[\w'’\-]*[\w]|{capital}"
    return re.compile(rf"(?<!\w)(?:{word})(?:\s+(?:{_CONNECTOR}\s+)?(?:{word}))*")


_NAME_SEQ = _name_seq("[A-Z]")


@functools.cache
def _any_name_seq() -> re.Pattern[str]:
    """``_NAME_SEQ`` for text that is not ASCII: a name opens with any Latin capital (Élodie,
    Łukasz; ``text.capital_chars`` says why not Андрей). ASCII text keeps ``[A-Z]``: the same
    set there, and faster to scan than the long class."""
    return _name_seq(f"[{capital_chars()}]")


_SENTENCE_END = re.compile(r"(?:[.!?:;\n]\s*|[\"“(]\s*)$")
# How far back a sentence end is looked for: searching the whole text before every name made a
# text naming 2,000 people take seconds (quadratic).
_LOOKBACK = 64
_CODENAME = re.compile(r"\b(?:[a-z]+[A-Z]\w*|[A-Za-z]+\d+[A-Za-z\d]*)\b")
_POSSESSIVE = re.compile(r"['’]s$")


def extract_entities(text: str, known: Mapping[str, str] | None = None) -> list[str]:
    """Entity names in ``text``, first-seen order, deduplicated by normalized form.

    ``known`` maps normalized names and aliases of the namespace to canonical names; a match
    returns the canonical name, so "Priya" becomes "Priya Patel" once that alias exists.
    """
    known = known or {}
    if not text.isascii():
        # Composed: a name written with a combining accent ("Jürgen" as u + U+0308) is one
        # word to the capitalized pattern below (it found "Ju").
        text = unicodedata.normalize("NFC", text)
    found: dict[str, str] = {}
    for name in _known_names(text, known):
        found.setdefault(normalize_name(name), name)
    for name in _capitalized_names(text):
        key = normalize_name(name)
        canonical = known.get(key, name)
        found.setdefault(normalize_name(canonical), canonical)
    for match in _CODENAME.finditer(text):
        word = match.group(0)
        if not word.isdigit() and not re.fullmatch(r"[A-Za-z]\d*|\d+[A-Za-z]{0,2}", word):
            canonical = known.get(normalize_name(word), word)
            found.setdefault(normalize_name(canonical), canonical)
    return [name for key, name in found.items() if key and _fits(name, key)]


class _Asked(Mapping[str, str]):
    """A catalog that knows no name and notes every key looked up in it."""

    def __init__(self) -> None:
        self.keys_asked: set[str] = set()

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        self.keys_asked.add(key)
        return default

    def __getitem__(self, key: str) -> str:
        self.keys_asked.add(key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 1  # not empty: the known names' pass runs and asks its keys


def lookup_keys(text: str) -> frozenset[str]:
    """Every key ``extract_entities(text, known)`` looks up in ``known``, whatever it holds
    (which keys are asked never depends on the answers): a write reads only these names of
    its namespace, by key, instead of the whole catalog."""
    asked = _Asked()
    extract_entities(text, asked)
    return frozenset(asked.keys_asked)


def _fits(name: str, key: str) -> bool:
    """Within the bounds a given name is held to (``validate.entity_name``): a 3,000-letter
    capitalized blob is no name, and Postgres could not key it."""
    short = len(name) <= MAX_SCOPE_CHARS and len(name.encode("utf-8")) <= MAX_NAME_BYTES
    return short and len(key.encode("utf-8")) <= MAX_KEY_BYTES


def _known_names(text: str, known: Mapping[str, str]) -> Iterable[str]:
    if not known:
        return []
    words = [(m.group(0), m.start()) for m in word_spans(text)]  # as keys are made
    keys = [normalize_name(w) for w, _ in words]
    out = []
    for size in (4, 3, 2, 1):
        for i in range(len(keys) - size + 1):
            key = " ".join(keys[i : i + size])
            canonical = known.get(key)
            if canonical is None:
                continue
            original = words[i][0]
            # A single lowercase common word ("may", "will") is not a mention of the entity
            # that happens to share its spelling; a capitalized one or a codename is.
            if (
                size == 1
                and (key in STOP_WORDS or key in COMMON_WORDS)
                and not original[0].isupper()
            ):
                continue
            # A short lowercase word ("tom", "ana") may be an ordinary word, not the name.
            plain = original.islower() and not any(c.isdigit() for c in original)
            if size == 1 and plain and len(key) < 4 and not canonical.islower():
                continue
            out.append(canonical)
    return out


def _capitalized_names(text: str) -> Iterable[str]:
    names = _NAME_SEQ if text.isascii() else _any_name_seq()
    for match in names.finditer(text):
        start = match.start()
        at_start = start == 0 or bool(_SENTENCE_END.search(text[max(0, start - _LOOKBACK) : start]))
        following = text[match.end() : match.end() + 2]
        for words in _owners_apart(match.group(0).split()):
            trimmed = _trim(words, at_start)
            # A lone capitalized word opening a sentence is often just capitalization ("Set
            # up the build"); it counts as a speaker ("Caroline: ..."), a possessor
            # ("Priya's"), a codename, or a word no dictionary has.
            alone_at_start = at_start and len(words) == 1
            at_start = False
            if not trimmed or (alone_at_start and not _looks_named(words[0], following)):
                continue
            yield " ".join(trimmed)


def _owners_apart(words: list[str]) -> list[list[str]]:
    """A run of capitalized words cut after each possessive: "Kofi's Lakeshore badge" names
    Kofi and Lakeshore, not "Kofi Lakeshore"."""
    groups: list[list[str]] = [[]]
    for word in words:
        groups[-1].append(word)
        if _POSSESSIVE.search(word):
            groups.append([])
    return [g for g in groups if g]


def _looks_named(word: str, following: str) -> bool:
    if word.lower() in _FIELD_LABELS:  # "Name: ...", "Note: ..." label a field, not a speaker
        return False
    if following.startswith(":") or _POSSESSIVE.search(word):
        return True
    if any(c.isdigit() for c in word) or any(c.isupper() for c in word[1:]):
        return True
    return word.lower() not in dictionary_words()


def _trim(words: list[str], at_start: bool) -> list[str]:
    words = [_POSSESSIVE.sub("", w) for w in words]
    # Drop common words and connectors from both ends ("Met the Sarah Chen" -> "Sarah Chen").
    while words and (_is_common(words[0], at_start) or words[0].lower() in _CONNECTORS):
        words = words[1:]
        at_start = False
    while words and (_is_common(words[-1], False) or words[-1].lower() in _CONNECTORS):
        words = words[:-1]
    if len(words) == 1:
        word = words[0]
        if word.isupper() and word.lower() in _GENERIC_ACRONYMS:
            return []
        # A short word in capitals that is an ordinary word ("GO" of "CS:GO", "ON") is no name.
        if word.isupper() and len(word) <= 3 and word.lower() in dictionary_words():
            return []
        if len(word) < 2:
            return []
    return words


_FIELD_LABELS = frozenset(
    "name note update reminder summary subject answer question todo tip warning error".split()
)
_CONNECTORS = frozenset(
    {"of", "de", "da", "del", "van", "von", "der", "la", "le", "the", "and", "&"}
)


def _is_common(word: str, at_start: bool) -> bool:
    low = word.lower().replace("’", "'").split("'")[0]
    if low in COMMON_WORDS or (at_start and (low in OPENERS or _past_verb(low))):
        return True
    # Mid-sentence, a capitalized stop word ("The Hague") is part of a name; at the start of a
    # sentence it is just capitalization.
    return at_start and low in STOP_WORDS


# Verbs in the past that open a note ("Took Biscuit to the vet", "Helped Sanna move"); "led",
# "read" and "set" also open names ("Led Zeppelin").
_IRREGULAR_PAST = frozenset(
    """
    took made saw ran did left brought sent gave found came drove flew kept held won lost
    paid sold spent built caught taught felt heard slept swam rode ate drank began broke
    chose forgot hung lent put sat stood threw woke wore
    """.split()
)
# Names that open with a word in the past ("United Airlines", "Sacred Heart").
_NAMED_PAST = frozenset("united sacred blessed limited wicked naked".split())


def _past_verb(low: str) -> bool:
    """Whether a sentence's first word is a verb in the past: a dictionary word of five letters
    or more ending in "ed" ("helped", "renewed"; not "red" or "ted"), or an irregular one."""
    if low in _IRREGULAR_PAST:
        return True
    return (
        len(low) >= 5
        and low.endswith("ed")
        and low not in _NAMED_PAST
        and low in dictionary_words()
    )
