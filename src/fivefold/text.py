"""Tokenization shared by the write path, the query parser and the lexical retriever.

A word is letters and digits with the combining marks after them; underscore and punctuation
separate words. For ASCII text that is what SQLite FTS5's ``unicode61`` tokenizer (the lexical
index's, ``store/tokens.py``) makes of it; other text is folded (``fold_accents``) and cut into
words here before FTS5 sees it (``index_text``), on the index's side and the query's alike, so a
term we compute in Python is the term the index holds.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable
from functools import cache, lru_cache
from importlib import resources

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_SPACE = re.compile(r"\s+")

# English function words plus the question scaffolding of memory queries ("what's my ...",
# "tell me about ..."): they carry no evidence and, as BM25 terms, only add noise.
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn
    doing don down during each few for from further had hadn has hasn have haven having he
    her here hers herself him himself his how i if in into is isn it its itself just let ll
    me more most mustn my myself no nor not now of off on once only or other ought our ours
    ourselves out over own re s same shan she should shouldn so some such t than that the
    their theirs them themselves then there these they this those through to too under until
    up ve very was wasn we were weren what when where which while who whom why will with won
    would wouldn you your yours yourself yourselves d m o y ain tell know remember
    anything something thing things also ever get got
    """.split()
)


# Capitalized words that open sentences or name times; never entities on their own.
COMMON_WORDS = frozenset(
    """
    i im ive id ill hey hi hello thanks thank yes yeah yep no nope oh ok okay wow sure well
    so great cool nice awesome sorry please also and but or then today yesterday tomorrow
    tonight monday tuesday wednesday thursday friday saturday sunday january february march
    mondays tuesdays wednesdays thursdays fridays saturdays sundays
    april may june july august september october november december morning evening night
    week weekend month year user users met went had got finished started talked called asked
    told said bought visited moved booked reviewed shipped merged fixed wrote decided agreed
    planned prefer prefers like likes love loves need needs want wants remember remind
    reminder note notes just really definitely maybe perhaps actually always never usually
    sometimes still after before during since until while when where what which who why how
    this that these those there here it its my our your their his her we they he she you me
    us them mom dad lunch dinner breakfast coffee meeting call update todo done good bad new
    old first last next every each some any all many much more most other another such own
    same favorite
    """.split()
)


def tokens(text: str) -> list[str]:
    """Case-folded word tokens, accents folded, in order (duplicates kept): an entity's key is
    made of them (``normalize_name``)."""
    return [t.casefold() for t in _folded_words(text)]


def words(text: str) -> list[re.Match[str]]:
    """The tokens of ``text`` where they stand in it (not folded): for spans of a query."""
    return list((_TOKEN if text.isascii() else _word()).finditer(text))


def content_terms(text: str) -> list[str]:
    """Distinct non-stop-word tokens in first-seen order: what a query contributes to BM25.
    Lowercased, not case-folded: each goes to the index's tokenizer, which lowercases (case
    folding made the index's "straße" the query's "strasse", never found)."""
    seen: dict[str, None] = {}
    for token in _folded_words(text):
        token = token.lower()
        if token not in STOP_WORDS:
            seen.setdefault(token, None)
    return list(seen)


def index_text(text: str) -> str:
    """``text`` as both backends' tokenizer (FTS5's) is given it: ASCII as it is; other text its
    words lowercased (as ``content_terms`` makes a query's), space-separated, so that the index
    cuts and lowercases it as a query's words are. FTS5 knows Unicode 6.1: it took a later
    emoji for a letter (the index held "pizza🥰" where a query asked for "pizza"), and it does
    not lowercase letters whose small forms came later (Cherokee ᏣᎳᎩ, which Python makes
    ꮳꮃꭹ)."""
    if text.isascii():
        return text
    return " ".join(_folded_words(text)).lower()


def _folded_words(text: str) -> list[str]:
    if text.isascii():
        return _TOKEN.findall(text)
    return _word().findall(fold_accents(text))


