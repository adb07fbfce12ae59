"""Words written with combining marks (the vowel signs of Devanagari, Tamil, Thai) are whole
terms and whole entity keys on both backends; a store that indexed them split apart is brought
up to date when it opens (SQLite schema 7, Postgres schema 8)."""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.store.test_context import as_schema_7

import fivefold
from fivefold import text
from fivefold.config import Config, OptimizerConfig, OptimizerMode
from fivefold.store.shared import tokens
from fivefold.store.shared.tokens import Tokenizer

OFF = Config(optimizer=OptimizerConfig(mode=OptimizerMode.OFF))
# "Time", "total" and "fort": the three were one term ("क ल") and one entity key before.
KAAL, KUL, KILA = "काल", "कुल", "किला"
TURNS = [f"{KAAL} ने {KILA} देखा", f"हम {KUL} तीन लोग थे", "वणக்கம் தமிழ் நாடு", "สวัสดี ครับ"]


# Words of seven scripts, decomposed accents, ligatures, keycaps, variation selectors, lone marks,
# an emoji newer than FTS5's Unicode 6.1, an ß, capitals whose small letters came after it, a
# soft hyphen, an emoji's selector before a name, a tatweel (no stop word: every word is a query
# term).
PIECES = [KAAL, KUL, KILA, "हूँ", "क्ष", "தமிழ்", "நாடு", "สวัสดี", "ไม่", "ビール", "Ῥόδος", "café",
          "cafe\u0301", "naïve", "ﬁne", "Zoë", "كَتَبَ", "שָׁלוֹם", "x\u20dd", "7\ufe0f\u20e3",
          "葛\U000e0100城", "\u0301", "B-7", "runs", "42", "Ａｂｃ", "½", "Straße", "ΟΔΟΣ",
          "pizza🥰", "ᏣᎳᎩ", "ꮳꮃꭹ", "ᲡᲐᲥᲐᲠᲗᲕᲔᲚᲝ", "Mül\xadler", "☕\ufe0fPriya",
          "مـحمد", "Андрей", "Україна", "ўсё", "Ёлка"]  # fmt: skip


def _open(url: str) -> fivefold.Memory:
    return fivefold.Memory.open(url, embedder=fivefold.HashingEmbedder(), config=OFF)


def _frequencies(mem: fivefold.Memory, *terms: str) -> dict[str, int]:
    return mem.store.reads.term_document_frequencies("default", list(terms))[1]


def test_words_with_vowel_signs_are_terms_and_keys_of_their_own(
    new_store: Callable[[], str],
) -> None:
    with _open(new_store()) as mem:
        mem.remember_many([{"content": t} for t in TURNS])
        assert _frequencies(mem, KAAL, KUL, KILA, "क", "ल") == {
            KAAL: 1,
            KUL: 1,
            KILA: 1,
            "क": 0,
            "ल": 0,
        }
        assert _frequencies(mem, "தமிழ்", "สวัสดี")["สวัสดี"] == 1
        # Each word finds the memory that holds it, and no other by its letters alone.
        for word, turn in ((KAAL, 0), (KUL, 1)):
            assert mem.recall(word, k=4).hits[0].memory.content == TURNS[turn]
        # Entities of those names are two, not one entity under two spellings.
        first = mem.remember("काल आया", entities=[KAAL])
        second = mem.remember("कुल आया", entities=[KUL])
        assert first.entities == (KAAL,)
        assert second.entities == (KUL,)
        assert mem.stats().entities == 2


@pytest.mark.slow
def test_a_query_s_words_are_the_terms_its_text_was_indexed_by() -> None:
    """The query side cuts its text into words in Python (``text.tokens``) and hands each to
    FTS5's tokenizer; the index hands FTS5 the whole text. Both must give the same terms, or a
    word in a memory is never found by the same word in a query."""
    tokenizer = Tokenizer()
    pieces = st.sampled_from(PIECES)
    separators = st.sampled_from([" ", ", ", "-", "_", "\n", "."])

    @given(st.lists(st.tuples(pieces, separators), max_size=8))
    @settings(max_examples=200, deadline=None)
    def check(parts: list[tuple[str, str]]) -> None:
        whole = "".join(piece + sep for piece, sep in parts)
        indexed = set(tokenizer.count([(whole, "")])[0].first)
        asked = {term for word in text.content_terms(whole) for term in tokenizer.terms(word)}
        assert asked == indexed

    check()


@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=3).map(" ".join))
@settings(max_examples=200, deadline=None)
def test_a_query_names_an_entity_by_the_words_its_key_was_made_of(name: str) -> None:
    """The resolver cuts a query into words where they stand and keys each; an entity's key is
    its whole name's. Both must agree, or a name is never found in a query."""
    from fivefold.read.parse.entities import MAX_SPAN, EntityResolver
    from fivefold.store.records import CatalogEntry

    key = text.normalize_name(name)
    if not key or len(key.split()) > MAX_SPAN:  # nothing to name, or longer than names are
        return
    resolver = EntityResolver([CatalogEntry(1, name, key, False)])
    assert [ref.entity_id for ref in resolver.resolve(f"what about {name} today")] == [1]


