"""Several processes writing and reading one store file at once, threads sharing one
``Memory``, and a full disk: no caller sees "database is locked" or loses an acknowledged write,
and a full disk is a clean ``StoreError``."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import fivefold
from fivefold import Memory, StoreError

WORKER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    import fivefold
    role, name, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    memory = fivefold.Memory.open(Path({db!r}), embedder=fivefold.HashingEmbedder(dim=16))
    acknowledged, errors, n = [], [], 0
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            if role == "writer":
                batch = [{{"content": f"{{name}} note {{n + i}}"}} for i in range(5)]
                acknowledged += [r.id for r in memory.remember_many(batch)]
                n += 5
            else:
                memory.recall(f"note {{n % 50}}", k=5)
                n += 1
        except Exception as exc:
            errors.append(f"{{type(exc).__name__}}: {{exc}}")
    memory.close()
    print(json.dumps({{"acknowledged": acknowledged, "errors": errors, "operations": n}}))
    """
)


@pytest.mark.slow
def test_three_writers_and_three_readers_on_one_file(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    Memory.open(db, embedder=fivefold.HashingEmbedder(dim=16)).close()
    script = WORKER.format(db=str(db))
    roles = [("writer", f"w{i}") for i in range(3)] + [("reader", f"r{i}") for i in range(3)]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, role, name, "6"], stdout=subprocess.PIPE, text=True
        )
        for role, name in roles
    ]
    reports = [json.loads(p.communicate(timeout=120)[0]) for p in processes]
    errors = [e for r in reports for e in r["errors"]]
    assert errors == []  # "database is locked" included: the busy timeout absorbs it
    acknowledged = [i for r in reports for i in r["acknowledged"]]
    assert len(acknowledged) >= 30
    assert sum(r["operations"] for r in reports[3:]) > 0
    with Memory.open(db, embedder=fivefold.HashingEmbedder(dim=16)) as memory:
        assert memory.stats().memories == len(acknowledged)
        for memory_id in acknowledged[:: max(1, len(acknowledged) // 50)]:
            memory.get(memory_id)


def _locks_on(path: Path) -> list[str]:
    """This process's POSIX locks on ``path`` (``/proc/locks`` names a file by its inode)."""
    stat = path.stat()
    inode = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    with open("/proc/locks") as locks:
        return [
            line
            for line in locks
            if line.split()[4] == str(os.getpid()) and line.split()[5] == inode
        ]


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads Linux's /proc/locks")
def test_an_open_store_keeps_its_lock_on_its_file(tmp_path: Path) -> None:
    """A handle of our own on the store file, once closed, drops every POSIX lock the process
    holds on it (the header was read so, after the store's first connection had opened)."""
    db = tmp_path / "m.db"
    plain = sqlite3.connect(tmp_path / "plain.db")
    plain.execute("PRAGMA journal_mode = WAL")
    plain.execute("CREATE TABLE t (x)")
    assert _locks_on(tmp_path / "plain.db"), "SQLite holds a lock on an open WAL database"
    plain.close()
    with Memory.open(db, embedder=fivefold.HashingEmbedder(dim=16)) as memory:
        memory.remember("kept")
        assert _locks_on(db)
        with Memory.open(db, embedder=fivefold.HashingEmbedder(dim=16)) as again:
            again.recall("kept")
        assert _locks_on(db)  # the second store of the same file closed: the first keeps its


SHORT_WRITER = textwrap.dedent(
    """
    import fivefold
    with fivefold.Memory.open({db!r}, embedder=fivefold.HashingEmbedder(dim=16)) as memory:
        print(memory.remember("from the short-lived process").id)
    """
)


@pytest.mark.slow
def test_another_process_closing_the_store_leaves_the_log_of_an_open_one(tmp_path: Path) -> None:
    """A process that opens, writes and closes the store while this one has it open must not
    take itself for the last one open (it would checkpoint and delete the write-ahead log
    under this one, whose later writes then went into the deleted file: acknowledged, lost)."""
    db = tmp_path / "m.db"
    with Memory.open(db, embedder=fivefold.HashingEmbedder(dim=16)) as memory:
        memory.remember("first")
        other = subprocess.run(
            [sys.executable, "-c", SHORT_WRITER.format(db=str(db))],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        assert Path(f"{db}-wal").exists()
        later = memory.remember("written after the other process closed")
    with Memory.open(db, embedder=fivefold.HashingEmbedder(dim=16)) as reopened:
        assert reopened.get(later.id).content == "written after the other process closed"
        assert reopened.get(int(other.stdout)).content == "from the short-lived process"


@pytest.mark.slow
def test_threads_sharing_one_memory(tmp_path: Path) -> None:
    errors: list[str] = []
    written: list[int] = []
    with Memory.open(tmp_path / "threads.db", embedder=fivefold.HashingEmbedder(dim=16)) as memory:

        def work(n: int) -> None:
            try:
                for i in range(25):
                    written.append(memory.remember(f"thread {n} note {i}", user_id=f"u{n}").id)
                    memory.recall(f"thread {n} note", k=3, user_id=f"u{n}")
            except Exception as exc:  # collected: the assertion below reports it
                errors.append(repr(exc))

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert errors == []
        assert memory.stats().memories == len(written) == 200
        assert len(set(written)) == 200


@pytest.fixture
def small_disk(tmp_path: Path) -> Path:
    """A 3 MB tmpfs: a full disk, for real, where the machine lets us mount one."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({made.stderr.decode().strip()})")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.slow
def test_a_full_disk_is_a_store_error_and_loses_nothing_acknowledged(small_disk: Path) -> None:
    acknowledged: list[int] = []

    def fill(memory: Memory) -> None:
        for n in range(100_000):
            batch = [{"content": f"filler {n} {i} " + "word " * 60} for i in range(20)]
            acknowledged.extend(r.id for r in memory.remember_many(batch))

    with Memory.open(small_disk / "m.db", embedder=fivefold.HashingEmbedder(dim=16)) as memory:
        with pytest.raises(StoreError):
            fill(memory)
        assert acknowledged
        assert memory.stats().memories == len(acknowledged)
    with Memory.open(small_disk / "m.db", embedder=fivefold.HashingEmbedder(dim=16)) as memory:
        assert memory.stats().memories == len(acknowledged)
        assert memory.get(acknowledged[-1]).id == acknowledged[-1]
