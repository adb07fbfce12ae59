"""A server bound to loopback answers only requests addressed to loopback.

Without keys the server has no authentication and listens on loopback only; a web page the
user visits could still reach it through DNS rebinding (its own name made to resolve to
127.0.0.1: the browser then sends ``Host: attacker.example``) and read, write or forget any
namespace. ``/mcp`` already refused such a Host (the MCP SDK's check); this does the same for
the rest: a Host that is not a loopback name is refused with 421, and so is a browser's
``Origin`` that is not loopback (a cross-site page). Only a keyless server checks: with keys a
page has no key to send, and a keyed server is reached by whatever name its users (or a
reverse proxy on the same machine) give it.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from fivefold.serve.errors import error_body

__all__ = ["LoopbackOnly", "loopback"]


def loopback(host: str) -> bool:
    """Whether a host name or address (no port) is this machine's loopback."""
    name = host.lower().removesuffix(".")  # "localhost." is the same name
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _hostname(header: str) -> str | None:
    """The name in a Host header, without its port (``[::1]:8477`` -> ``::1``); None when it
    is not a name and an optional port."""
    if header.startswith("["):
        address, bracket, rest = header[1:].partition("]")
        if not bracket or (rest and not (rest.startswith(":") and _port(rest[1:]))):
            return None
        return address
    name, colon, port = header.rpartition(":")
    if colon and _port(port):
        return name
    return header


def _port(text: str) -> bool:
    return text.isascii() and text.isdigit()


class LoopbackOnly:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = {k.lower(): v for k, v in scope.get("headers", ())}
            host = headers.get(b"host", b"").decode("latin-1")
            origin = headers.get(b"origin")
            problem = None
            name = _hostname(host)
            # No Host at all (HTTP/1.0, a health probe) is no browser's: a page's request
            # always names the host it was sent to.
            if host and (name is None or not loopback(name)):
                problem = f"this server answers loopback names only, not Host {host!r}"
            elif origin is not None:
                try:
                    origin_host = urlsplit(origin.decode("latin-1")).hostname or ""
                except ValueError:  # "http://[bad": an address no page is served from
                    origin_host = ""
                if not loopback(origin_host):
                    problem = "this server answers pages served from loopback only"
            if problem is not None:
                response = JSONResponse(error_body("misdirected", problem), status_code=421)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
