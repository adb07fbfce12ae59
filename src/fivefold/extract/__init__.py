"""The write path's offline inference: memory type, entities, predicate and event date."""

from fivefold.extract.entities import extract_entities
from fivefold.extract.infer import infer_predicate, infer_type

__all__ = ["extract_entities", "infer_predicate", "infer_type"]
