"""The ASGI application of ``fivefold serve``: the ``/v1`` API, ``/mcp``, the web page at
``/``, health, readiness and ``/metrics``.

Start-up opens the store, loads and warms the embedding model and freezes the heap
(``gc.freeze()``): what exists then is never scanned again, so full collections do not walk
the model's objects, milliseconds each, in the middle of requests.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from importlib import resources
from typing import Any

from anyio import to_thread
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fivefold.config import MetricsAccess, ServeConfig
from fivefold.errors import FivefoldError
from fivefold.memory import Memory
from fivefold.serve import routes
from fivefold.serve.budget import TokenBudget
from fivefold.serve.errors import error_body, status_of, tenant_message
from fivefold.serve.keys import KeyRing
from fivefold.serve.loopback import LoopbackOnly
from fivefold.serve.state import Served
from fivefold.serve.telemetry import CONTENT_TYPE, Telemetry
from fivefold.version import __version__

__all__ = ["create_app"]

log = logging.getLogger("fivefold.serve")
WEB = resources.files("fivefold.serve") / "web"


def create_app(
    open_memory: Callable[[], Memory],
    *,
    settings: ServeConfig,
    keys: KeyRing,
    mcp: bool = True,
    budget: TokenBudget | None = None,
) -> FastAPI:
    """The application; ``open_memory`` runs once, at start-up, in the serving process.
    ``budget``: the word pieces its embedder's batches share, shown in ``/metrics``."""
    from fivefold.serve.mcp import McpEndpoint

    endpoint = McpEndpoint(lambda: app.state.served.memory, keys, settings.host) if mcp else None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        memory = open_memory()
        memory.embedder.embed(["warm up the model before the first request"])
        app.state.served = Served(memory, keys, settings, Telemetry(lambda: _size(memory), budget))
        # Requests beyond serve.threads wait their turn in the event loop: more threads only
        # contend for the GIL and serve fewer requests (BENCHMARKS.md).
        to_thread.current_default_thread_limiter().total_tokens = settings.threads
        gc.collect()
        gc.freeze()
        try:
            async with AsyncExitStack() as stack:
                if endpoint is not None:
                    await stack.enter_async_context(endpoint.running())
                yield
        finally:
            # Off the event loop: closing waits for calls in flight (none after the drain,
            # which waits for every request), and a blocked loop would not see a second
            # Ctrl-C.
            await to_thread.run_sync(memory.close)

    app = _Hardened(
        title="fivefold",
        version=__version__,
        summary="Long-term memory for AI agents: remember, recall, explain.",
        lifespan=lifespan,
        # FastAPI's /docs and /redoc load their scripts from a CDN, which then ran with this
        # origin's authority (the page's key in its storage, every write on a keyless
        # server). The schema stays at /openapi.json.
        docs_url=None,
        redoc_url=None,
    )
    # A trailing slash is a 404, not a redirect built from the client's Host header.
    app.router.redirect_slashes = False
    app.include_router(routes.router)
    _add_service_routes(app)
    _add_error_handlers(app)
    if endpoint is not None:
        app.router.routes.append(
            Route("/mcp", endpoint=endpoint, methods=["POST"])  # stateless: nothing else
        )
    app.mount("/static", StaticFiles(directory=str(WEB)), name="static")
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    if not keys:  # no authentication: loopback only (``run.check_binding``), by name too
        app.add_middleware(LoopbackOnly)
    return app


def _size(memory: Memory) -> int:
    return memory.stats().size_bytes


def _add_service_routes(app: FastAPI) -> None:
    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(str(WEB / "index.html"))

    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    def readyz(request: Request) -> JSONResponse:
        if getattr(request.app.state, "served", None) is None:
            return JSONResponse(error_body("not_ready", "starting up"), status_code=503)
        return JSONResponse({"status": "ready"})

    # HEAD too: health probes that send it got a 405. A route per method, each with an id of
    # its own: one route for both gave the schema the same operation id twice.
    for path, probe, summary in (
        ("/healthz", healthz, "The process is up"),
        ("/readyz", readyz, "The store is open and the model loaded"),
    ):
        for method in ("GET", "HEAD"):
            name = f"{probe.__name__}_{method.lower()}"
            app.add_api_route(
                path, probe, methods=[method], summary=summary, operation_id=name, name=name
            )

    @app.get("/metrics", summary="Prometheus exposition")
    def metrics(request: Request) -> Response:
        served: Served = routes.state_of(request)
        access = served.settings.metrics
        if access is MetricsAccess.OFF or (access is MetricsAccess.AUTO and served.keys):
            # The whole server's counts: every tenant's traffic, not any one tenant's to read.
            message = (
                "metrics are off (serve.metrics); on a server with keys they are the whole "
                'server\'s, served by serve.metrics = "open" where tenants cannot reach them'
            )
            return JSONResponse(error_body("not_found", message), status_code=404)
        return Response(served.telemetry.exposition(), media_type=CONTENT_TYPE)


