"""Stage 2 of the read path: from a parsed query to a plan of retrievers and weights."""

from fivefold.plan.balanced import balanced_plan

__all__ = ["balanced_plan"]
