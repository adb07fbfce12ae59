"""The Postgres lexical leg's pruning (postings in impact order when only first columns are
weighted, MaxScore otherwise) returns exactly the unpruned top k: the same memories, scores and
order, ties included, for every scope and filter."""

from __future__ import annotations

import random

import psycopg
import pytest

import fivefold
from fivefold.model import ColumnWeights, MemoryType, Scope
from fivefold.retrieve.lexical import DEFAULT_WEIGHTS, OWN_TEXT_WEIGHTS
from fivefold.store.postgres import lexical, lists, schema
from fivefold.store.postgres.lists import ListCache

# A Zipfian vocabulary: a few tokens in most memories, most in a few.
VOCAB = [f"w{i}" for i in range(120)]
ZIPF = [1.0 / (rank + 1) for rank in range(len(VOCAB))]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(VOCAB, weights=ZIPF, k=rng.randint(3, 14)))


def test_an_impact_bounds_the_score_under_any_average() -> None:
    rng = random.Random(3)
    for _ in range(20_000):
        tf, length = rng.uniform(0.0, 12.0), rng.randint(0, 400)
        reference, average = rng.choice([4, 32]), rng.uniform(0.5, 300.0)
        stored = tf / (tf + 0.3 + 0.9 * length / reference)
        now = tf / (tf + 0.3 + 0.9 * length / average)
        assert now <= lexical._saturation_bound(stored, reference / average) + 1e-12


# Context on: first columns only (the impact order); context off: content too (MaxScore).
WINDOW_ONLY = ColumnWeights(predicate=0.0, content=0.0, context=1.0)
WEIGHTS = [DEFAULT_WEIGHTS, OWN_TEXT_WEIGHTS, WINDOW_ONLY]


@pytest.mark.parametrize("indexed", [True, False], ids=["indexed", "sorted"])
@pytest.mark.parametrize("in_impact_order", [True, False], ids=["impact", "maxscore"])
@pytest.mark.parametrize("weights", WEIGHTS)
def test_pruned_top_k_is_the_exact_top_k(
    pg_url: str,
    monkeypatch: pytest.MonkeyPatch,
    weights: ColumnWeights,
    in_impact_order: bool,
    indexed: bool,
) -> None:
    # ``indexed``: the postings' impact order is an index, as in a namespace of
    # schema.IMPACT_INDEX_FROM memories or more; else the same reads sort each list.
    monkeypatch.setattr(schema, "IMPACT_INDEX_FROM", 1 if indexed else 10**9)
    rng = random.Random(11)
    items = []
    for i in range(400):
        item = {
            "content": _text(rng),
            "type": rng.choice(["fact", "event", "preference"]),
            "session_id": f"s{i // 25}",
        }
        if i % 3 == 0:
            item["user_id"] = "u1"
        items.append(item)
    items += [dict(items[7]) for _ in range(3)]  # identical texts tie: id order decides
    queries = [" ".join(rng.sample(VOCAB[:40], rng.randint(2, 5))) for _ in range(60)]
    queries += ["w0 w1 w2", "w0 w39", "w1 w1 w7"]
    with fivefold.Memory.open(pg_url, embedder=fivefold.HashingEmbedder()) as mem:
        mem.remember_many(items)
        store = mem.store
        monkeypatch.setattr(store._bm25, "kept", ListCache(limit=0))  # every list read, below: kept

        def search(scope: Scope, query: str, types: tuple[MemoryType, ...] = ()) -> object:
            return store.lexical_search(scope, query.split(), 10, types, weights=weights)

        cases = [
            (Scope("default"), ()),
            (Scope("default", user_id="u1"), ()),
            (Scope("default"), (MemoryType.EVENT,)),
        ]
        monkeypatch.setattr(lexical, "SCORE_ALL_POSTINGS", 10**9)  # never prunes: scores everything
        exact = [search(scope, q, types) for scope, types in cases for q in queries]
        assert store._bm25.pruned == 0
        monkeypatch.setattr(lexical, "SCORE_ALL_POSTINGS", 60)
        monkeypatch.setattr(lexical, "PRUNE_POSTINGS", 60)
        monkeypatch.setattr(lexical, "IMPACT_DEPTH", 4)  # several rounds, not one that reads all
        # Every search in impact order where it applies, or none (MaxScore).
        monkeypatch.setattr(lexical, "IMPACT_LONG_LISTS", len(VOCAB) if in_impact_order else -1)
        pruned = [search(scope, q, types) for scope, types in cases for q in queries]
        assert pruned == exact
        with psycopg.connect(pg_url) as conn:
            built = conn.execute(
                "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() "
                "AND indexname = 'postings_impact'"
            ).fetchone()
        assert (built is not None) == indexed
        assert store._bm25.pruned > len(exact) // 4  # the pruning answered, not the fallback
        if weights.content == 0.0 and in_impact_order:  # first columns only: mostly so
            assert store._bm25.by_impact > len(exact) // 4
            assert store._bm25.stopped_early > len(exact) // 8  # the bound decided
        else:
            assert store._bm25.by_impact == 0
            assert store._bm25.second_rounds > 0  # the essential tokens scored over their lists


