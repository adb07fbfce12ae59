"""WAL checkpoints off the write path (``store/sqlite/checkpoint.py``): the writer's automatic
checkpoint is off, a thread of the store's moves committed pages into the file, nothing is
lost when the process dies, and closing the store stops the thread."""

from __future__ import annotations

import gc
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import fivefold
from fivefold.store.sqlite import checkpoint

HASHING = fivefold.HashingEmbedder()


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "fivefold-checkpoint"]


def _turns(start: int, count: int) -> list[dict[str, object]]:
    return [
        {"content": f"Caroline: turn {i} about the pottery class", "session_id": f"s{i // 20}"}
        for i in range(start, start + count)
    ]


def _wait_for(condition: object, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


@pytest.mark.slow
def test_the_thread_moves_committed_pages_into_the_file_while_the_store_is_open(
    tmp_path: Path,
) -> None:
    """Only a checkpoint writes the database file in WAL mode, and the writer's own automatic
    checkpoint is off: the file grows only if the store's thread checkpoints."""
    path = tmp_path / "m.db"
    with fivefold.Memory.open(path, embedder=HASHING) as mem:
        conn = mem.store._core.conn  # type: ignore[attr-defined]
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        assert len(_checkpoint_threads()) == 1
        before = path.stat().st_size
        mem.remember_many(_turns(0, 1500))
        assert _wait_for(lambda: path.stat().st_size > before + 1_000_000)


def test_closing_the_store_stops_its_thread_and_leaves_no_wal(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with fivefold.Memory.open(path, embedder=HASHING) as mem:
        mem.remember_many(_turns(0, 200))
    assert _checkpoint_threads() == []
    assert not Path(f"{path}-wal").exists()  # the last connection checkpointed and removed it
    with fivefold.Memory.open(path, embedder=HASHING) as mem:
        assert mem.stats().memories == 200


def test_a_store_in_memory_has_no_thread() -> None:
    """No WAL, nothing to checkpoint (a store on read-only media has none either:
    ``test_faults.py``)."""
    with fivefold.Memory.open(":memory:", embedder=HASHING) as mem:
        mem.remember("Caroline: hello", session_id="s")
        assert _checkpoint_threads() == []


@pytest.mark.slow
def test_a_failed_checkpoint_is_tried_again_at_the_next_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint that fails (a full disk, say) leaves the pages in the WAL, where readers
    find them, and the thread goes on."""
    path = tmp_path / "m.db"
    calls: list[int] = []
    real = checkpoint._checkpoint

    def failing_once(conn: sqlite3.Connection) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise sqlite3.OperationalError("database or disk is full")
        real(conn)

    monkeypatch.setattr(checkpoint, "_checkpoint", failing_once)
    with fivefold.Memory.open(path, embedder=HASHING) as mem:
        mem.remember_many(_turns(0, 300))
        assert _wait_for(lambda: len(calls) >= 1)
        before = path.stat().st_size
        time.sleep(checkpoint.MIN_GAP_S)
        mem.remember_many(_turns(300, 1200))
        assert _wait_for(lambda: len(calls) >= 2 and path.stat().st_size > before)
        assert mem.stats().memories == 1500


@pytest.mark.slow
def test_a_store_never_closed_leaves_no_thread_once_collected(tmp_path: Path) -> None:
    mem = fivefold.Memory.open(tmp_path / "m.db", embedder=HASHING)
    mem.remember("Caroline: hello", session_id="s")
    assert len(_checkpoint_threads()) == 1
    del mem
    gc.collect()
    assert _wait_for(lambda: not _checkpoint_threads())


KILLED_WRITER = """
import sys
import fivefold
path = sys.argv[1]
with fivefold.Memory.open(path, embedder=fivefold.HashingEmbedder()) as mem:
    for batch in range(1000):
        items = [
            {"content": f"Caroline: turn {batch}-{i} about pottery", "session_id": f"s{batch}"}
            for i in range(200)
        ]
        mem.remember_many(items)
        print(batch, flush=True)
"""


@pytest.mark.slow
def test_sigkill_while_the_thread_checkpoints_loses_no_acknowledged_batch(
    tmp_path: Path,
) -> None:
    """A writer killed mid-ingest, its checkpoint thread somewhere in a copy: every batch it
    acknowledged is in the store after reopening, and the file checks out."""
    path = tmp_path / "m.db"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    acknowledged = -1
    for line in proc.stdout:
        acknowledged = int(line)
        if acknowledged >= 15:
            break
    proc.kill()
    proc.wait()
    for line in proc.stdout:  # printed before the kill landed
        acknowledged = int(line)
    proc.stdout.close()
    with fivefold.Memory.open(path, embedder=HASHING) as mem:
        assert mem.stats().memories >= 200 * (acknowledged + 1)
        hits = mem.store.search.lexical_search(  # type: ignore[attr-defined]
            fivefold.Scope("default"), ["pottery"], 5000, weights=fivefold.Config().bm25_weights()
        )
        assert len(hits) >= 200 * (acknowledged + 1)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_a_commit_is_synced_before_the_write_returns_unless_durable_is_off(
    tmp_path: Path,
) -> None:
    """A power cut cannot be made here; what it depends on can be read. SQLite syncs the WAL at
    each commit only with ``synchronous = FULL`` (``NORMAL`` syncs it at checkpoints), and the
    store ran ``NORMAL``: a write that had returned could be lost to a power cut."""
    from fivefold.config.file import load_config

    off = tmp_path / "fivefold.toml"
    off.write_text("[write]\ndurable = false\n", encoding="utf-8")
    for config, synced in ((fivefold.Config(), 2), (load_config(off), 1)):
        assert config.write.durable is (synced == 2)
        with fivefold.Memory.open(
            tmp_path / f"{synced}.db", embedder=HASHING, config=config
        ) as mem:
            mem.remember("a note")
            conn = mem.store._core.conn  # type: ignore[attr-defined]
            assert conn.execute("PRAGMA synchronous").fetchone()[0] == synced
