"""Bad input never crashes and never corrupts: every bad call ends in a
``FivefoldError`` subclass whose message names the offending argument, or in a sane result, and
the store answers a normal remember + recall afterwards."""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import sqlite3
import string
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fivefold
from fivefold import InvalidInput, Memory, NotAFivefoldStore, NotFound, UnsupportedBackend, validate
from fivefold.text import normalize_name

_canary = itertools.count(1)


def assert_store_works(memory: Memory) -> None:
    """A fresh memory with a unique word is stored, counted and recalled first."""
    n = next(_canary)
    before = memory.stats().memories
    record = memory.remember(f"The canary in the aviary{n} sang at dawn")
    assert memory.stats().memories == before + 1
    result = memory.recall(f"aviary{n} canary")
    assert result.hits
    assert result.hits[0].memory.id == record.id
    assert "lexical" in result.hits[0].sources


def assert_rejected(
    call: Callable[[], object], error: type[fivefold.FivefoldError], *names: str
) -> fivefold.FivefoldError:
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, fivefold.FivefoldError)
    for name in names:
        assert name in str(info.value), f"{name!r} not named in {str(info.value)!r}"
    return info.value


def recall_or_rejected(
    call: Callable[[], fivefold.RecallResult], name: str
) -> fivefold.RecallResult | None:
    """A normal result, or ``None`` after a clear ``InvalidInput`` naming ``name``; any other
    exception fails the test."""
    try:
        return call()
    except InvalidInput as exc:
        message = str(exc)
    assert name in message
    return None


def assert_error_or_empty(call: Callable[[], fivefold.RecallResult], name: str) -> None:
    """Either a clear ``InvalidInput`` naming ``name`` or an empty result; nothing else."""
    result = recall_or_rejected(call, name)
    assert result is None or result.hits == ()


# -- recall: queries --------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", " ", "   \t\n  "])
def test_recall_empty_query_is_an_error_or_empty(mem: Memory, query: str) -> None:
    mem.remember("Priya recommended Postgres for Project Kestrel")
    assert_error_or_empty(lambda: mem.recall(query), "query")
    assert_store_works(mem)


FTS_SYNTAX = [
    '"',
    "*",
    "NEAR",
    "AND",
    "OR",
    "NOT",
    "(",
    ")",
    "^",
    ":",
    "-",
    "NEAR(a b, 3)",
    "content:foo",
    "predicate:bar",
    '"unterminated',
    "a AND (b OR",
    '" * ( ) ^ : -',
    "NOT NOT OR AND",
    "-foo* ^bar :baz",
    'NEAR("a" "b", -1)',
    "{content predicate}: foo",
    "'single quotes' and \"double\"",
    "100%",
    "a\\b",
]


@pytest.mark.parametrize("query", FTS_SYNTAX)
def test_recall_fts_syntax_is_data(mem: Memory, query: str) -> None:
    mem.remember("Priya recommended Postgres for Project Kestrel")
    mem.remember("Wire the NEAR sensor to the AND gate")
    result = mem.recall(query)
    assert isinstance(result, fivefold.RecallResult)
    for hit in result.hits:
        assert hit.memory.namespace == "default"
    assert_store_works(mem)


@pytest.mark.parametrize("query", ["NEAR sensor", "AND gate", "NEAR", '"NEAR" AND sensor*'])
def test_memory_with_query_operator_words_is_findable(mem: Memory, query: str) -> None:
    target = mem.remember("Wire the NEAR sensor to the AND gate")
    for content in (
        "Priya recommended Postgres for Project Kestrel",
        "The quarterly report is due on Friday",
        "Sarah prefers tea over coffee in the morning",
    ):
        mem.remember(content)
    result = mem.recall(query)
    assert result.hits[0].memory.id == target.id
    assert "lexical" in result.hits[0].sources


def test_recall_huge_query_returns_quickly(mem: Memory) -> None:
    target = mem.remember("The lighthouse keeper logs ships in a leather notebook")
    rng = random.Random(7)
    words = ["lighthouse", "ocean", "storm", "keeper", "harbor", "tide", "rope", "gull"]
    query = ""
    while len(query) < 100_000 - 20:
        query += rng.choice(words) + f"{rng.randrange(1000)} "
    query = ("lighthouse keeper " + query)[:100_000]
    start = time.perf_counter()
    result = mem.recall(query)
    elapsed = time.perf_counter() - start
    assert elapsed < 5.0
    assert target.id in [h.memory.id for h in result.hits]
    assert_store_works(mem)


def test_recall_beyond_the_size_limit_is_an_error_or_a_result(mem: Memory) -> None:
    mem.remember("The lighthouse keeper logs ships in a leather notebook")
    query = "lighthouse " * 20_000  # 220,000 characters
    result = recall_or_rejected(lambda: mem.recall(query), "query")
    assert result is None or isinstance(result, fivefold.RecallResult)
    assert_store_works(mem)


ODD_TEXT = [
    "Launch party 🚀🎉 for Noor on the rooftop",
    "نور تحب القهوة rooftop عربي",
    "שלום rooftop עולם",
    "family 👩\u200d👩\u200d👧 at the rooftop",
    "rooftop\u200b\u200c\u200d\u2060 zero width",
    "rtl \u202e override \u202c rooftop",
    "combining e\u0301\u0301\u0301 rooftop",
    "\ufeffBOM rooftop \ufffe\uffff",
    "𝔣𝔯𝔞𝔨𝔱𝔲𝔯 rooftop 𝟙𝟚𝟛",
]


