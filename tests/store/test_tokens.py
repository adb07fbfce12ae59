"""``LineCounts`` counts a text a line at a time, from lines it remembers: always what
``Tokenizer.count`` makes of the whole text."""

from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from fivefold.store.tokens import MAX_TOKEN_CHARS, LineCounts, Tokenizer

TOKENIZER = Tokenizer()
WORDS = st.sampled_from(["Kestrel", "budget", "running", "runs", "Zoë", "naïve", "42", "B-7", ""])
LINE = st.lists(WORDS, max_size=6).map(" ".join) | st.text(max_size=20)
TEXT = st.lists(LINE, max_size=4).map("\n".join)


@given(st.lists(st.tuples(TEXT, TEXT), max_size=8), st.integers(min_value=0, max_value=20_000))
@settings(max_examples=200, deadline=None)
def test_a_text_counts_as_its_whole(documents: list[tuple[str, str]], limit: int) -> None:
    lines = LineCounts(TOKENIZER, limit=limit)  # small limits: the memory starts again often
    for _ in range(2):  # the second time from what it remembers
        assert lines.count(documents) == TOKENIZER.count(documents)


def test_the_counts_returned_are_the_callers_own() -> None:
    lines = LineCounts(TOKENIZER)
    first = lines.count([("Kestrel budget", "")])[0]
    first.first["kestrel"] += 10
    assert lines.count([("Kestrel budget", "")])[0].first["kestrel"] == 1


def test_threads_count_at_once() -> None:
    lines = LineCounts(TOKENIZER, limit=30_000)
    texts = [(f"turn {n} about Kestrel\nline {n % 7}", f"far {n % 11}") for n in range(200)]
    expected = TOKENIZER.count(texts)
    failures: list[int] = []

    def work(offset: int) -> None:
        for start in range(offset, 200, 20):
            if lines.count(texts[start : start + 20]) != expected[start : start + 20]:
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
