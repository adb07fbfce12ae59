"""Driver errors translated into ``StoreError`` in one place: every public method of a backend's
role objects raises fivefold's errors only. Each backend's core says what its driver's errors
become and whether a read that met a lost connection may be made again."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from fivefold.errors import FivefoldError


class Translator(Protocol):
    def translate(self, exc: BaseException) -> FivefoldError | None:
        """What a driver's (or a stored value's) error means for the store; None: not one."""
        ...

    def read_again(self, exc: BaseException) -> bool:
        """Whether a read that raised ``exc`` may be made again (the connection it met was
        lost and has been replaced); a write never is: it may have committed."""
        ...


EVERY = ("*",)  # as ``reads``: every method of the class is a read

CoreT = TypeVar("CoreT", bound=Translator)


class Role(Generic[CoreT]):
    """A backend's role object (its reads, writes, admin, ...) over the core it was given.
    Every public method a subclass defines raises fivefold's errors only; the ones named in the
    class keyword ``reads`` (``EVERY``: all of them) are reads: a call the core says may be made
    again is, once."""

    def __init__(self, core: CoreT) -> None:
        self._core = core

    def __init_subclass__(cls, *, reads: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, member in list(vars(cls).items()):
            if name.startswith("_") or not callable(member):
                continue
            setattr(cls, name, _translated(member, reads == EVERY or name in reads))


def _translated(method: Callable[..., Any], read: bool) -> Callable[..., Any]:
    @functools.wraps(method)
    def translated(self: Role[Translator], *args: Any, **kwargs: Any) -> Any:
        try:
            try:
                return method(self, *args, **kwargs)
            except FivefoldError:
                raise
            except Exception as exc:
                if not (read and self._core.read_again(exc)):
                    raise
                return method(self, *args, **kwargs)
        except FivefoldError:
            raise
        except Exception as exc:
            error = self._core.translate(exc)
            if error is None:
                raise
            raise error from exc

    return translated