@pytest.mark.parametrize("text", ODD_TEXT)
def test_odd_unicode_round_trips(mem: Memory, text: str) -> None:
    record = mem.remember(text)
    assert mem.get(record.id).content == text.strip()
    result = mem.recall(text)
    assert record.id in [h.memory.id for h in result.hits]
    result = mem.recall("rooftop")
    assert record.id in [h.memory.id for h in result.hits]
    assert_store_works(mem)


@pytest.mark.parametrize("query", ["\x00", "a\x00b", "\u200d", "\u202e", "🚀", "\ufeff"])
def test_odd_unicode_queries_return_normally(mem: Memory, query: str) -> None:
    mem.remember("Launch party 🚀 for Noor on the rooftop")
    result = recall_or_rejected(lambda: mem.recall(query), "query")
    assert result is None or isinstance(result, fivefold.RecallResult)
    assert_store_works(mem)


LONE_SURROGATES = ["\ud800", "lone \udfff surrogate", "\udc80\udc81 pair of lows"]


@pytest.mark.parametrize("text", LONE_SURROGATES)
def test_lone_surrogate_content_is_invalid_input(mem: Memory, text: str) -> None:
    before = mem.stats().memories
    assert_rejected(lambda: mem.remember(text), InvalidInput, "content")
    assert mem.stats().memories == before
    assert_store_works(mem)


@pytest.mark.parametrize("text", LONE_SURROGATES)
def test_lone_surrogate_query_is_invalid_input_or_a_result(mem: Memory, text: str) -> None:
    mem.remember("Launch party for Noor on the rooftop")
    result = recall_or_rejected(lambda: mem.recall(text), "query")
    assert result is None or isinstance(result, fivefold.RecallResult)
    assert_store_works(mem)


def test_lone_surrogate_in_names_is_invalid_input(hashing_mem: Memory) -> None:
    assert_rejected(lambda: hashing_mem.alias("Priya Patel", "Pri\ud800"), InvalidInput, "alias")
    assert_rejected(
        lambda: hashing_mem.relate("Sarah Chen", "knows", "Pri\ud800"), InvalidInput, "target"
    )
    assert_rejected(
        lambda: hashing_mem.remember("Sarah met Priya", entities=["Pri\ud800"]),
        InvalidInput,
        "entities",
    )
    assert hashing_mem.stats().memories == 0
    assert_store_works(hashing_mem)


# -- recall: arguments ------------------------------------------------------------------------

BAD_RECALL_ARGS: list[tuple[dict[str, Any], str]] = [
    ({"query": None}, "query"),
    ({"query": 42}, "query"),
    ({"query": b"bytes"}, "query"),
    ({"now": "yesterday"}, "now"),
    ({"now": "2026-13-45"}, "now"),
    ({"now": "not a date"}, "now"),
    ({"now": 1_700_000_000}, "now"),
    ({"types": "opinion"}, "types"),
    ({"types": ["x"]}, "types"),
    ({"types": ["event", "opinion"]}, "types"),
    ({"types": 5}, "types"),
    ({"k": 0}, "k"),
    ({"k": -1}, "k"),
    ({"k": 10_001}, "k"),
    ({"k": 2.5}, "k"),
    ({"k": True}, "k"),
    ({"k": "3"}, "k"),
    ({"k": None}, "k"),
    ({"budget": "extreme"}, "budget"),
    ({"budget": None}, "budget"),
    ({"budget": 3}, "budget"),
    ({"budget": ""}, "budget"),
    ({"namespace": ""}, "namespace"),
    ({"namespace": 7}, "namespace"),
    ({"namespace": "n" * 10_000}, "namespace"),
    ({"user_id": ""}, "user_id"),
    ({"user_id": 5}, "user_id"),
    ({"agent_id": ["a"]}, "agent_id"),
    ({"session_id": 3}, "session_id"),
]


@pytest.mark.parametrize(("kwargs", "name"), BAD_RECALL_ARGS)
def test_recall_bad_argument_is_invalid_input(
    hashing_mem: Memory, kwargs: dict[str, Any], name: str
) -> None:
    hashing_mem.remember("Priya recommended Postgres for Project Kestrel")
    args = {"query": "what did Priya recommend?", **kwargs}
    assert_rejected(lambda: hashing_mem.recall(**args), InvalidInput, name)
    assert_rejected(lambda: hashing_mem.explain(**args), InvalidInput, name)
    assert_store_works(hashing_mem)


def test_explain_unknown_argument_is_invalid_input(hashing_mem: Memory) -> None:
    assert_rejected(lambda: hashing_mem.explain("anything", colour="red"), InvalidInput, "colour")
    assert_store_works(hashing_mem)


# -- remember: arguments ----------------------------------------------------------------------

BAD_REMEMBER_ARGS: list[tuple[dict[str, Any], str]] = [
    ({"content": None}, "content"),
    ({"content": 42}, "content"),
    ({"content": b"bytes"}, "content"),
    ({"content": ""}, "content"),
    ({"content": "  \n\t "}, "content"),
    ({"content": "x" * 100_001}, "content"),
    ({"event_at": "not a date"}, "event_at"),
    ({"event_at": "2026-13-45"}, "event_at"),
    ({"event_at": 1_700_000_000}, "event_at"),
    ({"event_at": ["2026-03-01"]}, "event_at"),
    ({"type": "opinion"}, "type"),
    ({"type": 3}, "type"),
    ({"importance": -0.1}, "importance"),
    ({"importance": 1.5}, "importance"),
    ({"importance": math.nan}, "importance"),
    ({"importance": math.inf}, "importance"),
    ({"importance": "high"}, "importance"),
    ({"importance": True}, "importance"),
    ({"metadata": object()}, "metadata"),
    ({"metadata": {1, 2}}, "metadata"),
    ({"metadata": ["a", "b"]}, "metadata"),
    ({"metadata": {"when": object()}}, "metadata"),
    ({"metadata": {"tags": {"a", "b"}}}, "metadata"),
    ({"metadata": {"score": math.nan}}, "metadata"),
    ({"metadata": {"n": "\ud800"}}, "metadata"),  # stored, it failed every UTF-8 response
    ({"metadata": {"\udfff": 1}}, "metadata"),
    ({"metadata": {"deep": [{"x": "a\ud83d"}]}}, "metadata"),
    ({"metadata": {1: "a", "1": "b"}}, "metadata"),  # one key as JSON: a value lost
    ({"metadata": {"in": {True: 1, "true": 2}}}, "metadata"),
    ({"entities": "Priya"}, "entities"),
    ({"entities": [""]}, "entities"),
    ({"entities": [42]}, "entities"),
    ({"predicate": 5}, "predicate"),
    ({"predicate": "p" * 10_000}, "predicate"),
    ({"namespace": ""}, "namespace"),
    ({"user_id": ""}, "user_id"),
    ({"agent_id": 1}, "agent_id"),
    ({"session_id": ""}, "session_id"),
]