def fold_accents(text: str) -> str:
    """Compatibility forms decomposed (ﬁ -> fi) and diacritics dropped: the marks of Latin,
    Greek and Cyrillic letters (é -> e, ό -> ο, ё -> е; not й, ї, ў, letters of their own),
    Hebrew points and Arabic vowel signs, which writers often leave out. Other scripts' marks
    are parts of their letters and stay (Devanagari vowel signs and virama, Thai vowels and
    tone marks, Tamil pulli, Japanese dakuten): ``tokens`` keeps them in the word (ビール
    "beer" is not ヒール "heel"). A variation selector, and a mark of those blocks that does
    not combine with its letter (an enclosing keycap), separates words as it always did; an
    invisible character inside a word (a soft hyphen, a zero-width space) is dropped."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    if "\u0306" in decomposed or "\u0308" in decomposed:
        for whole, parts in _CYRILLIC_LETTERS:
            decomposed = decomposed.replace(parts, whole)
    return decomposed.translate(_folds())


# Cyrillic letters that decompose into a letter and a diacritic but are letters of their own
# (Russian й, Ukrainian ї, Belarusian ў: мой "my" is not мои "my" plural): put together again
# before the diacritics go. ё stays е, as Russian writers and search engines have it.
_CYRILLIC_LETTERS = tuple(
    (letter, unicodedata.normalize("NFD", letter)) for letter in ("й", "Й", "ї", "Ї", "ў", "Ў")
)


# Where diacritics live: the combining diacritical marks (and their extensions and supplement),
# those for symbols, the half marks, Hebrew points and the Arabic vowel signs.
_DIACRITIC_BLOCKS = (
    (0x0300, 0x036F),
    (0x0591, 0x05C7),
    (0x0610, 0x061A),
    (0x064B, 0x065F),
    (0x0670, 0x0670),
    (0x06D6, 0x06ED),
    (0x08CA, 0x08FF),
    (0x1AB0, 0x1AFF),
    (0x1DC0, 0x1DFF),
    (0x20D0, 0x20FF),
    (0xFE20, 0xFE2F),
)
_SELECTORS = (*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0))
# Inside a word and never seen: a soft hyphen, a zero-width space, a word joiner, a zero-width
# no-break space, an Arabic tatweel (which only stretches the line). They split the word (a
# soft hyphen made "Mül-ler" two words, found by neither "Müller" nor its parts alone).
_INVISIBLE = (0x00AD, 0x200B, 0x2060, 0xFEFF, 0x0640)


@cache
def _folds() -> dict[int, str | None]:
    """``fold_accents``'s table: a combining diacritic and an invisible character dropped; a
    variation selector, or a mark there of combining class 0, a space (before combining marks
    were word characters, these separated words, and so an entity's key made from them stays
    what it was)."""
    table: dict[int, str | None] = dict.fromkeys(_SELECTORS, " ")
    table.update(dict.fromkeys(_INVISIBLE))
    for low, high in _DIACRITIC_BLOCKS:
        for code in range(low, high + 1):
            c = chr(code)
            if unicodedata.category(c)[0] == "M":
                table[code] = None if unicodedata.combining(c) else " "
    return table


@cache
def mark_chars() -> str:
    """The combining marks (Unicode category M) as the body of a regex character class: those
    of planes 0, 1 and 14 as this Python's Unicode has them (a scan of every code point: once)."""
    planes = (range(0x300, 0x20000), range(0xE0000, 0xE1000))
    return _class_body(
        c for plane in planes for c in plane if unicodedata.category(chr(c))[0] == "M"
    )


@cache
def capital_chars() -> str:
    """The capital letters of the Latin script (Unicode categories Lu and Lt: A, É, Ł, Ø, Ş, ǅ)
    as the body of a regex character class, for the name patterns, which ``[A-Z]`` kept from
    Élodie and Łukasz (a scan of every code point: once). Other scripts' capitals (Д, Ά, Ա)
    open no name: the rules that tell a name from a capitalized ordinary word are English (a
    sentence's opener, a dictionary), and with them Russian text would make entities of "Вчера"
    (yesterday), "Важно" (important), the polite "Вы", each then found in every later text of
    that word; such names are found when given (``entities=``) or already known."""
    return _class_body(
        c
        for c in range(0x20000)
        if unicodedata.category(chr(c)) in ("Lu", "Lt")
        and unicodedata.name(chr(c), "").startswith("LATIN")
    )


def _class_body(codes: Iterable[int]) -> str:
    """Ascending code points as a character class's body, runs written as ranges."""
    spans: list[tuple[int, int]] = []
    for c in codes:
        if spans and spans[-1][1] == c - 1:
            spans[-1] = (spans[-1][0], c)
        else:
            spans.append((c, c))
    return "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in spans)


@cache
def _word() -> re.Pattern[str]:
    """A token of text that is not ASCII: letters and digits as ``_TOKEN``, and combining marks
    inside or after them, as FTS5 counts them with ``categories 'L* N* Co M*'``. Without the
    marks, काल ("time"), कुल ("total") and किला ("fort") were all ``क ल``. A mark with no
    letter before it (after a space, an emoji) starts no word."""
    # The invisible characters ``fold_accents`` drops continue a word too: ``words`` cuts a
    # query's own text, before folding, where ``tokens`` cuts it after.
    invisible = "".join(f"\\u{c:04x}" for c in _INVISIBLE)
    return re.compile(rf"[^\W_](?:[^\W_]|[{mark_chars()}{invisible}])*")


