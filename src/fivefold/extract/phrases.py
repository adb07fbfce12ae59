"""The pieces ``frames`` reads a memory with: clauses, noun phrases (who or what a clause is
about) and values (a name, a code, an amount, a date, a place).

A clause is plain text: accents folded, curly apostrophes straightened, the full stop of "Dr."
dropped. Words are lower case and singular ("keys" is "key") unless written capitalized.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from fivefold.extract.attributes import KIN, QUALIFIERS, singular
from fivefold.text import fold_accents

_WORD = re.compile(r"[^\W_]+")
_ABBREVIATION = re.compile(r"\b(Dr|Dra|Mr|Mrs|Ms|St|Sr|Sra|Jr|No|Prof|vs|approx|Ave|Av)\.", re.I)
# Where one clause ends: sentence ends, semicolons, dashes, and the ", so" / ", but" / ", because"
# that open a clause of its own ("Dr Bakker retired, so I'm registered with Dr Yilmaz").
_CLAUSE_END = re.compile(
    r"[.!?]+(?=\s+[A-Z\"']|\s*$)|[;()]|\s[-–—]\s|"
    r",\s+(?=(?:so|but|because|since|which|and then|though|although|while)\b)",
    re.I,
)
_SUBORDINATE = re.compile(
    r"\s+(?:because|since|so that|so|when|while|now that|although|though|whereas|after|before|"
    r"until|unless|once|which|who|as of|starting|from now on|these days|for now|this year|"
    r"last year|next year|this week|this month|this sprint|today|tonight|yesterday|finally|"
    r"instead of|instead|again|anymore|any more|at last|for good|over the weekend)\b.*$",
    re.I,
)


def clauses(text: str) -> list[str]:
    """``text`` cut into clauses, each stripped, in order."""
    text = unicodedata.normalize("NFC", text).replace("\u2019", "'").replace("\u2018", "'")
    text = _ABBREVIATION.sub(lambda m: m.group(1), fold_accents(text))
    return [part.strip(" ,:.") for part in _CLAUSE_END.split(text) if part and part.strip(" ,:.")]


def words(text: str) -> tuple[str, ...]:
    """Lower-case words of ``text``, plurals made singular unless the word was capitalized."""
    return tuple(w.lower() if w[0].isupper() else singular(w.lower()) for w in _WORD.findall(text))


def key(text: str) -> str:
    """A subject's or value's normalized text: lower-case words joined by spaces."""
    return " ".join(words(text))


def cut(value: str) -> str:
    """A value without the clause tail that only explains it ("... so Jonas can have a room")."""
    value = _SUBORDINATE.sub("", value.strip())
    value = re.sub(
        r"(?:\s+(?:now|too|again|as well|already|anymore))+[.!]*$", "", value, flags=re.I
    )
    value = re.split(
        r",\s+(?=(?:a|an|the|and|so|but|which|who|right|just|near|close|always|usually|never|"
        r"mostly|often|only)\b)",
        value,
    )[0]
    return value.strip(" ,.!?:\"'")


@dataclass(frozen=True, slots=True)
class Phrase:
    """Who or what a noun phrase is about."""

    owner: str  # "user", a person's key, a thing's key; "" when nobody is named ("Work email")
    kind: str  # "user", "person", "thing" or "none"
    words: tuple[str, ...]  # the phrase's own words after the possessor, prepositions cut off
    tail: tuple[str, ...] = ()  # the words of the prepositional tail ("at Finbolt")
    mine: bool = False  # "my ...", "our ..."
    text: str = ""  # the phrase as written (for an antecedent)


@dataclass(slots=True)
class Context:
    """What earlier clauses of the same memory named: "it" and "she" refer back to them."""

    person: Phrase | None = None
    thing: Phrase | None = None
    lead_org: str = ""  # "At Azulito the manager is Beto": the organization a clause opens with
    seen: list[Phrase] = field(default_factory=list)


_PRONOUN_USER = re.compile(
    r"^(?:i|we|me|us|i'm|we're|i've|we've|i'd|we'd|i'll|we'll|myself|ourselves)$", re.I
)
_WITH_USER = re.compile(
    r"^(?:(?-i:[A-Z])[\w-]*(?: (?-i:[A-Z])[\w-]*)? and (?:i|me)|(?:i|me) and (?-i:[A-Z])\w*)$", re.I
)
_DETERMINER = re.compile(r"^(?:the|a|an|this|that|these|those|all|every|each|some|both)\s+", re.I)
_LEAD_IN = re.compile(
    r"^(?:(?:and|so|but|then|now|also|still|just|finally|currently|officially|today|yesterday|"
    r"recently|apparently|honestly|actually|luckily|sadly|from now on|these days|"
    r"as of \w+(?: \w+)?|"
    r"this (?:year|week|month|sprint)|after the \w+|since the \w+|"
    r"(?:at|in|on|for|with|after|during) (?:(?-i:[A-Z])[\w'-]*\s?)+)[,\s]+)+",
    re.I,
)
_TRAILING = re.compile(
    r"(?:\s+(?:now|also|still|just|finally|currently|already|officially|really|both|all|is|are|"
    r"am|was|were|has|have|had|been|will|would|'s|'re|'m|'ve|"
    r"actually|recently|then|too|even|only|never|always|usually|these days|nowadays|lately))+$",
    re.I,
)
_PREPOSITION = frozenset(
    "at in on for of with to from by under near about into over via after before during since "
    "until between around".split()
)
_POSSESSIVE = re.compile(r"^(?P<who>.+?)(?:'s|s')(?:\s+|$)(?P<rest>.*)$")
_ENDS_AND = re.compile(r"\s+and$")
_QUANTIFIED = re.compile(r"(?:every|each|any|no|most|many|some|several|few|one|none|half)\s")
_GO_TO = re.compile(r"\bgo-to\b", re.I)
_MINE = re.compile(r"^(?:my|our)\s+(?P<rest>.+)$", re.I)
_TITLE = re.compile(r"^(?:dr|dra|mr|mrs|ms|miss|mx|sister|don|dona|prof|auntie|aunt|uncle)$", re.I)


def phrase(text: str, ctx: Context) -> Phrase | None:
    """The noun phrase ``text`` (a clause's subject or object) resolved; None when it cannot be
    (a pronoun with nothing to refer to, or text too long to be one phrase)."""
    given = text.strip(" ,:")
    text = _TRAILING.sub("", given).strip(" ,:")
    if "," in text:
        text = _appositive_or_last(text)
    if given and not text:
        return None  # "..., still": nothing left to be the subject
    if _ENDS_AND.search(text):
        return _clause_subject(text, ctx)  # "Mum had her knee replaced and (is walking ...)"
    text = _strip_lead_in(text, ctx)
    if not text:
        return Phrase("user", "user", ())
    if _PRONOUN_USER.match(text) or _WITH_USER.match(text):
        return Phrase("user", "user", ())
    lowered = text.lower()
    if ":" in text:
        return None  # "Sunday: Lua's first run": a label, then a clause
    if re.match(r"(?:i|we)\s", lowered):
        return Phrase("user", "user", ())  # "I write code in ..."
    if lowered in ("he", "she", "him", "her"):
        return ctx.person
    if lowered in ("it", "that", "this"):
        return ctx.thing
    if lowered in ("they", "them"):
        return ctx.person or ctx.thing  # "Bright Pipes fixed the boiler; they're our plumbers"
    if len(text.split()) > 9 or lowered in ("there", "what", "which", "who", "everything"):
        return None
    if _QUANTIFIED.match(lowered):
        return None  # "every unit is on the new pumps" is about no one unit
    found = _noun_phrase(text)
    if {"the", "a", "an"} & set(found.words[1:]):
        return None  # "Packed the car for Viseu" is a clause, not a noun phrase
    return found


def _appositive_or_last(text: str) -> str:
    """ "INC-2291, the duplicate webhook bug" is INC-2291; "After the reorg, Jonas" is Jonas."""
    head, _, rest = text.partition(",")
    rest = rest.strip()
    if re.match(r"(?:the|a|an|our|my)\b", rest, re.I) and re.search(r"[A-Z0-9]", head):
        return head.strip()
    return text.rsplit(",", 1)[1].strip()


def _clause_subject(text: str, ctx: Context) -> Phrase | None:
    first = re.match(r"^(?:my|our|the)?\s*(?:[A-Z][\w'-]*|\w+'s \w+)", text)
    return phrase(first.group(0), ctx) if first else None


def _strip_lead_in(text: str, ctx: Context) -> str:
    lead = _LEAD_IN.match(text)
    if lead is None:
        return text
    rest = text[lead.end() :]
    org = re.match(r"(?i:at|in|for|with) ((?:[A-Z][\w'-]*\s?)+)", lead.group(0).strip())
    if org is not None and org.group(1).split()[0].lower() in ("the", "this"):
        org = None
    if org is not None:
        ctx.lead_org = key(org.group(1))
    if not rest and org is not None:
        return text  # "At Harbor Labs" alone is no lead-in
    return rest


def _noun_phrase(text: str) -> Phrase:
    text = _GO_TO.sub("favourite", text)
    mine = False
    m = _MINE.match(text)
    if m is not None:
        mine, text = True, m.group("rest")
    possessive = _POSSESSIVE.match(text)
    if possessive is not None and not possessive.group("rest"):
        return Phrase("", "none", ())  # "Platform's is 15%": whose what, unsaid
    if possessive is not None and set(words(possessive.group("who"))) & _PREPOSITION:
        possessive = None  # "Flight to Hamburg for Mara's birthday" is a flight
    if possessive is not None and not mine and possessive.group("rest"):
        owner = _noun_phrase(_DETERMINER.sub("", possessive.group("who")))
        return _with_kin(owner, possessive.group("rest"))
    text = _DETERMINER.sub("", text)
    head, tail = _split_tail(words(text), text)
    kin = _kin_person(head, text, mine)
    if kin is not None:
        return kin
    if mine:
        return Phrase("user", "user", head, tail, mine=True, text=text)
    if _is_name(text):
        return Phrase(key(text), _name_kind(text), (), tail, text=text)
    return Phrase("", "none", head, tail, text=text)


def _with_kin(owner: Phrase, rest: str) -> Phrase:
    """ "Lucía's brother Ramiro" is Ramiro; "Daniel's mum" is "daniel mother"; "Tom's team" is
    Tom with the words "team"."""
    rest_words = words(_DETERMINER.sub("", rest))
    if rest_words and rest_words[0] in KIN:
        name = re.search(r"\b[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*", rest.split(None, 1)[-1])
        if name is not None and len(rest.split()) > 1:
            return Phrase(key(name.group(0)), "person", (), text=name.group(0))
        base = owner.owner if owner.kind != "none" else " ".join(owner.words)
        return Phrase(f"{base} {KIN[rest_words[0]]}".strip(), "person", rest_words[1:], text=rest)
    head, tail = _split_tail(rest_words, rest)
    if owner.kind == "none":
        return Phrase(" ".join(owner.words), "thing", head, tail, text=rest)
    return Phrase(owner.owner, owner.kind, head, tail, text=rest)


_KIN_ADJECTIVES = frozenset(
    "older younger little big baby twin eldest oldest youngest step".split()
)


def _kin_person(head: tuple[str, ...], text: str, mine: bool) -> Phrase | None:
    while head and head[0] in _KIN_ADJECTIVES:
        head, text = head[1:], text.split(None, 1)[-1]
    if not head or head[0] not in KIN or (not mine and len(head) > 1 and head[0] != "mum"):
        return None
    name = re.search(r"\b[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*", text[text.find(" ") + 1 :])
    if len(head) > 1 and name is not None:  # "my sister Mara Hoffmann"
        return Phrase(key(name.group(0).split()[0]), "person", (), text=name.group(0))
    return Phrase(KIN[head[0]], "person", head[1:], text=text)


_COMPOUNDS = re.compile(r"\b(?:point of sale|front of house|head of \w+|state of \w+)\b")


def _split_tail(found: tuple[str, ...], text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A phrase's own words and its prepositional tail. "to", "with" and "from" name part of
    an event ("flight to Hamburg", "climbing with Fenna") and stay; "point of sale" is one
    noun."""
    joined = " ".join(found)
    compound = _COMPOUNDS.search(joined)
    if compound is not None:
        whole = compound.group(0).replace(" ", "_")
        own, tail = _split_tail(tuple(joined.replace(compound.group(0), whole).split()), text)
        return tuple(w.replace("_", " ") for w in own), tail
    head: list[str] = []
    for i, word in enumerate(found):
        if word in _PREPOSITION and i > 0:
            rest = found[i + 1 :]
            if word not in ("to", "with", "from") or rest[:1] in (("a",), ("an",), ("the",)):
                return tuple(head), rest  # "the MSc with a merit" is the MSc
            stop = next((j for j, w in enumerate(rest) if w in _PREPOSITION), len(rest))
            return (*head, *rest[:stop]), rest[stop + 1 :]
        head.append(word)
    return tuple(head), ()


_ORG_WORDS = frozenset(
    "labs lab hospital bank ltd inc gmbh group team office ward unit school college university "
    "centre center clinic practice surgery studio agency foods logistics society council "
    "services service api app club church restaurant cafe fonda".split()
)


def _is_name(text: str) -> bool:
    parts = text.split()
    return bool(parts) and all(p[0].isupper() or p.lower() in _CONNECTORS for p in parts)


def _name_kind(text: str) -> str:
    parts = text.split()
    if _TITLE.match(parts[0]) or (len(parts) == 1 and text.lower() not in _ORG_WORDS):
        return "person"
    return "thing" if any(p.lower() in _ORG_WORDS for p in parts) else "name"


_CONNECTORS = frozenset("de da del van von der la le los las el y of the & di du dos das".split())
_NAME_RUN = re.compile(
    r"\b(?:(?:Dr|Dra|Mr|Mrs|Ms|Miss|Sister|Don|Prof) )?[A-Z][\w'&-]*"
    r"(?:\s+(?:(?:de|da|del|van|von|der|la|le|los|las|el|y|of|the|&|di|dos)\s+)*[A-Z0-9][\w'&-]*)*"
)
_COMMON_CAPS = frozenset(
    "i i'm i've we the a my our new from now after at in on this that it its monday tuesday "
    "wednesday thursday friday saturday sunday".split()
)


def name_value(text: str, *, last: bool = False) -> str | None:
    """The first (or ``last``) capitalized name in ``text`` ("Pieter de Wit", "Dr Visser"), as a
    key."""
    found: list[str] = []
    for m in _NAME_RUN.finditer(text):
        run = re.sub(r"^(?:The|A|An|My|Our|New|From|Now|After|At|In|On) ", "", m.group(0))
        if run.lower() not in _COMMON_CAPS:
            found.append(key(run.removesuffix("'s")))
        if found and not last:
            break
    return found[-1] if found else None


def words_value(text: str) -> str:
    """A value made of plain words, as written (not made singular): determiners and qualifiers
    dropped."""
    found = [w.lower() for w in _WORD.findall(cut(text))]
    found = [w for w in found if w not in ("a", "an", "the", "my", "our")]
    while found and found[0] in QUALIFIERS:
        found = found[1:]
    return " ".join(found)
