"""The graph's scoring against a plain-Python oracle: one hop of the walk (``neighbours``: the
strongest edges read, then scored) against the formula applied to every edge in scope, and
``mentions`` against a noisy-or over per-entity reads, on seeded random graphs with every edge
kind, co-mentions, expired lifecycle edges and user-scoped edges."""

from __future__ import annotations

import math
import random
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

import fivefold
from fivefold import EdgeKind, Memory, Scope
from fivefold.store.records import EdgeRow
from fivefold.store.scoring import EntityScore, NeighbourStep, mentions, neighbours
from fivefold.store.sqlite.files import register_math

NOW = datetime(2026, 3, 20, tzinfo=UTC)
PRIORS = {EdgeKind.STRUCTURAL: 1.0, EdgeKind.SEMANTIC: 0.9, EdgeKind.LIFECYCLE: 0.8}
NAMES = [f"Entity{i:02d}" for i in range(24)]
SCOPES = [Scope(), Scope("default", "u1"), Scope("default", "u2")]

EVERY_EDGE = 1_000_000  # a cap no test graph reaches: every edge in scope, from each side


def _build(seed: int) -> Memory:
    rng = random.Random(seed)
    mem = Memory.open(":memory:", embedder=fivefold.HashingEmbedder())
    items = []
    for i in range(60):
        named = rng.sample(NAMES, rng.choice([1, 2, 2, 3]))
        user = rng.choice([None, None, "u1", "u2"])
        items.append({"content": f"note {i} about " + " and ".join(named), "entities": named})
        if user is not None:
            items[-1]["user_id"] = user
    mem.remember_many(items)
    for _ in range(30):
        source, target = rng.sample(NAMES, 2)
        kind = rng.choice(["structural", "semantic", "lifecycle"])
        expired = kind == "lifecycle" and rng.random() < 0.5
        mem.relate(
            source,
            rng.choice(["reports_to", "works_on", "knows"]),
            target,
            kind=kind,
            confidence=round(rng.uniform(0.3, 1.0), 2),
            valid_to=NOW - timedelta(days=3) if expired else None,
            user_id=rng.choice([None, None, "u1"]),
            record=False,
        )
    return mem


@pytest.fixture(params=[1, 2, 3])
def graph(request: pytest.FixtureRequest) -> Iterator[Memory]:
    with _build(request.param) as mem:
        yield mem


def _oracle(
    edges: list[EdgeRow], frontier: dict[int, float], exclude: set[int], limit: int
) -> list[tuple[int, float]]:
    step: dict[int, float] = {}
    now = NOW.timestamp()
    for edge in edges:
        fresh = 0.3 if edge.valid_to is not None and edge.valid_to < now else 1.0
        path = frontier[edge.entity_id] * edge.strength * PRIORS[edge.kind] * fresh
        if path > step.get(edge.there, 0.0):
            step[edge.there] = path
    kept = [(e, p) for e, p in step.items() if e not in exclude]
    return sorted(kept, key=lambda kv: (-kv[1], kv[0]))[:limit]


def _ids(mem: Memory) -> dict[str, int]:
    return {e.name: e.entity_id for e in mem.store.reads.catalog("default") if not e.is_alias}


@pytest.mark.parametrize("scope", SCOPES, ids=["all", "u1", "u2"])
def test_one_hop_matches_the_formula(graph: Memory, scope: Scope) -> None:
    ids = _ids(graph)
    rng = random.Random(7)
    seen = 0
    for _ in range(10):
        roots = rng.sample(sorted(ids.values()), 3)
        frontier = {e: round(rng.uniform(0.2, 1.0), 2) for e in roots}
        exclude = set(roots) | set(rng.sample(sorted(ids.values()), 2))
        for limit in (3, 64):
            step = NeighbourStep(
                frontier=frontier,
                priors=PRIORS,
                now=NOW,
                expired_freshness=0.3,
                exclude=exclude,
                limit=limit,
            )
            got = neighbours(graph.store.search, scope, step)
            expected = _oracle(
                graph.store.search.strongest_edges(scope, roots, EVERY_EDGE),
                frontier,
                exclude,
                limit,
            )
            assert [e for e, _ in got] == [e for e, _ in expected]
            assert [p for _, p in got] == pytest.approx([p for _, p in expected])
            seen += len(got)
    assert seen > 0


