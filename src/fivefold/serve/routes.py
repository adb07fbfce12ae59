"""The versioned JSON endpoints (``/v1``): one per method of ``fivefold.Memory``.

Handlers are plain ``def``: the engine is synchronous and thread-safe, and FastAPI runs them on
its worker threads. Every handler resolves its scope through the caller's API key first, so no
request reaches the engine in a namespace its key is not bound to.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import JSONResponse

from fivefold.errors import InvalidInput, StoreError, alone
from fivefold.serve.errors import TooLarge
from fivefold.serve.keys import ApiKey, check_recall_scope, scope_for, token_of
from fivefold.serve.schemas import (
    AliasBody,
    BatchBody,
    FeedbackBody,
    ForgetScopeBody,
    MessagesBody,
    RecallBody,
    RelateBody,
    RememberBody,
    SupersedeBody,
    TrainBody,
)
from fivefold.serve.state import Served
from fivefold.wire import to_json

__all__ = ["router", "state_of"]

router = APIRouter(prefix="/v1")


def state_of(request: Request) -> Served:
    """The running server's state; 503 until start-up has opened the store."""
    state: Served | None = getattr(request.app.state, "served", None)
    if state is None:
        raise StoreError("the server is still starting; retry when /readyz says ready")
    return state


def _caller(request: Request) -> ApiKey | None:
    """The caller's key (None when the server runs without keys, on loopback only)."""
    state = state_of(request)
    if not state.keys:
        return None
    return state.keys.authenticate(token_of(request.scope["headers"]))


Caller = Annotated[ApiKey | None, Depends(_caller)]
# Digits only: an int parameter took "1.0" and " 1" as memory 1 (``DELETE /v1/memories/1.0``
# forgot it), where a body's ids are strict.
MemoryId = Annotated[str, Path(pattern=r"^[0-9]{1,30}$")]
Server = Annotated[Served, Depends(state_of)]
NamespaceQ = Annotated[str | None, Query()]


def _query_scope(
    namespace: NamespaceQ = None, user_id: NamespaceQ = None, agent_id: NamespaceQ = None
) -> tuple[str | None, str | None, str | None]:
    """The scope a GET or DELETE names in its query string, for ``scope_for``."""
    return namespace, user_id, agent_id


QueryScope = Annotated[tuple[str | None, str | None, str | None], Depends(_query_scope)]


