"""Argument checks at the public boundary: every bad input becomes an ``InvalidInput`` that says
what was wrong and what is accepted, before anything touches the store."""

from __future__ import annotations

import json
import math
import numbers
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from fivefold.errors import InvalidInput
from fivefold.text import normalize_name
from fivefold.types import Budget, EdgeKind, MemoryType, Scope

MAX_CONTENT_CHARS = 100_000
MAX_K = 1_000
MAX_SCOPE_CHARS = 256
# Names (scopes, sessions, entities, relations, speakers) are keys: Postgres indexes up to four
# of them in one B-tree row, which holds 2,704 bytes at most, so a name is bounded in bytes too
# (256 characters of CJK are 768 bytes in UTF-8; 512 bytes are 170 of them, or 128 emoji).
MAX_NAME_BYTES = 512
# An entity's normalized key, indexed in its place, may be longer: NFKD spells ligatures out
# (U+FDFA: 3 bytes, 33 normalized) and Hangul syllables in letters (3 bytes, 9). 1,536 bytes
# beside a 512-byte namespace stay within the 2,704 of a Postgres index row.
MAX_KEY_BYTES = 1_536
MIN_YEAR, MAX_YEAR = 1, 9998
# Metadata is stored as JSON with the memory: bounded so one write stays small and every
# reader (and json itself, which recurses) can handle it.
MAX_METADATA_DEPTH = 32
MAX_METADATA_BYTES = 65_536

E = TypeVar("E", bound=StrEnum)


def text(value: object, name: str, *, max_chars: int = MAX_CONTENT_CHARS) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInput(f"{name} is empty; give some text")
    if not any(_visible(c) for c in value):
        raise InvalidInput(
            f"{name} holds only invisible characters (zero-width spaces, format or control "
            "characters); give some text"
        )
    if len(value) > max_chars:
        raise InvalidInput(f"{name} is {len(value):,} characters; the limit is {max_chars:,}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{name} contains a lone surrogate at position {exc.start}; pass valid Unicode text"
        ) from None
    return value


def _visible(char: str) -> bool:
    """Not white space, not a format or control character (a zero-width space, a byte order
    mark, a direction mark), not a blank filler or a variation selector: nothing to read,
    nothing any leg could match."""
    return (
        not char.isspace()
        and unicodedata.category(char) not in ("Cf", "Cc")
        and char not in BLANK
        and not ("\ufe00" <= char <= "\ufe0f")
    )


# Letters and symbols drawn as nothing (Hangul fillers, the blank Braille pattern).
BLANK = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def optional_text(value: object, name: str, *, max_chars: int) -> str | None:
    return None if value is None else text(value, name, max_chars=max_chars)


def stored_text(value: object, name: str, *, max_chars: int = MAX_CONTENT_CHARS) -> str:
    """Text a memory stores: ``text``, and no NUL character, refused on every backend alike
    (Postgres text cannot hold one; a NUL is a C string's end or binary debris, never words
    a user meant to keep, and dropping it silently would store other text than was given)."""
    out = text(value, name, max_chars=max_chars)
    position = out.find("\x00")
    if position >= 0:
        raise InvalidInput(
            f"{name} contains a NUL character (at position {position}); remove it: stored text "
            "cannot hold one"
        )
    return out


def optional_stored_text(value: object, name: str, *, max_chars: int) -> str | None:
    return None if value is None else stored_text(value, name, max_chars=max_chars)


def read_name(value: object, name: str) -> str:
    """A name a read looks for: up to ``MAX_SCOPE_CHARS`` characters whatever their bytes (a
    store written before names were bounded in bytes stays readable and forgettable), and no
    NUL character (SQLite names each namespace's BM25 index after it; Postgres text cannot
    hold one)."""
    out = text(value, name, max_chars=MAX_SCOPE_CHARS)
    if "\x00" in out:
        raise InvalidInput(f"{name} contains a NUL character; names cannot")
    return out


def optional_read_name(value: object, name: str) -> str | None:
    return None if value is None else read_name(value, name)


