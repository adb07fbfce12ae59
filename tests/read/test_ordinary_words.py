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
