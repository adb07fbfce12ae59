"""Graph retriever: hop scores along typed edges, edge priors, freshness, traversal direction,
hop limits, co-mention edges and tie-breaking, on small hand-made graphs."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import fivefold
from fivefold.config import GraphConfig, TemporalConfig
from fivefold.read.parse.entities import EntityResolver
from fivefold.read.parse.query import parse_query
from fivefold.read.retrieve import graph_search as graph_leg
from fivefold.read.retrieve.graph import specificity
from fivefold.store.protocol import Store
from fivefold.types import EntityRef, MemoryType, Resolution, Scope, Scored

NOW = datetime(2026, 3, 20, 17, 0, tzinfo=UTC)
CHAIN = ["Ana Silva", "Ben Okafor", "Cleo Park", "Dev Rao", "Eve Moss"]


def graph_search(store: Store, scope: Scope, refs: Any, **kwargs: Any) -> tuple[Scored, ...]:
    """The graph leg with its namespace's memory count, as a recall reads it."""
    total = store.reads.state(scope.namespace).memories
    return graph_leg(store, scope, refs, total=total, **kwargs)


def note(memory: fivefold.Memory, *names: str, type: str = "fact", **fields: object) -> int:
    text = "note about " + " and ".join(n.split()[0].lower() for n in names)
    return memory.remember(text, entities=list(names), type=type, **fields).id


def refs(memory: fivefold.Memory, *names: str, confidence: float = 1.0) -> list[EntityRef]:
    ids = {e.name: e.entity_id for e in memory.store.reads.catalog("default") if not e.is_alias}
    return [EntityRef(n, ids[n], n, confidence, Resolution.EXACT) for n in names]


def search(
    memory: fivefold.Memory,
    roots: Sequence[EntityRef],
    *,
    now: datetime = NOW,
    multi_hop: bool = False,
    scope: Scope | None = None,
    types: Sequence[MemoryType] = (),
) -> dict[int, tuple[float, int | None]]:
    results = graph_search(
        memory.store,
        scope or Scope(),
        roots,
        depth=50,
        now=now,
        # The bare formula; specificity weighting has its own tests below.
        config=GraphConfig(rarity_weighting=False),
        multi_hop=multi_hop,
        types=types,
    )
    return {s.id: (s.confidence, s.hops) for s in results}


def ordered(results: Sequence[Scored]) -> list[int]:
    return [s.id for s in results]


@pytest.fixture
def chain(hashing_mem: fivefold.Memory) -> dict[str, int]:
    """A -> B -> C -> D by structural edges; E isolated. One memory per person."""
    ids = {name: note(hashing_mem, name) for name in CHAIN}
    for source, target in itertools.pairwise(CHAIN[:4]):
        hashing_mem.relate(source, "manages", target, record=False)
    assert hashing_mem.stats().memories == len(CHAIN)  # record=False added no memories
    return ids


def test_hop_scores_along_structural_edges(
    hashing_mem: fivefold.Memory, chain: dict[str, int]
) -> None:
    found = search(hashing_mem, refs(hashing_mem, "Ana Silva"))
    assert found == {
        chain["Ana Silva"]: (1.0, 0),
        chain["Ben Okafor"]: (0.6, 1),
        chain["Cleo Park"]: (0.35, 2),
    }


def test_results_are_ranked_by_score(hashing_mem: fivefold.Memory, chain: dict[str, int]) -> None:
    results = graph_search(
        hashing_mem.store,
        Scope(),
        refs(hashing_mem, "Cleo Park"),
        depth=50,
        now=NOW,
        config=GraphConfig(rarity_weighting=False),
    )
    assert ordered(results)[0] == chain["Cleo Park"]
    assert {s.id for s in results[1:3]} == {chain["Ben Okafor"], chain["Dev Rao"]}
    assert [s.confidence for s in results] == [1.0, 0.6, 0.6, 0.35]
    assert ordered(results)[1:3] == sorted([chain["Ben Okafor"], chain["Dev Rao"]])


def test_max_two_hops_by_default_three_for_multi_hop(
    hashing_mem: fivefold.Memory, chain: dict[str, int]
) -> None:
    roots = refs(hashing_mem, "Ana Silva")
    assert chain["Dev Rao"] not in search(hashing_mem, roots)
    deep = search(hashing_mem, roots, multi_hop=True)
    assert deep[chain["Dev Rao"]] == (0.15, 3)
    assert chain["Eve Moss"] not in deep


