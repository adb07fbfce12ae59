"""Store faults: an empty file, damaged pages, read-only media and two processes creating one
store at once. Each gives a working store or a ``StoreError`` naming the file, never a raw
``sqlite3`` exception, and nothing acknowledged is lost."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.store.test_context import as_schema_5

import fivefold
from fivefold import FivefoldError, Memory, NotAFivefoldStore, StoreError


def _open(path: Path) -> Memory:
    return Memory.open(path, embedder=fivefold.HashingEmbedder(dim=16))


def _filled(path: Path, count: int = 300) -> list[int]:
    with _open(path) as memory:
        records = memory.remember_many(
            [
                {"content": f"Note {i}: the Kestrel review moved to week {i % 50}"}
                for i in range(count)
            ]
        )
    return [r.id for r in records]


def test_an_empty_file_is_refused_not_started_over(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    path.touch()
    with pytest.raises(NotAFivefoldStore, match="empty file"):
        _open(path)
    assert path.stat().st_size == 0


def _damage(source: Path, target: Path, rng: random.Random) -> None:
    data = bytearray(source.read_bytes())
    kind = rng.choice(["flip", "zero-page", "truncate"])
    if kind == "truncate":
        del data[rng.randrange(4096, len(data)) :]
    elif kind == "zero-page":
        page = rng.randrange(1, len(data) // 4096)
        data[page * 4096 : (page + 1) * 4096] = bytes(4096)
    else:
        for _ in range(rng.randrange(1, 40)):
            data[rng.randrange(100, len(data))] ^= 1 << rng.randrange(8)
    target.write_bytes(bytes(data))


def _exercise(path: Path) -> int:
    """Open and use a (possibly damaged) store; count the operations that were refused."""
    refused = 0
    try:
        memory = _open(path)
    except FivefoldError:
        return 1
    operations = [
        lambda: memory.recall("when is the Kestrel review?"),
        lambda: memory.explain("week 7"),
        lambda: memory.get(5),
        lambda: memory.browse(limit=20),
        lambda: memory.stats(),
        lambda: memory.remember("a write into a damaged store"),
        lambda: memory.forget(3),
    ]
    with memory:
        for operation in operations:
            try:
                operation()
            except FivefoldError:
                refused += 1
    return refused


@pytest.mark.slow
def test_damaged_copies_give_store_errors_never_sqlite_exceptions(tmp_path: Path) -> None:
    source = tmp_path / "good.db"
    _filled(source)
    rng = random.Random(12)
    refused = 0
    for n in range(40):  # any other exception escapes and fails the test
        copy = tmp_path / f"damaged-{n}.db"
        _damage(source, copy, rng)
        refused += _exercise(copy)
    assert refused > 0  # the damage was real enough to be noticed somewhere


def _creator(
    path: str, barrier: multiprocessing.synchronize.Barrier, out: multiprocessing.Queue[str]
) -> None:
    barrier.wait()
    try:
        with _open(Path(path)) as memory:
            memory.remember(f"written by creator {os.getpid()}")
            out.put(memory.store.admin.stats().location)
    except Exception as exc:  # reported to the parent, which fails the test
        out.put(f"error: {type(exc).__name__}: {exc}")


@pytest.mark.slow
def test_processes_creating_one_new_store_at_once_all_succeed(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(4)
    out: multiprocessing.Queue[str] = context.Queue()
    workers = [context.Process(target=_creator, args=(str(path), barrier, out)) for _ in range(4)]
    for worker in workers:
        worker.start()
    results = [out.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(60)
    assert not [r for r in results if r.startswith("error")], results
    with _open(path) as memory:
        assert memory.stats().memories == 4


@pytest.fixture(params=["current"])
def read_only_folder(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A read-only bind mount of a folder holding a store: read-only media, even for root
    (``old``: the store rewound to schema 5, which this version migrates on open)."""
    source, mount = tmp_path / "src", tmp_path / "ro"
    source.mkdir()
    mount.mkdir()
    ids = _filled(source / "memory.db")
    (source / "ids.txt").write_text(" ".join(map(str, ids)))
    if request.param == "old":
        conn = sqlite3.connect(source / "memory.db")
        as_schema_5(conn)
        conn.commit()
        conn.close()
    made = subprocess.run(["mount", "--bind", str(source), str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot bind-mount here ({made.stderr.decode().strip()})")
    try:
        done = subprocess.run(["mount", "-o", "remount,ro,bind", str(mount)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot remount read-only here ({done.stderr.decode().strip()})")
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_store_on_read_only_media_opens_for_recall(read_only_folder: Path) -> None:
    ids = [int(i) for i in (read_only_folder / "ids.txt").read_text().split()]
    with _open(read_only_folder / "memory.db") as memory:
        assert memory.store.read_only  # type: ignore[attr-defined]
        # Nothing to checkpoint: no WAL thread (store/sqlite/checkpoint.py) on read-only media.
        assert not [t for t in threading.enumerate() if t.name == "fivefold-checkpoint"]
        assert memory.stats().memories == len(ids)
        hits = memory.recall("Note 7: the Kestrel review moved to week 7").hits
        assert hits[0].memory.id == ids[7]
        with pytest.raises(StoreError, match="read-only"):
            memory.remember("cannot be written")
        with pytest.raises(StoreError, match="read-only"):
            memory.forget(ids[0])
        assert memory.stats().memories == len(ids)


@pytest.mark.parametrize("read_only_folder", ["old"], indirect=True)
def test_an_old_store_on_read_only_media_says_it_needs_a_writable_copy(
    read_only_folder: Path,
) -> None:
    """It said "recall works, writes need a writable copy", and recall failed too: the store
    must be migrated first."""
    with pytest.raises(StoreError, match=r"holds fivefold schema 5.*open a writable copy once"):
        _open(read_only_folder / "memory.db")


def test_a_copy_of_a_store_in_a_new_folder_is_unharmed_by_a_failed_open(tmp_path: Path) -> None:
    good = tmp_path / "good.db"
    ids = _filled(good, 50)
    copy = tmp_path / "copy" / "good.db"
    copy.parent.mkdir()
    shutil.copyfile(good, copy)
    with _open(copy) as memory:
        assert [m.id for m in memory.browse(limit=100)] == sorted(ids, reverse=True)


def _overwritten(source: Path, target: Path, page: int) -> None:
    """A copy of ``source`` with the cells at the end of ``page`` overwritten."""
    data = bytearray(source.read_bytes())
    data[page * 4096 - 768 : page * 4096] = bytes(range(256)) * 3
    target.write_bytes(bytes(data))


@pytest.mark.slow
def test_doctor_reports_damaged_pages_and_checks_no_index(tmp_path: Path) -> None:
    """The lexical check read the damaged rows and SQLite's error replaced every finding, and
    a store too damaged to open said "`fivefold doctor` checks it" to `doctor` itself."""
    import numpy as np
    from click.testing import CliRunner

    from fivefold.cli.main import cli

    path, small = tmp_path / "good.db", tmp_path / "small.db"
    vectors = np.random.default_rng(5).standard_normal((2_000, 384)).tolist()
    for file, count in ((path, 2_000), (small, 300)):  # small: the open reads its root page
        with Memory.open(file) as memory:  # the default model, as the CLI opens it
            memory.remember_many(
                [
                    {"content": f"Note {i} of the Kestrel review", "vector": vectors[i]}
                    for i in range(count)
                ]
            )
    with contextlib.closing(sqlite3.connect(small)) as conn:
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 4096
        root = int(
            conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'memories'").fetchone()[0]
        )
    with contextlib.closing(sqlite3.connect(path)) as conn:
        leaves = [
            int(r[0])
            for r in conn.execute(
                "SELECT pageno FROM dbstat WHERE name = 'memories' AND pagetype = 'leaf' "
                "ORDER BY pageno"
            )
        ]
    leaf, root_page, truncated = (tmp_path / f"{n}.db" for n in ("leaf", "root", "cut"))
    _overwritten(path, leaf, leaves[len(leaves) // 2])  # a row the open does not read
    _overwritten(small, root_page, root)  # the check itself stops at it
    truncated.write_bytes(small.read_bytes()[: 3 * 4096])  # the open stops at it
    for damaged in (leaf, root_page):
        with Memory.open(damaged) as memory:
            findings = memory.store.admin.check()
        assert [(f.part, f.ok) for f in findings] == [("database", False), ("indexes", False)]
        assert "not checked" in findings[1].detail
    with pytest.raises(NotAFivefoldStore, match="a backup or a re-import") as opening:
        Memory.open(truncated)
    assert "`fivefold doctor` checks its pages" in str(opening.value)  # not "checks it"
    for damaged in (leaf, root_page, truncated):
        result = CliRunner().invoke(cli, ["--db", str(damaged), "doctor"])
        assert result.exit_code == 4, result.output
        lines = result.output.splitlines()
        assert lines[0].startswith("problem: database: "), lines
        assert lines[1].startswith("problem: indexes: not checked"), lines
        assert "--repair" not in lines[-1]  # no repair mends rows


def test_a_store_file_deleted_or_replaced_while_open_takes_no_write(tmp_path: Path) -> None:
    """SQLite went on writing to the file it had opened: a server whose store file was deleted
    acknowledged writes that the next start (a new store at the path) did not have."""
    path = tmp_path / "memory.db"
    with _open(path) as memory:
        kept = memory.remember("Priya Patel wrote this before the file went").id
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        with pytest.raises(StoreError, match="deleted or replaced while this store was open"):
            memory.remember("would be lost")
        with pytest.raises(StoreError, match="deleted or replaced"):
            memory.remember_many([{"content": "would be lost too"}])
        assert memory.get(kept).content.startswith("Priya Patel wrote")  # reads go on
        walked = memory.recall("what did Priya Patel write last week?", budget="high")
        assert "graph" in {r.value for r in walked.plan.retrievers}  # on a connection its own
        assert [h.memory.id for h in walked.hits] == [kept]
        assert not path.exists()  # (a side connection made at the first walk made it anew)
    other = tmp_path / "other.db"
    _filled(other, 3)
    _filled(path, 2)
    with _open(path) as memory:
        shutil.copyfile(other, tmp_path / "restored.db")
        (tmp_path / "restored.db").replace(path)  # a backup put in its place
        with pytest.raises(StoreError, match="deleted or replaced"):
            memory.forget(1)
    with _open(path) as memory:
        assert memory.stats().memories == 3


def test_a_store_opened_by_a_relative_path_takes_writes_after_a_chdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deleted-file check stat'ed the path as given: after the process changed directory,
    every write was refused as "deleted or replaced"."""
    monkeypatch.chdir(tmp_path)
    with _open(Path("relative.db")) as memory:
        memory.remember("before the chdir")
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        monkeypatch.chdir(elsewhere)
        memory.remember("after the chdir")
        assert memory.stats().memories == 2
    assert not (elsewhere / "relative.db").exists()


@pytest.mark.slow
def test_doctor_does_not_wait_on_a_fifo(tmp_path: Path) -> None:
    """Its check of a store too damaged to open opened a FIFO to read it, and waited for a
    writer forever."""
    fifo = tmp_path / "pipe.db"
    os.mkfifo(fifo)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from fivefold.cli.main import main; main()",
            "--db",
            str(fifo),
            "doctor",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 4, done.stderr
    assert "not a regular file" in done.stderr


@pytest.mark.slow
def test_a_write_that_waited_for_the_lock_is_not_taken_into_a_deleted_file(
    tmp_path: Path,
) -> None:
    """The file was checked before the write waited for SQLite's lock: deleted meanwhile, the
    write was acknowledged into it and gone."""
    path = tmp_path / "memory.db"
    with _open(path) as memory:
        memory.remember("seed")
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process's write, holding the lock
        outcome: list[object] = []

        def write() -> None:
            try:
                outcome.append(memory.remember("waited for the lock").id)
            except StoreError as exc:
                outcome.append(exc)

        waiting = threading.Thread(target=write)
        waiting.start()
        time.sleep(0.5)  # past the check before the lock, waiting in BEGIN IMMEDIATE
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        holder.execute("ROLLBACK")
        holder.close()
        waiting.join(30)
    assert len(outcome) == 1, outcome
    assert isinstance(outcome[0], StoreError), outcome
    assert "deleted or replaced" in str(outcome[0])


def test_a_deleted_stores_log_is_not_replayed_into_a_new_store(tmp_path: Path) -> None:
    """``rm memory.db`` under an open store leaves its ``-wal``: the next store made at the
    path had it replayed into it (the deleted store's rows, or a damaged index: a hostile
    pass's find). Refused, with what to do; nothing removed."""
    path = tmp_path / "memory.db"
    memory = _open(path)
    memory.remember_many([{"content": f"note {i}"} for i in range(50)])
    path.unlink()
    wal = Path(f"{path}-wal")
    assert wal.stat().st_size > 0
    with pytest.raises(StoreError, match=r"memory\.db-wal beside it is the log of a store"):
        _open(path)
    assert wal.exists()
    assert not path.exists()
    memory.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with _open(path) as fresh:
        assert fresh.stats().memories == 0
        assert fresh.remember("the first").id == 1


def test_schema_text_that_is_not_utf8_is_a_store_error_in_open_doctor_and_stats(
    tmp_path: Path,
) -> None:
    """SQLite's message quoted the damaged schema text, and decoding it raised a bare
    ``UnicodeDecodeError`` out of every command."""
    from click.testing import CliRunner

    from fivefold.cli.main import cli

    path = tmp_path / "memory.db"
    _filled(path, count=20)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute(
            "UPDATE sqlite_master SET name = CAST(x'6d65ff' AS TEXT), "
            "sql = 'CREATE TABLE ' || CAST(x'fffe' AS TEXT) || ' (' WHERE name = 'meta'"
        )
        conn.commit()
    with pytest.raises(NotAFivefoldStore, match="not UTF-8") as opening:
        _open(path)
    assert "`fivefold doctor` checks its pages" in str(opening.value)
    doctor = CliRunner().invoke(cli, ["--db", str(path), "doctor"])
    assert doctor.exit_code == 4, doctor.output
    lines = doctor.output.splitlines()
    assert lines[0].startswith("problem: database: schema text is not UTF-8"), lines
    assert lines[1].startswith("problem: indexes: not checked"), lines
    stats = CliRunner().invoke(cli, ["--db", str(path), "stats"])
    assert stats.exit_code == 4, stats.output
    assert stats.output.startswith("error: ")
    assert "fivefold doctor" in stats.output