@pytest.mark.parametrize(("kwargs", "name"), BAD_REMEMBER_ARGS)
def test_remember_bad_argument_is_invalid_input(
    hashing_mem: Memory, kwargs: dict[str, Any], name: str
) -> None:
    args = {"content": "Priya recommended Postgres for Project Kestrel", **kwargs}
    assert_rejected(lambda: hashing_mem.remember(**args), InvalidInput, name)
    assert hashing_mem.stats().memories == 0
    assert_store_works(hashing_mem)


def test_remember_many_unknown_field_is_invalid_input(hashing_mem: Memory) -> None:
    error = assert_rejected(
        lambda: hashing_mem.remember_many([{"content": "ok", "colour": "red"}]),
        InvalidInput,
        "colour",
    )
    assert "item 0" in str(error)
    assert hashing_mem.stats().memories == 0
    assert_store_works(hashing_mem)


@pytest.mark.parametrize("item", ["just a string", None, 42, [("content", "x")]])
def test_remember_many_non_dict_item_is_invalid_input(hashing_mem: Memory, item: object) -> None:
    assert_rejected(
        lambda: hashing_mem.remember_many([{"content": "fine"}, item]),  # type: ignore[list-item]
        InvalidInput,
        "item 1",
    )
    assert hashing_mem.stats().memories == 0
    assert_store_works(hashing_mem)


@pytest.mark.parametrize(
    ("bad", "name"),
    [
        ({"importance": 2.0}, "importance"),
        ({"event_at": "2026-13-45"}, "event_at"),
        ({"content": None}, "content"),
        ({"bogus": 1}, "bogus"),
        ({"vector": [1.0, 2.0]}, "vector"),
        ({"vector": [0.0] * 64}, "vector"),
        ({"vector": [math.nan] * 64}, "vector"),
    ],
)
def test_remember_many_with_one_invalid_item_stores_nothing(
    hashing_mem: Memory, bad: dict[str, Any], name: str
) -> None:
    hashing_mem.remember("An earlier memory about gardening")
    before = hashing_mem.stats().memories
    items: list[dict[str, Any]] = [{"content": f"Batch item number{i} ziggurat"} for i in range(5)]
    items[2] = {**items[2], **bad}
    error = assert_rejected(lambda: hashing_mem.remember_many(items), InvalidInput, name)
    assert "item 2" in str(error)
    assert hashing_mem.stats().memories == before
    assert all("ziggurat" not in h.memory.content for h in hashing_mem.recall("ziggurat").hits)
    assert_store_works(hashing_mem)


@pytest.mark.parametrize(
    "bad",
    [
        [0.0] * 64,
        [math.inf] + [1.0] * 63,
        [1.0] * 63,
        "sixty-four",
        [1e309] * 64,
        [10**400] * 64,  # an int past a float's range: OverflowError, not ValueError
    ],
)
def test_one_bad_vector_among_valid_ones_is_named(hashing_mem: Memory, bad: Any) -> None:
    """Every item carries a vector (the bulk path checks them as one array): the bad one is
    still named, and nothing is stored."""
    items: list[dict[str, Any]] = [
        {"content": f"Vector item {i} ziggurat", "vector": [float(i + 1)] + [0.5] * 63}
        for i in range(5)
    ]
    items[2]["vector"] = bad
    error = assert_rejected(lambda: hashing_mem.remember_many(items), InvalidInput, "vector")
    assert "item 2" in str(error)
    assert hashing_mem.stats().memories == 0


def test_remember_many_failing_inside_the_store_stores_nothing(hashing_mem: Memory) -> None:
    # "!!!" passes argument checks but has no letters: the store refuses it mid-transaction,
    # after items 0 and 1 were already written inside it.
    before = hashing_mem.stats()
    items: list[dict[str, Any]] = [
        {"content": f"Ziggurat note {i} with Priya", "entities": ["Priya"]} for i in range(5)
    ]
    items[2]["entities"] = ["!!!"]
    assert_rejected(lambda: hashing_mem.remember_many(items), InvalidInput, "!!!")
    after = hashing_mem.stats()
    assert (after.memories, after.entities, after.edges) == (
        before.memories,
        before.entities,
        before.edges,
    )
    assert hashing_mem.recall("ziggurat").hits == ()
    assert_store_works(hashing_mem)


# -- relate and alias -------------------------------------------------------------------------

