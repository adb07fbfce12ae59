"""The embedded store's file: made whole or not at all, checked before SQLite opens it,
connected (read-only where it cannot be written), and SQLite's errors said in the store's
words. ``store.SQLiteStore`` and the indexer's child process open stores through here."""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import sqlite3
import uuid
from pathlib import Path

from fivefold.errors import NotAFivefoldStore, StoreError
from fivefold.store.sqlite import schema
from fivefold.store.sqlite.checkpoint import Checkpointer

SQLITE_MAGIC = b"SQLite format 3\x00"
SMOOTHING_KEY = "context_smoothing"  # meta: the context smoothing the rows were made with


def connect(path: str) -> tuple[sqlite3.Connection, bool]:
    """The connection, and whether it is read-only (a store SQLite cannot write opens for
    reading: ``mode=ro`` when only the file is read-only, ``immutable`` when its folder is too,
    as on read-only media, where SQLite could not create the WAL's shared-memory file)."""
    target, read_only, uri = path, False, False
    if path != ":memory:":
        file = Path(path)
        check_file(file)
        # Absolute: a name that starts with "file:" is a file's name here, where an SQLite built
        # to read URIs would open another file (a store was made at the name, then not opened).
        target = str(file.absolute())
        if file.exists() and not os.access(file, os.W_OK):
            read_only, uri = True, True
            folder_writable = os.access(file.parent, os.W_OK)
            target = f"{file.absolute().as_uri()}?{'mode=ro' if folder_writable else 'immutable=1'}"
    try:
        conn = sqlite3.connect(
            target, isolation_level=None, check_same_thread=False, timeout=30.0, uri=uri
        )
    except sqlite3.Error as exc:
        raise translate(exc, path, opened=False) from exc
    try:
        # SQLite reads the file's header here: whether it is an SQLite file at all is asked of
        # SQLite, never of a handle of our own. POSIX drops every lock a process holds on a
        # file when any handle of it on that file closes, so reading the header with Python
        # while another connection of this process had the store open took away that
        # connection's lock: a second process closing the store then believed itself the last
        # and deleted the write-ahead log under it (acknowledged writes lost).
        conn.execute("PRAGMA schema_version").fetchone()
        conn.execute("PRAGMA foreign_keys = ON")
        _ensure_math(conn)
    except UnicodeDecodeError as exc:
        conn.close()
        raise translate(exc, path, opened=False) from exc
    except sqlite3.Error as exc:
        conn.close()
        if "file is not a database" in str(exc) and not _sqlite_magic(Path(path)):
            # Not an SQLite file, so no connection of this process holds a lock on it.
            raise NotAFivefoldStore(f"{path} is not a fivefold store (not an SQLite file)") from exc
        raise translate(exc, path, opened=False) from exc
    return conn, read_only


def _sqlite_magic(file: Path) -> bool:
    try:
        with file.open("rb") as handle:
            return handle.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def checkpointer(conn: sqlite3.Connection, path: str) -> Checkpointer | None:
    """WAL checkpoints off the write path (``checkpoint.py``), and a page cache of 64 MiB
    (SQLite's default, 2 MiB, holds a few hundred of the pages a batch of memories and its
    indexes touch, so a bulk ingest evicts pages it needs again)."""
    conn.execute("PRAGMA cache_size = -65536")
    try:
        checkpoints = Checkpointer(str(Path(path).absolute()))  # as ``connect``: never a URI
    except sqlite3.Error:
        return None  # SQLite's automatic checkpoint stays on
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    return checkpoints


def ddl() -> list[str]:
    tables = [statement for statement in schema.DDL.split(";") if statement.strip()]
    return [
        *tables,
        *schema.MODEL_USERS_DDL,
        *schema.CATALOG_TRIGGERS,
        *schema.VECTOR_LOG_DDL,
        *schema.LEXICAL_LOG_DDL,
    ]


def meta(embedding_model: str, dim: int, smoothing: str) -> list[tuple[str, str]]:
    return [
        ("schema_version", str(schema.SCHEMA_VERSION)),
        ("embedding_model", embedding_model),
        ("embedding_dim", str(dim)),
        ("store_id", uuid.uuid4().hex),
        (SMOOTHING_KEY, smoothing),
    ]


def create_file(file: Path, meta: list[tuple[str, str]]) -> bool:
    """A new store appears whole: built in a temporary file beside it, then linked into place
    (``os.link`` fails if the name exists). So no process ever sees a half-made store, two
    processes creating one at once both end up opening the one that won, and an empty file
    at the path can only be damage (which ``_check_file`` refuses). Returns whether this call
    made it (False: another process's came first, and is the one opened)."""
    check_file(file)  # the folder exists (or is made) and the path is not a directory
    temp = file.with_name(f".{file.name}.{uuid.uuid4().hex}.new")
    try:
        conn = sqlite3.connect(temp, isolation_level=None)
        try:
            # Born in WAL mode (the header keeps it): concurrent openers of a new store would
            # otherwise each try to switch it, and the switch needs the file to themselves.
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("BEGIN")
            for statement in ddl():
                conn.execute(statement)
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta)
            conn.execute("COMMIT")
        finally:
            conn.close()
        shutil.rmtree(f"{file}.vindex", ignore_errors=True)
        _refuse_stale_wal(file)
        _link(temp, file)
        return True
    except FileExistsError:
        return False  # another process created it first: open theirs
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"cannot create a store at {file}: {exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)


