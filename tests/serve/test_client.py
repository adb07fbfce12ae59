"""``fivefold.Client`` is ``fivefold.Memory`` over HTTP: the same calls pass against both, with
the same result types and the same exceptions, and a served recall equals the embedded recall
of the same store. Every served test runs against ``fivefold.AsyncClient`` too."""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import httpx
import numpy as np
import pytest
from tests.serve.conftest import Server

import fivefold
from fivefold import AccessDenied, InvalidInput, NotFound, StoreError
from fivefold.types import Edge, Entity, Explanation, MemoryRecord, MemoryType, RecallResult


class Blocking:
    """An ``AsyncClient`` driven from a test's own event loop, call by call, so the tests of
    ``Client`` run unchanged against it (each awaited method gives its result or raises)."""

    def __init__(self, url: str, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._client = fivefold.AsyncClient(url, **options)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._client, name)
        assert inspect.iscoroutinefunction(method), name

        def run(*args: Any, **kwargs: Any) -> Any:
            return self._loop.run_until_complete(method(*args, **kwargs))

        return run

    def __enter__(self) -> Blocking:
        self._loop.run_until_complete(self._client.__aenter__())
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self._loop.run_until_complete(self._client.__aexit__(kind, exc, tb))
        finally:
            self._loop.close()