def _corpus(seed: int, count: int) -> tuple[list[dict[str, object]], list[str]]:
    rng = random.Random(seed)
    items: list[dict[str, object]] = [
        {"content": _text(rng), "type": rng.choice(["fact", "event"]), "session_id": f"s{i // 25}"}
        for i in range(count)
    ]
    queries = [" ".join(rng.sample(VOCAB[:40], rng.randint(2, 5))) for _ in range(40)]
    return items, queries


@pytest.mark.parametrize("steady", [False, True], ids=["pruning", "steady"])
@pytest.mark.parametrize("weights", WEIGHTS)
def test_lists_kept_from_earlier_searches_give_the_same_top_k(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, weights: ColumnWeights, steady: bool
) -> None:
    """Some lists kept, some read: scored in full from the cache when it holds them all, the
    pruned strategies filtering kept lists to the memories they score; or, once the namespace
    is steady (searched, not written), every list read whole and kept."""
    monkeypatch.setattr(schema, "IMPACT_INDEX_FROM", 1)
    monkeypatch.setattr(lists, "STEADY_SEARCHES", lists.STEADY_SEARCHES if steady else 10**9)
    items, queries = _corpus(5, 400)
    with fivefold.Memory.open(pg_url, embedder=fivefold.HashingEmbedder()) as mem:
        mem.remember_many(items)
        store = mem.store

        def search(query: str, types: tuple[MemoryType, ...] = ()) -> object:
            return store.lexical_search(Scope("default"), query.split(), 10, types, weights=weights)

        cases = [(q, t) for q in queries for t in [(), (MemoryType.EVENT,)]]
        monkeypatch.setattr(store._bm25, "kept", ListCache(limit=0))
        monkeypatch.setattr(lexical, "SCORE_ALL_POSTINGS", 10**9)
        exact = [search(q, t) for q, t in cases]
        monkeypatch.setattr(store._bm25, "kept", ListCache())
        for token in VOCAB[:40:2]:  # every other token's lists kept: most queries mix both
            search(token)
        assert store._bm25.kept.size_bytes > 0
        monkeypatch.setattr(lexical, "SCORE_ALL_POSTINGS", 60)
        monkeypatch.setattr(lexical, "PRUNE_POSTINGS", 60)
        monkeypatch.setattr(lexical, "IMPACT_DEPTH", 4)
        whole = [n for n, (_, t) in enumerate(cases) if not t]  # the searches lists are kept for
        assert [search(*cases[n]) for n in whole] == [exact[n] for n in whole]
        # Steady: read whole, not pruned. Else pruned, kept lists filtered to what it scores.
        assert (store._bm25.pruned == 0) == steady
        assert [search(q, t) for q, t in cases] == exact


def test_a_write_by_another_store_object_is_seen_past_the_kept_lists(pg_url: str) -> None:
    items, _ = _corpus(9, 200)
    embedder = fivefold.HashingEmbedder()
    with (
        fivefold.Memory.open(pg_url, embedder=embedder) as reader,
        fivefold.Memory.open(pg_url, embedder=embedder) as writer,  # as another process
    ):
        writer.remember_many(items)

        def top() -> list[int]:
            found = reader.store.lexical_search(
                Scope("default"), ["w0", "w3"], 5, weights=DEFAULT_WEIGHTS
            )
            return [i for i, _ in found]

        before = top()
        assert reader.store._bm25.kept.size_bytes > 0  # both lists kept
        assert top() == before
        new = writer.remember("w0 w3 w3 w0 w3").id
        assert top()[0] == new  # a new generation: the kept lists are not used
        writer.forget(new)
        assert top() == before
        writer.forget(before[0])
        assert before[0] not in top()