def test_multi_hop_query_reaches_three_hops_end_to_end(
    hashing_mem: fivefold.Memory, chain: dict[str, int]
) -> None:
    parsed = parse_query(
        "friends of Ana Silva",
        now=NOW,
        resolver=EntityResolver(hashing_mem.store.reads.catalog("default")),
        temporal=TemporalConfig(),
    )
    assert parsed.multi_hop
    found = search(hashing_mem, parsed.entity_refs, multi_hop=parsed.multi_hop)
    assert found[chain["Dev Rao"]] == (0.15, 3)


def test_traversal_goes_against_edge_direction(hashing_mem: fivefold.Memory) -> None:
    sarah = note(hashing_mem, "Sarah Chen")
    dev = hashing_mem.remember(
        "Dev shipped the billing service", entities=["Dev Rao"], type="fact"
    ).id
    hashing_mem.relate("Dev Rao", "reports_to", "Sarah Chen", record=False)
    parsed = parse_query(
        "who reports to Sarah Chen?",
        now=NOW,
        resolver=EntityResolver(hashing_mem.store.reads.catalog("default")),
        temporal=TemporalConfig(),
    )
    assert [r.name for r in parsed.entity_refs] == ["Sarah Chen"]
    assert search(hashing_mem, parsed.entity_refs) == {sarah: (1.0, 0), dev: (0.6, 1)}
    hits = hashing_mem.recall("who reports to Sarah Chen?", now=NOW).hits
    by_id = {h.memory.id: h for h in hits}
    assert "graph" in by_id[dev].sources


@pytest.mark.parametrize(
    ("kind", "confidence", "valid_to", "expected"),
    [
        ("structural", 1.0, None, 0.6),
        ("semantic", 1.0, None, 0.6 * 0.9),
        ("structural", 0.5, None, 0.6 * 0.5),
        ("semantic", 0.5, None, 0.6 * 0.9 * 0.5),
        ("lifecycle", 1.0, NOW + timedelta(days=30), 0.6),
        ("lifecycle", 1.0, NOW - timedelta(days=1), 0.6 * 0.3),
        ("lifecycle", 0.5, NOW - timedelta(days=1), 0.6 * 0.3 * 0.5),
    ],
)
def test_edge_kind_confidence_and_freshness(
    hashing_mem: fivefold.Memory,
    kind: str,
    confidence: float,
    valid_to: datetime | None,
    expected: float,
) -> None:
    root = note(hashing_mem, "Ana Silva")
    neighbour = note(hashing_mem, "Ben Okafor")
    hashing_mem.relate(
        "Ana Silva",
        "works_with",
        "Ben Okafor",
        kind=kind,
        confidence=confidence,
        valid_to=valid_to,
        record=False,
    )
    found = search(hashing_mem, refs(hashing_mem, "Ana Silva"))
    assert found[root] == (1.0, 0)
    assert found[neighbour][0] == pytest.approx(expected)
    assert found[neighbour][1] == 1


def test_lifecycle_edge_fades_only_after_valid_to(hashing_mem: fivefold.Memory) -> None:
    note(hashing_mem, "Ana Silva")
    neighbour = note(hashing_mem, "Ben Okafor")
    end = datetime(2026, 1, 31, tzinfo=UTC)
    hashing_mem.relate(
        "Ana Silva", "mentors", "Ben Okafor", kind="lifecycle", valid_to=end, record=False
    )
    roots = refs(hashing_mem, "Ana Silva")
    assert search(hashing_mem, roots, now=end - timedelta(days=1))[neighbour][0] == 0.6
    assert search(hashing_mem, roots, now=end + timedelta(days=1))[neighbour][0] == pytest.approx(
        0.18
    )


def test_two_hop_path_multiplies_priors(hashing_mem: fivefold.Memory) -> None:
    note(hashing_mem, "Ana Silva")
    far = note(hashing_mem, "Cleo Park")
    hashing_mem.relate("Ana Silva", "knows", "Ben Okafor", kind="semantic", record=False)
    hashing_mem.relate(
        "Ben Okafor", "knows", "Cleo Park", kind="semantic", confidence=0.5, record=False
    )
    score, hops = search(hashing_mem, refs(hashing_mem, "Ana Silva"))[far]
    assert hops == 2
    assert score == pytest.approx(0.35 * 0.9 * 0.9 * 0.5)


def test_best_path_wins(hashing_mem: fivefold.Memory) -> None:
    note(hashing_mem, "Ana Silva")
    neighbour = note(hashing_mem, "Ben Okafor")
    hashing_mem.relate(
        "Ana Silva", "knows", "Ben Okafor", kind="semantic", confidence=0.2, record=False
    )
    hashing_mem.relate("Ana Silva", "manages", "Ben Okafor", record=False)
    assert search(hashing_mem, refs(hashing_mem, "Ana Silva"))[neighbour] == (0.6, 1)


