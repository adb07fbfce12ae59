"""Scope isolation: a namespace/user/agent scope never sees another's memories, in
any retriever, the graph included, and not even as a candidate that fusion later drops."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fivefold
from fivefold import Memory, NotFound, Scope
from fivefold.store.scoring import EntityScore, mentions

NOW = datetime(2026, 3, 20, 17, 0, tzinfo=UTC)
NAMESPACES = ("alpha", "beta", "gamma")
USERS: tuple[str | None, ...] = (None, "u1", "u2")
ENTITIES = ("Priya Patel", "Project Kestrel", "Sarah Chen", "Atlas")
TOPICS = ("budget", "roadmap", "database", "hiring", "launch")
TEMPLATES = {
    "event": "{names} met about the {topic}",
    "fact": "{names} owns the {topic}",
    "preference": "{names} prefers a short {topic}",
}
QUERIES = (
    "what did Priya Patel and Sarah Chen do last week?",
    "Kestrel {topic} news from last week",
    "tell me about Atlas and PP last week",
    "who reports to Priya Patel?",
)
TYPE_FILTERS: tuple[Sequence[str] | str | None, ...] = (
    None,
    ["event"],
    ["fact", "preference"],
    "preference",
)
BUDGETS = ("low", "mid", "high")

memory_specs = st.lists(
    st.tuples(
        st.sampled_from(NAMESPACES),
        st.sampled_from(USERS),
        st.sets(st.sampled_from(ENTITIES), min_size=1, max_size=3),
        st.sampled_from(sorted(TEMPLATES)),
        st.integers(min_value=0, max_value=6 * 24),  # hours back, inside "last week"
        st.sampled_from(TOPICS),
    ),
    min_size=1,
    max_size=24,
)

EVERY_EDGE = 1_000_000  # a cap no test graph reaches: every edge in scope, from each side


def _in_scope(record: fivefold.MemoryRecord, namespace: str, user_id: str | None) -> bool:
    return record.namespace == namespace and (user_id is None or record.user_id == user_id)


def _seed(
    memory: Memory,
    specs: Sequence[tuple[str, str | None, set[str], str, int, str]],
    relate_user: str | None,
) -> None:
    # The same baseline event in every scope: identical text, entities and date, so every
    # retriever is equally tempted by every tenant's copy.
    baseline = [
        {
            "content": "Priya Patel met Sarah Chen about the Kestrel budget",
            "type": "event",
            "event_at": NOW - timedelta(days=2),
            "entities": ["Priya Patel", "Sarah Chen", "Project Kestrel"],
            "namespace": namespace,
            **({"user_id": user} if user else {}),
        }
        for namespace in NAMESPACES
        for user in USERS
    ]
    generated = [
        {
            "content": TEMPLATES[kind].format(names=" and ".join(sorted(names)), topic=topic),
            "type": kind,
            "event_at": NOW - timedelta(hours=hours),
            "entities": sorted(names),
            "namespace": namespace,
            **({"user_id": user} if user else {}),
        }
        for namespace, user, names, kind, hours, topic in specs
    ]
    memory.remember_many(baseline + generated)
    # Relations and an alias in one namespace only: graph edges the other tenants must not walk.
    memory.relate("Sarah Chen", "reports_to", "Priya Patel", namespace="alpha", user_id=relate_user)
    memory.relate("Atlas", "part_of", "Project Kestrel", namespace="alpha")
    memory.alias("Priya Patel", "PP", namespace="alpha")


def _check_scope(memory: Memory, namespace: str, user_id: str | None, seen: Counter[str]) -> None:
    for qi, template in enumerate(QUERIES):
        query = template.format(topic=TOPICS[qi % len(TOPICS)])
        for bi, budget in enumerate(BUDGETS):
            types = TYPE_FILTERS[(qi + bi) % len(TYPE_FILTERS)]
            result = memory.recall(
                query,
                k=50,
                namespace=namespace,
                user_id=user_id,
                now=NOW,
                types=types,
                budget=budget,
            )
            for name in result.plan.retrievers:
                seen[f"plan:{name}"] += 1
            for hit in result.hits:
                assert _in_scope(hit.memory, namespace, user_id), (query, namespace, user_id)
                for source in hit.sources:
                    seen[f"hit:{source}"] += 1
            if types is None and qi == 0:
                # The scope's own baseline event is there to be found: the check is not vacuous.
                assert result.hits
            seen["recalls"] += 1
        explanation = memory.explain(
            query,
            k=50,
            namespace=namespace,
            user_id=user_id,
            now=NOW,
            types=TYPE_FILTERS[qi % len(TYPE_FILTERS)],
            budget=BUDGETS[qi % len(BUDGETS)],
        )
        candidates = {item.id for run in explanation.runs for item in run.items}
        records = memory.store.reads.get_memories(namespace, sorted(candidates))
        assert set(records) == candidates
        for run in explanation.runs:
            seen[f"run:{run.name}"] += bool(run.items)
            for item in run.items:
                assert _in_scope(records[item.id], namespace, user_id), (run.name, query)
        for ref in explanation.query.entity_refs:
            assert ref.entity_id in {e.entity_id for e in memory.store.reads.catalog(namespace)}


@pytest.mark.slow
def test_no_retriever_crosses_a_namespace_or_user(new_store: Callable[[], str]) -> None:
    seen: Counter[str] = Counter()

    @settings(
        max_examples=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(specs=memory_specs, relate_user=st.sampled_from(USERS))
    def check(
        specs: list[tuple[str, str | None, set[str], str, int, str]], relate_user: str | None
    ) -> None:
        with Memory.open(new_store(), embedder=fivefold.HashingEmbedder()) as memory:
            _seed(memory, specs, relate_user)
            for namespace in NAMESPACES:
                for user_id in USERS:
                    _check_scope(memory, namespace, user_id, seen)

    check()
    # Every retriever actually ran and contributed hits, so scoping was tested, not skipped.
    for name in ("semantic", "lexical", "graph", "temporal", "type"):
        assert seen[f"plan:{name}"] > 0, name
        assert seen[f"hit:{name}"] > 0, name
        assert seen[f"run:{name}"] > 0, name


# -- plain tests --------------------------------------------------------------------------------


@pytest.fixture
def agents_mem(hashing_mem: Memory) -> Memory:
    for user in (None, "u1"):
        for agent in (None, "planner", "coder"):
            hashing_mem.remember(
                "Priya Patel decided the Kestrel deploy plan",
                entities=["Priya Patel", "Project Kestrel"],
                type="event",
                event_at=NOW - timedelta(days=1),
                user_id=user,
                agent_id=agent,
            )
    return hashing_mem


@pytest.mark.parametrize("agent_id", ["planner", "coder", "nobody"])
@pytest.mark.parametrize("user_id", [None, "u1"])
def test_agent_id_scopes_every_retriever(
    agents_mem: Memory, agent_id: str, user_id: str | None
) -> None:
    query = "what did Priya Patel decide about Kestrel yesterday?"
    result = agents_mem.recall(query, agent_id=agent_id, user_id=user_id, now=NOW)
    for hit in result.hits:
        assert hit.memory.agent_id == agent_id
        assert user_id is None or hit.memory.user_id == user_id
    expected = 0 if agent_id == "nobody" else (2 if user_id is None else 1)
    assert len(result.hits) == expected
    if expected:
        assert {"semantic", "lexical", "graph", "temporal"} <= set(result.hits[0].sources)
    explanation = agents_mem.explain(query, agent_id=agent_id, user_id=user_id, now=NOW)
    ids = {item.id for run in explanation.runs for item in run.items}
    for record in agents_mem.store.reads.get_memories("default", sorted(ids)).values():
        assert record.agent_id == agent_id


def test_no_agent_id_sees_every_agent_of_the_scope(agents_mem: Memory) -> None:
    result = agents_mem.recall("Priya Patel Kestrel deploy plan", user_id="u1", now=NOW)
    assert sorted(h.memory.agent_id or "" for h in result.hits) == ["", "coder", "planner"]
    assert {h.memory.user_id for h in result.hits} == {"u1"}


def test_forget_with_another_namespace_is_not_found_and_deletes_nothing(
    hashing_mem: Memory,
) -> None:
    record = hashing_mem.remember(
        "Priya Patel met Sarah Chen about the budget",
        namespace="alpha",
        entities=["Priya Patel", "Sarah Chen"],
    )
    hashing_mem.remember("An unrelated memory in beta", namespace="beta")
    before = hashing_mem.stats()
    with pytest.raises(NotFound) as info:
        hashing_mem.forget(record.id, namespace="beta")
    assert "beta" in str(info.value)
    with pytest.raises(NotFound):
        hashing_mem.get(record.id, namespace="beta")
    after = hashing_mem.stats()
    assert after == before
    assert hashing_mem.get(record.id, namespace="alpha") == record
    hits = hashing_mem.recall("Priya Patel budget", namespace="alpha").hits
    assert hits[0].memory.id == record.id
    assert {"lexical", "semantic", "graph"} <= set(hits[0].sources)
    hashing_mem.forget(record.id, namespace="alpha")
    with pytest.raises(NotFound):
        hashing_mem.get(record.id)


def test_user_scoped_edges_are_invisible_to_other_users(hashing_mem: Memory) -> None:
    hashing_mem.relate("Sarah Chen", "reports_to", "Priya Patel", user_id="u1")
    hashing_mem.remember("Sarah Chen and Omar Haddad pair on Atlas", user_id="u1")
    hashing_mem.remember("Priya Patel reviewed the Atlas budget", user_id="u2")
    catalog = {e.name: e.entity_id for e in hashing_mem.store.reads.catalog("default")}
    ids = [catalog["Sarah Chen"], catalog["Priya Patel"], catalog["Atlas"]]
    u1_edges = hashing_mem.store.search.strongest_edges(Scope("default", "u1"), ids, EVERY_EDGE)
    u2_edges = hashing_mem.store.search.strongest_edges(Scope("default", "u2"), ids, EVERY_EDGE)
    sarah = catalog["Sarah Chen"]
    assert any(sarah in (e.entity_id, e.there) for e in u1_edges)
    assert not any(sarah in (e.entity_id, e.there) for e in u2_edges)
    result = hashing_mem.recall("who reports to Priya Patel?", user_id="u2")
    assert result.hits
    assert {h.memory.user_id for h in result.hits} == {"u2"}
    assert hashing_mem.store.search.strongest_edges(Scope("other"), ids, EVERY_EDGE) == []


def test_entity_refs_resolve_only_within_the_namespace(hashing_mem: Memory) -> None:
    hashing_mem.remember("Zanzibar Quill leads Project Heron", namespace="alpha")
    hashing_mem.alias("Zanzibar Quill", "ZQ", namespace="alpha")
    for query in ("who is Zanzibar Quill?", "what does ZQ lead?", "Project Heron"):
        result = hashing_mem.recall(query, namespace="beta")
        assert result.query.entity_refs == ()
        assert result.hits == ()
        assert "graph" not in result.plan.retrievers


def test_entity_names_of_another_user_are_not_resolved(hashing_mem: fivefold.Memory) -> None:
    hashing_mem.remember("Zephyrine Quast called about the lease", namespace="ns", user_id="bob")
    hashing_mem.remember("Lunch with Marta", namespace="ns", user_id="alice")
    as_alice = hashing_mem.recall("what did Zephyrine Quast say?", namespace="ns", user_id="alice")
    assert as_alice.query.entity_refs == ()
    as_bob = hashing_mem.recall("what did Zephyrine Quast say?", namespace="ns", user_id="bob")
    assert [r.name for r in as_bob.query.entity_refs] == ["Zephyrine Quast"]
    # A namespace-wide recall (no user filter) sees every entity of the namespace.
    everyone = hashing_mem.recall("what did Zephyrine Quast say?", namespace="ns")
    assert [r.name for r in everyone.query.entity_refs] == ["Zephyrine Quast"]


def test_another_users_names_change_nothing_of_how_mine_resolve(
    new_store: Callable[[], str],
) -> None:
    """Every stage of the resolution sees the caller's names alone: another user's entity
    named exactly as the query's word must not end the cascade before the caller's own partial
    match, nor split its confidence (either told the caller what the other user wrote)."""
    with fivefold.Memory.open(new_store(), embedder=fivefold.HashingEmbedder()) as memory:
        yolanda = {"namespace": "team", "user_id": "yolanda"}
        xavier = {"namespace": "team", "user_id": "xavier"}
        memory.remember("Acme Corp signed the contract", **yolanda)

        def refs() -> tuple[list[tuple[str, float]], str]:
            explained = memory.explain("what is Acme doing?", **yolanda)
            found = [(r.name, r.confidence) for r in explained.query.entity_refs]
            return found, explained.plan.name

        alone = refs()
        assert alone[0] == [("Acme Corp", 0.9)]
        memory.remember("Xavier interviewed at Acme Labs", **xavier)
        assert refs() == alone
        memory.remember("Meeting with Acme tomorrow", **xavier, entities=["Acme"])
        memory.alias("Acme Labs", "Acme Corp Labs", namespace="team")
        assert refs() == alone
        # Namespace-wide, every entity counts: "Acme" itself is one.
        everyone = memory.explain("what is Acme doing?", namespace="team").query.entity_refs
        assert [(r.name, r.confidence) for r in everyone] == [("Acme", 1.0)]
        # A misspelt name finds the caller's entity, not another user's closer one.
        memory.remember("Globex Industries hired", **yolanda, entities=["Globex Industries"])
        memory.remember("Globec visited", **xavier, entities=["Globec"])
        fuzzy = memory.explain("news from Globec?", **yolanda).query.entity_refs
        assert [r.name for r in fuzzy] == ["Globex Industries"]


def test_get_and_forget_act_in_a_scope(hashing_mem: fivefold.Memory) -> None:
    mine = hashing_mem.remember("Ana's locker code is 5521", namespace="a", user_id="ana")
    with pytest.raises(fivefold.NotFound, match="namespace 'default'"):
        hashing_mem.get(mine.id)
    with pytest.raises(fivefold.NotFound):
        hashing_mem.get(mine.id, namespace="b")
    with pytest.raises(fivefold.NotFound, match="user 'bob'"):
        hashing_mem.get(mine.id, namespace="a", user_id="bob")
    for scope in ({}, {"namespace": "b"}, {"namespace": "a", "user_id": "bob"}):
        with pytest.raises(fivefold.NotFound):
            hashing_mem.forget(mine.id, **scope)
    assert hashing_mem.get(mine.id, namespace="a", user_id="ana").content == mine.content
    assert hashing_mem.get(mine.id, namespace="a").id == mine.id  # None: any user of "a"
    hashing_mem.forget(mine.id, namespace="a", user_id="ana")
    with pytest.raises(fivefold.NotFound):
        hashing_mem.get(mine.id, namespace="a")


def test_a_forgotten_name_resolves_nowhere(hashing_mem: fivefold.Memory) -> None:
    kept = hashing_mem.remember("Quillon Varga joined the team", entities=["Quillon Varga"])
    other = hashing_mem.remember("Zephyrine Okoro likes tea", entities=["Zephyrine Okoro"])
    refs = hashing_mem.explain("what does Zephyrine Okoro like?").query.entity_refs
    assert [r.name for r in refs] == ["Zephyrine Okoro"]
    hashing_mem.forget(other.id)
    assert hashing_mem.explain("what does Zephyrine Okoro like?").query.entity_refs == ()
    refs = hashing_mem.explain("who is Quillon Varga?").query.entity_refs
    assert [r.name for r in refs] == ["Quillon Varga"]
    assert hashing_mem.get(kept.id).entities == ("Quillon Varga",)


def test_a_write_links_only_to_names_of_its_own_scope(hashing_mem: fivefold.Memory) -> None:
    hashing_mem.remember("Kickoff notes", entities=["Zanzibar"], user_id="alice")
    # Lowercase: only the known-name pass links it, and "Zanzibar" is a name alice wrote.
    assert hashing_mem.remember("zanzibar budget moved", user_id="alice").entities == ("Zanzibar",)
    assert hashing_mem.remember("we talked about zanzibar spices", user_id="bob").entities == ()
    batch = hashing_mem.remember_many(
        [
            {"content": "approved", "entities": ["Quetzal"], "user_id": "carol"},
            {"content": "the quetzal is a bird", "user_id": "dave"},
            {"content": "quetzal budget", "user_id": "carol"},
        ]
    )
    assert batch[1].entities == ()
    assert batch[2].entities == ("Quetzal",)


@pytest.mark.parametrize("field", ["namespace", "user_id", "agent_id"])
def test_a_scope_name_with_a_nul_character_is_refused(hashing_mem: Memory, field: str) -> None:
    with pytest.raises(fivefold.InvalidInput, match=f"{field} contains a NUL"):
        hashing_mem.remember("a memory", **{field: "tenant\x00x"})
    with pytest.raises(fivefold.InvalidInput, match=f"{field} contains a NUL"):
        hashing_mem.recall("a memory", **{field: "tenant\x00x"})
    assert hashing_mem.stats().memories == 0


def test_mentions_of_another_namespaces_entity_are_never_read(
    hashing_mem: fivefold.Memory,
) -> None:
    """The graph's mention read for a whole namespace trusts no entity id it is given: an id
    of another namespace's entity reads nothing, whatever the scope's form."""
    made = hashing_mem.remember("Priya leads Kestrel", entities=["Priya"], namespace="a")
    entity = next(e.entity_id for e in hashing_mem.store.reads.catalog("a") if not e.is_alias)
    scored = [EntityScore(entity, 1.0, 0, 1.0)]
    for scope in (Scope("b"), Scope("b", user_id="u1"), Scope("b", agent_id="x")):
        assert mentions(hashing_mem.store.search, scope, scored, 10) == []
    found = mentions(hashing_mem.store.search, Scope("a"), scored, 10)
    assert [h.memory_id for h in found] == [made.id]
