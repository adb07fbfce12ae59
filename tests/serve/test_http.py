"""The JSON API over a real socket: every endpoint, and every kind of bad request answered with
a 4xx, a stable code, a clear message, nothing written and the server still up."""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.serve.conftest import Server, free_port

import fivefold


@pytest.fixture
def http(open_server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=open_server.url, timeout=30) as client:
        yield client


@pytest.fixture
def ns() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def _count(http: httpx.Client, ns: str) -> int:
    count: int = http.get("/v1/stats", params={"namespace": ns}).json()["memories"]
    return count


def test_remember_recall_get_browse_forget(http: httpx.Client, ns: str) -> None:
    made = http.post(
        "/v1/memories",
        json={"content": "Priya recommended Postgres for Project Kestrel", "namespace": ns},
    )
    assert made.status_code == 201
    memory = made.json()
    assert memory["namespace"] == ns
    assert memory["id"] > 0

    found = http.post("/v1/recall", json={"query": "what did Priya recommend?", "namespace": ns})
    assert found.status_code == 200
    body = found.json()
    assert body["hits"][0]["memory"]["id"] == memory["id"]
    assert body["plan"]["name"]
    assert body["timings"]["total"] > 0

    assert http.get(f"/v1/memories/{memory['id']}", params={"namespace": ns}).json() == memory
    assert [m["id"] for m in http.get("/v1/memories", params={"namespace": ns}).json()] == [
        memory["id"]
    ]
    assert http.delete(f"/v1/memories/{memory['id']}", params={"namespace": ns}).status_code == 204
    gone = http.get(f"/v1/memories/{memory['id']}", params={"namespace": ns})
    assert gone.status_code == 404
    assert gone.json()["error"]["code"] == "not_found"


def test_batch_relate_alias_explain_stats(http: httpx.Client, ns: str) -> None:
    items = [{"content": f"Note {i}: the Falcon launch moved to week {i}"} for i in range(3)]
    made = http.post("/v1/memories/batch", json={"items": items, "namespace": ns})
    assert made.status_code == 201
    assert len(made.json()) == 3
    edge = http.post(
        "/v1/relate",
        json={"source": "Dana", "relation": "manages", "target": "Falcon", "namespace": ns},
    )
    assert edge.status_code == 201
    assert edge.json()["memory_id"] is not None
    entity = http.post("/v1/aliases", json={"name": "Dana", "alias": "D.", "namespace": ns})
    assert entity.status_code == 201
    assert "D." in entity.json()["aliases"]
    explained = http.post("/v1/explain", json={"query": "who manages Falcon?", "namespace": ns})
    assert explained.status_code == 200
    body = explained.json()
    assert body["plan"]["reasons"]
    assert body["runs"]
    assert body["hits"][0]["terms"]
    assert _count(http, ns) == 4


def test_health_readiness_docs_and_page(http: httpx.Client) -> None:
    assert http.get("/healthz").json() == {"status": "ok"}
    assert http.get("/readyz").json() == {"status": "ready"}
    spec = http.get("/openapi.json").json()
    assert {"/v1/recall", "/v1/memories", "/v1/explain", "/v1/relate"} <= set(spec["paths"])
    for path in ("/docs", "/redoc"):  # they ran a CDN's script with this origin's authority
        assert http.get(path).status_code == 404
    page = http.get("/")
    assert page.status_code == 200
    assert "fivefold" in page.text
    assert http.get("/static/app.js").status_code == 200


def _bad(http: httpx.Client, method: str, path: str, **kwargs: Any) -> httpx.Response:
    response = http.request(method, path, **kwargs)
    assert 400 <= response.status_code < 500, response.text
    assert "Traceback" not in response.text
    error = response.json()["error"]
    assert error["code"]
    assert error["message"]
    return response