def test_an_empty_frontier_or_limit_reaches_nothing(graph: Memory) -> None:
    step = NeighbourStep(
        frontier={}, priors=PRIORS, now=NOW, expired_freshness=0.3, exclude=(), limit=5
    )
    assert neighbours(graph.store.search, Scope(), step) == []


def _mentions_oracle(
    mem: Memory, scope: Scope, entities: list[EntityScore], k: int
) -> list[tuple[int, float, int, int, float]]:
    named: dict[int, list[EntityScore]] = {}
    for entity in entities:
        # The store reads each entity's most recent mentions: max(4k, 200) of a query entity,
        # k/4 of one reached over an edge.
        cap = max(4 * k, 200) if entity.hops == 0 else max(1, k // 4)
        for memory in sorted(_memories_naming(mem, scope, entity.entity_id), reverse=True)[:cap]:
            named.setdefault(memory, []).append(entity)
    rows = []
    for memory, found in named.items():
        best = max(e.score for e in found)
        score = (
            best if len(found) == 1 or best >= 1.0 else 1 - math.prod(1 - e.score for e in found)
        )
        direct = [e for e in found if e.hops == 0]
        rows.append(
            (memory, score, min(e.hops for e in found), len(direct), sum(e.rarity for e in direct))
        )
    rows.sort(key=lambda r: (-r[1], -r[3], -r[4], r[0]))
    return rows[:k]


def _memories_naming(mem: Memory, scope: Scope, entity_id: int) -> list[int]:
    found = []
    for record in mem.store.reads.get_memories("default", list(range(1, 200))).values():
        in_scope = scope.user_id is None or record.user_id == scope.user_id
        names = {e.name: e.entity_id for e in mem.store.reads.catalog("default")}
        if in_scope and any(names.get(n) == entity_id for n in record.entities):
            found.append(record.id)
    return found


@pytest.mark.parametrize("scope", SCOPES, ids=["all", "u1", "u2"])
def test_mentions_rank_by_noisy_or_then_touched_then_rarity(graph: Memory, scope: Scope) -> None:
    ids = sorted(_ids(graph).values())
    rng = random.Random(11)
    seen = 0
    for _ in range(5):
        entities = [
            EntityScore(e, round(rng.choice([1.0, rng.uniform(0.1, 0.9)]), 2), hops, rng.random())
            for e, hops in zip(rng.sample(ids, 4), [0, 0, 1, 2], strict=True)
        ]
        got = mentions(graph.store.search, scope, entities, 25)
        expected = _mentions_oracle(graph, scope, entities, 25)
        assert [h.memory_id for h in got] == [r[0] for r in expected]
        for hit, (_, score, hops, touched, rarity) in zip(got, expected, strict=True):
            assert hit.score == pytest.approx(score)
            assert (hit.hops, hit.touched) == (hops, touched)
            assert hit.rarity == pytest.approx(rarity)
        seen += len(got)
    assert seen > 0


def test_python_math_stands_in_for_sqlite_math_functions(graph: Memory) -> None:
    # Application functions override SQLite's built-ins of the same name, so this exercises
    # the fallback a SQLite without math functions gets.
    entities = [EntityScore(e, 0.5, 0, 1.0) for e in sorted(_ids(graph).values())[:6]]
    builtin = mentions(graph.store.search, Scope(), entities, 30)
    conn: sqlite3.Connection = graph.store._core.conn  # type: ignore[attr-defined]
    register_math(conn)
    assert conn.execute("SELECT ln(1.0), ln(0.0), exp(0.0)").fetchone() == (0.0, None, 1.0)
    fallback = mentions(graph.store.search, Scope(), entities, 30)
    assert [h.memory_id for h in fallback] == [h.memory_id for h in builtin]
    assert [h.score for h in fallback] == pytest.approx([h.score for h in builtin])
    assert any(h.touched > 1 for h in builtin)  # the noisy-or path ran
