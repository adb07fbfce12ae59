"""The tenant wall, enforced by the server: the scope comes from the API key, a request naming
another scope is refused, and no endpoint (the cache, explain, browse, get and forget by id
included) returns or touches another tenant's data."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from tests.serve.conftest import Server, start_server


def _call(server: Server, key: str | None, method: str, path: str, **kw: Any) -> httpx.Response:
    headers = {} if key is None else server.headers(key)
    return httpx.request(method, server.url + path, headers=headers, timeout=30, **kw)


def test_no_key_or_a_bad_key_is_401(keyed_server: Server) -> None:
    for headers in ({}, {"authorization": "Bearer ff_nope_nope"}, {"x-api-key": "garbage"}):
        response = httpx.post(
            keyed_server.url + "/v1/recall", json={"query": "x"}, headers=headers, timeout=30
        )
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"
    alpha = keyed_server.tokens["alpha"]
    forged = alpha[:-4] + ("AAAA" if not alpha.endswith("AAAA") else "BBBB")
    response = httpx.get(
        keyed_server.url + "/v1/stats", headers={"authorization": f"Bearer {forged}"}, timeout=30
    )
    assert response.status_code == 401


def test_two_keys_in_one_request_are_refused_on_every_endpoint(keyed_server: Server) -> None:
    """Two Authorization headers: the HTTP routes acted as the first key's tenant and /mcp as
    the last's (a proxy adding its own header does this)."""
    alpha, beta = keyed_server.tokens["alpha"], keyed_server.tokens["beta"]
    mcp = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = ("accept", "application/json, text/event-stream")
    for pair in (
        [("authorization", f"Bearer {alpha}"), ("authorization", f"Bearer {beta}")],
        [("x-api-key", alpha), ("x-api-key", beta)],
        [("authorization", f"Bearer {alpha}"), ("x-api-key", beta)],
    ):
        for method, path, body in (("GET", "/v1/stats", None), ("POST", "/mcp", mcp)):
            response = httpx.request(
                method, keyed_server.url + path, headers=[*pair, accept], json=body, timeout=30
            )
            assert response.status_code == 401, (path, response.text)
            assert "send one API key" in response.json()["error"]["message"]


def test_the_key_fixes_the_namespace(keyed_server: Server) -> None:
    made = _call(keyed_server, "alpha", "POST", "/v1/memories", json={"content": "alpha note"})
    assert made.status_code == 201
    assert made.json()["namespace"] == "alpha"
    refused = _call(
        keyed_server, "alpha", "POST", "/v1/memories", json={"content": "x", "namespace": "beta"}
    )
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "forbidden"
    user_bound = _call(
        keyed_server, "alpha-u1", "POST", "/v1/memories", json={"content": "u", "user_id": "u2"}
    )
    assert user_bound.status_code == 403
    mine = _call(keyed_server, "alpha-u1", "POST", "/v1/memories", json={"content": "u1 note"})
    assert mine.json()["user_id"] == "u1"


@pytest.mark.slow
def test_no_endpoint_shows_or_touches_another_tenants_memory(keyed_server: Server) -> None:
    secret = f"The vault code of Orion is {uuid.uuid4().hex}"
    own = _call(keyed_server, "alpha", "POST", "/v1/memories", json={"content": secret}).json()
    query = {"query": "what is the vault code of Orion?", "k": 50}
    for _ in range(2):  # the second recall would be a cache hit if the cache leaked
        hits = _call(keyed_server, "beta", "POST", "/v1/recall", json=query).json()["hits"]
        assert all(h["memory"]["namespace"] == "beta" for h in hits)
        assert secret not in str(hits)
    explained = _call(keyed_server, "beta", "POST", "/v1/explain", json=query).json()
    assert secret not in str(explained)
    assert own["id"] not in {h["id"] for h in explained["hits"]}
    assert not explained["query"]["entity_refs"]  # alpha's entity names do not resolve in beta
    browse = _call(keyed_server, "beta", "GET", "/v1/memories", params={"limit": 1000}).json()
    assert own["id"] not in {m["id"] for m in browse}
    path = f"/v1/memories/{own['id']}"
    assert _call(keyed_server, "beta", "GET", path).status_code == 404
    assert _call(keyed_server, "beta", "DELETE", path).status_code == 404
    assert (
        _call(keyed_server, "beta", "GET", path, params={"namespace": "alpha"}).status_code == 403
    )
    stats = _call(keyed_server, "beta", "GET", "/v1/stats").json()
    assert set(stats["namespaces"]) <= {"beta"}
    assert stats["location"] == ""
    # alpha still has it, untouched
    assert _call(keyed_server, "alpha", "GET", path).json()["content"] == secret
    assert secret in str(_call(keyed_server, "alpha", "POST", "/v1/recall", json=query).json())