@cache
def with_marks(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """``pattern`` with each ``[\\w\\-]`` (a word's letters after its first) also taking
    combining marks, for text that is not ASCII: the query patterns' words stopped at a
    Devanagari or Thai word's first vowel sign ("except काल" negated "क")."""
    marked = pattern.pattern.replace(r"[\w\-]", rf"[\w\-{mark_chars()}]")
    return re.compile(marked, pattern.flags)


@lru_cache(maxsize=65_536)  # each write resolves every name it carries: names repeat
def normalize_name(name: str) -> str:
    """Canonical key of an entity name or alias: case, accents, punctuation and spacing folded."""
    return " ".join(tokens(name))


def normalize_query(text: str) -> str:
    """Cache key normalization: lowercased, punctuation stripped, whitespace folded; then what
    that would erase and the parser reads: each word holding a digit as written ("2024-03-05"
    is a date, "2024 03 05" is not) and each word capitalized after a sentence's first ("May"
    is a month and "Mark" a name where "may" and "mark" are not). Queries that differ only in
    case or punctuation share a key; a key never serves one query another's answer."""
    folded = " ".join(_NOT_WORD.sub("", text.lower()).split())
    kept = [
        m.group(0)
        for m in _SPACE_SEPARATED.finditer(text)
        if any(c.isdigit() for c in m.group(0))
        or (m.group(0)[0].isupper() and not _OPENS.search(text[: m.start()]))
    ]
    return f"{folded}\x1f{' '.join(kept)}"


_NOT_WORD = re.compile(r"[^\w\s]|_")
_SPACE_SEPARATED = re.compile(r"\S+")
_OPENS = re.compile(r"(?:^|[.!?]\s*)\s*[\"“(]?$")


def trigrams(text: str) -> frozenset[str]:
    """pg_trgm-style trigrams: each word padded with two spaces in front and one behind."""
    grams: set[str] = set()
    for word in tokens(text):
        padded = f"  {word} "
        grams.update(padded[i : i + 3] for i in range(len(padded) - 2))
    return frozenset(grams)


def trigram_similarity(a: str, b: str) -> float:
    """Jaccard similarity of trigram sets, as PostgreSQL's ``similarity()`` computes it."""
    ga, gb = trigrams(a), trigrams(b)
    if not ga or not gb:
        return 0.0
    return len(ga & gb) / len(ga | gb)


def repeat_key(content: str) -> str:
    """What an exact repeat shares with the memory it repeats: the text with its whitespace
    folded and its case folded, hashed (an index key of fixed size)."""
    folded = " ".join(content.split()).casefold()
    return hashlib.sha256(folded.encode("utf-8")).hexdigest()[:32]


@cache
def dictionary_words() -> frozenset[str]:
    """Whole lowercase words of the MiniLM WordPiece vocabulary (~22k common English words,
    shipped with the package): a word found there ("set", "go", "times") is an ordinary word
    unless its case or its place says it is a name; one not found there ("priya", "kestrel")
    looks like a name in any case."""
    raw = resources.files("fivefold.embed").joinpath("tokenizer.json").read_text("utf-8")
    vocab = json.loads(raw)["model"]["vocab"]
    return frozenset(w for w in vocab if w.isalpha() and w.islower())


# Words that open a sentence without being part of the name after them ("Besides Italy").
OPENERS = frozenset(
    """
    besides after before during since until unless although though because maybe perhaps
    luckily hopefully unfortunately finally anyway still even just only also without within
    about around across along among behind beyond despite except inside outside near unlike
    via per thanks according apart instead like whenever wherever meanwhile otherwise
    """.split()
)


# Words that say a statement replaces an earlier one ("we moved", "now", "instead of").
UPDATE_CUES = re.compile(
    r"\b(no longer|not any ?more|any ?more|from now on|instead of|instead|switched|switch(?:ed)? "
    r"to|swapped|replaced|changed to|changed|slipped|reissued|rescheduled|rebooked|renamed|"
    r"rebranded|transferred|relocated|traded in|traded|upgraded|promoted|pushed back|pushed|"
    r"postponed|brought forward|extended|took over|taken over|moved|back to|again|these days|"
    r"now|new|stopped|dropped|gave up|left|retired|remortgaged|raised|cut)\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=4096)  # asked of one new text once per older one it is weighed against
def update_cue(text: str) -> str | None:
    """The update cue the text carries ("now", "moved", "instead of", "no longer", ...), or
    None. The first in the text wins, the longer of two at one place ("instead of")."""
    m = UPDATE_CUES.search(text)
    return m.group(1).lower() if m else None
