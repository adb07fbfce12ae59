"""A word of the store's own everyday text is not taken for the entity it spells, unless its
case says it is the name."""

from __future__ import annotations

import fivefold
from fivefold import Memory


def test_a_lower_case_word_the_memories_use_everywhere_names_no_entity() -> None:
    with Memory.open(":memory:", embedder=fivefold.HashingEmbedder()) as mem:
        mem.remember("We saw Tokyo Times Square at night.", user_id="x")
        for i in range(6):
            mem.remember(f"I ran {i} times this week, three times by the river.", user_id="x")
        ordinary = mem.recall("how many times did I run by the river?", user_id="x")
        named = mem.recall("What did we see in Times Square?", user_id="x")
    assert ordinary.query.entity_refs == ()
    assert ordinary.plan.name != "entity_centric"
    assert [r.name for r in named.query.entity_refs] == ["Tokyo Times Square"]


def test_one_word_of_a_longer_name_is_the_name_only_where_the_store_uses_it_so() -> None:
    """ "family" in two memories, one of them naming Family Day: no ref; a word the store uses
    only inside the name ("priya" of Priya Raman) still finds it in lower case."""
    with Memory.open(":memory:", embedder=fivefold.HashingEmbedder()) as mem:
        mem.remember("Family Day at High Park with the kids.", user_id="x")
        mem.remember("The whole family had a check-up in April.", user_id="x")
        mem.remember("Priya Raman leads the Heron team.", user_id="x")
        ordinary = mem.recall("which appointments did the family have?", user_id="x")
        cased = mem.recall("what did we do on Family Day?", user_id="x")
        named = mem.recall("which team does priya lead?", user_id="x")
    assert ordinary.query.entity_refs == ()
    assert [r.name for r in cased.query.entity_refs] == ["Family Day"]
    assert [r.name for r in named.query.entity_refs] == ["Priya Raman"]
