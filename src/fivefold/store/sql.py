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

    @property
    def mark(self) -> str:
        """How a positional parameter is written."""
        return "?" if self is Dialect.SQLITE else "%s"

    def positional(self, statement: str) -> str:
        """``statement``, written with ``?`` marks, in this dialect."""
        return statement if self is Dialect.SQLITE else statement.replace("?", self.mark)


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


def forget_edges_sql(scope: Scope, dialect: Dialect) -> tuple[str, list[Any]]:
    """The deletion of the scope's edges (of exactly its user and agent, where it names them),
    returning their ends, with its positional parameters."""
    where, params = [f"namespace = {dialect.mark}"], [scope.namespace]
    for column, value in (("user_id", scope.user_id), ("agent_id", scope.agent_id)):
        if value is not None:
            where.append(f"{column} = {dialect.mark}")
            params.append(value)
    return f"DELETE FROM edges WHERE {' AND '.join(where)} RETURNING source_id, target_id", params


def forget_rows_sql(scope: Scope, dialect: Dialect) -> list[tuple[str, tuple[str, ...]]]:
    """The deletions, with their parameters, of what a forgotten scope leaves besides its
    memories and edges: a whole namespace's aliases, entities, models, sessions, slots and
    feedback; a user's own models, learned from what goes now."""
    ns, mark = scope.namespace, dialect.mark
    if scope.user_id is None and scope.agent_id is None:
        tables = ("aliases", "entities", "models", "sessions", "slots", "feedback")
        return [(f"DELETE FROM {table} WHERE namespace = {mark}", (ns,)) for table in tables]
    if scope.user_id is not None:
        own = f"DELETE FROM models WHERE namespace = {mark} AND user_id = {mark}"
        return [(own, (ns, scope.user_id))]
    return []


# A session once one of its memories is forgotten: the span of the ones left, or no row (its
# times stayed, and "since we last talked" counted from a session nothing held any more).
# Written with ``?`` marks (``Dialect.positional``).
_SESSION_OF = (
    "FROM memories m WHERE m.namespace = sessions.namespace AND m.user_id = sessions.user_id "
    "AND m.agent_id = sessions.agent_id AND m.session_id = sessions.session_id"
)
RESPAN_SESSION = f"""
UPDATE sessions SET started_at = (SELECT min(m.created_at) {_SESSION_OF}),
    last_seen_at = (SELECT max(m.created_at) {_SESSION_OF})
WHERE namespace = ? AND user_id = ? AND agent_id = ? AND session_id = ?
    AND EXISTS (SELECT 1 {_SESSION_OF})
"""
DROP_EMPTY_SESSION = f"""
DELETE FROM sessions WHERE namespace = ? AND user_id = ? AND agent_id = ? AND session_id = ?
    AND NOT EXISTS (SELECT 1 {_SESSION_OF})
"""