BAD_RELATE_ARGS: list[tuple[dict[str, Any], str]] = [
    ({"kind": "friendly"}, "kind"),
    ({"confidence": 2.0}, "confidence"),
    ({"confidence": "sure"}, "confidence"),
    ({"valid_from": "someday"}, "valid_from"),
    ({"valid_to": "2026-13-45"}, "valid_to"),
    ({"valid_from": "2026-03-02", "valid_to": "2026-03-01"}, "valid_to"),
    ({"source": ""}, "source"),
    ({"source": "!!!"}, "source"),
    ({"target": 5}, "target"),
    ({"target": "?!"}, "target"),
    ({"relation": " "}, "relation"),
    ({"namespace": ""}, "namespace"),
    ({"record": "no"}, "record"),  # was taken as True
    ({"record": None}, "record"),
]


@pytest.mark.parametrize(("kwargs", "name"), BAD_RELATE_ARGS)
def test_relate_bad_argument_changes_nothing(
    hashing_mem: Memory, kwargs: dict[str, Any], name: str
) -> None:
    args = {"source": "Sarah Chen", "relation": "reports_to", "target": "Priya Patel", **kwargs}
    source, relation, target = args.pop("source"), args.pop("relation"), args.pop("target")
    before = hashing_mem.stats()
    assert_rejected(
        lambda: hashing_mem.relate(source, relation, target, **args), InvalidInput, name
    )
    after = hashing_mem.stats()
    assert (after.memories, after.entities, after.edges) == (
        before.memories,
        before.entities,
        before.edges,
    )
    assert_store_works(hashing_mem)


@pytest.mark.parametrize(
    ("name", "alias", "offending"),
    [("Priya Patel", "!!!", "alias"), ("Priya Patel", "", "alias"), ("", "Priya", "name")],
)
def test_alias_bad_argument_is_invalid_input(
    hashing_mem: Memory, name: str, alias: str, offending: str
) -> None:
    assert_rejected(lambda: hashing_mem.alias(name, alias), InvalidInput, offending)
    assert_store_works(hashing_mem)


# -- long names and long tokens ----------------------------------------------------------------
# Postgres keys B-tree rows of at most 2,704 bytes, and a row of `memories_session` holds four
# names: names are bounded in bytes as well as characters, and a token is indexed by its first
# 255 characters, so both backends take (and refuse) the same things. Random letters: Postgres
# compresses a repetitive key, which would hide the bound.


def _letters(rng: random.Random, n: int, first: int = 0x4E00, span: int = 3_000) -> str:
    """``n`` random word characters (CJK by default: three bytes each in UTF-8)."""
    return "".join(chr(first + rng.randrange(span)) for _ in range(n))


def test_names_past_512_bytes_are_refused_and_nothing_is_written(hashing_mem: Memory) -> None:
    long = _letters(random.Random(1), 171)  # 171 characters, 513 bytes
    assert len(long) < validate.MAX_SCOPE_CHARS < len(long.encode())
    calls: list[tuple[Callable[[], object], str]] = [
        (lambda: hashing_mem.remember("text", namespace=long), "namespace"),
        (lambda: hashing_mem.remember("text", user_id=long), "user_id"),
        (lambda: hashing_mem.remember("text", agent_id=long), "agent_id"),
        (lambda: hashing_mem.remember("text", session_id=long), "session_id"),
        (lambda: hashing_mem.remember("text", entities=[long]), "entities"),
        (lambda: hashing_mem.remember_many([{"content": "text", "speaker": long}]), "speaker"),
        (lambda: hashing_mem.relate(long, "knows", "Priya"), "source"),
        (lambda: hashing_mem.relate("Sarah", long, "Priya"), "relation"),
        (lambda: hashing_mem.relate("Sarah", "knows", "Priya", user_id=long), "user_id"),
        (lambda: hashing_mem.alias("Priya Patel", long), "alias"),
    ]
    for call, name in calls:
        assert "bytes" in str(assert_rejected(call, InvalidInput, name))
    stats = hashing_mem.stats()
    assert (stats.memories, stats.entities, stats.edges) == (0, 0, 0)
    assert_store_works(hashing_mem)


def test_reads_take_any_name_a_store_may_hold(hashing_mem: Memory) -> None:
    """The byte bound is a write's: a store written before it may hold longer names, and what
    it holds stays readable and forgettable (up to 256 characters, as before)."""
    long = _letters(random.Random(5), 256)  # 768 bytes
    assert hashing_mem.recall("text", namespace=long, user_id=long, session_id=long).hits == ()
    assert hashing_mem.explain("text", namespace=long).hits == ()
    assert hashing_mem.browse(namespace=long, agent_id=long) == []
    assert hashing_mem.stats(namespace=long).memories == 0
    assert_rejected(lambda: hashing_mem.forget(1, namespace=long), NotFound)
    assert_rejected(lambda: hashing_mem.get(1, namespace=long), NotFound)
    assert_rejected(lambda: hashing_mem.recall("text", namespace=long + "x"), InvalidInput)


def test_an_entity_name_whose_key_grows_past_its_bound_is_refused(hashing_mem: Memory) -> None:
    grows = "\ufdfa" * 60  # 180 bytes; normalized, each is a phrase of 33 bytes
    assert len(normalize_name(grows).encode()) > validate.MAX_KEY_BYTES
    for call, name in [
        (lambda: hashing_mem.remember("text", entities=[grows]), "entities"),
        (lambda: hashing_mem.relate(grows, "knows", "Priya"), "source"),
        (lambda: hashing_mem.alias("Priya Patel", grows), "alias"),
    ]:
        assert "normalized" in str(assert_rejected(call, InvalidInput, name))
    assert hashing_mem.stats().memories == 0
    # Hangul spelled out in letters: 510 bytes, 1,530 normalized, within both bounds.
    korean = _letters(random.Random(6), 170, first=0xAC00, span=11_172)
    assert hashing_mem.remember("text", entities=[korean]).entities == (korean,)