@pytest.fixture(params=["sync", "async"])
def connect(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Opens a client of the server at a URL: ``fivefold.Client`` or ``fivefold.AsyncClient``."""
    return fivefold.Client if request.param == "sync" else Blocking


@pytest.fixture(params=["embedded", "served", "served-async"])
def api(
    request: pytest.FixtureRequest, minilm: fivefold.MiniLMEmbedder, open_server: Server
) -> Iterator[Any]:
    if request.param == "embedded":
        with fivefold.Memory.open(":memory:", embedder=minilm) as memory:
            yield memory
    else:
        opened = fivefold.Client if request.param == "served" else Blocking
        with opened(open_server.url) as client:
            yield client


@pytest.fixture
def ns() -> str:
    return f"c-{uuid.uuid4().hex[:10]}"


def test_remember_then_get_gives_the_same_record(api: Any, ns: str) -> None:
    when = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
    made = api.remember(
        "Priya moved the Kestrel launch to Friday",
        event_at=when,
        entities=["Priya", "Kestrel"],
        metadata={"source": "standup", "n": [1, 2]},
        namespace=ns,
        user_id="u1",
    )
    assert isinstance(made, MemoryRecord)
    assert made.type is MemoryType.EVENT
    assert made.event_at == when
    assert made.entities == ("Priya", "Kestrel")
    assert api.get(made.id, namespace=ns) == made
    assert api.browse(namespace=ns) == [made]
    assert api.stats(namespace=ns).memories == 1


def test_recall_explain_relate_alias(api: Any, ns: str) -> None:
    api.remember_many(
        [
            {"content": "Dana prefers oat milk in her coffee", "namespace": ns},
            {"content": "The Falcon review is on Tuesday", "namespace": ns},
        ]
    )
    edge = api.relate("Dana", "leads", "Falcon", namespace=ns)
    assert isinstance(edge, Edge)
    assert edge.relation == "leads"
    entity = api.alias("Dana", "Dee", namespace=ns)
    assert isinstance(entity, Entity)
    assert "Dee" in entity.aliases
    result = api.recall("what milk does Dana like?", k=3, namespace=ns)
    assert isinstance(result, RecallResult)
    assert "Dana prefers oat milk in her coffee" in [h.memory.content for h in result.hits]
    assert 0.0 <= result.hits[0].confidence <= 1.0
    explained = api.explain("who leads Falcon?", k=3, namespace=ns)
    assert isinstance(explained, Explanation)
    assert explained.plan.reasons
    assert any("leads" in h.content for h in explained.hits)


def test_forget_and_the_same_errors(api: Any, ns: str) -> None:
    made = api.remember("temporary note", namespace=ns)
    with pytest.raises(NotFound):
        api.forget(made.id, namespace="elsewhere")
    api.forget(made.id, namespace=ns)
    with pytest.raises(NotFound):
        api.get(made.id, namespace=ns)
    with pytest.raises(InvalidInput):
        api.recall("x", k=0, namespace=ns)
    with pytest.raises(InvalidInput, match="item 1"):
        api.remember_many([{"content": "ok", "namespace": ns}, {"content": "", "namespace": ns}])
    with pytest.raises(InvalidInput):
        api.remember_many("not a list")
    # What JSON cannot carry: the client raised a bare TypeError.
    for bad in (
        {"metadata": {"a": {1, 2}}},
        {"metadata": {(1, 2): 1}},
        {"importance": float("nan")},
        {"importance": np.float32("nan")},
        {"metadata": {"flag": np.bool_(True)}},
    ):
        with pytest.raises(InvalidInput):
            api.remember("never stored", namespace=ns, **bad)
    assert api.stats(namespace=ns).memories == 0
    # numpy's numbers are numbers on both sides (a caller's own arrays give them).
    numpy = api.remember(
        "from numpy", namespace=ns, importance=np.float32(0.5), metadata={"n": np.int64(3)}
    )
    assert (numpy.importance, dict(numpy.metadata)) == (0.5, {"n": 3})
    assert api.recall("numpy", k=np.int64(2), namespace=ns).hits[0].memory.id == numpy.id


def test_a_served_recall_equals_the_embedded_recall_of_the_same_store(
    open_server: Server, minilm: fivefold.MiniLMEmbedder, ns: str, connect: Callable[..., Any]
) -> None:
    with connect(open_server.url) as client:
        client.remember_many(
            [
                {"content": f"Entry {i}: the {c} team ships on day {i}", "namespace": ns}
                for i, c in enumerate(["red", "blue", "green", "amber", "violet"])
            ]
        )
        served = client.recall("when does the green team ship?", k=5, namespace=ns)
    with fivefold.Memory.open(open_server.db, embedder=minilm) as local:  # WAL: a second reader
        embedded = local.recall("when does the green team ship?", k=5, namespace=ns)
    assert served.hits == embedded.hits
    assert served.plan == embedded.plan
    assert served.query == embedded.query


def test_client_errors_for_the_network_and_keys(
    keyed_server: Server, connect: Callable[..., Any]
) -> None:
    with (
        connect("http://127.0.0.1:9", timeout=2) as client,
        pytest.raises(StoreError, match="cannot reach"),
    ):
        client.recall("x")
    with (
        connect(keyed_server.url, api_key="ff_bad_bad") as client,
        pytest.raises(fivefold.Unauthenticated),  # an AccessDenied, told apart from a scope's
    ):
        client.recall("x")
    with connect(keyed_server.url, api_key=keyed_server.tokens["beta"]) as client:
        with pytest.raises(AccessDenied, match="namespace"):
            client.recall("x", namespace="alpha")
        assert client.remember("beta's own").namespace == "beta"


def test_feedback_and_train_over_both(api: Any, ns: str) -> None:
    made = api.remember_many(
        [{"content": f"The topic{n} review is on Friday", "namespace": ns} for n in range(3)]
    )
    result = api.recall("topic1 review", namespace=ns)
    assert isinstance(api.feedback(result.recall_id, relevant=[made[1].id]), int)
    with pytest.raises(NotFound):
        api.feedback(result.recall_id, relevant=[10**12])
    with pytest.raises(InvalidInput):
        api.feedback("not a recall id", relevant=[made[1].id])
    with pytest.raises(InvalidInput, match="training needs 30"):
        api.train(namespace=ns)


def test_feedback_keeps_to_the_key_scope(keyed_server: Server, connect: Callable[..., Any]) -> None:
    tokens = keyed_server.tokens
    with connect(keyed_server.url, api_key=tokens["alpha"]) as alpha:
        mine = alpha.remember("alpha's Kestrel budget is approved")
        result = alpha.recall("Kestrel budget")
        assert alpha.feedback(result.recall_id, relevant=[mine.id]) > 0
    # The recall_id names namespace alpha: beta's key may not give feedback on it, and a
    # key bound to one user of alpha may not on a recall of the whole namespace.
    for other in ("beta", "alpha-u1"):
        with (
            connect(keyed_server.url, api_key=tokens[other]) as client,
            pytest.raises(AccessDenied),
        ):
            client.feedback(result.recall_id, relevant=[mine.id])
    with connect(keyed_server.url, api_key=tokens["beta"]) as beta:
        with pytest.raises(AccessDenied):
            beta.train(namespace="alpha")
        with pytest.raises(InvalidInput, match="namespace 'beta' has feedback on 0 recalls"):
            beta.train()


def test_history_repeats_chats_and_a_scope_forgotten_over_both(api: Any, ns: str) -> None:
    old = api.remember("My badge number is 40417", namespace=ns, user_id="u1")
    again = api.remember("my badge number is 40417", namespace=ns, user_id="u1")
    assert (again.id, again.created, again.seen) == (old.id, False, 2)
    new = api.remember("Badge reissued: 77120", namespace=ns, user_id="u1", supersedes=old.id)
    assert api.get(old.id, namespace=ns).superseded_by == new.id
    assert [r.id for r in api.history(old.id, namespace=ns, user_id="u1")] == [old.id, new.id]
    kept = api.recall("badge number", namespace=ns, user_id="u1", include_superseded=False)
    assert old.id not in [h.memory.id for h in kept.hits]
    other = api.remember("Desk 12", namespace=ns, user_id="u1")
    api.supersede(new.id, other.id, namespace=ns, user_id="u1")
    with pytest.raises(InvalidInput):
        api.supersede(other.id, new.id, namespace=ns, user_id="u1")
    turns = api.remember_messages(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        namespace=ns,
        user_id="u2",
        session_id="chat-1",
    )
    assert [(t.speaker, t.session_id) for t in turns] == [
        ("user", "chat-1"),
        ("assistant", "chat-1"),
    ]
    with pytest.raises(InvalidInput, match="message 0"):
        api.remember_messages([{"content": "no role"}], namespace=ns)
    assert api.forget_scope(ns, user_id="u1") == 3
    assert [r.user_id for r in api.browse(namespace=ns)] == ["u2", "u2"]


def test_a_key_forgets_only_inside_its_own_scope(
    keyed_server: Server, connect: Callable[..., Any]
) -> None:
    tokens = keyed_server.tokens
    with connect(keyed_server.url, api_key=tokens["alpha"]) as alpha:
        alpha.remember("alpha's own note", user_id="u1")
        alpha.remember("another user's note", user_id="u2")
    with connect(keyed_server.url, api_key=tokens["alpha-u1"]) as bound:
        assert bound.forget_scope("alpha") == 1  # the key's user only, whatever is asked
        with pytest.raises(AccessDenied):
            bound.forget_scope("alpha", user_id="u2")
    with (
        connect(keyed_server.url, api_key=tokens["beta"]) as beta,
        pytest.raises(AccessDenied),
    ):
        beta.forget_scope("alpha")
    with connect(keyed_server.url, api_key=tokens["alpha"]) as alpha:
        left = [(r.user_id, r.content) for r in alpha.browse(limit=1000)]
    assert ("u2", "another user's note") in left
    assert all(user != "u1" for user, _ in left)


def test_the_async_client_sends_calls_concurrently(open_server: Server, ns: str) -> None:
    async def main() -> tuple[list[int], RecallResult]:
        async with fivefold.AsyncClient(open_server.url) as client:
            made = await asyncio.gather(
                *(
                    client.remember(f"Async note {n} about the harbour", namespace=ns)
                    for n in range(8)
                )
            )
            assert await client.remember_many([]) == []
            with pytest.raises(NotFound):
                await client.get(10**12, namespace=ns)
            return [m.id for m in made], await client.recall("harbour", k=8, namespace=ns)

    ids, result = asyncio.run(main())
    assert len(set(ids)) == 8
    assert sorted(h.memory.id for h in result.hits) == sorted(ids)


def _answering(status: int, body: bytes) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=body, headers={"content-type": "application/json"})

    return httpx.MockTransport(handle)


@pytest.mark.parametrize(
    ("status", "body", "raised", "said"),
    [
        (401, b'{"error": {"code": "unauthorized", "message": "none"}}', "Unauthenticated", "none"),
        (413, b'{"error": {"code": "too_large", "message": "big"}}', "TooLarge", "big"),
        (403, b'{"error": {"code": "forbidden", "message": "scope"}}', "AccessDenied", "scope"),
        (418, b'{"error": {"code": "teapot"}}', "FivefoldError", "answered 418"),
        (200, b"<html>a proxy's page</html>", "StoreError", "is this a fivefold server"),
    ],
)
def test_both_clients_read_an_answer_the_same_way(
    status: int, body: bytes, raised: str, said: str
) -> None:
    """The server's error codes become the same public classes in both clients, and a page
    that is no fivefold server's is a StoreError (httpx's test transport, no server)."""
    kind = getattr(fivefold, raised)
    with (
        fivefold.Client("http://fivefold.test", transport=_answering(status, body)) as client,
        pytest.raises(kind, match=said) as sync_error,
    ):
        client.stats()

    async def main() -> None:
        transport = _answering(status, body)
        async with fivefold.AsyncClient("http://fivefold.test", transport=transport) as client:
            await client.stats()

    with pytest.raises(kind, match=said) as async_error:
        asyncio.run(main())
    assert type(sync_error.value) is type(async_error.value) is kind
    assert str(sync_error.value) == str(async_error.value)