def name_text(value: object, name: str) -> str:
    """A name written: a read's, and at most ``MAX_NAME_BYTES`` bytes."""
    out = read_name(value, name)
    size = len(out.encode("utf-8"))
    if size > MAX_NAME_BYTES:
        raise InvalidInput(
            f"{name} is {size:,} bytes in UTF-8; the limit is {MAX_NAME_BYTES:,} "
            f"(and {MAX_SCOPE_CHARS:,} characters)"
        )
    return out


def optional_name(value: object, name: str) -> str | None:
    return None if value is None else name_text(value, name)


def entity_name(value: object, name: str) -> str:
    """An entity's name: a name written whose normalized key (what the stores index) is at
    most ``MAX_KEY_BYTES``."""
    out = name_text(value, name)
    size = len(normalize_name(out).encode("utf-8"))
    if size > MAX_KEY_BYTES:
        raise InvalidInput(
            f"{name} is {size:,} bytes in UTF-8 once normalized; the limit is {MAX_KEY_BYTES:,}"
        )
    return out


def scope(namespace: object, user_id: object, agent_id: object, *, written: bool = False) -> Scope:
    """The scope of a read, or with ``written`` of a write (its names bounded in bytes too)."""
    name, optional = (name_text, optional_name) if written else (read_name, optional_read_name)
    return Scope(
        namespace=name(namespace, "namespace"),
        user_id=optional(user_id, "user_id"),
        agent_id=optional(agent_id, "agent_id"),
    )