def _refuse_stale_wal(file: Path) -> None:
    """A write-ahead log beside a path that holds no store is a deleted store's (``rm
    memory.db`` leaves it while the store is open): SQLite would replay it into the new store,
    which came back with the deleted one's rows or a damaged index. Refused, not deleted: the
    rows in it may be the ones the user wants back."""
    wal = Path(f"{file}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        if file.exists():  # another process made the store (and its log) meanwhile
            raise FileExistsError(file)
        raise StoreError(
            f"cannot create a store at {file}: {wal.name} beside it is the log of a store "
            f"deleted there (SQLite would replay it into a new one): put the store file back, "
            f"or remove {wal.name} and {file.name}-shm"
        )


def _link(temp: Path, file: Path) -> None:
    try:
        os.link(temp, file)
    except FileExistsError:
        raise
    except OSError:
        # No hard links on this file system: a rename, after a check (a narrow race instead
        # of none, only where links are missing).
        if file.exists():
            raise FileExistsError(file) from None
        os.rename(temp, file)


# What a store's files add to its name: the folders beside it (``.lexical``, ``.vindex``) and the
# file a new store is built in (``.{name}.{uuid hex}.new``), the longest.
_LONGEST_SIDE_NAME = len("..") + 32 + len(".new")


def check_file(file: Path) -> None:
    try:
        _check_file(file)
        limit = os.pathconf(file.parent, "PC_NAME_MAX")
    except OSError as exc:  # a name past the system's length limit, a file it will not read
        raise StoreError(f"cannot use {file}: {exc.strerror or exc}") from exc
    if len(os.fsencode(file.name)) + _LONGEST_SIDE_NAME > limit:
        raise StoreError(
            f"cannot use {file}: a store keeps files beside it whose names are up to "
            f"{_LONGEST_SIDE_NAME} bytes longer, past this file system's {limit}: use a "
            "shorter name"
        )


def _check_file(file: Path) -> None:
    if file.is_dir():
        raise NotAFivefoldStore(f"{file} is a directory; give the path of a store file")
    if file.exists() and not file.is_file():  # a FIFO, a device: nothing a store can live in
        raise NotAFivefoldStore(f"{file} is not a regular file; give the path of a store file")
    # A file with bytes in it: SQLite reads its header (``connect``: never a handle of ours).
    if file.exists() and file.stat().st_size == 0:
        wal = file.with_name(file.name + "-wal")
        if not wal.exists() or wal.stat().st_size == 0:
            # SQLite would start a new database in it: a truncated store would look empty.
            raise NotAFivefoldStore(
                f"{file} is an empty file (0 bytes): not a store, or a store that was "
                "truncated; delete it to create a new store there"
            )
    elif not file.exists() and not file.parent.exists():
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the folder of {file}: {exc.strerror}") from exc


def _ensure_math(conn: sqlite3.Connection) -> None:
    """The graph scores in SQL with ``ln`` and ``exp``, which SQLite has only when it was built
    with its math functions (most builds since 3.35); elsewhere Python provides them."""
    try:
        conn.execute("SELECT ln(2.0), exp(1.0)").fetchone()
    except sqlite3.OperationalError:
        register_math(conn)


def register_math(conn: sqlite3.Connection) -> None:
    conn.create_function("ln", 1, _ln, deterministic=True)
    conn.create_function("exp", 1, math.exp, deterministic=True)


def _ln(value: float) -> float | None:
    # SQLite's own ln() returns NULL outside its domain; so does this one.
    return math.log(value) if value > 0.0 else None


def identity(path: str) -> tuple[int, int] | None:
    """The file at ``path`` as (device, inode); None for an in-memory store or no file."""
    if path == ":memory:":
        return None
    try:
        found = os.stat(path)
    except OSError:
        return (-1, -1)  # gone: unlike the file opened
    return (found.st_dev, found.st_ino)


class Damaged(NotAFivefoldStore):
    """SQLite found the file damaged (or not a database): what `fivefold doctor` checks the
    pages of when the store cannot open."""


def translate(
    exc: sqlite3.Error | UnicodeDecodeError, path: str, *, opened: bool = True
) -> StoreError:
    """``exc`` as the store's error; ``opened``: the store had opened (one that did not is
    checked by `fivefold doctor` without opening it: its pages only). A ``UnicodeDecodeError``
    is SQLite's message quoting schema text that is not UTF-8: the schema is damaged."""
    if isinstance(exc, UnicodeDecodeError):
        quoted = bytes(exc.object).decode("utf-8", "replace")
        message, damaged = f"schema text is not UTF-8: {quoted}", True
    else:
        message = str(exc)
        damaged = "file is not a database" in message or "malformed" in message
    if damaged:
        checks = "`fivefold doctor` checks it" if opened else "`fivefold doctor` checks its pages"
        return Damaged(
            f"{path} is damaged or not a fivefold store ({message}); {checks}, and a backup or a "
            "re-import restores it"
        )
    if "locked" in message or "busy" in message:
        return StoreError(f"{path} is locked by another writer; retry later ({message})")
    if "readonly" in message:
        return StoreError(f"{path} is read-only; open a writable copy ({message})")
    return StoreError(f"{path}: {message}")


__all__ = [
    "SMOOTHING_KEY",
    "SQLITE_MAGIC",
    "Damaged",
    "checkpointer",
    "connect",
    "create_file",
    "ddl",
    "identity",
    "meta",
    "register_math",
    "translate",
]
