"""The MCP server end to end with the SDK's own client: over stdio (``fivefold mcp`` in a child
process) and over streamable HTTP (``/mcp`` of a running ``fivefold serve``, behind its keys)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from tests.serve.conftest import Server

import fivefold

TOOLS = {"remember", "recall", "relate", "forget", "forget_scope", "explain", "feedback"}


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data: dict[str, Any] = result.structured_content
        return data
    parsed: dict[str, Any] = json.loads(result.content[0].text)
    return parsed


async def _session(client: Client) -> dict[str, Any]:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) >= TOOLS
    assert tools["recall"].input_schema["properties"]["query"]["type"] == "string"
    assert "before answering" in (tools["recall"].description or "")
    made = _data(await client.call_tool("remember", {"content": "Mara's badge number is 4471"}))
    found = _data(await client.call_tool("recall", {"query": "what is Mara's badge number?"}))
    assert found["memories"][0]["id"] == made["id"]
    given = {"recall_id": found["recall_id"], "used": [made["id"]]}
    assert _data(await client.call_tool("feedback", given))["feedback"] > 0
    assert (await client.call_tool("feedback", {**given, "recall_id": "r1.x"})).is_error
    edge = _data(
        await client.call_tool("relate", {"source": "Mara", "relation": "owns", "target": "Badge"})
    )
    explained = _data(await client.call_tool("explain", {"query": "Mara badge"}))
    assert explained["plan"]
    assert explained["memories"]
    bad = await client.call_tool("recall", {"query": "x", "k": "lots"})
    assert bad.is_error
    # An argument a tool does not take is refused by name, nothing written (it was ignored: a
    # misspelt ``user`` wrote into the shared scope). Not in the schema: hosts handing it to
    # Gemini as it is fail on ``additionalProperties``.
    assert all("additionalProperties" not in t.input_schema for t in tools.values())
    stray = await client.call_tool("remember", {"content": "Mara moved to Oslo", "user": "mara"})
    assert stray.is_error
    assert "user\n  Extra inputs are not permitted" in stray.content[0].text
    after = _data(await client.call_tool("recall", {"query": "Mara moved to Oslo", "k": 50}))
    assert all("Oslo" not in m["content"] for m in after["memories"])
    # No value is converted into another type, as the /v1 API reads a body: `true` forgot
    # memory 1, "5" was k=5.
    for tool, arguments in [
        ("forget", {"memory_id": True}),
        ("forget", {"memory_id": str(made["id"])}),
        ("recall", {"query": "badge", "k": True}),
        ("recall", {"query": "badge", "k": "5"}),
        ("feedback", {"recall_id": found["recall_id"], "used": [True]}),
    ]:
        refused = await client.call_tool(tool, arguments)
        assert refused.is_error, (tool, arguments)
        assert "Input should be a valid integer" in refused.content[0].text
    # 50.0 is the integer 50 (JSON Schema's reading), not refused.
    kept = _data(await client.call_tool("recall", {"query": "Mara's badge number", "k": 50.0}))
    assert made["id"] in [m["id"] for m in kept["memories"]]  # not forgotten by `true`
    # A string argument is the string sent: "null" was None (a memory every user sees).
    odd = _data(await client.call_tool("remember", {"content": "Odd's note", "user_id": "null"}))
    mine = _data(
        await client.call_tool("recall", {"query": "Odd's note", "k": 50, "user_id": "null"})
    )
    assert odd["id"] in [m["id"] for m in mine["memories"]]
    other = _data(
        await client.call_tool("recall", {"query": "Odd's note", "k": 50, "user_id": "someone"})
    )
    assert odd["id"] not in [m["id"] for m in other["memories"]]
    assert all("\n" not in (t.description or "") for t in tools.values())  # one paragraph
    missing = await client.call_tool("forget", {"memory_id": 987654321})
    assert missing.is_error
    assert "not_found" in missing.content[0].text
    assert (
        _data(await client.call_tool("forget", {"memory_id": made["id"]}))["forgotten"]
        == made["id"]
    )
    return {"made": made, "edge": edge}


@pytest.mark.slow
def test_stdio(tmp_path: Path, minilm: fivefold.MiniLMEmbedder) -> None:
    db = tmp_path / "mcp.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-c",
            "from fivefold.cli.main import main; main()",
            "--db",
            str(db),
            "mcp",
            "-n",
            "agent",
        ],
    )

    async def main() -> dict[str, Any]:
        async with Client(params) as client:
            out = await _session(client)
            # Another namespace is refused, and the refusal names what binds it (no key does).
            refused = await client.call_tool("recall", {"query": "x", "namespace": "other"})
            assert refused.is_error
            text = refused.content[0].text
            assert "forbidden: this server (fivefold mcp -n) is bound to namespace 'agent'" in text
            return out

    out = asyncio.run(main())
    # The process wrote into the namespace it was bound to: the relation's fact and Odd's
    # note are left, the note under the user named "null".
    with fivefold.Memory.open(db, embedder=minilm) as memory:
        assert memory.stats(namespace="agent").memories == 2
        noted = memory.recall("Odd's note", k=50, namespace="agent", user_id="null").hits
        assert [h.memory.user_id for h in noted if h.memory.content == "Odd's note"] == ["null"]
        assert memory.get(out["edge"]["memory_id"], namespace="agent").content == "Mara owns Badge."


@asynccontextmanager
async def _http(server: Server, key: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers=server.headers(key)) as http,
        Client(streamable_http_client(server.url + "/mcp", http_client=http)) as client,
    ):
        yield client


@pytest.mark.slow
def test_http_behind_keys(keyed_server: Server) -> None:
    async def main() -> None:
        async with _http(keyed_server, "beta") as client:
            await _session(client)
            # the key fixes the scope: naming another namespace is refused
            refused = await client.call_tool("recall", {"query": "x", "namespace": "alpha"})
            assert refused.is_error
            assert "forbidden" in refused.content[0].text

    asyncio.run(main())


@pytest.mark.slow
def test_http_tools_see_only_their_keys_tenant(keyed_server: Server) -> None:
    secret = "the Orion launch code is 5519"
    alpha = httpx.post(
        keyed_server.url + "/v1/memories",
        json={"content": secret},
        headers=keyed_server.headers("alpha"),
    )
    assert alpha.status_code == 201

    async def main() -> dict[str, Any]:
        async with _http(keyed_server, "beta") as client:
            return _data(await client.call_tool("recall", {"query": "Orion launch code", "k": 50}))

    found = asyncio.run(main())
    assert secret not in json.dumps(found)
    # Nor may beta's key give feedback on alpha's recall.
    recalled = httpx.post(
        keyed_server.url + "/v1/recall",
        json={"query": "Orion launch code"},
        headers=keyed_server.headers("alpha"),
    ).json()

    async def sneak() -> Any:
        async with _http(keyed_server, "beta") as client:
            given = {"recall_id": recalled["recall_id"], "used": [alpha.json()["id"]]}
            return await client.call_tool("feedback", given)

    refused = asyncio.run(sneak())
    assert refused.is_error
    assert "forbidden: this key is bound to namespace 'beta'" in refused.content[0].text


def test_http_without_a_key_is_401(keyed_server: Server) -> None:
    response = httpx.post(
        keyed_server.url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    )
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"


def test_a_stdio_scope_past_the_write_bounds_is_refused_before_serving(tmp_path: Path) -> None:
    """Bound as a key is: a namespace no write could use is a bad argument (exit 2), not a
    server whose every write fails."""
    from click.testing import CliRunner

    from fivefold.cli.main import cli

    long = "".join(chr(0x4E00 + n) for n in range(171))  # 513 bytes
    db = str(tmp_path / "m.db")
    for args in (["-n", long], ["-n", "team", "--user", long]):
        result = CliRunner().invoke(cli, ["--db", db, "mcp", *args])
        assert result.exit_code == 2, result.output
        assert "bytes" in result.output


@pytest.mark.slow
def test_stdio_answers_a_line_it_cannot_read_and_serves_on(tmp_path: Path) -> None:
    """JSON-RPC 2.0: a line that is not JSON is answered -32700, one that is not a request
    object -32600 (with its id where it has one), and the server goes on. The SDK's stdio
    transport answered nothing: a host waited on the id until its own timeout."""
    import queue
    import subprocess
    import threading

    command = [sys.executable, "-c", "from fivefold.cli.main import main; main()"]
    with subprocess.Popen(
        [*command, "--db", str(tmp_path / "m.db"), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        encoding="utf-8",
    ) as child:
        stdin, stdout = child.stdin, child.stdout
        assert stdin is not None
        assert stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in stdout], daemon=True).start()

        def say(message: str) -> None:
            stdin.write(message + "\n")
            stdin.flush()

        def ask(message: str) -> dict[str, Any]:
            say(message)
            answer: dict[str, Any] = json.loads(lines.get(timeout=60))
            return answer

        hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
        hello["clientInfo"] = {"name": "test", "version": "1"}
        first = ask(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        )
        assert first["id"] == 1
        assert "result" in first
        say(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        for line, code, request_id in [
            ("this is not json", -32700, None),
            ('{"jsonrpc": "2.0", "id": 2, "method": "ping"', -32700, None),  # cut short
            ('[{"jsonrpc": "2.0", "id": 3, "method": "ping"}]', -32600, None),  # a batch
            ('{"jsonrpc": "2.0", "id": 4}', -32600, None),  # no method: a request? a response?
            ('{"jsonrpc": "2.0", "id": {"jsonrpc": "2.0", "id": 8}, "method": 5}', -32600, None),
            (
                '{"jsonrpc": "2.0", "id": "five", "method": "tools/call", "params": [1]}',
                -32600,
                "five",
            ),
            (
                '{"jsonrpc": "2.0", "id": 6, "method": "ping", "params": {"x": "\\ud800"}}',
                None,
                None,
            ),
        ]:
            answer = ask(line)
            assert answer["jsonrpc"] == "2.0", (line, answer)
            assert "error" in answer, (line, answer)
            if code is not None:  # a lone surrogate is either, as pydantic reads it
                assert answer["error"]["code"] == code, (line, answer)
                assert answer["id"] == request_id, (line, answer)
        # Valid JSON the server cannot read is not called "not JSON" (it was, for these).
        nested = ask("[" * 3000 + "]" * 3000)
        assert nested["error"]["message"] == (
            "Parse error: Invalid JSON: recursion limit exceeded at line 1 column 202"
        )
        assert ask("this is not json")["error"]["message"].startswith("Parse error: Invalid JSON")
        # Not answered: a blank line, and a malformed response (its id is the client's: an
        # error of that id would answer the client's own request 7 below first).
        say("")
        say('{"jsonrpc": "2.0", "id": 7, "result": "not an object"}')
        say('{"jsonrpc": "2.0", "id": 7, "error": "not an object"}')
        pong = ask('{"jsonrpc": "2.0", "id": 7, "method": "ping"}')
        assert pong == {"jsonrpc": "2.0", "id": 7, "result": {}}
        stdin.close()
        assert child.wait(timeout=60) == 0


@pytest.mark.slow
def test_stdio_answers_what_it_was_asked_before_stdin_closed(
    tmp_path: Path, minilm: fivefold.MiniLMEmbedder
) -> None:
    """A piped one-shot session (initialize, writes, end of input): the SDK cancelled the
    requests in flight at the end of stdin, so a write was done and never answered. Also when
    a host reuses an id (the spec forbids it) or a malformed line names a running one's."""
    import subprocess

    hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
    hello["clientInfo"] = {"name": "test", "version": "1"}
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
    for n, request_id in enumerate((2, 3, 3)):
        call = {"name": "remember", "arguments": {"content": f"piped write {n}"}}
        lines.append(
            json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": call})
        )
    lines.append('{"jsonrpc": "2.0", "id": 2, "method": 5}')  # refused, naming id 2
    db = tmp_path / "m.db"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from fivefold.cli.main import main; main()",
            "--db",
            str(db),
            "mcp",
        ],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    written = [
        json.loads(a["result"]["content"][0]["text"])["id"]
        for a in answers
        if "result" in a
        if a["id"] != 1
    ]
    assert sorted(a["id"] for a in answers if "result" in a) == [1, 2, 3, 3], done.stdout
    with fivefold.Memory.open(db, embedder=minilm) as memory:
        contents = sorted(memory.get(i).content for i in written)
    assert contents == [f"piped write {n}" for n in range(3)]