def test_co_mention_edges_are_built_at_write_time(hashing_mem: fivefold.Memory) -> None:
    pair = note(hashing_mem, "Ana Silva", "Ben Okafor")
    ben = note(hashing_mem, "Ben Okafor")
    cleo = note(hashing_mem, "Cleo Park")
    found = search(hashing_mem, refs(hashing_mem, "Ana Silva"))
    # One co-mention: confidence 0.5, semantic prior 0.9, one hop 0.6.
    assert found == {pair: (1.0, 0), ben: (pytest.approx(0.6 * 0.5 * 0.9), 1)}
    assert cleo not in found
    # A second co-mention (another memory: the same words again would be a repeat): 0.75.
    note(hashing_mem, "Ana Silva", "Ben Okafor", metadata={"again": True})
    assert search(hashing_mem, refs(hashing_mem, "Ana Silva"))[ben][0] == pytest.approx(
        0.6 * 0.75 * 0.9
    )


def test_ambiguous_roots_are_all_walked_weighted_by_confidence(
    hashing_mem: fivefold.Memory,
) -> None:
    chen = note(hashing_mem, "Sarah Chen")
    jones = note(hashing_mem, "Sarah Jones")
    report = note(hashing_mem, "Dev Rao")
    hashing_mem.relate("Dev Rao", "reports_to", "Sarah Jones", record=False)
    roots = EntityResolver(hashing_mem.store.reads.catalog("default")).resolve(
        "what did Sarah say?"
    )
    assert [r.confidence for r in roots] == [0.45, 0.45]
    found = search(hashing_mem, roots)
    assert found[chen] == (pytest.approx(0.45), 0)
    assert found[jones] == (pytest.approx(0.45), 0)
    assert found[report] == (pytest.approx(0.6 * 0.45), 1)


def test_confident_root_is_walked_at_full_weight(hashing_mem: fivefold.Memory) -> None:
    ana = note(hashing_mem, "Ana Silva")
    assert search(hashing_mem, refs(hashing_mem, "Ana Silva", confidence=0.9)) == {ana: (1.0, 0)}


def test_ties_prefer_memories_touching_more_query_entities(hashing_mem: fivefold.Memory) -> None:
    only_ana = note(hashing_mem, "Ana Silva")
    only_ben = note(hashing_mem, "Ben Okafor")
    both = note(hashing_mem, "Ana Silva", "Ben Okafor")
    results = graph_search(
        hashing_mem.store,
        Scope(),
        refs(hashing_mem, "Ana Silva", "Ben Okafor"),
        depth=50,
        now=NOW,
        config=GraphConfig(rarity_weighting=False),
    )
    assert [s.confidence for s in results] == [1.0, 1.0, 1.0]
    assert ordered(results) == [both, only_ana, only_ben]


def test_ties_prefer_rarer_query_entities(hashing_mem: fivefold.Memory) -> None:
    # The speaker is named in many memories: weak evidence; the rare name ranks first.
    speaker = [note(hashing_mem, "Caroline", metadata={"n": n}) for n in range(6)]
    rare = note(hashing_mem, "Ben Okafor")
    for i in range(4):
        hashing_mem.remember(f"filler memory {i}", entities=[], type="fact")
    results = graph_search(
        hashing_mem.store,
        Scope(),
        refs(hashing_mem, "Caroline", "Ben Okafor"),
        depth=50,
        now=NOW,
        config=GraphConfig(rarity_weighting=False),
    )
    assert ordered(results) == [rare, *speaker]


def test_no_refs_no_results(hashing_mem: fivefold.Memory, chain: dict[str, int]) -> None:
    assert (
        graph_search(hashing_mem.store, Scope(), [], depth=50, now=NOW, config=GraphConfig()) == ()
    )


def test_depth_cuts_the_list(hashing_mem: fivefold.Memory, chain: dict[str, int]) -> None:
    results = graph_search(
        hashing_mem.store,
        Scope(),
        refs(hashing_mem, "Ana Silva"),
        depth=2,
        now=NOW,
        config=GraphConfig(rarity_weighting=False),
    )
    assert ordered(results) == [chain["Ana Silva"], chain["Ben Okafor"]]


def test_type_filter_and_scope_apply(hashing_mem: fivefold.Memory) -> None:
    fact = note(hashing_mem, "Ana Silva")
    event = note(hashing_mem, "Ana Silva", type="event")
    mine = note(hashing_mem, "Ana Silva", user_id="u1")
    roots = refs(hashing_mem, "Ana Silva")
    assert set(search(hashing_mem, roots)) == {fact, event, mine}
    assert set(search(hashing_mem, roots, types=[MemoryType.EVENT])) == {event}
    assert set(search(hashing_mem, roots, scope=Scope(user_id="u1"))) == {mine}