def test_a_user_bound_key_sees_only_its_user(keyed_server: Server) -> None:
    other = _call(
        keyed_server,
        "alpha",
        "POST",
        "/v1/memories",
        json={"content": "u9 likes oolong tea", "user_id": "u9"},
    ).json()
    hits = _call(
        keyed_server, "alpha-u1", "POST", "/v1/recall", json={"query": "who likes oolong tea?"}
    ).json()["hits"]
    assert other["id"] not in {h["memory"]["id"] for h in hits}
    path = f"/v1/memories/{other['id']}"
    assert _call(keyed_server, "alpha-u1", "GET", path).status_code == 404
    assert _call(keyed_server, "alpha-u1", "DELETE", path).status_code == 404


@pytest.mark.parametrize("path", ["/v1/memories", "/v1/recall", "/v1/explain", "/v1/relate"])
def test_posts_naming_another_namespace_write_nothing(keyed_server: Server, path: str) -> None:
    before = _call(keyed_server, "beta", "GET", "/v1/stats").json()["memories"]
    body = {
        "/v1/memories": {"content": "intruder", "namespace": "beta"},
        "/v1/recall": {"query": "x", "namespace": "beta"},
        "/v1/explain": {"query": "x", "namespace": "beta"},
        "/v1/relate": {"source": "A", "relation": "r", "target": "B", "namespace": "beta"},
    }[path]
    assert _call(keyed_server, "alpha", "POST", path, json=body).status_code == 403
    assert _call(keyed_server, "beta", "GET", "/v1/stats").json()["memories"] == before


def test_a_key_is_refused_for_a_name_no_write_could_use(tmp_path: Any) -> None:
    """A key writes: its scope is held to the write bounds (512 bytes a name); bad input, as
    any other (exit 2 from `keys add`)."""
    from fivefold.errors import InvalidInput
    from fivefold.serve.keys import add_key, load_keys

    long = "".join(chr(0x4E00 + n) for n in range(171))  # 513 bytes
    path = tmp_path / "config.toml"
    with pytest.raises(InvalidInput, match="bytes"):
        add_key(path, namespace=long)
    with pytest.raises(InvalidInput, match="bytes"):
        add_key(path, namespace="team", user_id=long)
    assert not path.exists() or load_keys(path) == []