def _add_error_handlers(app: FastAPI) -> None:
    def reply(
        request: Request,
        status: int,
        code: str,
        message: str,
        headers: Mapping[str, str] | None = None,
    ) -> JSONResponse:
        served = getattr(request.app.state, "served", None)
        if served is not None:
            served.telemetry.errors.labels(code).inc()
        return JSONResponse(error_body(code, message), status_code=status, headers=headers)

    @app.exception_handler(FivefoldError)
    async def fivefold_error(request: Request, exc: FivefoldError) -> JSONResponse:
        status, code = status_of(exc)
        served = getattr(request.app.state, "served", None)
        return reply(request, status, code, tenant_message(exc, keyed=bool(served and served.keys)))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            return reply(request, 400, "bad_request", "the body is not valid JSON")
        # A body sent without its JSON media type is not parsed (FastAPI reads it strictly):
        # its errors ("Input should be a valid dictionary") would blame the fields.
        media = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        about_body = any(e.get("loc", ("",))[0] == "body" for e in errors)
        if about_body and media != "application/json" and not media.endswith("+json"):
            message = "the body must be JSON, sent with Content-Type: application/json"
            return reply(request, 400, "bad_request", message)
        return reply(request, 422, "invalid_input", _describe(errors))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "bad_request")
        return reply(request, exc.status_code, code, str(exc.detail), exc.headers)  # 405: Allow

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error in %s %s", request.method, request.url.path)
        return reply(request, 500, "internal", "internal error; the server log has the details")


def _describe(errors: list[Any]) -> str:
    """One line per problem: where it is (``body.k``) and what is wrong."""
    parts = []
    for error in errors[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()))
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)


# On every answer: nothing of this server inside another site's frame (the page's Forget is
# one click, and the page is also /static/index.html), scripts and styles from this origin only
# (the page loads nothing else and runs no inline script), no type sniffing, no referrer.
SECURITY_HEADERS = (
    (
        b"content-security-policy",
        b"default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


class _Hardened(FastAPI):
    """FastAPI with ``Hardened`` around its whole stack: outside Starlette's server-error
    middleware too, which user middleware sits inside (a 500 went out without the headers)."""

    def build_middleware_stack(self) -> ASGIApp:
        return Hardened(super().build_middleware_stack())


class Hardened:
    """Adds ``SECURITY_HEADERS`` to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", ()), *SECURITY_HEADERS]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, sending)


class BodyLimit:
    """Refuses bodies over ``limit`` bytes with 413 before the app reads them, whether the
    client announces the length or streams it, and times every request for ``/metrics``."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        headers = dict(scope.get("headers", ()))
        declared = headers.get(b"content-length")
        # A chunked body is framed by its chunks whatever length is declared beside it (h11
        # reads it so): its bytes are counted, not the header (else a batch of megabytes gets
        # through under ``Content-Length: 10``).
        if declared is not None and b"transfer-encoding" not in headers:
            # The server checks the body against its declared length; only the length is ours.
            ok = declared.isdigit() and int(declared) <= self.limit
        else:
            receive, ok = await self._buffered(receive)
        status = 413
        if not ok:
            await _too_large(self.limit)(scope, receive, send)
        else:

            async def sent(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                await send(message)

            await self.app(scope, receive, sent)
        _observe(scope, status, time.perf_counter() - started)

    async def _buffered(self, receive: Receive) -> tuple[Receive, bool]:
        """A streamed (chunked) body, read up to the limit and replayed to the app."""
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > self.limit:
                return receive, False
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return replay, True


def _too_large(limit: int) -> JSONResponse:
    message = f"the body is over this server's limit of {limit} bytes (serve.max_body_bytes)"
    return JSONResponse(error_body("too_large", message), status_code=413)


def _observe(scope: Scope, status: int, seconds: float) -> None:
    served = getattr(scope["app"].state, "served", None) if "app" in scope else None
    if served is None:
        return
    endpoint = getattr(scope.get("route"), "path", "unmatched")
    served.telemetry.requests.labels(endpoint, str(status)).observe(seconds)
