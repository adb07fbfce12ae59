"""The write path's offline inference: entities, type, predicate, and ``prepare``."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fivefold
from fivefold.errors import InvalidInput
from fivefold.extract import extract_entities, infer_predicate, infer_type
from fivefold.text import normalize_name
from fivefold.types import MemoryType, Scope
from fivefold.write.prepare import check, prepare

NOW = datetime(2026, 3, 20, 17, 0, tzinfo=UTC)
KNOWN = {
    "priya": "Priya Patel",
    "priya patel": "Priya Patel",
    "kestrel": "Project Kestrel",
    "project kestrel": "Project Kestrel",
    "may": "May Lee",
    "may lee": "May Lee",
    "tom": "Tom Baker",
    "tom baker": "Tom Baker",
}

ENTITIES = [
    # (text, known names?, expected entities)
    (
        "Yesterday Sarah Chen met Priya Patel in Berlin",
        False,
        ["Sarah Chen", "Priya Patel", "Berlin"],
    ),
    ("Inbox3 shipped the new filter", False, ["Inbox3"]),
    ("We talked about Project Kestrel today", False, ["Project Kestrel"]),
    ("Caroline: I went to the support group", False, ["Caroline"]),
    ("Melanie's daughter painted a lake", False, ["Melanie"]),
    ("I talked to Priya's manager", False, ["Priya"]),
    ("Today I talked to Bob", False, ["Bob"]),
    ("Met the Sarah Chen team", False, ["Sarah Chen"]),
    ("Set up the build server", False, []),
    ("Thanks! That sounds great.", False, []),
    ("Monday we met with Marcus", False, ["Marcus"]),
    ("The API and the PDF are done", False, []),
    ("My badge ID is 47821.", False, []),
    ("I bought a new iPhone", False, ["iPhone"]),
    ("We migrated the service to gRPC", False, ["gRPC"]),
    ("I met Sarah Chen and Priya Patel", False, ["Sarah Chen", "Priya Patel"]),
    ("We hiked with Caroline and Melanie", False, ["Caroline", "Melanie"]),
    ("Procter & Gamble called", False, ["Procter & Gamble"]),
    ("Bank of America called me", False, ["Bank of America"]),
    ("priya said the build is green", True, ["Priya Patel"]),
    (
        "Priya recommended Postgres for Kestrel",
        True,
        ["Priya Patel", "Project Kestrel", "Postgres"],
    ),
    ("I asked Priya Patel", True, ["Priya Patel"]),
    ("we can meet in may", True, []),
    ("I met Tom at the tom yum place", True, ["Tom Baker"]),
    # A sentence opener, a field label or a short ordinary word in capitals is no part of a name.
    ("Besides Italy, we went to Spain with Priya.", False, ["Italy", "Spain", "Priya"]),
    ("Luckily Marco fixed it.", False, ["Marco"]),
    ("Name: Priya Patel", False, ["Priya Patel"]),
    ("I play CS:GO with Marco every night.", False, ["Marco"]),
    # A note that opens with a verb in the past: the verb is no part of the name.
    ("Helped Sanna move her sofa.", False, ["Sanna"]),
    ("Renewed the CR-V insurance.", False, ["CR-V"]),
    ("Took Biscuit to the vet.", False, ["Biscuit"]),
    ("Watched the Raptors lose at home.", False, ["Raptors"]),
    # Names that open with such a word keep it.
    ("United Airlines lost my bag.", False, ["United Airlines"]),
    ("Led Zeppelin played all night.", False, ["Led Zeppelin"]),
    ("Red Sox won again.", False, ["Red Sox"]),
    # Weekdays said as a habit are no names.
    ("Fridays I swim with Ana.", False, ["Ana"]),
    # An owner and the thing they own are two names, not one.
    ("Kofi's Lakeshore badge expires in May.", False, ["Kofi", "Lakeshore"]),
]


@pytest.mark.parametrize(("text", "use_known", "expected"), ENTITIES)
def test_extract_entities(text: str, use_known: bool, expected: list[str]) -> None:
    found = extract_entities(text, KNOWN if use_known else None)
    assert sorted(found) == sorted(expected)


def test_extracted_entities_are_deduplicated_by_normalized_form() -> None:
    found = extract_entities("Sarah Chen said hi. Later SARAH CHEN and sarah chen left.")
    assert [normalize_name(n) for n in found].count("sarah chen") == 1


def test_known_alias_maps_to_canonical_name() -> None:
    found = extract_entities("Lunch with Priya, then Tom Baker", KNOWN)
    assert sorted(found) == ["Priya Patel", "Tom Baker"]


@given(st.text(max_size=300))
def test_extraction_is_total_and_returns_distinct_names(text: str) -> None:
    found = extract_entities(text, KNOWN)
    keys = [normalize_name(n) for n in found]
    assert all(keys)
    assert len(keys) == len(set(keys))


# Names that open with a Latin capital outside A-Z: ``[A-Z]`` found none of them.
NON_ASCII_NAMES = [
    ("Yesterday I met Élodie Durand in Lyon", ["Élodie Durand", "Lyon"]),
    ("We visited Østergaard's farm", ["Østergaard"]),
    ("I asked Łukasz about the release", ["Łukasz"]),
    ("Lunch with Ángel, Çelik and Şahin", ["Ángel", "Çelik", "Şahin"]),
    ("The note from Ödön mentions Ñuñez", ["Ödön", "Ñuñez"]),
    ("Élodie moved to Lyon", ["Élodie", "Lyon"]),  # a lone opener no dictionary has, as Priya
    ("Then ǅemal arrived", ["ǅemal"]),  # a titlecase letter (Lt) opens a name too
    (unicodedata.normalize("NFD", "I met Élodie"), ["Élodie"]),
    ("Élodie: I moved to Lyon", ["Élodie", "Lyon"]),
]


@pytest.mark.parametrize(("text", "expected"), NON_ASCII_NAMES)
def test_a_name_may_open_with_any_latin_capital(text: str, expected: list[str]) -> None:
    assert sorted(extract_entities(text)) == sorted(expected)


# Only Lu and Lt letters are capitals: lowercase words of any script, and scripts without case,
# open no name (a class of every letter would pass the tests above, and fail these).
@pytest.mark.parametrize(
    "text",
    [
        "мы ходили в кино и ели попкорн",
        "él está en la ciudad con ñandú",
        "我和小明去了北京",
        "ذهبت إلى المكتبة مع أحمد",
        "मैं कल दिल्ली गया",
        "ฉันไปตลาดกับสมชาย",
    ],
)
def test_words_without_a_capital_are_no_names(text: str) -> None:
    assert extract_entities(text) == []


# Capitals of other scripts open no name: the rules that tell a name from a capitalized
# ordinary word are English, and Russian text made entities of "Вчера" (yesterday), "Важно"
# (important), the polite "Вы", found again in every later text of the word.
@pytest.mark.parametrize(
    "text",
    [
        "— Вчера мы ходили в кино, — сказал он.",
        "Важно: позвонить врачу до пятницы.",
        "Спасибо, что Вы пришли",
        "Χθες ήμασταν στο σπίτι· Σήμερα όχι.",
        "Արամը գնաց տուն։ Մենք գնացինք Երևան։",
        "We saw 𝐁𝐑𝐄𝐀𝐊𝐈𝐍𝐆 𝐍𝐄𝐖𝐒 today",  # mathematical capitals: not letters of a name
    ],
)
def test_capitals_of_other_scripts_open_no_name(text: str) -> None:
    assert extract_entities(text) == []


def test_a_known_name_of_another_script_is_found() -> None:
    known = {normalize_name("Андрей Петров"): "Андрей Петров"}
    assert extract_entities("Андрей Петров приехал вчера", known) == ["Андрей Петров"]


def test_caseless_text_around_a_name_adds_no_names() -> None:
    assert extract_entities("我在北京见了 Priya 和 Élodie") == ["Priya", "Élodie"]


def _latin(c: str) -> bool:
    return unicodedata.name(c, "").startswith("LATIN")


_CAPITAL = st.characters(categories=("Lu", "Lt"), min_codepoint=0x80).filter(_latin)
_LOWER = st.text(st.characters(categories=("Ll",)), min_size=1, max_size=12)


@given(_CAPITAL, _LOWER)
def test_any_latin_capitalized_word_mid_sentence_is_a_name(capital: str, rest: str) -> None:
    name = unicodedata.normalize("NFC", capital + rest)
    assert name in extract_entities(f"We met {capital}{rest} at noon.")


@pytest.mark.slow
@given(st.lists(st.text(st.characters(categories=("Ll", "Lo", "Lm")), min_size=1), max_size=8))
def test_words_with_no_capital_are_never_names(words: list[str]) -> None:
    assert extract_entities(" ".join(words)) == []


def test_a_remembered_non_ascii_name_is_an_entity_recall_resolves(
    hashing_mem: fivefold.Memory,
) -> None:
    record = hashing_mem.remember("Élodie: I moved to Lyon last spring")
    given = hashing_mem.remember(
        "I met Андрей Петров at the conference", entities=["Андрей Петров"]
    )
    hashing_mem.remember("The build server moved to a new rack")
    assert record.entities == ("Élodie", "Lyon")
    assert record.speaker == "Élodie"
    result = hashing_mem.recall("where did Élodie move?")
    assert [r.name for r in result.query.entity_refs] == ["Élodie"]
    assert result.hits[0].memory.id == record.id
    # A name of another script is not extracted, but one given is known from then on.
    later = hashing_mem.remember("Андрей Петров прислал отчёт")
    assert later.entities == given.entities == ("Андрей Петров",)
    refs = hashing_mem.recall("what did Андрей Петров say?").query.entity_refs
    assert [r.name for r in refs] == ["Андрей Петров"]


TYPES = [
    # (content, has_event_date, expected)
    ("I prefer dark mode in every editor", False, MemoryType.PREFERENCE),
    ("My favorite coffee is a flat white", False, MemoryType.PREFERENCE),
    ("I can't stand meetings before 10am", False, MemoryType.PREFERENCE),
    ("My default shell is configured to zsh", False, MemoryType.PREFERENCE),
    ("I prefer tea; I went to Berlin yesterday", True, MemoryType.PREFERENCE),
    ("I went to Berlin for the offsite", False, MemoryType.EVENT),
    ("We shipped Kestrel 1.0", False, MemoryType.EVENT),
    ("Dinner with Ana on March 3rd", True, MemoryType.EVENT),
    ("Sarah Chen is the engineering manager", False, MemoryType.ENTITY),
    ("Priya leads the platform team", False, MemoryType.ENTITY),
    ("Kestrel is written in Rust", False, MemoryType.ENTITY),
    ("Élodie leads the design team", False, MemoryType.ENTITY),
    ("Andrzej Łukasiewicz is a logician", False, MemoryType.ENTITY),
    ("My badge ID is 47821.", False, MemoryType.FACT),
    ("The office wifi password is hunter2", False, MemoryType.FACT),
    ("I is a pronoun", False, MemoryType.FACT),
    ("the standup happens every day at 9", False, MemoryType.FACT),
]


@pytest.mark.parametrize(("content", "dated", "expected"), TYPES)
def test_infer_type(content: str, dated: bool, expected: MemoryType) -> None:
    assert infer_type(content, has_event_date=dated) is expected


@pytest.mark.parametrize(
    ("content", "predicate"),
    [
        ("My badge ID is 47821.", "badge ID is 47821"),
        (
            "our staging URL is https://staging.example.com",
            "staging URL is https://staging.example.com",
        ),
        ("Her employee number: E-1234", "employee number is E-1234"),
        ("The user's home city is Lisbon", "home city is Lisbon"),
        ("Priya recommended Postgres", None),
        ("The build is green", None),
    ],
)
def test_infer_predicate(content: str, predicate: str | None) -> None:
    assert infer_predicate(content) == predicate


def test_event_without_a_date_happens_when_it_was_said() -> None:
    memory = prepare(
        {"content": "I went to Berlin for the offsite"},
        known={},
        now=NOW,
        default_importance=0.5,
        max_entities=64,
    )
    assert memory.type is MemoryType.EVENT
    assert memory.event_at == memory.created_at == NOW


def test_event_date_in_text_is_read_relative_to_created_at() -> None:
    created = datetime(2025, 6, 10, 9, 0, tzinfo=UTC)
    memory = prepare(
        {"content": "I went to Berlin yesterday", "created_at": created},
        known={},
        now=NOW,
        default_importance=0.5,
        max_entities=64,
    )
    assert memory.type is MemoryType.EVENT
    assert memory.created_at == created
    assert memory.event_at == datetime(2025, 6, 9, tzinfo=UTC)


def test_fact_has_no_event_date() -> None:
    memory = prepare(
        {"content": "My badge ID is 47821."},
        known={},
        now=NOW,
        default_importance=0.5,
        max_entities=64,
    )
    assert memory.type is MemoryType.FACT
    assert memory.event_at is None
    assert memory.predicate == "badge ID is 47821"
    assert memory.importance == 0.5
    assert memory.scope == Scope()


def test_explicit_fields_win_over_inference() -> None:
    memory = prepare(
        {
            "content": "I like tea. My badge ID is 47821. Priya said hi.",
            "type": "event",
            "predicate": "drinks tea",
            "entities": ["Sarah Chen"],
            "event_at": "2025-01-02T03:04:05Z",
            "importance": 0.9,
            "namespace": "work",
            "user_id": "u1",
        },
        known=KNOWN,
        now=NOW,
        default_importance=0.5,
        max_entities=64,
    )
    assert memory.type is MemoryType.EVENT
    assert memory.predicate == "drinks tea"
    assert memory.entities == ("Sarah Chen",)
    assert memory.event_at == datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert memory.importance == 0.9
    assert memory.scope == Scope("work", "u1", None)


def test_explicit_type_event_with_no_date_gets_created_at() -> None:
    memory = prepare(
        {"content": "I like tea", "type": "event"},
        known={},
        now=NOW,
        default_importance=0.5,
        max_entities=64,
    )
    assert memory.type is MemoryType.EVENT
    assert memory.event_at == NOW


def test_explicit_fact_with_event_date_keeps_it() -> None:
    memory = prepare(
        {"content": "Sarah leads QA", "type": "fact", "event_at": "2025-01-02"},
        known={},
        now=NOW,
        default_importance=0.5,
        max_entities=64,
    )
    assert memory.type is MemoryType.FACT
    assert memory.event_at == datetime(2025, 1, 2, tzinfo=UTC)


def test_prepare_maps_known_names_to_canonical() -> None:
    memory = prepare(
        {"content": "priya reviewed the kestrel design"},
        known=KNOWN,
        now=NOW,
        default_importance=0.5,
        max_entities=64,
    )
    assert sorted(memory.entities) == ["Priya Patel", "Project Kestrel"]


@pytest.mark.parametrize(
    "item",
    [
        {"content": "hi", "colour": "red"},
        {"content": "   "},
        {"content": "hi", "type": "opinion"},
        {"content": "hi", "importance": 1.5},
        {"content": "hi", "event_at": "not a date"},
    ],
)
def test_prepare_rejects_bad_items(item: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        prepare(item, known={}, now=NOW, default_importance=0.5, max_entities=64)


def test_a_name_past_the_name_bounds_is_not_an_entity() -> None:
    capitalized = "Z" + "q" * 300  # a blob, not a name: no store could key it as one
    codename = "b" + "Q" * 600
    assert extract_entities(f"Met {capitalized} and {codename} with Priya Patel") == ["Priya Patel"]
    assert extract_entities("Met Z" + "q" * 200 + " today") == ["Z" + "q" * 200]


def _check_items(dim: int) -> list[object]:
    return [
        {"content": "fine"},
        {"content": ""},
        {"content": "x", "importance": 1},
        {"content": "x", "importance": 1.5},
        {"content": "x", "event_at": datetime(2026, 1, 1)},
        {"content": "x", "event_at": "soonish"},
        {"content": "x", "entities": ("Ann", "Bob")},
        {"content": "x", "entities": ["!!!"]},
        {"content": "x", "metadata": {"a": {"b": [1, 2]}}},
        {"content": "x", "metadata": [1]},
        {"content": "x", "vector": np.ones(dim)},
        {"content": "x", "vector": np.ones((1, dim))},
        {"content": "x", "vector": [1.0] * (dim - 1)},
        {"content": "x", "vector": [0.0] * dim},
        {"content": "x", "vector": ["a"] * dim},
        {"content": "x", "colour": "red"},
        ["not", "a", "dict"],
    ]


def test_check_refuses_what_remember_many_refuses(hashing_mem: fivefold.Memory) -> None:
    """``check`` (run before a store is opened) agrees with the write, item by item: a false
    refusal would keep a good memory out, a false pass would make an empty store."""
    dim = hashing_mem.embedder.dim
    for item in _check_items(dim):
        try:
            check(item, max_entities=64, dim=dim)
            checked = True
        except InvalidInput:
            checked = False
        try:
            hashing_mem.remember_many([item])  # type: ignore[list-item]
            written = True
        except InvalidInput:
            written = False
        assert checked == written, item
