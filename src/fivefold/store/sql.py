"""SQL that both backends share: the scope of a read (one function, each backend's parameter
style), and the statements written the same in both dialects."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from fivefold.types import Scope


class Dialect(StrEnum):
    """How a named parameter is written."""

    SQLITE = ":{}"
    POSTGRES = "%({})s"


def scope_sql(
    scope: Scope, alias: str = "m", *, shared: bool = False, dialect: Dialect = Dialect.SQLITE
) -> tuple[str, dict[str, Any]]:
    """``namespace`` always; ``user_id``/``agent_id`` only when the scope sets them. With
    ``shared``, rows written namespace-wide ('' user or agent, e.g. an org chart's edges) are
    visible to every user and agent of the namespace too. Named parameters: ns, user, agent."""
    clauses = [f"{alias}.namespace = {dialect.format('ns')}"]
    params: dict[str, Any] = {"ns": scope.namespace}
    for column, name, value in (
        ("user_id", "user", scope.user_id),
        ("agent_id", "agent", scope.agent_id),
    ):
        if value is None:
            continue
        param = dialect.format(name)
        clauses.append(
            f"{alias}.{column} IN ('', {param})" if shared else f"{alias}.{column} = {param}"
        )
        params[name] = value
    return " AND ".join(clauses), params


# The namespaces holding anything of their own (the same tables on both backends): a namespace
# of ``relate(record=False)`` edges or of feedback alone has no memories.
HELD_NAMESPACES = """
SELECT namespace FROM namespaces WHERE memories > 0
UNION SELECT namespace FROM entities
UNION SELECT namespace FROM edges
UNION SELECT namespace FROM aliases
UNION SELECT namespace FROM feedback
UNION SELECT namespace FROM models
"""