def test_kept_lists_are_not_taken_for_a_namespace_made_again(pg_url: str) -> None:
    """A schema dropped and made again restarts the generations: the row version tells the
    new namespace from the one the lists came from."""
    embedder = fivefold.HashingEmbedder()

    def top(memory: fivefold.Memory) -> list[tuple[int, float]]:
        return memory.store.lexical_search(
            Scope("default"), ["apple", "pear"], 10, weights=DEFAULT_WEIGHTS
        )

    with psycopg.connect(pg_url, autocommit=True) as conn:
        schema_name = conn.execute("SELECT current_schema()").fetchone()[0]  # type: ignore[index]
    with fivefold.Memory.open(pg_url, embedder=embedder) as reader:
        reader.remember_many([{"content": f"apple pear note {i}"} for i in range(20)])
        reader.remember("Old Name joined", entities=["Old Name"])  # generation 2
        for _ in range(lists.STEADY_SEARCHES + 1):
            top(reader)
        assert reader.store._bm25.kept.size_bytes > 0
        assert "Old Name" in {e.name for e in reader.store.catalog("default")}
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema_name}" CASCADE')
            conn.execute(f'CREATE SCHEMA "{schema_name}"')
        with fivefold.Memory.open(pg_url, embedder=embedder) as writer:
            writer.remember_many(
                [{"content": f"apple other {i}"} for i in range(3)]
                + [{"content": f"banana kiwi {i}"} for i in range(7)]
            )
            writer.remember("Kiwi Patel joined", entities=["Kiwi Patel"])  # generation 2 again
            assert top(reader) == top(writer)
            assert len(top(writer)) == 3
            # The entity catalog too, kept per version of the namespace's row.
            names = {e.name for e in reader.store.catalog("default")}
            assert names == {e.name for e in writer.store.catalog("default")} == {"Kiwi Patel"}


# BM25 as the backend computed it in SQL before the client summed it: the reference.
REFERENCE_FIELD = """
SELECT p.memory_id AS id,
       sum(q.n * (
           %(w1_{f})s::float8 * ln(1 + (%(docs)s::float8 - least(t.df1, %(docs)s) + 0.5)
               / (t.df1 + 0.5)) * p.first * 2.2
               / (p.first + 1.2 * (0.25 + 0.75 * p.norm1 / %(avg1_{f})s::float8))
         + %(w2_{f})s::float8 * ln(1 + (%(docs)s::float8 - least(t.df2, %(docs)s) + 0.5)
               / (t.df2 + 0.5)) * p.second * 2.2
               / (p.second + 1.2 * (0.25 + 0.75 * p.norm2 / %(avg2_{f})s::float8))
       )) AS s
FROM unnest(%(terms)s::text[], %(counts)s::int[]) AS q(term, n)
JOIN term_stats t ON t.namespace = %(ns)s AND t.field = {f} AND t.term = q.term
JOIN postings p ON p.namespace = %(ns)s AND p.field = {f} AND p.term = q.term
GROUP BY p.memory_id
"""


def test_the_client_sums_bm25_as_the_sql_formula(pg_url: str) -> None:
    from collections import Counter

    rng = random.Random(5)
    items = [{"content": _text(rng), "session_id": f"s{i // 20}"} for i in range(300)]
    queries = [" ".join(rng.sample(VOCAB[:50], rng.randint(1, 5))) for _ in range(40)]
    with fivefold.Memory.open(pg_url, embedder=fivefold.HashingEmbedder()) as mem:
        mem.remember_many(items)
        store = mem.store
        with psycopg.connect(pg_url) as conn:
            docs, tokens = conn.execute(
                "SELECT memories, tokens FROM namespaces WHERE namespace = 'default'"
            ).fetchone()  # type: ignore[misc]
            for weights in WEIGHTS:
                columns = {
                    schema.OWN: (weights.predicate, weights.content),
                    schema.CONTEXT: (weights.context, 0.0),
                }
                fields = [f for f, (a, b) in columns.items() if a > 0.0 or b > 0.0]
                sql = (
                    "SELECT id, round(sum(s)::numeric, 12)::float8 FROM ("
                    + " UNION ALL ".join(REFERENCE_FIELD.format(f=f) for f in fields)
                    + ") x GROUP BY id HAVING sum(s) > 0 ORDER BY 2 DESC, id LIMIT 10"
                )
                for query in queries:
                    counts = Counter(query.split())
                    params: dict[str, object] = {
                        "ns": "default",
                        "docs": docs,
                        "terms": list(counts),
                        "counts": list(counts.values()),
                    }
                    for f in fields:
                        params |= {
                            f"w1_{f}": columns[f][0],
                            f"w2_{f}": columns[f][1],
                            f"avg1_{f}": max(tokens[2 * f] / docs, 1e-9),
                            f"avg2_{f}": max(tokens[2 * f + 1] / docs, 1e-9),
                        }
                    want = conn.execute(sql, params).fetchall()
                    got = store.lexical_search(Scope("default"), query.split(), 10, weights=weights)
                    assert [i for i, _ in got] == [i for i, _ in want], query
                    assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-9)