BAD_WRITES: list[tuple[str, dict[str, Any], int, str]] = [
    ("malformed JSON", {"content": b'{"content": "x"'}, 400, "not valid JSON"),
    ("not JSON at all", {"content": b"content=x", "type": "form"}, 400, "must be JSON"),
    ("wrong type", {"json": {"content": 42}}, 422, "body.content"),
    ("number as string", {"json": {"content": "x", "importance": "0.5"}}, 422, "importance"),
    ("unknown field", {"json": {"content": "x", "colour": "red"}}, 422, "colour"),
    ("missing field", {"json": {"type": "fact"}}, 422, "content"),
    ("empty content", {"json": {"content": "   "}}, 422, "content"),
    ("bad date", {"json": {"content": "x", "event_at": "0000-01-01"}}, 422, "event_at"),
    ("vector of the wrong size", {"json": {"content": "x", "vector": [1.0, 2.0]}}, 422, "vector"),
    ("unknown type", {"json": {"content": "x", "type": "gossip"}}, 422, "type"),
    ("NUL in content", {"json": {"content": "a\x00b"}}, 422, "content contains a NUL"),
    ("NUL in metadata", {"json": {"content": "x", "metadata": {"k": "\x00"}}}, 422, "NUL"),
    ("deep metadata", {"json": {"content": "x", "metadata": {"a": [[[[[[]]]]]] * 2}}}, 201, ""),
]


@pytest.mark.parametrize(
    ("case", "request_args", "status", "says"), BAD_WRITES, ids=[c[0] for c in BAD_WRITES]
)
def test_bad_writes_are_refused_and_write_nothing(
    http: httpx.Client, ns: str, case: str, request_args: dict[str, Any], status: int, says: str
) -> None:
    args = dict(request_args)
    if "json" in args:
        args["json"] = {**args["json"], "namespace": ns}
    if args.pop("type", None) == "form":
        args["headers"] = {"content-type": "application/x-www-form-urlencoded"}
    elif "content" in args:
        args["headers"] = {"content-type": "application/json"}
    if status == 201:  # a valid edge case: accepted, and written once
        assert http.post("/v1/memories", **args).status_code == 201
        assert _count(http, ns) == 1
        return
    response = _bad(http, "POST", "/v1/memories", **args)
    assert response.status_code == status
    assert says in response.json()["error"]["message"]
    assert "item 0" not in response.json()["error"]["message"]  # one memory, not a batch
    assert _count(http, ns) == 0
    assert http.get("/healthz").status_code == 200


@pytest.mark.parametrize("metadata", ['{"n": "\\ud800"}', '{"\\udfff": 1}'])
def test_a_lone_surrogate_in_metadata_is_refused_and_reads_go_on(
    http: httpx.Client, ns: str, metadata: str
) -> None:
    """JSON may escape a lone surrogate; stored, it failed the write's response (a 500 for
    a stored memory) and every later read that returned it."""
    assert http.post("/v1/memories", json={"content": "zebra crossing", "namespace": ns})
    body = f'{{"content": "zebra note", "namespace": "{ns}", "metadata": {metadata}}}'
    headers = {"content-type": "application/json"}
    response = _bad(http, "POST", "/v1/memories", content=body.encode(), headers=headers)
    assert "surrogate" in response.json()["error"]["message"]
    assert _count(http, ns) == 1
    found = http.post("/v1/recall", json={"query": "zebra", "k": 5, "namespace": ns})
    assert found.status_code == 200
    assert [h["memory"]["content"] for h in found.json()["hits"]] == ["zebra crossing"]


def test_a_batch_with_one_bad_item_writes_nothing(http: httpx.Client, ns: str) -> None:
    items: list[dict[str, Any]] = [{"content": "fine"}, {"content": "bad", "importance": 7}]
    response = _bad(http, "POST", "/v1/memories/batch", json={"items": items, "namespace": ns})
    assert response.status_code == 422
    assert "item 1" in response.json()["error"]["message"]
    assert _count(http, ns) == 0


def test_limits_give_413_and_422(http: httpx.Client, ns: str) -> None:
    huge = json.dumps({"content": "x" * 2_000_000, "namespace": ns}).encode()
    declared = _bad(
        http, "POST", "/v1/memories", content=huge, headers={"content-type": "application/json"}
    )
    assert declared.status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: the server counts as it reads
        for start in range(0, len(huge), 65536):
            yield huge[start : start + 65536]

    streamed = _bad(
        http, "POST", "/v1/memories", content=chunks(), headers={"content-type": "application/json"}
    )
    assert streamed.status_code == 413
    batch = {"items": [{"content": f"m{i}"} for i in range(1001)], "namespace": ns}
    assert _bad(http, "POST", "/v1/memories/batch", json=batch).status_code == 413
    too_many = _bad(http, "POST", "/v1/recall", json={"query": "x", "k": 101, "namespace": ns})
    assert too_many.status_code == 422
    assert "serve.max_k" in too_many.json()["error"]["message"]
    assert _count(http, ns) == 0


