"""Lexical retriever: BM25 over predicate (weighted) and content, or the window where session
context is on, squashed to [0, 1]."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import fivefold
from fivefold.config import Config, ContextConfig, LexicalConfig
from fivefold.read.retrieve import lexical_search as lexical_leg
from fivefold.read.retrieve import match_confidence as own_text_match
from fivefold.read.retrieve.lexical import DEFAULT_WEIGHTS as W
from fivefold.read.retrieve.lexical import HALF_SATURATION, idf, selective_terms, squash
from fivefold.read.stats import RecallStats
from fivefold.store.protocol import Store
from fivefold.text import content_terms
from fivefold.types import ColumnWeights, MemoryType, RetrieverName, Scope, Scored

FILLER = [
    "Lunch with the design team was fun",
    "The quarterly budget review moved to Thursday",
    "We bought groceries for the weekend barbecue",
    "The cat knocked a glass off the kitchen table",
    "Remember to water the plants on Sunday",
    "The new office chairs arrive next month",
]


def lexical_search(
    store: Store, scope: Scope, terms: list[str], **kwargs: Any
) -> tuple[Scored, ...]:
    """The lexical leg with the statistics of a recall of its own."""
    return lexical_leg(
        store.search, RecallStats(store.reads, scope.namespace), scope, terms, **kwargs
    )


def match_confidence(
    store: Store, scope: Scope, terms: list[str], within: list[int], **kwargs: Any
) -> dict[int, float]:
    stats = RecallStats(store.reads, scope.namespace)
    return own_text_match(store.search, stats, scope, terms, within, **kwargs)


def remember(memory: fivefold.Memory, *items: dict[str, object]) -> list[int]:
    return [r.id for r in memory.remember_many([{"type": "fact", **i} for i in items])]


def lexical(memory: fivefold.Memory, query: str, **kwargs: object) -> list[int]:
    terms = content_terms(query)
    weights = memory.config.bm25_weights()
    results = lexical_search(memory.store, Scope(), terms, depth=10, weights=weights, **kwargs)
    return [r.id for r in results]


def test_exact_identifier_ranks_first(hashing_mem: fivefold.Memory) -> None:
    remember(hashing_mem, *({"content": c} for c in FILLER))
    target, near, review = remember(
        hashing_mem,
        {"content": "Ticket KES-4471 is blocked on the schema review"},
        {"content": "Ticket KES-4470 shipped to production, the status is green"},
        {"content": "The status of the schema review is pending"},
    )
    ids = lexical(hashing_mem, "what is the status of ticket KES-4471?")
    assert ids[0] == target
    assert set(ids) == {target, near, review}


def test_badge_id_in_predicate_ranks_first(hashing_mem: fivefold.Memory) -> None:
    remember(hashing_mem, *({"content": c} for c in FILLER))
    (badge,) = remember(hashing_mem, {"content": "My badge ID is 47821."})
    photos, _ = remember(
        hashing_mem,
        {"content": "Badge photos are taken at reception on Mondays, bring your ID"},
        {"content": "The reception desk opens at nine"},
    )
    assert hashing_mem.get(badge).predicate == "badge ID is 47821"
    results = lexical_search(
        hashing_mem.store, Scope(), ["badge", "id"], hint_terms=["badge", "id"], depth=10
    )
    assert [r.id for r in results] == [badge, photos]


SYMMETRIC = [
    # The same term once in the predicate of one memory and once in the content of the other,
    # with the same lengths in each column, so only the column weights decide.
    {"content": "the team uses a managed service", "predicate": "zephyr cluster"},
    {"content": "the zephyr cluster service", "predicate": "team uses a managed"},
]


@pytest.fixture
def weighted_mem() -> Iterator[tuple[fivefold.Memory, fivefold.Memory]]:
    embedder = fivefold.HashingEmbedder()
    default = fivefold.Memory.open(":memory:", embedder=embedder)
    flipped = fivefold.Memory.open(
        ":memory:",
        embedder=embedder,
        config=Config(lexical=LexicalConfig(predicate_weight=0.25)),
    )
    yield default, flipped
    default.close()
    flipped.close()


def test_predicate_outweighs_content_by_default(
    weighted_mem: tuple[fivefold.Memory, fivefold.Memory],
) -> None:
    memory, _ = weighted_mem
    remember(memory, *({"content": c} for c in FILLER))
    in_predicate, in_content = remember(memory, *SYMMETRIC)
    assert lexical(memory, "zephyr") == [in_predicate, in_content]


def test_content_outweighs_predicate_when_configured(
    weighted_mem: tuple[fivefold.Memory, fivefold.Memory],
) -> None:
    _, memory = weighted_mem
    remember(memory, *({"content": c} for c in FILLER))
    in_predicate, in_content = remember(memory, *SYMMETRIC)
    assert lexical(memory, "zephyr") == [in_content, in_predicate]


def test_stop_words_are_dropped(hashing_mem: fivefold.Memory) -> None:
    (scaffolding,) = remember(
        hashing_mem, {"content": "What is it? It is what it is, and that is that."}
    )
    (plan,) = remember(hashing_mem, {"content": "The deploy plan needs sign-off"})
    remember(hashing_mem, *({"content": c} for c in FILLER))
    explanation = hashing_mem.explain("what is the deploy plan and what is it?")
    assert explanation.query.terms == ("deploy", "plan")
    (run,) = [r for r in explanation.runs if r.name is RetrieverName.LEXICAL]
    assert [item.id for item in run.items] == [plan]
    assert scaffolding not in {item.id for item in run.items}


def test_only_stop_words_means_no_lexical_results(hashing_mem: fivefold.Memory) -> None:
    remember(hashing_mem, {"content": "What is it? It is what it is."})
    assert lexical_search(hashing_mem.store, Scope(), [], depth=10) == ()
    assert lexical(hashing_mem, "what is it") == []


@pytest.mark.parametrize(
    "term",
    [
        'badge"',
        '"',
        "NEAR(badge lunch)",
        "badge OR lunch",
        "AND",
        "NOT",
        "OR",
        "*",
        "predicate:zephyr",
        "^badge",
        "-badge",
        "(",
        ")",
        "{predicate content}: x",
        "'; DROP TABLE memories; --",
    ],
)
def test_fts_syntax_is_data(hashing_mem: fivefold.Memory, term: str) -> None:
    badge, lunch, zephyr = remember(
        hashing_mem,
        {"content": "My badge ID is 47821."},
        {"content": "Lunch with the design team was fun"},
        {"content": "the service runs on a cluster", "predicate": "zephyr cluster"},
    )
    results = lexical_search(hashing_mem.store, Scope(), [term], depth=10)
    # The term's words are words: no operator, field or phrase syntax takes effect, so what
    # matches is what holds one of them ("NEAR(badge lunch)" finds both memories).
    words = set(re.findall(r"\w+", term.lower()))
    vocabulary = {badge: {"badge"}, lunch: {"lunch"}, zephyr: {"zephyr", "cluster"}}
    expected = {i for i, held in vocabulary.items() if held & words}
    assert {r.id for r in results} == expected
    assert hashing_mem.stats().memories == 3


def test_prefix_star_is_not_a_prefix_query(hashing_mem: fivefold.Memory) -> None:
    (zephyrine,) = remember(hashing_mem, {"content": "zephyrine is a rare mineral"})
    (zephyr,) = remember(hashing_mem, {"content": "a zephyr is a light wind"})
    results = lexical_search(hashing_mem.store, Scope(), ["zephyr*"], depth=10)
    assert [r.id for r in results] == [zephyr]
    assert zephyrine not in {r.id for r in results}


def test_recall_with_query_syntax_does_not_fail(hashing_mem: fivefold.Memory) -> None:
    (badge,) = remember(hashing_mem, {"content": "My badge ID is 47821."})
    remember(hashing_mem, *({"content": c} for c in FILLER))
    result = hashing_mem.recall('"badge* OR NEAR(47821, x) AND -col:^y')
    assert result.hits[0].memory.id == badge


def test_confidences_are_in_unit_interval_and_ranked(hashing_mem: fivefold.Memory) -> None:
    remember(hashing_mem, *({"content": c} for c in FILLER))
    remember(hashing_mem, {"content": "team team team lunch", "predicate": "team lunch"})
    results = lexical_search(hashing_mem.store, Scope(), ["team", "lunch", "design"], depth=10)
    assert len(results) >= 2
    assert all(0.0 <= r.confidence <= 1.0 for r in results)
    keys = [(-r.confidence, r.id) for r in results]
    assert keys == sorted(keys)


def test_squash_preserves_the_bm25_order(hashing_mem: fivefold.Memory) -> None:
    remember(hashing_mem, *({"content": c} for c in FILLER))
    remember(hashing_mem, {"content": "team lunch on Thursday", "predicate": "team lunch"})
    terms = ["team", "lunch", "thursday", "budget"]
    raw = hashing_mem.store.search.lexical_search(Scope(), terms, 10, weights=W)
    squashed = lexical_search(hashing_mem.store, Scope(), terms, depth=10)
    assert [i for i, _ in raw] == [s.id for s in squashed]


def test_type_filter_and_scope_apply(hashing_mem: fivefold.Memory) -> None:
    (pref,) = remember(hashing_mem, {"content": "I prefer zephyr", "type": "preference"})
    (fact,) = remember(hashing_mem, {"content": "zephyr is a wind", "user_id": "u1"})
    assert set(lexical(hashing_mem, "zephyr")) == {pref, fact}
    assert lexical(hashing_mem, "zephyr", types=[MemoryType.PREFERENCE]) == [pref]
    scoped = lexical_search(hashing_mem.store, Scope(user_id="u1"), ["zephyr"], depth=10)
    assert [r.id for r in scoped] == [fact]


def test_match_confidence_is_limited_to_the_candidates(hashing_mem: fivefold.Memory) -> None:
    remember(hashing_mem, *({"content": c} for c in FILLER))
    first, second = remember(
        hashing_mem,
        {"content": "frontend bundle size regression"},
        {"content": "the frontend team lunch"},
    )
    found = match_confidence(hashing_mem.store, Scope(), ["frontend"], [second])
    assert set(found) == {second}
    assert 0.0 < found[second] <= 1.0
    assert match_confidence(hashing_mem.store, Scope(), [], [first]) == {}


weights = st.floats(min_value=1e-6, max_value=1e3, allow_nan=False)
scores = st.floats(min_value=0.0, max_value=1e4, allow_nan=False)


@given(scores, scores, weights)
# s / (s + h) rounds non-monotonically for neighbouring floats; 1 - h / (s + h) does not.
@example(a=1000.0, b=999.9999999999999, weight=1.9999999999998863)
def test_squash_is_monotone_and_in_unit_interval(a: float, b: float, weight: float) -> None:
    low, high = sorted((a, b))
    assert 0.0 <= squash(low, weight) <= squash(high, weight) <= 1.0


@given(weights)
def test_squash_reference_points(weight: float) -> None:
    assert squash(0.0, weight) == 0.0
    assert squash(-1.0, weight) == 0.0
    # One memory of average length holding every query term once scores about S_q: c ~ 0.67.
    assert squash(weight, weight) == pytest.approx(1.0 / (1.0 + HALF_SATURATION))


@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=10_000))
def test_idf_is_positive_and_decreasing_in_frequency(total: int, frequency: int) -> None:
    frequency = min(frequency, total)
    assert idf(total, frequency) > 0.0
    if frequency < total:
        assert idf(total, frequency) >= idf(total, frequency + 1)


@pytest.fixture(scope="module")
def common_term_mem() -> Iterator[fivefold.Memory]:
    """1,200 memories that all say "project"; 3 of them also say "kestrel"."""
    with fivefold.Memory.open(":memory:", embedder=fivefold.HashingEmbedder()) as mem:
        items = [{"content": f"project note number {i}"} for i in range(1197)]
        items += [{"content": f"project kestrel milestone {i}"} for i in range(3)]
        mem.remember_many(items)
        yield mem


def test_a_term_in_most_of_a_large_store_is_left_out_of_the_match(
    common_term_mem: fivefold.Memory,
) -> None:
    store, scope = common_term_mem.store, Scope()
    assert selective_terms(RecallStats(store.reads, "default"), ["project", "kestrel"], 0.05) == [
        "kestrel"
    ]
    # Alone it stays: a query of common terms still matches something.
    assert selective_terms(RecallStats(store.reads, "default"), ["project"], 0.05) == ["project"]
    assert selective_terms(RecallStats(store.reads, "default"), ["project", "kestrel"], 1.0) == [
        "project",
        "kestrel",
    ]
    hits = lexical_search(store, scope, ["project", "kestrel"], depth=50, max_term_share=0.05)
    assert len(hits) == 3  # only the rare term was scored
    every = lexical_search(store, scope, ["project", "kestrel"], depth=50, max_term_share=1.0)
    assert len(every) == 50
    assert [h.id for h in every[:3]] == [h.id for h in hits]


def test_small_stores_keep_every_term(hashing_mem: fivefold.Memory) -> None:
    hashing_mem.remember_many(
        [{"content": "coffee with oat milk"}, {"content": "coffee beans"}, {"content": "tea"}]
    )
    # "coffee" is in 2 of 3 memories, far above 5 %, but under the 1,000-memory floor.
    assert selective_terms(
        RecallStats(hashing_mem.store.reads, "default"), ["coffee", "oat"], 0.05
    ) == [
        "coffee",
        "oat",
    ]


def test_negation_matching_leaves_a_common_term_out_too(common_term_mem: fivefold.Memory) -> None:
    store, scope = common_term_mem.store, Scope()
    everyone = [h.id for h in lexical_search(store, scope, ["project"], depth=1200)]
    kestrel = {h.id for h in lexical_search(store, scope, ["kestrel"], depth=10)}
    scores = match_confidence(store, scope, ["project", "kestrel"], everyone, max_term_share=0.05)
    assert set(scores) == kestrel  # only the rare term was matched
    assert all(value > 0.6 for value in scores.values())  # and they still count as negated
    every = match_confidence(store, scope, ["project", "kestrel"], everyone, max_term_share=1.0)
    assert len(every) == 1200


def test_idf_survives_counts_read_across_a_concurrent_write() -> None:
    from fivefold.read.retrieve.lexical import idf

    # df above N: a term count read after another process's write, the total before it.
    assert idf(10, 15) == idf(10, 10) == pytest.approx(math.log(1 + 0.5 / 10.5))
    assert idf(10, 10) > 0


@pytest.mark.parametrize(
    ("context", "full"),
    [
        # Context on: the window stands for the content column in the leg.
        (ContextConfig(), ColumnWeights(predicate=4.0, content=0.0, context=1.0)),
        (ContextConfig(lexical_weight=2.5), ColumnWeights(predicate=4.0, content=0.0, context=2.5)),
        # No context, or no weight for it: the memory's own columns, as BM25 alone.
        (ContextConfig(window=0), ColumnWeights(predicate=4.0, content=1.0)),
        (ContextConfig(lexical_weight=0.0), ColumnWeights(predicate=4.0, content=1.0)),
    ],
)
def test_the_leg_weights_follow_the_context_settings(
    context: ContextConfig, full: ColumnWeights
) -> None:
    config = Config(context=context)
    assert config.bm25_weights() == full
    # Own-text matches (negation, learned fusion's feature) never read the window.
    assert config.own_text_weights() == ColumnWeights(predicate=4.0, content=1.0)
