"""The five retrievers. Each returns the same currency: a ranked tuple of ``Scored`` (memory id,
confidence in [0, 1]), best first, ties broken by id, with the scope applied by the store."""

from fivefold.read.retrieve.graph import graph_search
from fivefold.read.retrieve.lexical import lexical_search, match_confidence
from fivefold.read.retrieve.semantic import semantic_search
from fivefold.read.retrieve.temporal import temporal_search
from fivefold.read.retrieve.typefilter import type_list

__all__ = [
    "graph_search",
    "lexical_search",
    "match_confidence",
    "semantic_search",
    "temporal_search",
    "type_list",
]
