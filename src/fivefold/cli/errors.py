"""Library errors at the command-line boundary: one line on stderr and an exit code (2 bad input,
3 not found, 4 store problem, 1 anything else of ours), never a traceback. The ``fivefold`` group
applies it to every command it runs, ``bench``'s included."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click

from fivefold import errors

_LINE_BREAK = re.compile(r"\s*[\r\n]\s*")

EXIT_CODES: tuple[tuple[type[errors.FivefoldError], int], ...] = (
    (errors.InvalidInput, 2),
    (errors.NotFound, 3),
    (errors.StoreError, 4),
    (errors.FivefoldError, 1),
)


@contextmanager
def friendly() -> Iterator[None]:
    try:
        yield
    except errors.FivefoldError as exc:
        # One line: a message's own line breaks joined (psycopg's end in a second, indented
        # one); other spaces kept, as in a path or a name the user typed.
        click.echo(f"error: {_LINE_BREAK.sub(' ', str(exc).strip())}", err=True)
        sys.exit(next(code for kind, code in EXIT_CODES if isinstance(exc, kind)))
