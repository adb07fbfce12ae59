"""What a text states, offline: memory type, entities, predicate and event date, and the
(subject, attribute, value) frames that tell a change from a new fact (`frames`)."""

from fivefold.extract.entities import extract_entities
from fivefold.extract.infer import infer_predicate, infer_type

__all__ = ["extract_entities", "infer_predicate", "infer_type"]