def test_a_relation_whose_fact_is_too_long_says_so(hashing_mem: Memory) -> None:
    source, relation, target = "A" * 167, "b" * 167, "C" * 167  # each a valid name
    error = assert_rejected(lambda: hashing_mem.relate(source, relation, target), InvalidInput)
    assert "record=False" in str(error)
    assert hashing_mem.stats().memories == 0
    edge = hashing_mem.relate(source, relation, target, record=False)
    assert edge.relation == relation
    assert hashing_mem.stats().memories == 0


def test_a_nul_in_a_name_is_refused_on_reads_too(hashing_mem: Memory) -> None:
    hashing_mem.remember("the budget review")
    for call, name in [
        (lambda: hashing_mem.recall("budget", session_id="x\x00"), "session_id"),
        (lambda: hashing_mem.recall("budget", namespace="d\x00"), "namespace"),
        (lambda: hashing_mem.remember("text", session_id="s\x00"), "session_id"),
        (lambda: hashing_mem.relate("Sarah", "kno\x00ws", "Priya"), "relation"),
    ]:
        assert "NUL" in str(assert_rejected(call, InvalidInput, name))
    assert hashing_mem.stats().memories == 1


def test_the_longest_names_are_stored_and_found(hashing_mem: Memory) -> None:
    rng = random.Random(2)
    names = [_letters(rng, 170) for _ in range(6)]  # 510 bytes each, incompressible
    assert all(len(name.encode()) <= validate.MAX_NAME_BYTES for name in names)
    namespace, user, agent, session, person, other = names
    record = hashing_mem.remember(
        "The quarterly audit closes on Friday",
        namespace=namespace,
        user_id=user,
        agent_id=agent,
        session_id=session,
        entities=[person],
    )
    hashing_mem.relate(person, "audits", other, namespace=namespace, user_id=user, agent_id=agent)
    hashing_mem.alias(person, _letters(rng, 170), namespace=namespace)
    hits = hashing_mem.recall(
        "quarterly audit", namespace=namespace, user_id=user, agent_id=agent
    ).hits
    assert hits[0].memory.id == record.id
    assert hashing_mem.stats(namespace=namespace).entities == 2


def test_a_long_token_is_stored_and_found_by_it(hashing_mem: Memory) -> None:
    rng = random.Random(3)
    blob = "".join(rng.choice(string.ascii_lowercase) for _ in range(3_000))
    wide = _letters(rng, 1_000)  # 3,000 bytes
    first = hashing_mem.remember(f"attachment {blob} received")
    second = hashing_mem.remember(f"scan {wide} filed")
    hashing_mem.remember("an unrelated note about lunch")
    assert hashing_mem.recall(blob).hits[0].memory.id == first.id
    assert hashing_mem.recall(wide).hits[0].memory.id == second.id
    # A token is its first 255 characters: a query that agrees on those finds the memory.
    assert hashing_mem.recall(blob[:255] + "zzz").hits[0].memory.id == first.id


def test_a_long_capitalized_word_is_not_made_an_entity(hashing_mem: Memory) -> None:
    rng = random.Random(4)
    word = "Z" + "".join(rng.choice(string.ascii_lowercase) for _ in range(3_000))
    record = hashing_mem.remember(f"Met {word} and Priya Patel today")
    assert record.entities == ("Priya Patel",)
    assert hashing_mem.stats().entities == 1
    said = hashing_mem.remember(f"{word}: hello there")  # no speaker that long either
    assert said.speaker is None


# -- ids --------------------------------------------------------------------------------------


@pytest.mark.parametrize("memory_id", [999_999, -1, 0, 2**62])
def test_unknown_id_is_not_found(hashing_mem: Memory, memory_id: int) -> None:
    record = hashing_mem.remember("Something worth keeping")
    assert_rejected(lambda: hashing_mem.get(memory_id), NotFound, str(memory_id))
    assert_rejected(lambda: hashing_mem.forget(memory_id), NotFound, str(memory_id))
    assert hashing_mem.get(record.id) == record
    assert_store_works(hashing_mem)


@pytest.mark.parametrize("memory_id", [2**63, 2**64, -(2**63) - 1, 10**30])
def test_id_beyond_sqlite_integers_is_not_found_or_invalid(
    hashing_mem: Memory, memory_id: int
) -> None:
    hashing_mem.remember("Something worth keeping")
    for call in (lambda: hashing_mem.get(memory_id), lambda: hashing_mem.forget(memory_id)):
        with pytest.raises((NotFound, InvalidInput)):
            call()
    assert hashing_mem.stats().memories == 1
    assert_store_works(hashing_mem)


@pytest.mark.parametrize("memory_id", ["1", 1.0, None, True, [1], b"1"])
def test_non_int_id_is_invalid_input(hashing_mem: Memory, memory_id: object) -> None:
    hashing_mem.remember("Something worth keeping")
    assert_rejected(lambda: hashing_mem.get(memory_id), InvalidInput, "id")  # type: ignore[arg-type]
    assert_rejected(lambda: hashing_mem.forget(memory_id), InvalidInput, "id")  # type: ignore[arg-type]
    assert hashing_mem.stats().memories == 1
    assert_store_works(hashing_mem)


def test_forget_twice_is_not_found(hashing_mem: Memory) -> None:
    record = hashing_mem.remember("Something worth keeping")
    hashing_mem.forget(record.id)
    assert_rejected(lambda: hashing_mem.forget(record.id), NotFound, str(record.id))
    assert_rejected(lambda: hashing_mem.get(record.id), NotFound, str(record.id))
    assert_store_works(hashing_mem)


# -- opening things that are not stores -------------------------------------------------------


def _open(target: object, dim: int = 64) -> Memory:
    return Memory.open(target, embedder=fivefold.HashingEmbedder(dim=dim))  # type: ignore[arg-type]