def _old_fold(value: str) -> str:
    decomposed = unicodedata.normalize("NFKD", value)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@contextmanager
def _old_tokenizer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Terms and keys as before SQLite schema 7 / Postgres 8: combining marks split words, every
    mark of a nonzero class was dropped from a query's words and keys, and the index was handed
    the text as it was."""
    monkeypatch.setattr(tokens, "TOKENIZE", "porter unicode61 remove_diacritics 2")
    monkeypatch.setattr(tokens, "index_text", lambda value: value)
    monkeypatch.setattr(text, "fold_accents", _old_fold)
    monkeypatch.setattr(text, "_word", lambda: re.compile(r"[^\W_]+"))
    text.normalize_name.cache_clear()
    try:
        yield
    finally:
        monkeypatch.undo()
        text.normalize_name.cache_clear()


def _as_older_schema(url: str) -> None:
    if url.startswith("postgresql"):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("UPDATE fivefold_meta SET value = '7' WHERE key = 'schema_version'")
        return
    conn = sqlite3.connect(url)
    with conn:
        as_schema_7(conn)
        conn.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    conn.close()


def test_a_store_that_split_words_at_their_marks_is_brought_up_to_date_when_it_opens(
    new_store: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = new_store()
    with _old_tokenizer(monkeypatch), _open(url) as mem:
        ids = [r.id for r in mem.remember_many([{"content": t} for t in TURNS])]
        latin = mem.remember("the kestrel budget review", entities=["Kestrel"]).id
        kaal = mem.remember("काल आया", entities=[KAAL])
        mem.alias("Mohan", "मोहन")
        assert _frequencies(mem, "क")["क"] == 3  # a consonant: one of the old terms
        assert kaal.entities == (KAAL,)
    _as_older_schema(url)
    with _open(url) as mem:
        assert _frequencies(mem, KAAL, KUL, "क") == {KAAL: 2, KUL: 1, "क": 0}
        assert _frequencies(mem, "kestrel") == {"kestrel": 1}
        # The keys are the new ones: the same names find the same entities.
        assert mem.remember("फिर काल", entities=[KAAL]).entities == (KAAL,)
        kul = mem.remember("कुल भी", entities=[KUL])
        assert kul.entities == (KUL,)
        assert mem.remember("मोहन आया", entities=["मोहन"]).entities == ("Mohan",)
        assert mem.stats().entities == 4  # Kestrel, काल, कुल, Mohan
        hits = mem.recall(KUL, k=3).hits
        assert {h.memory.id for h in hits[:2]} == {ids[1], kul.id}
        assert mem.get(latin) is not None
        assert all(f.ok for f in mem.store.admin.check())


def test_other_scripts_keep_the_marks_that_tell_their_words_apart() -> None:
    """Only diacritics are dropped (Latin, Greek and Cyrillic accents, Hebrew points, Arabic
    vowel signs): beer is not heel, a shirt not a tiger, rice not white."""
    tokenizer = Tokenizer()
    for a, b in [("ビール", "ヒール"), ("เสื้อ", "เสือ"), ("ข้าว", "ขาว"), ("பல்", "பல"), ("བུ", "བི")]:
        assert tokenizer.terms(a) != tokenizer.terms(b), (a, b)
        assert text.normalize_name(a) != text.normalize_name(b), (a, b)
    for a, b in [("мой", "мои"), ("Україна", "Украіна"), ("ўсё", "усё")]:  # letters of their own
        assert tokenizer.terms(a) != tokenizer.terms(b), (a, b)
        assert text.normalize_name(a) != text.normalize_name(b), (a, b)
    for a, b in [
        ("café", "cafe"),
        ("Ῥόδος", "ροδος"),
        ("كَتَبَ", "كتب"),
        ("שָׁלוֹם", "שלום"),
        ("ёлка", "елка"),
    ]:
        assert tokenizer.terms(a) == tokenizer.terms(b), (a, b)
    # A keycap, a variation selector: words end there, as they always did.
    assert text.tokens("room 7\ufe0f\u20e3 I \u2764\ufe0f it") == ["room", "7", "i", "it"]
    assert text.normalize_name("葛\U000e0100城") == "葛 城"
    assert text.tokens("a\u20ddb") == ["a", "b"]  # an enclosing circle


def test_a_known_name_with_marks_is_found_in_text_and_negated_whole(
    new_store: Callable[[], str],
) -> None:
    from fivefold.read.parse.negation import find_negations

    with _open(new_store()) as mem:
        mem.remember("काल से मिला", entities=[KAAL])
        # Named before: found in a later memory's text without being given.
        assert mem.remember("फिर काल आया").entities == (KAAL,)
    negated, kept = find_negations(f"everything except {KAAL}")
    assert negated == [KAAL]
    assert kept == "everything"


@pytest.mark.parametrize("prune", [False, True])
def test_the_migration_rebuilds_a_namespace_holding_marks_once_and_leaves_ascii_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prune: bool
) -> None:
    """SQLite: the index of a namespace holding text that is not ASCII is rebuilt on its next
    use (once), however many writes elsewhere prune the log before it (a prune set the mark
    back under the migration's: the index then applied one entry and kept the old terms);
    an ASCII namespace's index is kept."""
    from fivefold.store.sqlite import core as sqlite_core
    from fivefold.store.sqlite import schema

    url = str(tmp_path / "old.db")
    with _old_tokenizer(monkeypatch), _open(url) as mem:
        mem.remember_many([{"content": t} for t in TURNS])
        mem.remember_many([{"content": f"ascii note {n}", "namespace": "plain"} for n in range(5)])
    _as_older_schema(url)
    with _open(url) as mem:
        if prune:  # from now on (the migration's own transaction is not a write's)
            monkeypatch.setattr(schema, "LEXICAL_LOG_KEEP", 2)
            monkeypatch.setattr(sqlite_core, "LOG_PRUNE_EVERY", 1)
        # Writes elsewhere; pruning at the first, the migration's entry is among those kept
        # and the namespace's older ones are not.
        for n in range(1 if prune else 6):
            mem.remember(f"busy {n}", namespace="busy")
        lexical = mem.store._core.lexical  # type: ignore[attr-defined]
        before = lexical.rebuilds
        assert _frequencies(mem, KAAL, "क") == {KAAL: 1, "क": 0}
        assert mem.store.reads.term_document_frequencies("plain", ["ascii"]) == (5, {"ascii": 5})
        assert lexical.rebuilds == before + 1  # "default"; not "plain"
    with _open(url) as mem:
        lexical = mem.store._core.lexical  # type: ignore[attr-defined]
        assert _frequencies(mem, KAAL) == {KAAL: 1}
        assert lexical.rebuilds == 0


def test_a_key_another_entity_holds_is_kept_and_the_store_opens(
    new_store: Callable[[], str], caplog: pytest.LogCaptureFixture
) -> None:
    """No name the older code keyed can meet another's new key (``rows.new_keys``); a store
    where one would (made by hand here) keeps the older key and opens, with a warning."""
    url = new_store()
    with _open(url) as mem:
        mem.remember("काल से मिला", entities=[KAAL])
        mem.remember("Kaal too", entities=["Kaal"])
    crafted = "UPDATE entities SET name = 'काल', norm = 'क ल' WHERE norm = 'kaal'"
    if url.startswith("postgresql"):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(crafted)
    else:
        conn = sqlite3.connect(url)
        with conn:
            conn.execute(crafted)
        conn.close()
    _as_older_schema(url)
    with caplog.at_level("WARNING", logger="fivefold.store"), _open(url) as mem:
        assert mem.stats().entities == 2
        assert mem.remember("काल फिर", entities=[KAAL]).entities == (KAAL,)
    assert "1 entity or alias keys kept as they were" in caplog.text


def test_a_store_opened_with_another_model_is_refused_before_it_is_migrated(
    new_store: Callable[[], str],
) -> None:
    """The model is checked first: a store of an older schema opened by mistake with another
    embedder is left at its schema (it was migrated, then refused)."""
    url = new_store()
    with _open(url) as mem:
        mem.remember(f"{KAAL} आया")
    _as_older_schema(url)
    other = fivefold.HashingEmbedder(dim=32)
    with pytest.raises(fivefold.EmbeddingModelMismatch):
        fivefold.Memory.open(url, embedder=other, config=OFF)
    if url.startswith("postgresql"):
        with psycopg.connect(url, autocommit=True) as conn:
            held = conn.execute("SELECT value FROM fivefold_meta WHERE key = 'schema_version'")
            assert held.fetchone() == ("7",)
    else:
        conn = sqlite3.connect(url)
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            "6",
        )
        conn.close()
    with _open(url) as mem:  # its own model migrates it
        assert _frequencies(mem, KAAL) == {KAAL: 1}


def test_a_newer_schema_is_named_before_the_model(new_store: Callable[[], str]) -> None:
    """A store of a schema this version cannot read says so, whatever the embedder: the model
    is checked after the version, before any migration."""
    url = new_store()
    with _open(url) as mem:
        mem.remember("one memory")
    if url.startswith("postgresql"):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("UPDATE fivefold_meta SET value = '99' WHERE key = 'schema_version'")
    else:
        conn = sqlite3.connect(url)
        with conn:
            conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
        conn.close()
    with pytest.raises(fivefold.NotAFivefoldStore, match="schema version 99"):
        fivefold.Memory.open(url, embedder=fivefold.HashingEmbedder(dim=32), config=OFF)


def test_a_name_written_with_combining_accents_is_found_whole() -> None:
    from fivefold.extract.entities import extract_entities

    decomposed = unicodedata.normalize("NFD", "Yesterday Jürgen came by")
    assert extract_entities(decomposed) == ["Jürgen"]
    anais = unicodedata.normalize("NFD", "Anaïs left")
    assert extract_entities(anais, {"anais": "Anaïs"}) == ["Anaïs"]
    assert text.tokens("Mül\xadler") == ["muller"]  # a soft hyphen splits nothing
