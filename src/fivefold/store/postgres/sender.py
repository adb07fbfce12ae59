"""A write's statements sent in order from a thread of their own, so that the server works on
one while the writer's thread prepares the next (counts tokens, formats postings): a bulk
write's client half and server half then overlap on two cores instead of taking turns. The
sending thread waits on the socket without the GIL.

Only the statements are sent from the thread; everything they need is computed before they
are queued, and nothing the writer's thread does meanwhile touches the connection (it could:
psycopg serialises its use, the writer would just wait)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

import psycopg


class Sender:
    """Statements queued with ``send`` run one after the other on one thread, in order;
    leaving the ``with`` block waits for all of them and raises the first one's error (after
    a failed statement the transaction is aborted, and the ones after it fail for that). When
    the block itself raises, the queued statements are still waited for (the connection is
    not handed back mid-statement) and the block's error is the one raised."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fivefold-send")
        self._sent: list[Future[None]] = []

    def send(self, statement: Callable[[psycopg.Connection], None]) -> None:
        self._sent.append(self._thread.submit(statement, self._conn))

    def __enter__(self) -> Sender:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._thread.shutdown(wait=True)
        if error is not None:
            return
        for sent in self._sent:
            sent.result()  # the first failure, as it was raised