def assert_fresh_store_works(tmp_path: Path) -> None:
    with _open(tmp_path / "fresh.db") as memory:
        assert_store_works(memory)


def test_open_text_file_is_not_a_store(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just some notes\nnot a database\n", encoding="utf-8")
    assert_rejected(lambda: _open(path), NotAFivefoldStore, str(path))
    assert path.read_text(encoding="utf-8") == "just some notes\nnot a database\n"
    assert_fresh_store_works(tmp_path)


@pytest.mark.parametrize("prefix", [b"", b"SQLite format 3\x00"])
def test_open_random_bytes_is_not_a_store(tmp_path: Path, prefix: bytes) -> None:
    path = tmp_path / "random.db"
    content = prefix + random.Random(3).randbytes(8192)
    path.write_bytes(content)
    assert_rejected(lambda: _open(path), NotAFivefoldStore, str(path))
    assert path.read_bytes() == content
    assert_fresh_store_works(tmp_path)


def test_open_other_sqlite_database_is_not_a_store_and_leaves_it_alone(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO users (name) VALUES ('ada')")
    conn.commit()
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    conn.close()
    error = assert_rejected(lambda: _open(path), NotAFivefoldStore, str(path))
    assert "users" in str(error)
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        assert tables == ["users"]
        assert conn.execute("SELECT name FROM users").fetchall() == [("ada",)]
        # Opening someone else's database by mistake must not convert it to WAL.
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == mode
    finally:
        conn.close()
    assert_fresh_store_works(tmp_path)


def test_open_fifo_or_device_is_not_a_store(tmp_path: Path) -> None:
    """A FIFO or /dev/null as a store was told it was "an empty file: delete it"."""
    fifo = tmp_path / "pipe.db"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/null")):
        error = assert_rejected(lambda: _open(path), NotAFivefoldStore, str(path))  # noqa: B023
        assert "not a regular file" in str(error)
    assert fifo.exists()
    assert_fresh_store_works(tmp_path)


def test_sqlalchemys_in_memory_url_makes_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sqlite:///:memory:`` made a file named ``/:memory:`` (cwd-relative spellings in cwd)."""
    monkeypatch.chdir(tmp_path)
    for url in ("sqlite:///:memory:", "sqlite://:memory:", ":memory:"):
        with _open(url) as memory:
            assert_store_works(memory)
    assert not Path("/:memory:").exists()
    assert list(tmp_path.iterdir()) == []


def test_open_directory_is_not_a_store(tmp_path: Path) -> None:
    folder = tmp_path / "a_folder"
    folder.mkdir()
    assert_rejected(lambda: _open(folder), NotAFivefoldStore, str(folder))
    assert list(folder.iterdir()) == []
    assert_fresh_store_works(tmp_path)


def test_open_with_another_embedding_model_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with _open(path, dim=64) as memory:
        record = memory.remember("Priya recommended Postgres for Project Kestrel")
    error = assert_rejected(
        lambda: _open(path, dim=32),
        fivefold.EmbeddingModelMismatch,
        "hashing-bow-64",
        "hashing-bow-32",
    )
    assert isinstance(error, fivefold.StoreError)
    with _open(path, dim=64) as memory:
        assert memory.recall("Postgres Kestrel").hits[0].memory.id == record.id
        assert_store_works(memory)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://user:secret@127.0.0.1:1/memories?connect_timeout=3",
        "postgres://127.0.0.1:1/db?connect_timeout=3",
    ],
)
def test_an_unreachable_postgres_is_a_clear_store_error(tmp_path: Path, url: str) -> None:
    error = assert_rejected(lambda: _open(url), fivefold.StoreError, "cannot open the store")
    assert "127.0.0.1" in str(error)
    assert "secret" not in str(error)
    assert_fresh_store_works(tmp_path)


@pytest.mark.parametrize("url", ["foo://x", "mysql://db/x", "http://example.com/memory"])
def test_open_unknown_url_scheme_is_unsupported(tmp_path: Path, url: str) -> None:
    scheme = url.split("://")[0]
    error = assert_rejected(lambda: _open(url), UnsupportedBackend, repr(scheme))
    assert "sqlite:///" in str(error)
    assert_fresh_store_works(tmp_path)


@pytest.mark.parametrize("target", [42, 3.5, ["store.db"], {"path": "store.db"}])
def test_open_non_path_target_is_invalid_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: object
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(fivefold.FivefoldError):
        _open(target).close()
    assert os.listdir(tmp_path) == []


# -- a failed write never damages the file -----------------------------------------------------


