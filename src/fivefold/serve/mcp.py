"""The MCP server (official ``mcp`` SDK): remember, recall, relate, forget and explain as tools
an agent calls, over stdio (``fivefold mcp``) or streamable HTTP (``/mcp`` of ``fivefold
serve``).

The tools act in a scope resolved per call: over HTTP from the caller's API key (checked here,
before the SDK sees the request, and carried to the tool in a context variable), over stdio
from the options the process was started with. A tool's description says when to call it,
because that text is all an agent reads before deciding.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import ConfigDict, Field
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from fivefold.errors import FivefoldError
from fivefold.memory import Memory
from fivefold.serve.errors import error_body, status_of, tenant_message
from fivefold.serve.keys import ApiKey, KeyRing, check_recall_scope, scope_for, token_of
from fivefold.version import __version__

__all__ = ["McpEndpoint", "build_server"]

# The scope a call acts in: namespace, user_id, agent_id (None: whatever the call names).
Resolve = Callable[[str | None, str | None, str | None], dict[str, Any]]
_CALLER: ContextVar[ApiKey | None] = ContextVar("fivefold_mcp_caller", default=None)

INSTRUCTIONS = (
    "fivefold is this agent's long-term memory. Call `recall` before answering anything that "
    "may depend on what the user said or did before (names, preferences, plans, dates). Call "
    "`remember` when the user states a fact, a preference or an event worth keeping. Cite "
    "memory ids when you use them; `explain` shows why a memory came back."
)

Namespace = Annotated[str | None, Field(description="Leave empty: the server's scope applies")]
UserId = Annotated[str | None, Field(description="Whose memory: the end user's id, if any")]
AgentId = Annotated[str | None, Field(description="Which agent wrote or reads it, if any")]


def build_server(
    memory: Callable[[], Memory], resolve: Resolve, *, keyed: bool = False
) -> MCPServer:
    tools: list[Tool] = []

    def tool(fn: Callable[..., dict[str, Any]]) -> None:
        tools.append(_strict(Tool.from_function(fn)))

    def call(action: Callable[[], Any]) -> Any:
        try:
            return action()
        except FivefoldError as exc:
            # The model reads this and corrects its call; no trace leaves the server.
            message = tenant_message(exc, keyed=keyed)
            raise ToolError(f"{status_of(exc)[1]}: {message}") from exc

    @tool
    def remember(
        content: Annotated[str, Field(description="The memory, one self-contained statement")],
        type: Annotated[
            str | None, Field(description="fact, preference, event or entity; inferred if empty")
        ] = None,
        entities: Annotated[
            list[str] | None, Field(description="People, places, projects it names")
        ] = None,
        event_at: Annotated[
            str | None,
            Field(
                description="When it happened: an ISO 8601 date or datetime "
                "(2026-03-20, 2026-03-20T17:00:00+00:00)"
            ),
        ] = None,
        session_id: Annotated[
            str | None, Field(description="The conversation it came from")
        ] = None,
        importance: Annotated[
            float | None, Field(ge=0, le=1, description="How much it matters, 0 to 1")
        ] = None,
        supersedes: Annotated[
            int | None,
            Field(description="The id of an older memory this one replaces (a fact changed)"),
        ] = None,
        predicate: Annotated[
            str | None, Field(description="The relation it states, e.g. works_on, prefers")
        ] = None,
        speaker: Annotated[
            str | None, Field(description="Who said or did it; read from 'Name: text' if empty")
        ] = None,
        metadata: Annotated[
            dict[str, Any] | None, Field(description="Your own JSON fields, kept as given")
        ] = None,
        namespace: Namespace = None,
        user_id: UserId = None,
        agent_id: AgentId = None,
    ) -> dict[str, Any]:
        """Store something worth remembering: a fact, a preference, an event. Call it when
        the user tells you something about themselves, their work or their plans that a later
        conversation may need. Returns the memory's id (an exact repeat returns the stored one,
        with created false) and the older memory it superseded, if any."""
        scope = resolve(namespace, user_id, agent_id)
        given = {
            "type": type,
            "entities": entities,
            "event_at": event_at,
            "session_id": session_id,
            "importance": importance,
            "supersedes": supersedes,
            "predicate": predicate,
            "speaker": speaker,
            "metadata": metadata,
        }
        fields: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        record = call(lambda: memory().remember(content, **fields, **scope))
        return {
            "id": record.id,
            "created": record.created,
            "type": record.type.value,
            "entities": list(record.entities),
        }

    @tool
    def remember_messages(
        messages: Annotated[
            list[dict[str, Any]],
            Field(description='The chat: [{"role": "user", "content": "...", "name": "..."}]'),
        ],
        session_id: Annotated[
            str | None, Field(description="The conversation's id (a new one if empty)")
        ] = None,
        namespace: Namespace = None,
        user_id: UserId = None,
        agent_id: AgentId = None,
    ) -> dict[str, Any]:
        """Store a conversation as it was said: each message a memory of its speaker, in
        order, in one session. Call it with the turns of a conversation worth keeping whole.
        Returns the memories' ids."""
        scope = resolve(namespace, user_id, agent_id)
        records = call(lambda: memory().remember_messages(messages, session_id=session_id, **scope))
        return {
            "ids": [r.id for r in records],
            "session_id": records[0].session_id if records else session_id,
        }

    @tool
    def recall(
        query: Annotated[str, Field(description="The question, in plain words")],
        k: Annotated[int, Field(ge=1, le=50, description="How many memories")] = 5,
        namespace: Namespace = None,
        user_id: UserId = None,
        agent_id: AgentId = None,
    ) -> dict[str, Any]:
        """Find the memories that answer a question. Call it before answering anything that
        may depend on earlier conversations: who someone is, what was decided, when something
        happened, what the user prefers. Returns the memories best first, with a confidence."""
        scope = resolve(namespace, user_id, agent_id)
        result = call(lambda: memory().recall(query, k, **scope))
        hits = [
            {
                "id": h.memory.id,
                "content": h.memory.content,
                "confidence": round(h.confidence, 3),
                "type": h.memory.type.value,
                "event_at": None if h.memory.event_at is None else h.memory.event_at.isoformat(),
                "superseded_by": h.memory.superseded_by,
            }
            for h in result.hits
        ]
        return {"memories": hits, "plan": result.plan.name.value, "recall_id": result.recall_id}

    @tool
    def feedback(
        recall_id: Annotated[str, Field(description="The recall_id that recall returned")],
        used: Annotated[list[int], Field(description="Ids of the memories your answer used")],
    ) -> dict[str, Any]:
        """Say which of a recall's memories your answer used, so that recall learns what
        helps (fivefold train fits on this). Call it after answering from recalled memories."""

        def give() -> int:
            check_recall_scope(recall_id, resolve)
            return memory().feedback(recall_id, used=used)

        return {"feedback": call(give)}

    @tool
    def relate(
        source: Annotated[str, Field(description="An entity: a person, project, place")],
        relation: Annotated[str, Field(description="The relation, e.g. works_on, manages")],
        target: Annotated[str, Field(description="The other entity")],
        namespace: Namespace = None,
        user_id: UserId = None,
        agent_id: AgentId = None,
    ) -> dict[str, Any]:
        """Record a relation between two entities ("Priya manages Kestrel"), so questions
        that follow links between people and things can be answered. Call it when the user
        states how two named things are connected."""
        scope = resolve(namespace, user_id, agent_id)
        edge = call(lambda: memory().relate(source, relation, target, **scope))
        return {"id": edge.id, "memory_id": edge.memory_id}

    @tool
    def forget(
        memory_id: Annotated[int, Field(description="The id recall or remember returned")],
        namespace: Namespace = None,
        user_id: UserId = None,
        agent_id: AgentId = None,
    ) -> dict[str, Any]:
        """Delete one memory for good. Call it only when the user asks you to forget
        something or says a memory is wrong."""
        scope = resolve(namespace, user_id, agent_id)
        call(lambda: memory().forget(memory_id, **scope))
        return {"forgotten": memory_id}

    @tool
    def forget_scope(
        namespace: Namespace = None,
        user_id: UserId = None,
        agent_id: AgentId = None,
        session_id: Annotated[
            str | None, Field(description="Only this conversation's memories")
        ] = None,
    ) -> dict[str, Any]:
        """Forget everything of one user, agent or conversation for good: its memories, the
        names only they mentioned, its relations and feedback. Call it only when the user
        asks for all their data to be deleted. Returns how many memories were forgotten."""
        scope = resolve(namespace, user_id, agent_id)
        # Never a whole namespace from an agent's call: some user, agent or session must be
        # named (by the call, or by the key or binding the server is held to).
        if scope["user_id"] is None and scope["agent_id"] is None and session_id is None:
            raise ToolError(
                "bad_request: name the user_id, agent_id or session_id whose memories go; "
                "a whole namespace is not forgotten over MCP"
            )
        forgotten = call(lambda: memory().forget_scope(**scope, session_id=session_id))
        return {"forgotten": forgotten}

    @tool
    def explain(
        query: Annotated[str, Field(description="The question to explain")],
        k: Annotated[int, Field(ge=1, le=50, description="How many memories")] = 5,
        namespace: Namespace = None,
        user_id: UserId = None,
        agent_id: AgentId = None,
    ) -> dict[str, Any]:
        """Why recall returns what it returns: the plan chosen and its reasons, and per
        memory the retrievers that found it and their ranks. Call it when a recall looks wrong
        or the user asks where an answer came from."""
        scope = resolve(namespace, user_id, agent_id)
        found = call(lambda: memory().explain(query, k, **scope))
        hits = [
            {
                "id": h.id,
                "content": h.content,
                "score": round(h.final, 5),
                "found_by": {t.retriever.value: t.rank for t in h.terms},
            }
            for h in found.hits
        ]
        return {
            "plan": found.plan.name.value,
            "reasons": list(found.plan.reasons),
            "memories": hits,
        }

    return MCPServer(name="fivefold", instructions=INSTRUCTIONS, version=__version__, tools=tools)