def test_a_chunked_body_is_counted_whatever_length_is_declared(
    open_server: Server, ns: str
) -> None:
    """Transfer-Encoding: chunked with a small Content-Length beside it: the server frames the
    body by its chunks, and the limit read the header: a 2.9 MB batch got in."""
    import socket

    items = [{"content": "x" * 90_000} for _ in range(30)]
    body = json.dumps({"items": items, "namespace": ns}).encode()
    chunked = b"".join(
        b"%x\r\n%s\r\n" % (len(body[i : i + 65536]), body[i : i + 65536])
        for i in range(0, len(body), 65536)
    )
    head = (
        b"POST /v1/memories/batch HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        b"Content-Length: 10\r\nConnection: close\r\n\r\n"
    )
    port = int(open_server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        with contextlib.suppress(OSError):  # answered (and closed) before the body was sent
            sock.sendall(head + chunked + b"0\r\n\r\n")
        answer = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                answer += chunk
    # 413 from the limit (h11 frames the body by its chunks; a parser refusing both headers
    # would answer 400 before the app, and prove nothing here).
    assert answer.split(b"\r\n", 1)[0] == b"HTTP/1.1 413 Request Entity Too Large", answer[:300]
    with httpx.Client(base_url=open_server.url, timeout=30) as client:
        assert _count(client, ns) == 0


def test_unknown_paths_methods_and_ids(http: httpx.Client, ns: str) -> None:
    assert _bad(http, "GET", "/v1/nothing-here").status_code == 404
    assert _bad(http, "PUT", "/v1/recall", json={}).status_code == 405
    assert _bad(http, "GET", "/v1/memories/not-a-number").status_code == 422
    assert _bad(http, "GET", "/v1/memories/99999999", params={"namespace": ns}).status_code == 404
    assert _bad(http, "GET", "/v1/memories", params={"limit": 0}).status_code == 422


def test_the_http_surface_answers_odd_requests_as_documented(http: httpx.Client, ns: str) -> None:
    """Each answered as the serving guide says (each was answered otherwise once)."""
    made = http.post("/v1/memories", json={"content": "kept", "namespace": ns}).json()["id"]
    body = json.dumps({"query": "kept", "namespace": ns}).encode()
    for media in (None, "text/json", "text/plain"):  # 422 "Input should be a valid dictionary"
        headers = {} if media is None else {"content-type": media}
        response = _bad(http, "POST", "/v1/recall", content=body, headers=headers)
        assert response.status_code == 400, media
        assert "Content-Type: application/json" in response.json()["error"]["message"]
    charset = {"content-type": "application/json; charset=utf-8"}
    assert http.post("/v1/recall", content=body, headers=charset).status_code == 200
    # A query's error is the query's, whatever the (absent) media type.
    assert (
        _bad(http, "DELETE", f"/v1/memories/{made}", params={"namespace": " "}).status_code == 422
    )
    for k in (0, 101):  # "from 1 to 1000": the engine's bound, not this server's
        response = _bad(http, "POST", "/v1/recall", json={"query": "x", "k": k, "namespace": ns})
        assert "from 1 to 100 on this server" in response.json()["error"]["message"], k
    not_allowed = _bad(http, "PUT", "/v1/recall", json={})
    assert not_allowed.status_code == 405
    assert not_allowed.headers["allow"] == "POST"
    for path in (f"/v1/memories/{made}.0", f"/v1/memories/%20{made}", f"/v1/memories/+{made}"):
        assert _bad(http, "DELETE", path, params={"namespace": ns}).status_code == 422, path
    huge = "9" * 30
    assert _bad(http, "GET", f"/v1/memories/{huge}", params={"namespace": ns}).status_code in (
        404,
        422,
    )
    assert http.get(f"/v1/memories/{made}", params={"namespace": ns}).status_code == 200
    for field in ("namespace", "user_id"):  # "" was the default namespace, a user_id "" refused
        empty = _bad(http, "POST", "/v1/memories", json={"content": "x", field: ""})
        assert (empty.status_code, "empty" in empty.json()["error"]["message"]) == (422, True)
    slash = _bad(http, "POST", "/v1/recall/", json={"query": "x"})  # was a 307 to the Host
    assert slash.status_code == 404
    for method in ("GET", "DELETE", "PUT"):  # GET opened a stream that never sent anything
        mcp = _bad(http, method, "/mcp", headers={"accept": "text/event-stream"})
        assert (mcp.status_code, mcp.headers["allow"]) == (405, "POST"), method
    assert http.head("/healthz").status_code == 200  # probes that send HEAD got a 405
    assert http.head("/readyz").status_code == 200
    # On every answer (the page was framed by its /static/ path, which had none of them).
    for answer in (
        http.get("/"),
        http.get("/static/index.html"),
        http.get("/static/app.js"),
        http.get("/healthz"),
        http.get("/metrics"),
        slash,
        mcp,
        _bad(http, "POST", "/v1/recall", json={"query": 3}),
    ):
        headers = answer.headers
        assert headers["x-frame-options"] == "DENY", answer.url
        assert headers["content-security-policy"] == (
            "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        )
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "no-referrer"


def test_metrics_count_recalls_writes_and_errors(http: httpx.Client, ns: str) -> None:
    http.post("/v1/memories", json={"content": "Metrics are counted", "namespace": ns})
    http.post("/v1/recall", json={"query": "what is counted?", "namespace": ns})
    http.post("/v1/recall", json={"query": 3})
    text = http.get("/metrics").text
    assert "fivefold_recalls_total{plan=" in text
    assert 'fivefold_writes_total{kind="memory"}' in text
    assert 'fivefold_errors_total{code="invalid_input"}' in text
    assert 'fivefold_recall_stage_seconds_bucket{le="0.0005",stage="embed"}' in text
    assert 'fivefold_http_request_seconds_count{endpoint="/v1/recall",status="200"}' in text
    assert "fivefold_store_bytes" in text


OMIT = object()  # a field the case leaves out of the body
BAD_FEEDBACK: list[tuple[str, dict[str, Any], int, str]] = [
    ("no recall_id", {"recall_id": OMIT, "relevant": [1]}, 422, "recall_id"),
    ("recall_id not a string", {"recall_id": 7, "relevant": [1]}, 422, "recall_id"),
    ("a forged recall_id", {"recall_id": "r1.bm9wZQ", "relevant": [1]}, 422, "recall_id"),
    ("ids as strings", {"relevant": ["1"]}, 422, "relevant"),
    ("no memory named", {}, 422, "names no memory"),
    ("an unknown memory", {"relevant": [10**12]}, 404, "no memory"),
    ("an unknown field", {"relevant": [1], "score": 5}, 422, "score"),
]


@pytest.mark.parametrize(
    ("case", "body", "status", "says"), BAD_FEEDBACK, ids=[c[0] for c in BAD_FEEDBACK]
)
def test_bad_feedback_is_refused_and_writes_nothing(
    http: httpx.Client, ns: str, case: str, body: dict[str, Any], status: int, says: str
) -> None:
    made = http.post("/v1/memories", json={"content": "Kestrel ships Friday", "namespace": ns})
    recall = http.post("/v1/recall", json={"query": "Kestrel", "namespace": ns}).json()
    given = {k: v for k, v in {"recall_id": recall["recall_id"], **body}.items() if v is not OMIT}
    response = _bad(http, "POST", "/v1/feedback", json=given)
    assert response.status_code == status, response.text
    assert says in response.json()["error"]["message"]
    good = {"recall_id": recall["recall_id"], "relevant": [made.json()["id"]]}
    assert http.post("/v1/feedback", json=good).status_code == 201
    # Only the good one was written: training says how many recalls have feedback.
    trained = _bad(http, "POST", "/v1/train", json={"namespace": ns})
    assert trained.status_code == 422
    assert "feedback on 1 recalls" in trained.json()["error"]["message"]


def test_a_loopback_server_answers_only_loopback_names(open_server: Server) -> None:
    """DNS rebinding: a page whose own name resolves to 127.0.0.1 sends its Host (and its
    Origin); the keyless server read and wrote every namespace for it (only /mcp refused)."""
    port = open_server.url.rsplit(":", 1)[1]
    with httpx.Client(base_url=open_server.url, timeout=30) as client:
        for headers in (
            {"host": f"attacker.example:{port}"},
            {"host": "attacker.example"},
            {"origin": f"http://attacker.example:{port}"},
            {"origin": "null"},
            {"origin": "http://[bad"},  # urlsplit raises on it: a 500 and a traceback logged
        ):
            for method, path in (
                ("GET", "/v1/memories"),
                ("GET", "/"),
                ("POST", "/v1/recall"),
                ("POST", "/mcp"),  # ours now, not the MCP SDK's
            ):
                body = {"query": "x"} if method == "POST" else None
                response = client.request(method, path, headers=headers, json=body)
                assert response.status_code == 421, (headers, path, response.text)
                assert response.json()["error"]["code"] == "misdirected", path
        for host in (
            "[::1].attacker.example",
            f"[::1]x:{port}",
            f"127.0.0.1.attacker.example:{port}",
        ):
            assert client.get("/v1/memories", headers={"host": host}).status_code == 421, host
        loopbacks = (f"localhost:{port}", f"127.0.0.1:{port}", "localhost", f"localhost.:{port}")
        for host in (*loopbacks, f"[::1]:{port}", f"[::ffff:127.0.0.1]:{port}", "LOCALHOST"):
            assert client.get("/v1/memories", headers={"host": host}).status_code == 200, host
        origin = {"origin": f"http://127.0.0.1:{port}"}
        assert client.get("/v1/memories", headers=origin).status_code == 200


def test_a_request_without_a_host_is_no_browsers_and_is_answered(open_server: Server) -> None:
    """HTTP/1.0 without Host (some health probes): a browser always sends one."""
    import socket

    port = int(open_server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


@pytest.mark.slow
@contextlib.contextmanager
def _in_thread(open_memory: Any) -> Iterator[str]:
    """``create_app`` served by uvicorn in a thread of this process, on a real socket: a warning
    it raises is an error here (pytest's filter is the process's), a 500 to the caller."""
    import threading

    import uvicorn

    from fivefold.config import ServeConfig
    from fivefold.serve.app import create_app
    from fivefold.serve.keys import KeyRing

    port = free_port()
    app = create_app(open_memory, settings=ServeConfig(port=port), keys=KeyRing([]), mcp=False)
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def test_an_internal_error_is_json_with_the_security_headers(tmp_path: Path) -> None:
    """Starlette's server-error middleware sits outside any added middleware: a 500 went out
    without the headers every other answer carries. A store that fails in a way nothing
    expects, served over a real socket."""

    class Broken(fivefold.Memory):
        def stats(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("a failure nothing expects")

    def broken() -> fivefold.Memory:
        return Broken.open(tmp_path / "m.db", embedder=fivefold.HashingEmbedder())

    with _in_thread(broken) as url:
        answer = httpx.get(f"{url}/v1/stats", timeout=30)
    assert answer.status_code == 500
    assert answer.json()["error"]["code"] == "internal"
    assert "failure nothing expects" not in answer.text
    assert answer.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    assert answer.headers["x-content-type-options"] == "nosniff"


def test_the_schema_is_built_without_warnings_and_its_ids_are_unique(tmp_path: Path) -> None:
    # GET and HEAD of /healthz and /readyz, one route each, gave the same operation id twice
    # (FastAPI warned on every build of /openapi.json).
    def memory() -> fivefold.Memory:
        return fivefold.Memory.open(tmp_path / "m.db", embedder=fivefold.HashingEmbedder())

    with _in_thread(memory) as url:
        answer = httpx.get(f"{url}/openapi.json", timeout=30)
        assert httpx.head(f"{url}/healthz", timeout=30).status_code == 200
        assert httpx.head(f"{url}/readyz", timeout=30).status_code == 200
    assert answer.status_code == 200, answer.text
    operations = [op for path in answer.json()["paths"].values() for op in path.values()]
    ids = [op["operationId"] for op in operations]
    assert len(ids) == len(set(ids))
    assert {"healthz_get", "healthz_head", "readyz_get", "readyz_head"} <= set(ids)
