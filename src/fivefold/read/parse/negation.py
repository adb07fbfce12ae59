"""Negations in a query ("not X", "wasn't related to X", "except X"): the terms whose memories
are demoted after fusion, and the query text with those clauses removed, so neither
BM25 nor the embedding goes looking *for* what the user ruled out."""

from __future__ import annotations

import re

from fivefold.text import STOP_WORDS, content_terms, with_marks

_CUE = (
    r"(?:\bnot\s+counting\b|\bnot\b|\bn't\b|n['’]t\b|\bnever\b|\bexcept(?:\s+for)?\b|"
    r"\bexcluding\b|\bother\s+than\b|\bapart\s+from\b|\baside\s+from\b|"
    r"\bwithout\b|\bbut\s+not\b)"
)
_LINK = r"(?:\s+(?:be|been|being|is|are|was|were|related|relating|connected|about|to|involve|"
_LINK += r"involving|involved|with|in|on|for|any|anything|the|a|an|my|our|do|doing|done|caused|"
_LINK += r"by|due|written|made))*"
# An object may open with a number ("other than 7 West"); after a bare "not" a number is an
# amount, and the verb check below leaves it alone.
_OBJECT = r"\s+(?P<object>[^\W_][\w\-]*(?:\s+[^\W\d_][\w\-]*){0,3})"
_NEGATION = re.compile(_CUE + _LINK + _OBJECT, re.IGNORECASE)
# The object of a negation ends at a conjunction, a relative word or the next clause's subject
# or auxiliary ("other than Python do I use" negates "Python", not "Python use").
_STOP_AT = re.compile(
    r"\b(?:and|or|but|that|which|who|when|where|because|so|then|do|does|did|i|you|we|they|"
    r"he|she|it|is|are|was|were|have|has|had|can|could|will|would|should)\b",
    re.I,
)

# Auxiliaries that are also given names: capitalized right after the cue, one is a name.
_NAME_LIKE = frozenset({"will", "can"})


def find_negations(text: str) -> tuple[list[str], str]:
    """Return the negated phrases and ``text`` without the negation clauses."""
    negated: list[str] = []
    kept = text
    position = 0
    # search(), not finditer(): the object group may swallow a second cue ("except Kestrel and
    # not the frontend") before it is cut back, so scanning resumes where the object starts.
    negation = _NEGATION if text.isascii() else with_marks(_NEGATION)
    while (match := negation.search(text, position)) is not None:
        position = match.start("object")
        phrase, name = _object_phrase(match.group("object"), shouting=text.isupper())
        terms = [t for t in content_terms(phrase) if t not in STOP_WORDS | _GENERIC]
        terms = terms or ([name.lower()] if name else [])
        if not terms:
            continue
        # Verbs right after the cue ("didn't finish") negate an action, not a topic: only
        # phrases reached through a linking word, or after except/without/other than, count.
        cue_to_object = text[match.start() : match.start("object")].lower()
        if cue_to_object.startswith("without") and not _scopes_a_search(text, match, phrase):
            continue
        before = text[: match.start()].rstrip().lower()
        topical = phrase[:1].isupper() or before.endswith((",", "but", "and"))
        if not topical and _is_bare_verb_negation(cue_to_object):
            continue
        negated.append(" ".join(terms))
        clause_end = match.start("object") + len(phrase)
        kept = kept.replace(text[match.start() : clause_end], " ")
    return negated, re.sub(r"\s+", " ", kept).strip()


def _object_phrase(obj: str, *, shouting: bool) -> tuple[str, str]:
    """The negated phrase, cut at the next clause; and its first word when that is a
    capitalized word the cut would drop ("other than Will, who ..." rules out Will)."""
    first, _, rest = obj.partition(" ")
    if first[:1].isupper() and not shouting and first.lower() in _NAME_LIKE:
        tail = _STOP_AT.split(rest)[0] if rest else ""
        return f"{first} {tail}".strip(), first
    return _STOP_AT.split(obj)[0], ""


# Words that stand for the topic without naming it ("not the one from Spain" rules out Spain).
_GENERIC = frozenset({"one", "ones", "thing", "things", "stuff"})
_DETERMINERS = frozenset({"the", "a", "an", "my", "our", "any", "anything"})

# "without" narrows a search after these words ("notes without the frontend"); after a verb it
# describes a manner ("able to jog without pain") and rules nothing out.
_SEARCH_NOUNS = frozenset(
    "anything something everything memories memory notes things ones stuff events meetings "
    "projects tasks work messages conversations ideas plans".split()
)


def _scopes_a_search(text: str, match: re.Match[str], phrase: str) -> bool:
    before = re.findall(r"[a-z]+", text[: match.start()].lower())
    return phrase[:1].isupper() or (bool(before) and before[-1] in _SEARCH_NOUNS)


def _is_bare_verb_negation(cue_to_object: str) -> bool:
    words = re.findall(r"[a-z']+", cue_to_object.replace("’", "'"))
    if not words:
        return False
    strong = {"except", "excluding", "other", "apart", "aside", "counting", "without"}
    strong |= {"for", "than", "from", "caused", "by"}
    # A determiner starts a noun phrase: "but not the rescue from Spain" rules out a topic.
    if (strong | _DETERMINERS) & set(words):
        return False
    linking = {"related", "relating", "connected", "about", "involving", "involve", "involved"}
    return not linking & set(words)
