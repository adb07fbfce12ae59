"""The JSON form of the value types, shared by the HTTP server and ``fivefold.Client``.

``to_json`` turns any frozen dataclass of ``model.py`` (or ``StoreStats``) into plain JSON values
and ``from_json`` rebuilds it from the field annotations, so a result that crossed the wire is
the same dataclass, field for field, that the embedded engine returns.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from datetime import datetime
from enum import Enum
from functools import cache
from types import MappingProxyType
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["from_json", "to_json"]


def to_json(value: Any) -> Any:
    """Plain JSON values: dataclasses become objects, enums their value, datetimes ISO 8601
    strings, tuples lists; a non-finite float becomes null (JSON has no NaN)."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k.value if isinstance(k, Enum) else k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def from_json(kind: type[T], data: Any) -> T:
    """Rebuild a ``kind`` dataclass from what ``to_json`` made of one."""
    return typing.cast(T, _decode(kind, data))


@cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


def _decode(hint: Any, data: Any) -> Any:
    origin = typing.get_origin(hint)
    if hint is Any or data is None:
        return data
    if origin is types.UnionType or origin is typing.Union:
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return _decode(options[0], data) if len(options) == 1 else data
    if isinstance(hint, type) and is_dataclass(hint):
        names = _hints(hint)
        given = {
            f.name: _decode(names[f.name], data[f.name]) for f in fields(hint) if f.name in data
        }
        return hint(**given)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return tuple(_decode(item, v) for v in data)
    if origin is Mapping or origin is dict:
        key, item = typing.get_args(hint)
        return MappingProxyType({_decode(key, k): _decode(item, v) for k, v in data.items()})
    if hint is datetime:
        return datetime.fromisoformat(data)
    if hint is float:
        return float(data)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint(data)
    return data