def test_edges_of_another_namespace_are_not_walked(hashing_mem: fivefold.Memory) -> None:
    note(hashing_mem, "Ana Silva")
    ben = note(hashing_mem, "Ben Okafor")
    hashing_mem.relate("Ana Silva", "manages", "Ben Okafor", namespace="other", record=False)
    assert ben not in search(hashing_mem, refs(hashing_mem, "Ana Silva"))


def test_specificity_weighting_discounts_entities_named_everywhere(
    hashing_mem: fivefold.Memory,
) -> None:
    # "Mel" is named in 8 of 10 memories (a chat partner), "Kestrel" in one.
    ids = [hashing_mem.remember(f"Mel said hello {i}", entities=["Mel"]).id for i in range(7)]
    both = hashing_mem.remember("Mel asked about Kestrel", entities=["Mel", "Kestrel"]).id
    hashing_mem.remember("Lunch notes", entities=[])
    hashing_mem.remember("More lunch notes", entities=[])
    roots = refs(hashing_mem, "Mel") + refs(hashing_mem, "Kestrel")
    found = graph_search(hashing_mem.store, Scope(), roots, depth=50, now=NOW, config=GraphConfig())
    score = {s.id: s.confidence for s in found}
    total, mel_df = 10, 8
    mel = math.log(total / mel_df) / math.log(total)
    assert score[ids[0]] == pytest.approx(mel)
    # Noisy-or: naming both entities beats naming either one.
    assert score[both] == pytest.approx(1 - (1 - mel) * (1 - 1.0))
    assert found[0].id == both
    assert specificity(total, mel_df) == pytest.approx(mel)
    assert specificity(1, 1) == 1.0
    assert specificity(100, 100) == 0.0


def test_a_hub_entity_costs_a_bounded_read_of_its_recent_mentions(
    hashing_mem: fivefold.Memory,
) -> None:
    ids = [
        r.id
        for r in hashing_mem.remember_many(
            [{"content": f"Mel said {i}", "entities": ["Mel"]} for i in range(250)]
        )
    ]
    found = graph_search(
        hashing_mem.store,
        Scope(),
        refs(hashing_mem, "Mel"),
        depth=10,
        now=NOW,
        config=GraphConfig(rarity_weighting=False),
    )
    assert len(found) == 10
    # Only the 200 most recent mentions are read (4 x depth, at least 200).
    assert min(s.id for s in found) > ids[49]


def test_each_hop_keeps_only_the_frontier_cap_best_entities(hashing_mem: fivefold.Memory) -> None:
    # A hub with five neighbours of decreasing edge confidence, each named by one memory.
    hub = note(hashing_mem, "Hub Person")
    spokes = [f"Spoke {name}" for name in ("Alpha", "Bravo", "Charlie", "Delta", "Echo")]
    reached = {}
    for rank, spoke in enumerate(spokes):
        hashing_mem.relate("Hub Person", "works_with", spoke, confidence=1.0 - 0.1 * rank)
        reached[spoke] = note(hashing_mem, spoke)
    roots = refs(hashing_mem, "Hub Person")

    def walk(cap: int | None, config: GraphConfig) -> set[int]:
        found = graph_search(
            hashing_mem.store, Scope(), roots, depth=50, now=NOW, config=config, frontier_cap=cap
        )
        return {s.id for s in found if s.hops == 1}

    every = {reached[s] for s in spokes}
    assert walk(None, GraphConfig()) >= every  # default cap 64
    assert walk(2, GraphConfig()) & every == {reached[s] for s in spokes[:2]}
    assert walk(None, GraphConfig(frontier_cap=3)) & every == {reached[s] for s in spokes[:3]}
    assert hub not in walk(2, GraphConfig())


def test_the_optimizer_walks_a_narrower_frontier_than_the_balanced_plan() -> None:
    from fivefold.config import Config, OptimizerConfig
    from fivefold.types import OptimizerMode

    with fivefold.Memory.open(
        ":memory:",
        embedder=fivefold.HashingEmbedder(),
        config=Config(optimizer=OptimizerConfig(mode=OptimizerMode.RULE, graph_frontier=5)),
    ) as mem:
        note(mem, "Ana Silva", "Ben Okafor")
        rule = mem.explain("what about Ana Silva?", now=NOW)
        off = fivefold.Memory(
            mem.store, mem.embedder, Config(optimizer=OptimizerConfig(mode=OptimizerMode.OFF))
        ).explain("what about Ana Silva?", now=NOW)
    assert rule.plan.graph_frontier == 5
    assert off.plan.graph_frontier is None
