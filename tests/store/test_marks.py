"""Words written with combining marks (the vowel signs of Devanagari, Tamil, Thai) are whole
terms and whole entity keys on both backends; a store that indexed them split apart is brought
up to date when it opens (SQLite schema 7, Postgres schema 8)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fivefold
from fivefold import text
from fivefold.config import Config, OptimizerConfig, OptimizerMode
from fivefold.store import tokens
from fivefold.store.tokens import Tokenizer

OFF = Config(optimizer=OptimizerConfig(mode=OptimizerMode.OFF))
# "Time", "total" and "fort": the three were one term ("क ल") and one entity key before.
KAAL, KUL, KILA = "काल", "कुल", "किला"
TURNS = [f"{KAAL} ने {KILA} देखा", f"हम {KUL} तीन लोग थे", "वणக்கம் தமிழ் நாடு", "สวัสดี ครับ"]


def _open(url: str) -> fivefold.Memory:
    return fivefold.Memory.open(url, embedder=fivefold.HashingEmbedder(), config=OFF)


def _frequencies(mem: fivefold.Memory, *terms: str) -> dict[str, int]:
    return mem.store.term_document_frequencies("default", list(terms))[1]


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


def test_a_query_s_words_are_the_terms_its_text_was_indexed_by() -> None:
    """The query side cuts its text into words in Python (``text.tokens``) and hands each to
    FTS5's tokenizer; the index hands FTS5 the whole text. Both must give the same terms, or a
    word in a memory is never found by the same word in a query."""
    tokenizer = Tokenizer()
    pieces = st.sampled_from(
        [KAAL, KUL, KILA, "हूँ", "தமிழ்", "நாடு", "สวัสดี", "ไม่", "Ῥόδος", "café", "cafe\u0301",
         "naïve", "ﬁne", "Zoë", "كَتَبَ", "שָׁלוֹם", "x\u20dd", "B-7", "runs", "42", "Ａｂｃ"]
    )  # fmt: skip
    separators = st.sampled_from([" ", ", ", "-", "_", "\n", "."])

    @given(st.lists(st.tuples(pieces, separators), max_size=8))
    @settings(max_examples=200, deadline=None)
    def check(parts: list[tuple[str, str]]) -> None:
        whole = "".join(piece + sep for piece, sep in parts)
        indexed = set(tokenizer.count([(whole, "")])[0].first)
        asked = {term for word in text.tokens(whole) for term in tokenizer.terms(word)}
        assert asked == indexed

    check()


@contextmanager
def _old_tokenizer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Terms and keys as before schema 7 / 8: combining marks split words."""
    monkeypatch.setattr(tokens, "TOKENIZE", "porter unicode61 remove_diacritics 2")
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
        assert all(f.ok for f in mem.store.check())
