"""``relate`` and ``alias`` arguments checked without a store: the CLI refuses a bad relation
before it opens one (a refused write at a new path would leave an empty store behind)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fivefold import validate
from fivefold.errors import InvalidInput
from fivefold.store.records import NewEdge
from fivefold.store.shared.rows import refuse_self_edge
from fivefold.text import normalize_name
from fivefold.write.prepare import MAX_PREDICATE_CHARS


def alias_of(name: object, alias: object, *, namespace: object = "default") -> tuple[str, str, str]:
    """``alias``'s arguments checked: (namespace, name, alias)."""
    checked = (
        validate.name_text(namespace, "namespace"),
        validate.entity_name(name, "name"),
        validate.entity_name(alias, "alias"),
    )
    for what, value in (("alias", checked[2]), ("entity name", checked[1])):  # the store's order
        if not normalize_name(value):
            raise InvalidInput(f"{what} {value!r} has no letters or digits")
    return checked


def relation_of(
    source: object,
    relation: object,
    target: object,
    *,
    kind: object = "structural",
    confidence: object = 1.0,
    valid_from: object = None,
    valid_to: object = None,
    namespace: object = "default",
    user_id: object = None,
    agent_id: object = None,
    record: object = True,
) -> tuple[NewEdge, dict[str, Any] | None]:
    """``relate``'s arguments checked: the edge, and the fact memory's item when ``record``."""
    if not isinstance(record, bool):  # "no" would be taken as True
        raise InvalidInput(f"record must be True or False, got {record!r}")
    source = validate.entity_name(source, "source").strip()
    target = validate.entity_name(target, "target").strip()
    name = validate.name_text(relation, "relation").strip()
    for side, value in (("source", source), ("target", target)):
        if not normalize_name(value):
            raise InvalidInput(f"{side}={value!r} has no letters or digits")
    start = validate.when(valid_from, "valid_from")
    end = validate.when(valid_to, "valid_to")
    if start is not None and end is not None and end < start:
        raise InvalidInput("valid_to is before valid_from")
    edge = NewEdge(
        source=source,
        relation=name,
        target=target,
        kind=validate.edge_kind(kind),
        confidence=validate.unit_interval(confidence, "confidence"),
        valid_from=start,
        valid_to=end,
        scope=validate.scope(namespace, user_id, agent_id, written=True),
    )
    predicate = f"{source} {name.replace('_', ' ')} {target}"
    if record and len(predicate) > MAX_PREDICATE_CHARS:
        raise InvalidInput(
            f"source, relation and target make a fact of {len(predicate):,} characters "
            f"(the limit is {MAX_PREDICATE_CHARS:,}); record=False adds the edge alone"
        )
    # One key is one entity whatever the store holds (an alias can only make more pairs one).
    refuse_self_edge(edge, normalize_name(source), normalize_name(target))
    if not record:
        return edge, None
    scope = edge.scope
    item = {
        "content": _relation_sentence(source, name, target, end),
        "type": "fact",
        "predicate": predicate,
        "entities": [source, target],
        "namespace": scope.namespace,
        "user_id": scope.user_id,
        "agent_id": scope.agent_id,
    }
    return edge, {k: v for k, v in item.items() if v is not None}


def _relation_sentence(source: str, relation: str, target: str, until: datetime | None) -> str:
    sentence = f"{source} {relation.replace('_', ' ')} {target}"
    if until is not None:
        sentence += f" (until {until.date().isoformat()})"
    return sentence + "."