def _strict(tool: Tool) -> Tool:
    """``tool`` reading its arguments as the ``/v1`` API reads a body: an argument it does not
    take refused by name, and no value converted into another type (``strict``; a whole
    number sent as 5.0 is the integer JSON Schema takes it for). The SDK's argument model
    ignored the first (an agent's ``top_k=20`` went unread and it got 5 memories; a misspelt
    ``user`` wrote into the shared scope) and converted the second: ``forget(memory_id=true)``
    forgot memory 1. (Not said in the schema as ``additionalProperties: false``: hosts that
    hand schemas to Gemini as they are fail on that key.)"""
    meta = tool.fn_metadata
    base = meta.arg_model
    config = ConfigDict(**{**base.model_config, "extra": "forbid", "strict": True})
    strict = type(base.__name__, (base,), {"model_config": config})
    tool.fn_metadata = _AsSent(**{**dict(meta), "arg_model": strict})
    # One paragraph: the docstring's line breaks and indentation are not the agent's to read.
    tool.description = " ".join(tool.description.split())
    return tool


class _AsSent(FuncMetadata):
    """Arguments as sent, but for two readings. The SDK parses an argument given as a JSON
    text (hosts send a list as '["a", "b"]'), also for one that takes a string:
    ``user_id="null"`` became None (the shared scope) and ``namespace="{}"`` a dict; a string
    stays a string where the argument takes one. A whole number sent as a float (5.0, what a
    host that parsed the model's JSON in Python may forward) is the integer an integer
    argument takes."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        parsed = super().pre_parse_json(data)
        fields = self.arg_model.model_fields
        for key, value in data.items():
            field = fields.get(key)
            if field is None:
                continue
            if isinstance(value, str) and _takes(field.annotation, str):
                parsed[key] = value
            elif _takes(field.annotation, int):
                parsed[key] = _whole(parsed[key])
            elif isinstance(parsed[key], list) and _takes(field.annotation, list[int]):
                parsed[key] = [_whole(item) for item in parsed[key]]
        return parsed


def _takes(annotation: Any, kind: Any) -> bool:
    return annotation == kind or kind in typing.get_args(annotation)


def _whole(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


@dataclass(frozen=True, slots=True)
class StdioBinding(ApiKey):
    """``fivefold mcp -n``'s scope, held like a key's (there is no key to name)."""

    holder: ClassVar[str] = "this server (fivefold mcp -n)"


def fixed_scope(namespace: str | None, user_id: str | None, agent_id: str | None) -> Resolve:
    """Stdio: the scope the process was started with binds every call, as a key would."""
    bound = (
        StdioBinding("stdio", "", namespace, user_id, agent_id) if namespace is not None else None
    )

    def resolve(ns: str | None, user: str | None, agent: str | None) -> dict[str, Any]:
        try:
            return scope_for(bound, ns, user, agent)
        except FivefoldError as exc:
            raise ToolError(f"forbidden: {exc}") from exc

    return resolve


def _from_caller(ns: str | None, user: str | None, agent: str | None) -> dict[str, Any]:
    try:
        return scope_for(_CALLER.get(), ns, user, agent)
    except FivefoldError as exc:
        raise ToolError(f"forbidden: {exc}") from exc


class McpEndpoint:
    """``/mcp`` of ``fivefold serve``: authenticates like the JSON API, then hands the request
    to the SDK's streamable HTTP transport (stateless, JSON responses: one request, one
    answer, and the tool runs in the request's context, where the caller's key is)."""

    def __init__(self, memory: Callable[[], Memory], keys: KeyRing, host: str) -> None:
        self._keys = keys
        self._server = build_server(memory, _from_caller, keyed=bool(keys))
        # The SDK's own DNS-rebinding check (on for a loopback host) is off: the server's
        # ``LoopbackOnly`` covers /mcp with the rest of a keyless server, and a keyed server
        # answers any name (the SDK's refused a keyed server's name behind a reverse proxy,
        # and "localhost" without a port, where /v1 answered).
        self._app = self._server.streamable_http_app(
            streamable_http_path="/mcp",
            stateless_http=True,
            json_response=True,
            host=host,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    def running(self) -> AbstractAsyncContextManager[None]:
        return self._server.session_manager.run()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") not in ("POST", None):
            # Stateless: no stream of the server's own messages (a GET opened one that never
            # sent anything) and no session to end. The MCP spec's answer: 405.
            message = "/mcp takes JSON-RPC requests by POST (stateless: no server stream)"
            reply = JSONResponse(
                error_body("method_not_allowed", message), 405, headers={"Allow": "POST"}
            )
            await reply(scope, receive, send)
            return
        key = None
        if self._keys:
            try:
                key = self._keys.authenticate(token_of(scope["headers"]))
            except FivefoldError as exc:
                status, code = status_of(exc)
                await JSONResponse(error_body(code, str(exc)), status)(scope, receive, send)
                return
        token_var = _CALLER.set(key)
        try:
            await self._app(scope, receive, send)
        finally:
            _CALLER.reset(token_var)