def test_remember_takes_what_the_http_api_takes(keyed_server: Server) -> None:
    """MCP's remember and ``POST /v1/memories`` store the same memory from the same fields;
    only a precomputed ``vector`` is the HTTP API's alone (an agent has no embedding model)."""
    from fivefold.serve.schemas import RememberBody

    fields = {
        "type": "preference",
        "importance": 0.9,
        "predicate": "prefers",
        "speaker": "Noor",
        "metadata": {"source": "chat", "turn": 3},
        "entities": ["Noor"],
        "session_id": "s-9",
    }

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with _http(keyed_server, "beta") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            taken = set(tools["remember"].input_schema["properties"])
            assert taken == set(RememberBody.model_fields) - {"vector"}
            whole = {"content": "Noor prefers window seats", **fields, "importance": 1}
            assert not (await client.call_tool("remember", whole)).is_error  # 1 is a number
            made = _data(await client.call_tool("remember", {"content": "Noor: aisle", **fields}))
            too_much = await client.call_tool("remember", {"content": "x", "importance": 2})
            assert too_much.is_error
            return made, dict(fields)

    made, sent = asyncio.run(main())
    headers = keyed_server.headers("beta")
    over_mcp = httpx.get(f"{keyed_server.url}/v1/memories/{made['id']}", headers=headers).json()
    posted = httpx.post(
        f"{keyed_server.url}/v1/memories",
        json={"content": "Noor: aisle, over HTTP", **sent},
        headers=headers,
    ).json()
    for name in sent:
        assert over_mcp[name] == posted[name], name
    assert (over_mcp["importance"], over_mcp["predicate"]) == (0.9, "prefers")
    assert over_mcp["metadata"] == {"source": "chat", "turn": 3}