def when(value: object, name: str) -> datetime | None:
    """A datetime or an ISO 8601 string; naive values are taken as UTC."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidInput(
                f"{name}={value!r} is not an ISO 8601 date or datetime (e.g. 2026-03-20 or "
                "2026-03-20T17:00:00+00:00)"
            ) from exc
    if not isinstance(value, datetime):
        raise InvalidInput(
            f"{name} must be a datetime or an ISO string, got {type(value).__name__}"
        )
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    # Checked in UTC, where it is stored: 0001-01-01T00:00+14:00 is in year 0 there, which no
    # datetime can hold, and the end of the calendar leaves no room for "next week".
    try:
        year = aware.astimezone(UTC).year
    except (OverflowError, ValueError):
        year = 0
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise InvalidInput(
            f"{name}={value.isoformat()} is outside the supported dates: years {MIN_YEAR} to "
            f"{MAX_YEAR} in UTC"
        )
    return aware


def enum(value: object, kind: type[E], name: str) -> E:
    if isinstance(value, kind):
        return value
    try:
        return kind(str(value).strip().lower())
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in kind)
        raise InvalidInput(f"{name}={value!r} is not one of {allowed}") from None


def memory_type(value: object) -> MemoryType | None:
    return None if value is None else enum(value, MemoryType, "type")


def memory_types(value: object) -> tuple[MemoryType, ...]:
    if value is None:
        return ()
    items: Iterable[object] = [value] if isinstance(value, str | MemoryType) else value  # type: ignore[assignment]
    try:
        return tuple(dict.fromkeys(enum(v, MemoryType, "types") for v in items))
    except TypeError:
        raise InvalidInput("types must be a memory type or a list of them") from None


def budget(value: object) -> Budget:
    return enum(value, Budget, "budget")


def edge_kind(value: object) -> EdgeKind:
    return enum(value, EdgeKind, "kind")


# Numbers by their ABCs: numpy's scalars (``np.int64(3)``, ``np.float32(0.5)``), common in the
# callers' own arrays, were refused; bool (and numpy's) is no number here.
def unit_interval(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInput(f"{name} must be a number in [0, 1], got {_shown(value)}")
    try:
        number = float(value)
    except OverflowError:  # an integer past a float's range
        raise InvalidInput(f"{name} must be in [0, 1], got an integer past 1e308") from None
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise InvalidInput(f"{name} must be in [0, 1], got {_shown(value)}")
    return number + 0.0  # -0.0 -> 0.0: SQLite stores it as 0, a write must return what it reads


def _shown(value: object) -> str:
    """A value as an error message shows it: its repr, cut short."""
    try:
        shown = repr(value)
    except ValueError:  # an integer of more digits than Python will print
        return "an integer too long to print"
    return shown if len(shown) <= 80 else shown[:77] + "..."


def top_k(value: object, name: str = "k") -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInput(f"{name} must be an integer from 1 to {MAX_K}, got {value!r}")
    if not 1 <= int(value) <= MAX_K:
        raise InvalidInput(f"{name} must be an integer from 1 to {MAX_K}, got {value!r}")
    return int(value)


def names(value: object, name: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInput(f"{name} must be a list of names, got {type(value).__name__}")
    out = tuple(entity_name(v, f"{name}[{i}]") for i, v in enumerate(value))
    for i, item in enumerate(out):
        if not normalize_name(item):
            raise InvalidInput(f"{name}[{i}]={item!r} has no letters or digits")
    return out


def json_number(value: object) -> int | float:
    """``json.dumps``' ``default``: a number JSON has no type for (numpy's scalars) as the
    number it is; anything else is not JSON (bool, numpy's too, is no number here)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def json_line(raw: bytes, number: int) -> dict[str, Any]:
    """Line ``number`` of a JSONL file as the JSON object it must be. The first line may open
    with the byte order mark some Windows editors write: not content."""
    try:
        value = json.loads(raw.decode("utf-8-sig" if number == 1 else "utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise InvalidInput(f"not a JSON line ({exc})") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"a JSON object is expected, got {type(value).__name__}")
    return value


def metadata(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(f"metadata must be a dict, got {type(value).__name__}")
    keys = _check_depth(value)
    try:
        encoded = json.dumps(dict(value), allow_nan=False, default=json_number)
        # A lone surrogate passes the ASCII-escaped JSON above, then fails every response
        # that has to encode the memory as UTF-8 (its reads, its recalls).
        json.dumps(dict(value), ensure_ascii=False, default=json_number).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(
            "metadata contains a lone surrogate (in a key or a value); pass valid Unicode text"
        ) from None
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"metadata must be JSON-serializable: {exc}") from exc
    if len(encoded) > MAX_METADATA_BYTES:
        raise InvalidInput(
            f"metadata is {len(encoded):,} bytes as JSON; the limit is {MAX_METADATA_BYTES:,}"
        )
    decoded: dict[str, Any] = json.loads(encoded)
    if _check_depth(decoded) != keys:  # {1: "a", "1": "b"}: one key once JSON, one value lost
        raise InvalidInput(
            'metadata has two keys that are the same as JSON text (say 1 and "1"); keep one'
        )
    return decoded


def _check_depth(value: object) -> int:
    """Refuse nesting deeper than MAX_METADATA_DEPTH without recursing (a 10,000-level list
    would overflow the stack of a recursive walk, and of json), and a NUL character in a key
    or a value. Returns how many keys the mappings hold between them."""
    keys = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_METADATA_DEPTH:
            raise InvalidInput(f"metadata is nested more than {MAX_METADATA_DEPTH} levels deep")
        if isinstance(node, str) and "\x00" in node:  # refused as in stored text
            raise InvalidInput("metadata contains a NUL character (in a value); remove it")
        if isinstance(node, Mapping):
            keys += len(node)
            if any(isinstance(key, str) and "\x00" in key for key in node):
                raise InvalidInput("metadata contains a NUL character (in a key); remove it")
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list | tuple):
            stack.extend((child, depth + 1) for child in node)
    return keys


def flag(value: object, name: str) -> bool:
    """True or False, nothing else ("no" would read as True)."""
    if not isinstance(value, bool):
        raise InvalidInput(f"{name} must be true or false, got {value!r}")
    return value


def memory_id(value: object, name: str | None = None) -> int:
    """``name``: the argument's, when it is not the id a call is about."""
    what = "a memory id" if name is None else f"{name} (a memory id)"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInput(f"{what} is an integer, got {value!r}")
    if not -(2**63) <= int(value) < 2**63:
        raise InvalidInput(f"{what} is a 64-bit integer, got {value}")
    return int(value)


MAX_FEEDBACK_IDS = 1_000


def id_list(value: object, name: str) -> list[int]:
    """A list (or tuple) of memory ids, at most ``MAX_FEEDBACK_IDS``."""
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise InvalidInput(f"{name} is a list of memory ids, got {type(value).__name__}")
    if len(value) > MAX_FEEDBACK_IDS:
        raise InvalidInput(f"{name} names {len(value)} memories; at most {MAX_FEEDBACK_IDS}")
    return [memory_id(v) for v in value]
