"""``Bags`` (the Postgres bulk write's counts) counts a text a line at a time, from lines it
remembers, into arrays over a term dictionary: always what ``Tokenizer.count`` and ``window``
make of the whole text, whatever it forgot meanwhile and however many threads count at once."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fivefold.store.postgres.bags import Bag, Bags
from fivefold.store.shared.tokens import MAX_TOKEN_CHARS, Tokenizer, window

TOKENIZER = Tokenizer()
WORDS = st.sampled_from(["Kestrel", "budget", "running", "runs", "Zoë", "naïve", "42", "B-7", ""])
LINE = st.lists(WORDS, max_size=6).map(" ".join) | st.text(max_size=20)
TEXT = st.lists(LINE, max_size=4).map("\n".join)


def _counters(bag: Bag, documents: int) -> list[Counter[str]]:
    out: list[Counter[str]] = [Counter() for _ in range(documents)]
    for doc, term, count in zip(
        bag.doc.tolist(), bag.term.tolist(), bag.count.tolist(), strict=True
    ):
        out[doc][bag.names[term]] += count
    return out


def _columns(bags: Bags, documents: list[tuple[str, str]]) -> list[tuple[Counter[str], ...]]:
    first, second = bags.columns(documents)
    return list(
        zip(_counters(first, len(documents)), _counters(second, len(documents)), strict=True)
    )


@pytest.mark.slow
@given(
    st.lists(st.tuples(TEXT, TEXT, TEXT), max_size=8),
    st.integers(min_value=0, max_value=20_000),
    st.integers(min_value=0, max_value=12),
)
@settings(max_examples=200, deadline=None)
def test_a_text_counts_as_its_whole(
    texts: list[tuple[str, str, str]], limit: int, max_terms: int
) -> None:
    # Small limits: the lines and the dictionary start again often.
    bags = Bags(TOKENIZER, limit=limit, max_terms=max_terms)
    documents = [(a, b) for a, b, _ in texts]
    expected = [(c.first, c.second) for c in TOKENIZER.count(documents)]
    for _ in range(2):  # the second time from what it remembers
        assert _columns(bags, documents) == expected
        found = _counters(bags.windows(texts), len(texts))
        for (content, near, far), got in zip(texts, found, strict=True):
            own, around = TOKENIZER.count([(content, near), (far, "")])
            assert got == window(own.first, own.second, around.first).first


def test_a_window_is_summed_one_row_per_term_in_document_order() -> None:
    bag = Bags(TOKENIZER).windows([("Kestrel budget", "budget", "budget Kestrel"), ("", "", "")])
    assert bag.doc.tolist() == [0, 0]
    assert dict(zip([bag.names[t] for t in bag.term], bag.count.tolist(), strict=True)) == {
        "kestrel": 4 + 1,
        "budget": 4 + 2 + 1,
    }
    assert bag.lengths(2).tolist() == [12, 0]


def test_threads_count_at_once() -> None:
    bags = Bags(TOKENIZER, limit=30_000, max_terms=40)
    texts = [(f"turn {n} about Kestrel\nline {n % 7}", f"far {n % 11}") for n in range(200)]
    expected = [(c.first, c.second) for c in TOKENIZER.count(texts)]
    failures: list[int] = []

    def work(offset: int) -> None:
        for start in range(offset, 200, 20):
            if _columns(bags, texts[start : start + 20]) != expected[start : start + 20]:
                failures.append(start)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


def test_a_token_is_its_first_255_characters_everywhere() -> None:
    long, wide = "q" * 300, "é" * 300  # the accents are removed, then the token is cut
    counted = TOKENIZER.count([(f"alpha {long}", wide)])[0]
    assert counted.first == {"alpha": 1, "q" * MAX_TOKEN_CHARS: 1}
    assert counted.second == {"e" * MAX_TOKEN_CHARS: 1}
    assert TOKENIZER.join_each([f"{long} beta"]) == [f"beta {'q' * MAX_TOKEN_CHARS}"]
    assert TOKENIZER.terms(long + "zz") == ("q" * MAX_TOKEN_CHARS,)
    short = "r" * MAX_TOKEN_CHARS
    assert TOKENIZER.terms(short) == (short,)


def test_a_batch_larger_than_the_limit_is_counted_without_being_remembered() -> None:
    bags = Bags(TOKENIZER, limit=3_000)
    texts = [f"line {n} about Kestrel" for n in range(5)]  # ~5,100 bytes as estimated
    first = bags.count(texts)
    assert bags._size == 0
    assert not bags._lines
    again = bags.count(texts)
    assert [again.names[t] for t in again.term] == [first.names[t] for t in first.term]
    bags.count(texts[:2])  # a batch that fits is remembered
    assert len(bags._lines) == 2