def test_a_keyed_server_answers_any_host_name(keyed_server: Server) -> None:
    """Only a keyless server checks names (DNS rebinding needs no key there); a keyed one is
    reached by whatever name its users or a reverse proxy give it. (The first check keyed on
    the config file's host, which `serve --host` does not change: a keyed server started with
    `--host 0.0.0.0` answered every remote request 421.)"""
    headers = {**keyed_server.headers("alpha"), "host": "memory.internal.example:443"}
    response = httpx.get(keyed_server.url + "/v1/stats", headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    listed = httpx.post(  # /mcp too: the MCP SDK's own check refused that name
        keyed_server.url + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={**headers, "accept": "application/json, text/event-stream"},
        timeout=30,
    )
    assert listed.status_code == 200, listed.text


def test_a_user_bound_key_cannot_change_the_whole_namespace(keyed_server: Server) -> None:
    """Aliases, learned fusion and the counts belong to every user of a namespace: a key bound
    to one user declared aliases that linked another user's writes to its entities, could fit the
    model every user's recalls rank with, and read the counts of
    every user's memories."""
    alias = {"name": "Project Nightjar", "alias": "Operation Moonlighting"}
    refused = _call(keyed_server, "alpha-u1", "POST", "/v1/aliases", json=alias)
    assert refused.status_code == 403
    assert "bound to user_id 'u1'" in refused.json()["error"]["message"]
    assert _call(keyed_server, "alpha-u1", "POST", "/v1/train", json={}).status_code == 403
    # Counts of every user's memories are not one user's business either.
    assert _call(keyed_server, "alpha-u1", "GET", "/v1/stats").status_code == 403
    assert _call(keyed_server, "alpha", "GET", "/v1/stats").status_code == 200
    noted = _call(
        keyed_server, "alpha", "POST", "/v1/memories", json={"content": "Operation Moonlighting"}
    )
    assert noted.json()["entities"] == ["Operation Moonlighting"]  # not linked to Nightjar
    made = _call(keyed_server, "alpha", "POST", "/v1/aliases", json={**alias, "alias": "PN"})
    assert made.status_code == 201
    assert made.json()["aliases"] == ["PN"]


def test_a_keyed_servers_tenants_are_not_told_where_the_store_lives() -> None:
    """A store's error names the database (once with a password given as ``?password=``, in a
    503's body): a keyed server's tenants get a plain 503, the log
    the whole message; a keyless (loopback) server's caller, the machine's user, all of it."""
    from fivefold.errors import EmbeddingModelMismatch, InvalidInput, StoreError
    from fivefold.serve.errors import tenant_message
    from fivefold.store.postgres.placement import without_password as _without_password

    failed = StoreError("postgresql://app@db.internal/memory: terminating connection")
    assert "db.internal" not in tenant_message(failed, keyed=True)
    assert tenant_message(failed, keyed=False) == str(failed)
    bad = InvalidInput("k must be an integer from 1 to 1000")
    assert tenant_message(bad, keyed=True) == str(bad)
    other_model = EmbeddingModelMismatch("built with model a, opened with b")  # a 409
    assert tenant_message(other_model, keyed=True) == str(other_model)
    shown = _without_password(
        "postgresql://app:pw1@db:5432/memory?password=pw2&sslpassword=pw3&options=-cx%3Dy"
    )
    assert "pw" not in shown
    assert shown == "postgresql://app@db:5432/memory?options=-cx%3Dy"
    for kept in ("postgresql:///db?host=/sock", "postgresql://u@[::1]:5432/db"):
        assert _without_password(kept) == kept  # a socket's empty host, IPv6
    assert _without_password("postgresql://u:p@h1:5432,h2:5433/db") == (
        "postgresql://u@h1:5432,h2:5433/db"  # several hosts: it raised ValueError
    )
    assert _without_password("postgresql://h?password=p") == "postgresql://h"


@pytest.mark.slow
def test_a_keyed_server_serves_metrics_only_when_told(keyed_server: Server, tmp_path: Any) -> None:
    """/metrics are the whole server's (every tenant's writes and recalls over time, failed
    keys, the store's size): a keyed server served them to anyone, with or without a key."""
    for headers in ({}, keyed_server.headers("alpha")):
        hidden = httpx.get(keyed_server.url + "/metrics", headers=headers, timeout=30)
        assert hidden.status_code == 404, hidden.text
        assert "fivefold_" not in hidden.text
        assert 'serve.metrics = \\"open\\"' in hidden.text
    told = start_server(
        tmp_path / "open-metrics",
        keys={"alpha": {"namespace": "alpha"}},
        settings='metrics = "open"',
    )
    try:
        scraped = httpx.get(told.url + "/metrics", timeout=30)
        assert scraped.status_code == 200
        assert "fivefold_store_bytes" in scraped.text
    finally:
        told.stop()