def test_forget_scope_stays_inside_the_servers_binding(tmp_path: Path) -> None:
    """As ``fivefold mcp -n team --user u1`` binds it: that user's memories go, another
    user's are refused, and no call forgets a whole namespace."""
    from fivefold.serve.mcp import build_server, fixed_scope

    with fivefold.Memory.open(":memory:", embedder=fivefold.HashingEmbedder()) as memory:
        memory.remember_many(
            [
                {"content": f"note {n}", "namespace": "team", "user_id": user, "session_id": s}
                for user in ("u1", "u2")
                for n, s in enumerate(("a", "a", "b"))
            ]
        )
        bound = build_server(lambda: memory, fixed_scope("team", "u1", None))
        free = build_server(lambda: memory, fixed_scope("team", None, None))

        async def main() -> list[Any]:
            async with Client(bound) as client:
                other = await client.call_tool("forget_scope", {"user_id": "u2"})
                session = _data(await client.call_tool("forget_scope", {"session_id": "b"}))
                rest = _data(await client.call_tool("forget_scope", {}))
            async with Client(free) as client:
                whole = await client.call_tool("forget_scope", {})
            return [other, session, rest, whole]

        other, session, rest, whole = asyncio.run(main())
        assert other.is_error
        assert "forbidden" in other.content[0].text
        assert session == {"forgotten": 1}
        assert rest == {"forgotten": 2}
        assert whole.is_error
        assert "a whole namespace is not forgotten over MCP" in whole.content[0].text
        left = memory.browse(namespace="team")
        assert sorted(r.user_id or "" for r in left) == ["u2", "u2", "u2"]
