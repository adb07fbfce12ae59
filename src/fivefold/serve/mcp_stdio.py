"""``fivefold mcp``'s stdio transport: the MCP SDK's (``mcp.server.stdio``), with an answer for a
line that is not a JSON-RPC message.

The SDK (2.3.0) hands such a line's parse error to the server, which answers nothing: a host
that sent a malformed request (not JSON, a batch, no ``method``, ``params`` that is not an
object, a lone surrogate) waited for its id until its own timeout. JSON-RPC 2.0 answers -32700
(not JSON) or -32600 (not a request object), with the request's id where one can be read, else
null (as the SDK's HTTP transport answers a body it cannot parse). A blank line, and a response
the client sent malformed, are not answered (the response's id is in the client's own
sequence: an error of that id would answer the client's request). Not covered: a request whose
id is null, a float or an object, which the SDK reads as a notification (the id dropped).
"""

from __future__ import annotations

from collections import Counter
from types import TracebackType
from typing import Any, Self

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)
from pydantic import ValidationError

CANCELLED = "notifications/cancelled"
# pydantic's error types for input that is not JSON at all (or not text JSON can carry).
_UNPARSED = frozenset({"json_invalid", "string_unicode", "json_type"})


def run_stdio(server: MCPServer) -> None:
    """Serve ``server`` over the process's stdin and stdout until stdin closes."""
    anyio.run(_serve, server)


async def _serve(server: MCPServer) -> None:
    # As ``MCPServer.run_stdio_async`` does, with the read side answering what it cannot parse.
    # The low-level server has no public name in SDK 2.3.0 (pinned; the stdio test runs it).
    lowlevel = server._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        answered = _Answered(write_stream)
        await lowlevel.run(
            _Answering(read_stream, answered),
            answered,
            lowlevel.create_initialization_options(),
        )


def rejection(error: Exception) -> JSONRPCError | None:
    """The JSON-RPC error answering a line the transport could not read as a message; None for
    a line that asks for no answer: a blank one, or a response (answered, its id would be taken
    for the client's own request of that id)."""
    if not isinstance(error, ValidationError):
        return _error(None, PARSE_ERROR, f"Parse error: {type(error).__name__}")
    found = error.errors()
    if any(e["type"] in _UNPARSED for e in found):
        line = next((e.get("input") for e in found if e["type"] in _UNPARSED), None)
        if isinstance(line, str) and not line.strip():
            return None
        # pydantic's words: "EOF while parsing", "recursion limit exceeded", a lone surrogate's
        # "unexpected end of hex escape" (valid JSON, not text this server reads).
        said = next((str(e.get("msg", "")) for e in found if e["type"] in _UNPARSED), "")
        return _error(None, PARSE_ERROR, f"Parse error: {said or 'the line is not JSON'}")
    message = _message(found)
    if (
        message is not None
        and "method" not in message
        and ("result" in message or "error" in message)
    ):
        return None
    return _error(
        _request_id(message),
        INVALID_REQUEST,
        "Invalid Request: not a JSON-RPC 2.0 request, notification or response object "
        "(one object per line; batches are not taken)",
    )


def _message(errors: list[Any]) -> dict[str, Any] | None:
    """The line's object, as pydantic's errors hold it: the input of a field missing from one
    of the message kinds is the message itself (a nested object shows in other errors)."""
    for e in errors:
        if e["type"] == "missing" and len(e["loc"]) == 2 and isinstance(e.get("input"), dict):
            message: dict[str, Any] = e["input"]
            return message
    return None


def _request_id(message: dict[str, Any] | None) -> int | str | None:
    """A request's id, when it has one JSON-RPC allows (a string or an integer; bool is an int
    to Python, not to JSON-RPC); else null."""
    if message is None or "method" not in message:
        return None
    found = message.get("id")
    if isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool)):
        return found
    return None


def _error(request_id: int | str | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


# How long the end of stdin waits for the requests still running to be answered.
DRAIN_SECONDS = 60.0


class _Closing:
    """A stream as an async context manager: closed (``aclose``) on leaving it."""

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


class _Answered(_Closing):
    """The transport's write stream, noting which requests are still to be answered: the end
    of stdin waits for them (the SDK cancelled them there, and a piped one-shot ``remember``
    was written and never answered)."""

    def __init__(self, inner: WriteStream[SessionMessage]) -> None:
        self._inner = inner
        # Counted: a request id sent twice (the spec forbids it; hosts do) is two answers.
        self.pending: Counter[int | str] = Counter()
        self._settled = anyio.Event()

    def asked(self, message: object) -> None:
        """A message read: a request is pending until answered (or cancelled)."""
        if isinstance(message, JSONRPCRequest):
            self.pending[message.id] += 1
        elif isinstance(message, JSONRPCNotification) and message.method == CANCELLED:
            self._done((message.params or {}).get("requestId"))

    async def send(self, item: SessionMessage, /) -> None:
        await self._inner.send(item)
        if isinstance(item.message, JSONRPCResponse | JSONRPCError):
            self._done(item.message.id)

    async def reject(self, answer: JSONRPCError) -> None:
        """A line that was no request answered: whatever id it names, no request of that id
        is answered by it."""
        await self._inner.send(SessionMessage(answer))

    def _done(self, request_id: object) -> None:
        if isinstance(request_id, int | str) and self.pending[request_id] > 0:
            self.pending[request_id] -= 1
            if not self.pending[request_id]:
                del self.pending[request_id]
        if not self.pending:
            self._settled.set()
            self._settled = anyio.Event()

    async def drained(self) -> None:
        """Until every pending request is answered, for ``DRAIN_SECONDS`` at most."""
        with anyio.move_on_after(DRAIN_SECONDS):
            while self.pending:
                await self._settled.wait()

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Answering(_Closing):
    """The transport's read stream, less its parse errors: each is answered on the write stream
    and the next message is read instead. Its end waits until the requests read have been
    answered."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], write: _Answered) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:
        """The sender's context of the last message (``ReadStream``'s optional part)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            try:
                item = await self._inner.receive()
            except anyio.EndOfStream:
                await self._write.drained()
                raise
            if not isinstance(item, Exception):
                self._write.asked(item.message)
                return item
            answer = rejection(item)
            if answer is not None:
                await self._write.reject(answer)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


__all__ = ["rejection", "run_stdio"]
