"""A real JSON-over-HTTP server on a loopback port, in a thread of the test process, for the
fakes of model endpoints (embeddings, rerank): one POST path, each request's Authorization
header recorded, its body answered by the fake."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Answer = Callable[[dict[str, object]], tuple[int, bytes]]


@contextmanager
def json_server(
    path: str, answer: Answer, authorization: list[str | None], lock: threading.Lock
) -> Iterator[str]:
    """Serve ``POST {path}`` by ``answer`` (status, body); yields the base URL (``/v1``). A 503
    says Retry-After 0, so retries in tests do not wait."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            payload = json.loads(self.rfile.read(length))
            with lock:
                authorization.append(self.headers.get("authorization"))
            status, body = answer(payload) if self.path == path else (404, b"{}")
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                if status == 503:
                    self.send_header("retry-after", "0")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a timeout test)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    # A short poll: shutdown() waits up to one poll interval.
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
