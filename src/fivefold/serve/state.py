"""What the server holds while it runs: the engine, the keys, the limits and the metrics."""

from __future__ import annotations

from dataclasses import dataclass

from fivefold.config import ServeConfig
from fivefold.memory import Memory
from fivefold.serve.keys import KeyRing
from fivefold.serve.telemetry import Telemetry

__all__ = ["Served"]


@dataclass(slots=True)
class Served:
    memory: Memory
    keys: KeyRing
    settings: ServeConfig
    telemetry: Telemetry