def test_store_file_stays_readable_after_failed_writes(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with _open(path) as memory:
        kept = memory.remember_many(
            [
                {"content": "Priya recommended Postgres for Project Kestrel"},
                {"content": "The lighthouse keeper logs ships in a notebook"},
            ]
        )
        failures: list[Callable[[], object]] = [
            lambda: memory.remember_many(
                [{"content": "half written ziggurat"}, {"content": "x", "entities": ["!!!"]}]
            ),
            lambda: memory.remember_many([{"content": "ziggurat"}, {"content": "y", "type": "z"}]),
            lambda: memory.relate("Sarah", "knows", "ziggurat", valid_to="never"),
            lambda: memory.alias("Priya", "!!!"),
            lambda: memory.forget(10**6),
        ]
        for failing in failures:
            with pytest.raises(fivefold.FivefoldError):
                failing()
        assert memory.stats().memories == 2
    with _open(path) as reopened:
        assert reopened.stats().memories == 2
        assert all("ziggurat" not in h.memory.content for h in reopened.recall("ziggurat").hits)
        assert reopened.recall("Postgres Kestrel").hits[0].memory.id == kept[0].id
        assert reopened.recall("lighthouse keeper").hits[0].memory.id == kept[1].id
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        finally:
            conn.close()
        assert_store_works(reopened)


@pytest.mark.parametrize("items", [1.5, "text", b"x", {"content": "a dict, not a list"}, None])
def test_remember_many_refuses_what_is_not_a_list_of_dicts(
    hashing_mem: fivefold.Memory, items: object
) -> None:
    with pytest.raises(fivefold.InvalidInput, match="items must be a list"):
        hashing_mem.remember_many(items)  # type: ignore[arg-type]
    assert hashing_mem.stats().memories == 0


@pytest.mark.parametrize("scale", [1e-30, 1e30, 1e300])
def test_huge_and_tiny_vectors_are_normalised_not_zeroed(
    hashing_mem: fivefold.Memory, scale: float
) -> None:
    vector = [scale] * hashing_mem.embedder.dim
    record = hashing_mem.remember_many([{"content": "scaled", "vector": vector}])[0]
    stored = hashing_mem.store.search.vectors("default", [record.id])[record.id]
    assert abs(float((stored**2).sum()) - 1.0) < 1e-5
    assert stored[0] > 0


@pytest.mark.parametrize("vector", [["a"] * 64, [[1.0, 2.0]], [1e400] * 64, "abc"])
def test_a_vector_that_is_not_numbers_is_refused(
    hashing_mem: fivefold.Memory, vector: object
) -> None:
    with pytest.raises(fivefold.InvalidInput, match="vector"):
        hashing_mem.remember_many([{"content": "x", "vector": vector}])
    assert hashing_mem.stats().memories == 0


@pytest.mark.parametrize(
    "when",
    [
        "0001-01-01T00:00:00+14:00",  # year 0 in UTC
        "9999-06-01T00:00:00+00:00",
        "9998-12-31T23:00:00-05:00",  # 9999 in UTC
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))),
    ],
)
def test_dates_off_the_supported_calendar_are_refused_before_writing(
    hashing_mem: fivefold.Memory, when: object
) -> None:
    with pytest.raises(fivefold.InvalidInput, match="years 1 to 9998"):
        hashing_mem.remember("launch party", event_at=when)
    with pytest.raises(fivefold.InvalidInput, match="years 1 to 9998"):
        hashing_mem.remember_many([{"content": "ok"}, {"content": "x", "created_at": when}])
    assert hashing_mem.stats().memories == 0
    with pytest.raises(fivefold.InvalidInput, match="now"):
        hashing_mem.recall("anything", now=when)  # type: ignore[arg-type]


FIRST, LAST = "0001-01-01T00:00:00+00:00", "9998-12-31T00:00:00+00:00"


@pytest.mark.parametrize(
    ("created", "now", "text", "query"),
    [
        (
            "0001-01-01T00:00:00+00:00",
            "0001-01-03T00:00:00+00:00",
            "yesterday I met Ana",
            "what did I do yesterday?",
        ),
        (
            "9998-12-31T00:00:00+00:00",
            "9998-12-31T12:00:00+00:00",
            "next week I fly to Oslo",
            "what happens next week?",
        ),
        (
            "0001-01-01T00:00:00+00:00",
            "0001-01-01T00:00:00+00:00",
            "a few months ago I moved",
            "what did I do recently?",
        ),
    ],
)
def test_date_arithmetic_at_the_ends_of_the_calendar_never_overflows(
    hashing_mem: fivefold.Memory, created: str, now: str, text: str, query: str
) -> None:
    record = hashing_mem.remember_many([{"content": text, "created_at": created}])[0]
    assert hashing_mem.get(record.id).content == text
    for phrase in (query, "what happens next week?", "what did I do yesterday?", "last year"):
        hashing_mem.recall(phrase, now=now)
        hashing_mem.explain(phrase, now=now)


def test_metadata_depth_and_size_are_bounded(hashing_mem: fivefold.Memory) -> None:
    deep: dict[str, object] = {}
    node = deep
    for _ in range(10_000):  # json and recursive walks would overflow the stack on this
        node["a"] = {}
        node = node["a"]  # type: ignore[assignment]
    with pytest.raises(InvalidInput, match="nested more than 32"):
        hashing_mem.remember("x", metadata=deep)
    with pytest.raises(InvalidInput, match="65,536"):
        hashing_mem.remember("x", metadata={"blob": "y" * 70_000})
    assert hashing_mem.remember("x", metadata={"a": [[[{"b": 1}]]]}).metadata == {
        "a": [[[{"b": 1}]]]
    }
    assert hashing_mem.stats().memories == 1


def test_a_refused_batch_names_the_item(hashing_mem: fivefold.Memory) -> None:
    with pytest.raises(InvalidInput) as refused:
        hashing_mem.remember_many(
            [{"content": "ok"}, {"content": "ok"}, {"content": "x", "vector": [1.0]}]
        )
    assert refused.value.item == 2
    assert hashing_mem.stats().memories == 0


def test_one_memory_refused_is_not_named_as_a_batch_item(hashing_mem: Memory) -> None:
    """``remember`` writes a batch of one: its refusal does not say "item 0"."""
    with pytest.raises(InvalidInput) as caught:
        hashing_mem.remember("x", metadata={"score": math.nan})
    assert "item 0" not in str(caught.value)
    assert "metadata" in str(caught.value)
    with pytest.raises(InvalidInput) as caught:
        hashing_mem.remember("a\x00b")
    assert str(caught.value).startswith("content contains a NUL character")
    with pytest.raises(InvalidInput) as many:
        hashing_mem.remember_many([{"content": "fine"}, {"content": "a\x00b"}])
    assert str(many.value).startswith("item 1: content contains a NUL character")
    assert many.value.item == 1
    assert hashing_mem.stats().memories == 0


