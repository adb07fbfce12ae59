"""How much embedding a server runs at once (``serve.max_inflight_tokens``): every batch a
local model runs for the worker's requests (a recall's query, a batch's memories, a chat's
turns) holds its word pieces (texts times padded length) of one shared budget while it runs.

A request larger than the budget is not refused: the model runs it in batches (of at most
4,096 word pieces; the packaged model, one text at a time), each waiting for its share, and a
batch larger than the whole budget runs alone. Concurrent bulk writes queue instead of each
holding a batch's buffers at once, and a recall's query (tens of word pieces) runs beside one
bulk batch when the budget is above it.
"""

from __future__ import annotations

import threading

__all__ = ["TokenBudget"]


class TokenBudget:
    """A counting semaphore of word pieces; ``peak`` is the most ever held at once."""

    def __init__(self, tokens: int) -> None:
        self.total = tokens
        self.held = 0
        self.peak = 0
        self._changed = threading.Condition()

    def acquire(self, tokens: int) -> None:
        """Wait until ``tokens`` (at most the whole budget) are free, then hold them."""
        tokens = min(tokens, self.total)
        with self._changed:
            self._changed.wait_for(lambda: self.held + tokens <= self.total)
            self.held += tokens
            self.peak = max(self.peak, self.held)

    def release(self, tokens: int) -> None:
        with self._changed:
            self.held -= min(tokens, self.total)
            self._changed.notify_all()