def _json(value: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(to_json(value), status_code=status)


def _item(body: RememberBody, key: ApiKey | None, namespace: str | None = None) -> dict[str, Any]:
    fields = body.model_dump(exclude_none=True)
    fields.update(
        scope_for(
            key,
            namespace if body.namespace is None else body.namespace,
            body.user_id,
            body.agent_id,
        ),
    )
    return {k: v for k, v in fields.items() if v is not None}


def _write(served: Served, items: list[dict[str, Any]]) -> Any:
    records = served.memory.remember_many(items)
    served.telemetry.writes.labels("memory").inc(len(records))
    return records


def _check_batch(served: Served, count: int, what: str, per: str) -> None:
    if count > served.settings.max_batch:
        raise TooLarge(
            f"{count} {what}; this server takes at most "
            f"{served.settings.max_batch} per {per} (serve.max_batch)"
        )


@router.post("/memories", status_code=201, summary="Remember one memory")
def remember(body: RememberBody, key: Caller, served: Server) -> JSONResponse:
    try:
        return _json(_write(served, [_item(body, key)])[0], 201)
    except InvalidInput as exc:  # as ``Memory.remember`` says it
        if (single := alone(exc)) is not None:
            raise single from exc
        raise


@router.post("/memories/batch", status_code=201, summary="Remember many, all or nothing")
def remember_many(body: BatchBody, key: Caller, served: Server) -> JSONResponse:
    _check_batch(served, len(body.items), "items", "batch")
    return _json(_write(served, [_item(item, key, body.namespace) for item in body.items]), 201)


@router.post("/messages", status_code=201, summary="Remember a chat, a memory per turn")
def remember_messages(body: MessagesBody, key: Caller, served: Server) -> JSONResponse:
    _check_batch(served, len(body.messages), "messages", "request")
    scope = scope_for(key, body.namespace, body.user_id, body.agent_id)
    records = served.memory.remember_messages(
        body.messages, session_id=body.session_id, at=body.at, **scope
    )
    served.telemetry.writes.labels("memory").inc(len(records))
    return _json(records, 201)


@router.post("/supersede", status_code=204, summary="Say that one memory replaces another")
def supersede(body: SupersedeBody, key: Caller, served: Server) -> Response:
    scope = scope_for(key, body.namespace, body.user_id, body.agent_id)
    served.memory.supersede(body.old_id, body.new_id, **scope)
    served.telemetry.writes.labels("supersede").inc()
    return Response(status_code=204)


@router.post("/forget", summary="Forget every trace of a scope (a key's own scope at most)")
def forget_scope(body: ForgetScopeBody, key: Caller, served: Server) -> JSONResponse:
    scope = scope_for(key, body.namespace, body.user_id, body.agent_id)
    forgotten = served.memory.forget_scope(
        scope["namespace"],
        user_id=scope["user_id"],
        agent_id=scope["agent_id"],
        session_id=body.session_id,
    )
    served.telemetry.writes.labels("forget").inc(forgotten)
    return _json({"forgotten": forgotten})


@router.get("/memories", summary="Browse the newest memories")
def browse(
    key: Caller, served: Server, asked: QueryScope, limit: int = 50, before: int | None = None
) -> JSONResponse:
    return _json(served.memory.browse(limit=limit, before=before, **scope_for(key, *asked)))


@router.get("/memories/{memory_id}", summary="One memory by id, in the scope")
def get(memory_id: MemoryId, key: Caller, served: Server, asked: QueryScope) -> JSONResponse:
    return _json(served.memory.get(int(memory_id), **scope_for(key, *asked)))


@router.get("/memories/{memory_id}/history", summary="A memory's supersession chain")
def history(memory_id: MemoryId, key: Caller, served: Server, asked: QueryScope) -> JSONResponse:
    return _json(served.memory.history(int(memory_id), **scope_for(key, *asked)))


@router.delete("/memories/{memory_id}", status_code=204, summary="Forget a memory")
def forget(memory_id: MemoryId, key: Caller, served: Server, asked: QueryScope) -> Response:
    served.memory.forget(int(memory_id), **scope_for(key, *asked))
    served.telemetry.writes.labels("forget").inc()
    return Response(status_code=204)


def _recall_args(body: RecallBody, key: ApiKey | None, served: Served) -> dict[str, Any]:
    if not 1 <= body.k <= served.settings.max_k:  # the engine's bound (1,000) is not this one
        raise InvalidInput(
            f"k must be an integer from 1 to {served.settings.max_k} on this server "
            f"(serve.max_k), got {body.k}"
        )
    args = body.model_dump(exclude={"namespace", "user_id", "agent_id"}, exclude_none=True)
    return {**args, **scope_for(key, body.namespace, body.user_id, body.agent_id)}


@router.post("/recall", summary="The memories that answer a query")
def recall(body: RecallBody, key: Caller, served: Server) -> JSONResponse:
    args = _recall_args(body, key, served)
    result = served.memory.recall(args.pop("query"), args.pop("k"), **args)
    served.telemetry.recalled(result)
    return _json(result)


@router.post("/explain", summary="Everything a recall decided, with every fusion term")
def explain(body: RecallBody, key: Caller, served: Server) -> JSONResponse:
    args = _recall_args(body, key, served)
    args.pop("min_confidence", None)  # explain shows every hit
    return _json(served.memory.explain(args.pop("query"), args.pop("k"), **args))


@router.post("/feedback", status_code=201, summary="Which memories answered a recall")
def feedback(body: FeedbackBody, key: Caller, served: Server) -> JSONResponse:
    check_recall_scope(body.recall_id, lambda ns, user, agent: scope_for(key, ns, user, agent))
    made = served.memory.feedback(body.recall_id, relevant=body.relevant, used=body.used)
    served.telemetry.writes.labels("feedback").inc()
    return _json({"id": made}, 201)


@router.post("/train", summary="Fit learned fusion on the namespace's feedback")
def train(body: TrainBody, key: Caller, served: Server) -> JSONResponse:
    namespace = _whole_namespace(key, body.namespace, "learned fusion (train)")
    return _json(served.memory.train(namespace=namespace))


@router.post("/relate", status_code=201, summary="A typed edge between two entities")
def relate(body: RelateBody, key: Caller, served: Server) -> JSONResponse:
    args = body.model_dump(exclude={"namespace", "user_id", "agent_id"}, exclude_none=True)
    scope = scope_for(key, body.namespace, body.user_id, body.agent_id)
    edge = served.memory.relate(
        args.pop("source"), args.pop("relation"), args.pop("target"), **args, **scope
    )
    served.telemetry.writes.labels("relate").inc()
    return _json(edge, 201)


@router.post("/aliases", status_code=201, summary="Another name for an entity")
def alias(body: AliasBody, key: Caller, served: Server) -> JSONResponse:
    namespace = _whole_namespace(key, body.namespace, "aliases")
    return _json(served.memory.alias(body.name, body.alias, namespace=namespace), 201)


def _whole_namespace(key: ApiKey | None, namespace: str | None, what: str) -> str:
    if key is None:
        return "default" if namespace is None else namespace
    return key.whole_namespace(namespace, what)


@router.get("/stats", summary="Counts of the caller's namespace (of the store without keys)")
def stats(key: Caller, served: Server, namespace: NamespaceQ = None) -> JSONResponse:
    if key is None:
        given = served.memory.stats(namespace=namespace)
        return _json(given)
    # Counts of the whole namespace: every user's and agent's memories, not a bound key's.
    own = served.memory.stats(namespace=key.whole_namespace(namespace, "stats"))
    # Where the file lives and how big the whole store is are not a tenant's business.
    return _json({**to_json(own), "size_bytes": 0, "location": "", "parts": {}})