@pytest.mark.parametrize(
    ("item", "name"),
    [
        ({"content": "rooftop with a NUL \x00 inside"}, "content"),
        ({"content": "\x00rooftop\x00"}, "content"),
        ({"content": "the rooftop party", "predicate": "held\x00on"}, "predicate"),
        ({"content": "the rooftop party", "metadata": {"where": "roof\x00top"}}, "metadata"),
        ({"content": "the rooftop party", "metadata": {"wh\x00ere": "roof"}}, "metadata"),
    ],
)
def test_a_nul_in_stored_text_is_refused_on_every_backend(
    hashing_mem: Memory, item: dict[str, Any], name: str
) -> None:
    """SQLite stored a NUL that Postgres refused: a store's choice of backend decided whether
    a write was taken (and a copy to Postgres then refused the whole store)."""
    hashing_mem.remember("the rooftop party is on Friday")
    error = assert_rejected(lambda: hashing_mem.remember(**item), InvalidInput, name, "NUL")
    assert str(error).startswith(f"{name} contains a NUL character")
    assert_rejected(
        lambda: hashing_mem.remember_many([{"content": "fine"}, item]), InvalidInput, "item 1"
    )
    assert hashing_mem.stats().memories == 1


def test_an_import_skips_a_record_the_store_refuses(hashing_mem: Memory, tmp_path: Path) -> None:
    """A record refused (a NUL character) is skipped, not the whole import failed, on every
    backend."""
    from fivefold.cli.importers import import_file

    lines = [{"content": f"note {n} on the Kestrel budget"} for n in range(5)]
    lines[2] = {"content": "a NUL \x00 here"}
    path = tmp_path / "notes.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    report = import_file(lambda: hashing_mem, path, on_error="skip", batch_size=10)
    assert report.imported == 4
    assert [where for where, _ in report.skipped] == ["line 3"]
    assert "NUL" in report.skipped[0][1]
    assert hashing_mem.stats().memories == 4


def test_a_batch_of_given_vectors_is_normalised_as_each_alone() -> None:
    """A bulk write normalises its given vectors in a few array operations; each row must be
    bit for bit what one ``remember`` of it stores (the same searches either way). Scales from
    1e-300 to 1e300: without the scaling first, a norm overflows or underflows. (Sums in
    another order agree here too: the float32 cast hides their last float64 bits.)"""
    from fivefold.write.vectors import unit_vector as _unit_vector
    from fivefold.write.vectors import unit_vectors as _unit_vectors

    rng = np.random.default_rng(7)
    for _ in range(20):
        n, dim = int(rng.integers(1, 400)), int(rng.choice([3, 384]))
        raws = rng.standard_normal((n, dim)) * 10.0 ** rng.uniform(-300, 300, size=(n, 1))
        batch = _unit_vectors(list(raws), dim, list(range(n)))
        alone = np.array([_unit_vector(r, dim, p) for p, r in enumerate(raws)])
        assert np.array_equal(batch, alone)


def test_an_alias_with_no_letters_is_named_first(hashing_mem: Memory) -> None:
    """Checked before the store (``alias_of``) in the store's own order: the alias first."""
    with pytest.raises(InvalidInput, match=r"alias '---' has no letters or digits"):
        hashing_mem.alias("!!!", "---")
    with pytest.raises(InvalidInput, match=r"entity name '!!!' has no letters or digits"):
        hashing_mem.alias("!!!", "Rob")


def test_numpy_scalars_are_numbers_and_numpy_bools_are_not() -> None:
    """``k=np.int64(3)``, ``importance=np.float32(0.5)`` and numpy ids were refused (a hostile
    pass's find: values taken from the caller's own arrays)."""
    import numpy as np

    with Memory.open(":memory:", embedder=fivefold.HashingEmbedder()) as memory:
        made = memory.remember("a note about coffee", importance=np.float32(0.5))
        assert (made.importance, type(made.importance)) == (0.5, float)
        result = memory.recall("coffee", k=np.int64(3))
        assert [h.memory.id for h in result.hits] == [made.id]
        assert memory.get(np.int64(made.id)).id == made.id
        memory.feedback(result.recall_id, relevant=[np.uint32(made.id)])
        for bad in (np.bool_(True), True):
            with pytest.raises(InvalidInput, match="must be an integer"):
                memory.recall("coffee", k=bad)
        memory.forget(np.int32(made.id))
        assert memory.stats().memories == 0


@pytest.mark.parametrize(
    "invisible",
    ["\u200b", "\ufeff\u200b \u200d", "\u200e\u2060\x07", " \t\u00ad", "\u3164\u2800\ufe0f"],
)
def test_text_of_invisible_characters_alone_is_refused(mem: Memory, invisible: str) -> None:
    """Zero-width spaces, a byte order mark, direction marks: nothing to read and nothing any
    leg could match, stored as a memory."""
    before = mem.stats().memories
    assert_rejected(lambda: mem.remember(invisible), InvalidInput, "content", "invisible")
    assert_rejected(lambda: mem.recall(invisible), InvalidInput, "query", "invisible")
    assert mem.stats().memories == before
    assert mem.remember(f"zero\u200bwidth inside words {invisible} is kept").id
    assert_store_works(mem)


@pytest.mark.parametrize("huge", [10**400, 10**5000], ids=["400 digits", "5000 digits"])
def test_an_integer_past_a_floats_range_is_refused_as_any_out_of_range_number(huge: int) -> None:
    with fivefold.Memory.open(":memory:", embedder=fivefold.HashingEmbedder()) as memory:
        with pytest.raises(fivefold.InvalidInput, match=r"importance must be in \[0, 1\]"):
            memory.remember("x", importance=huge)
        assert memory.stats().memories == 0
