"""The embedded store's tantivy lexical index (``store/sqlite/lexical.py``) stays in step with
the rows: writes are caught up from the log rather than rebuilt, another process's writes are
adopted, a folder that is not this store's, a pruned log or a damaged folder lead to a rebuild
from the rows, and a writer killed with SIGKILL in the middle of a 100k ingest loses no
acknowledged memory from it."""

from __future__ import annotations

import gc
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fivefold
from fivefold import Memory, Scope
from fivefold.read.retrieve.lexical import DEFAULT_WEIGHTS as W
from fivefold.read.retrieve.lexical import OWN_TEXT_WEIGHTS as OWN
from fivefold.store.sqlite import indexer as indexer_module
from fivefold.store.sqlite import indexer_child, lexical, lexical_documents, schema


def _open(path: Path) -> Memory:
    return Memory.open(path, embedder=fivefold.HashingEmbedder(dim=16))


def _items(start: int, count: int, **extra: Any) -> list[dict[str, Any]]:
    rng = np.random.default_rng(start)
    vectors = rng.standard_normal((count, 16)).tolist()
    return [
        {"content": f"note tok{n}x about the kestrel review", "vector": v, "type": "fact", **extra}
        for n, v in zip(range(start, start + count), vectors, strict=True)
    ]


def _found(memory: Memory, n: int, scope: Scope | None = None) -> list[int]:
    own = OWN  # a session neighbour would match through its context
    hits = memory.store.search.lexical_search(scope or Scope(), [f"tok{n}x"], 5, weights=own)
    return [i for i, _ in hits]


def _index(memory: Memory) -> lexical.LexicalIndexes:
    return memory.store._core.lexical  # type: ignore[attr-defined,no-any-return]


@pytest.mark.parametrize(
    ("content", "near", "far"),
    [
        ("Caroline: I went to the support group", "Melanie: How did it go?", ""),
        ("Yes! Last Friday.", "Melanie: when was it?\nCaroline: the group", "Running, runs"),
        ("alone, no neighbours", "", ""),
        ("", "only context here", "and further"),
    ],
)
def test_the_window_counts_the_same_on_both_backends(content: str, near: str, far: str) -> None:
    """tantivy reads the window as repeated tokens; the Postgres rows count it with
    ``Tokenizer.windows``: the same terms, frequencies and length (so the same BM25)."""
    from collections import Counter

    from fivefold.store.shared.tokens import Tokenizer

    tokenizer = Tokenizer()

    def tokens(text: str) -> str:
        return " ".join(t for t in tokenizer.join_each(text.split("\n")) if t)

    indexed = Counter(
        lexical_documents.window_tokens(tokens(content), tokens(near), tokens(far)).split()
    )
    (counted,) = tokenizer.windows([(content, near, far)])
    assert counted.first == indexed
    assert counted.first_length == sum(indexed.values())
    assert not counted.second
    own = Counter(tokens(content).split())
    assert all(indexed[t] >= 4 * n for t, n in own.items())  # own text counts 4x


def test_writes_are_caught_up_not_rebuilt(tmp_path: Path) -> None:
    with _open(tmp_path / "m.db") as memory:
        first = memory.remember_many(_items(0, 50, session_id="s"))
        assert _found(memory, 7) == [first[7].id]
        assert _index(memory).rebuilds == 1  # the namespace's first read builds it
        later = memory.remember_many(_items(50, 5, session_id="s"))
        memory.forget(first[3].id)
        assert _found(memory, 52) == [later[2].id]
        assert _found(memory, 3) == []
        assert _index(memory).rebuilds == 1
        assert _index(memory).catch_ups == 1  # the forget applied both changes at once


def test_compact_leaves_statistics_of_the_current_rows(tmp_path: Path) -> None:
    """A forgotten memory and the neighbours it re-contexted stay in tantivy's statistics until
    a merge; ``compact`` rebuilds the index so the scores are those of a store that never held
    them (and the forgotten text leaves the index files)."""
    items = _items(0, 30, session_id="s")
    with _open(tmp_path / "m.db") as memory:
        records = memory.remember_many(items)
        _found(memory, 0)  # the index is built, then the forget below deletes from it
        memory.forget(records[10].id)
        drifted = memory.store.search.lexical_search(Scope(), ["kestrel", "tok11x"], 5, weights=W)
        # The memory and the four neighbours whose context it was.
        assert _index(memory).current("default").stale == 5
        assert memory.store.admin.compact() == 1
        assert _index(memory).current("default").stale == 0
        assert memory.store.admin.compact() == 0
        compacted = memory.store.search.lexical_search(Scope(), ["kestrel", "tok11x"], 5, weights=W)
        assert any("deleted" in f.detail for f in memory.store.admin.check()) is False
    with _open(tmp_path / "fresh.db") as memory:
        kept = memory.remember_many([item for n, item in enumerate(items) if n != 10])
        fresh = memory.store.search.lexical_search(Scope(), ["kestrel", "tok11x"], 5, weights=W)
    ids = {r.id: n for n, r in enumerate(kept)}
    renumber = {
        r.id: ids[f.id]
        for r, f in zip([r for n, r in enumerate(records) if n != 10], kept, strict=True)
    }
    assert [(renumber[i], round(s, 9)) for i, s in compacted] == [
        (ids[i], round(s, 9)) for i, s in fresh
    ]
    assert [s for _, s in drifted] != [s for _, s in compacted]


def test_ties_at_the_cut_are_broken_by_id(tmp_path: Path) -> None:
    """Tantivy orders equal scores by where a document sits; a memory whose context was
    rewritten moves to a later segment, yet the k kept among equals are the lowest ids."""
    with _open(tmp_path / "m.db") as memory:
        same = [{"content": "kestrel budget", "session_id": "s"} for _ in range(6)]
        first = memory.remember_many(same[:3])
        _found(memory, 0)  # committed: the next write rewrites the last two's context
        memory.remember_many(same[3:])
        own = OWN
        hits = memory.store.search.lexical_search(Scope(), ["kestrel"], 2, weights=own)
        assert [i for i, _ in hits] == [first[0].id, first[1].id]


def test_filters_admit_without_scoring(tmp_path: Path) -> None:
    with _open(tmp_path / "m.db") as memory:
        mine = memory.remember_many(_items(0, 5, user_id="u1"))
        memory.remember_many(_items(5, 5, user_id="u2"))
        scope = Scope(user_id="u1")
        hits = memory.store.search.lexical_search(scope, ["kestrel", "tok2x"], 10, weights=W)
        assert {i for i, _ in hits} == {r.id for r in mine}
        assert hits[0][0] == mine[2].id
        assert all(s > 0 for _, s in hits)
        typed = memory.store.search.lexical_search(
            scope, ["kestrel"], 10, [fivefold.MemoryType.EVENT], weights=W
        )
        assert typed == []
        within = memory.store.search.lexical_search(
            scope, ["kestrel"], 10, within=[mine[1].id, mine[4].id], weights=W
        )
        assert {i for i, _ in within} == {mine[1].id, mine[4].id}
        # Only memories that hold a term come back, however few do.
        assert (
            memory.store.search.lexical_search(scope, ["tok3x"], 10, weights=W)[0][0] == mine[3].id
        )
        assert len(memory.store.search.lexical_search(scope, ["tok3x"], 10, weights=W)) == 1


OTHER_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path[:0] = [{tests!r}]
    from test_lexical_index import _open, _items
    with _open(Path({db!r})) as memory:
        ids = [r.id for r in memory.remember_many(_items(100, 10))]
        memory.forget(ids[0])
    """
)


@pytest.mark.slow
def test_another_process_writes_are_adopted(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with _open(db) as memory:
        memory.remember_many(_items(0, 20))
        assert _found(memory, 3)
        script = OTHER_WRITER.format(tests=str(Path(__file__).parent), db=str(db))
        subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
        # The other process applied its writes to the index on disk and closed: this one
        # reloads its reader rather than applying them again.
        catch_ups = _index(memory).catch_ups
        assert _found(memory, 105)
        assert _found(memory, 100) == []
        assert _index(memory).catch_ups == catch_ups
        assert _index(memory).rebuilds == 1


def test_an_index_folder_of_another_store_is_not_adopted(tmp_path: Path) -> None:
    with _open(tmp_path / "a.db") as memory:
        memory.remember_many(_items(0, 10))
        assert _found(memory, 1)
    with _open(tmp_path / "b.db") as memory:
        ids = [r.id for r in memory.remember_many(_items(500, 10))]
        assert _found(memory, 501) == [ids[1]]
    shutil.rmtree(tmp_path / "b.db.lexical")
    shutil.copytree(tmp_path / "a.db.lexical", tmp_path / "b.db.lexical")
    with _open(tmp_path / "b.db") as memory:
        assert _found(memory, 501) == [ids[1]]
        assert _found(memory, 1) == []
        assert _index(memory).rebuilds == 1


def test_a_damaged_folder_is_rebuilt(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with _open(db) as memory:
        ids = [r.id for r in memory.remember_many(_items(0, 30))]
        assert _found(memory, 4)
    for file in (tmp_path / "m.db.lexical").rglob("*"):
        if file.is_file() and not file.name.endswith(".json"):
            file.write_bytes(b"\x00" * 64)
    with _open(db) as memory:
        assert _found(memory, 4) == [ids[4]]
        assert all(f.ok for f in memory.store.admin.check())


@pytest.mark.slow
def test_an_index_behind_a_pruned_log_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(schema, "LEXICAL_LOG_KEEP", 5)
    db = tmp_path / "m.db"
    with _open(db) as memory:
        memory.remember_many(_items(0, 10, namespace="quiet"))
        assert _found(memory, 2, Scope("quiet"))
    with _open(db) as memory:
        # Writes to "quiet" that no read applies, then enough elsewhere to prune past them.
        late = memory.remember_many(_items(10, 3, namespace="quiet"))
        for start in range(100, 100 + 300 * 2, 2):
            memory.remember_many(_items(start, 2, namespace="busy"))
        pruned = memory.store._core.conn.execute(  # type: ignore[attr-defined]
            "SELECT count(*) FROM lexical_log WHERE namespace = 'quiet'"
        ).fetchone()[0]
        assert pruned == 0
        assert _found(memory, 11, Scope("quiet")) == [late[1].id]


def _saved_seq(db: Path, namespace: str = "default") -> int:
    folder = db.with_name(db.name + ".lexical") / lexical._folder_name(namespace)
    try:
        return int(json.loads(lexical._sidecar(folder).read_text())["seq"])
    except (OSError, ValueError, KeyError):
        return 0


def _wait_for(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status  # a zombie has exited


@pytest.mark.slow
def test_long_ingests_are_indexed_by_the_indexer_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a batch's worth of entries waits, the writer hands the catch-up to its indexer
    process; a read adopts what the process committed instead of indexing anything itself."""
    monkeypatch.setattr(lexical, "SYNC_PENDING", 100)
    db = tmp_path / "m.db"
    with _open(db) as memory:
        ids = [r.id for start in range(0, 300, 60) for r in memory.remember_many(_items(start, 60))]
        indexer = _index(memory)._indexer
        assert indexer is not None
        assert _alive(indexer.pid)
        last = int(memory.store._core.conn.execute(schema.LEXICAL_LOG_NEWEST).fetchone()[0])  # type: ignore[attr-defined]
        _wait_for(lambda: _saved_seq(db) >= last - 100)  # sent after the last 100 waited
        assert _index(memory).rebuilds == 0
        assert _index(memory).catch_ups == 0
        assert _found(memory, 7) == [ids[7]]
        assert _found(memory, 299) == [ids[299]]
        assert _index(memory).rebuilds == 0  # adopted: the process built it
    assert not _alive(indexer.pid)  # closing the store ended it


def test_a_killed_indexer_process_leaves_the_writer_indexing_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(lexical, "SYNC_PENDING", 100)
    db = tmp_path / "m.db"
    with _open(db) as memory:
        ids = [r.id for r in memory.remember_many(_items(0, 150))]
        indexer = _index(memory)._indexer
        assert indexer is not None
        os.kill(indexer.pid, signal.SIGKILL)
        _wait_for(lambda: not _alive(indexer.pid))
        ids += [
            r.id for start in range(150, 450, 50) for r in memory.remember_many(_items(start, 50))
        ]
        assert "exited: indexing here" in caplog.text
        assert _index(memory).catch_ups >= 1  # the writer applied the log itself
        for n in (3, 160, 449):
            assert _found(memory, n) == [ids[n]]


def test_an_embedding_program_is_never_run_as_the_indexer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Under uWSGI (or a frozen executable) ``sys.executable`` is another program: the writer
    indexes itself rather than run it."""
    monkeypatch.setattr(lexical, "SYNC_PENDING", 100)
    monkeypatch.setattr(sys, "executable", "/usr/bin/uwsgi")
    with _open(tmp_path / "m.db") as memory:
        ids = [
            r.id for start in range(0, 300, 100) for r in memory.remember_many(_items(start, 100))
        ]
        assert _index(memory)._indexer is None
        assert "did not start" in caplog.text
        assert _index(memory).catch_ups >= 1
        assert _found(memory, 250) == [ids[250]]


@pytest.mark.slow
def test_a_fork_of_the_writer_never_keeps_the_indexer_alive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process forked from the writer (a multiprocessing pool) inherits the indexer's pipe;
    it lets go of it at once, so closing the store ends the indexer without waiting for it."""
    monkeypatch.setattr(lexical, "SYNC_PENDING", 100)
    monkeypatch.setattr(indexer_module, "STOP_WAIT_S", 20.0)
    with _open(tmp_path / "m.db") as memory:
        memory.remember_many(_items(0, 150))
        child = _index(memory)._indexer
        assert child is not None
        pid = os.fork()
        if pid == 0:  # the fork: outlive the store's close by a few seconds, then leave
            time.sleep(4)
            os._exit(0)
        began = time.monotonic()
    closed = time.monotonic() - began
    os.waitpid(pid, 0)
    assert closed < 3.0
    assert child._process.returncode == 0  # it stopped, it was not killed


@pytest.mark.slow
def test_a_read_adopts_an_index_another_process_built_while_it_waited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read that found no index on disk and waited for the writer lock (the indexer was
    building it) adopts what was built instead of building it again."""
    db = tmp_path / "m.db"
    with _open(db) as memory:
        ids = [r.id for r in memory.remember_many(_items(0, 40))]
    script = OTHER_READER.format(tests=str(Path(__file__).parent), db=str(db))
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    # As if the sidecar had not been written yet when this process looked for the index.
    monkeypatch.setattr(lexical.LexicalIndexes, "_load", lambda self, namespace, path: None)
    with _open(db) as memory:
        assert _found(memory, 7) == [ids[7]]
        assert _index(memory).rebuilds == 0


def test_a_writer_lock_held_too_long_is_an_error_not_an_index_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexical, "LOCK_WAIT_S", 0.2)
    db = tmp_path / "m.db"
    with _open(db) as memory:
        first = memory.remember_many(_items(0, 20))
        assert _found(memory, 3) == [first[3].id]
        later = memory.remember_many(_items(20, 5))
        held = _index(memory)._open["default"].index.writer(15_000_000, 1)  # another holder
        with pytest.raises(lexical.LexicalIndexBusy, match="try again"):
            _found(memory, 22)
        held.wait_merging_threads()  # released
        assert _found(memory, 22) == [later[2].id]
        assert _index(memory)._open["default"].on_disk


def test_the_indexer_reports_a_failed_catch_up_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "m.db"
    with _open(db) as memory:
        memory.remember_many(_items(0, 10, namespace="a") + _items(10, 10, namespace="b"))
        store_id = memory.store._core.store_id  # type: ignore[attr-defined]
    asked: list[str] = []

    def current(self: lexical.LexicalIndexes, namespace: str) -> None:
        asked.append(namespace)
        if namespace == "a":
            raise lexical.LexicalIndexBusy("held: try again")

    monkeypatch.setattr(lexical.LexicalIndexes, "current", current)
    monkeypatch.setattr(sys, "stdin", io.StringIO('"a"\n"b"\nnull\n"never"\n'))
    assert indexer_child.main([str(db), store_id]) == 0
    assert asked == ["a", "b"]  # on after the failure; stopped at the stop line
    assert capsys.readouterr().err.count("fivefold indexer:") == 1


OTHER_READER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path[:0] = [{tests!r}]
    from test_lexical_index import _open, _found
    with _open(Path({db!r})) as memory:
        assert _found(memory, 7)
    """
)


@pytest.mark.slow
def test_an_unclosed_store_leaves_no_indexer_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Garbage-collecting a store that was never closed ends its indexer and reaps it (no
    zombie process is left)."""
    monkeypatch.setattr(lexical, "SYNC_PENDING", 100)
    memory = _open(tmp_path / "m.db")
    memory.remember_many(_items(0, 150))
    indexer = _index(memory)._indexer
    assert indexer is not None
    pid = indexer.pid
    del memory, indexer
    gc.collect()
    _wait_for(lambda: not Path(f"/proc/{pid}").exists())  # exited, and reaped


KILLED_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path[:0] = [{tests!r}]
    from test_lexical_index import _open, _items
    from fivefold.store.sqlite import lexical
    lexical.SYNC_PENDING = 100
    memory = _open(Path({db!r}))
    memory.remember_many(_items(0, 300))
    print(memory.store._core.lexical._indexer.pid, flush=True)
    input()  # killed here
    """
)


@pytest.mark.slow
def test_the_indexer_process_ends_with_a_killed_writer(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    script = KILLED_WRITER.format(tests=str(Path(__file__).parent), db=str(db))
    writer = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    pid = int(writer.stdout.readline())
    assert _alive(pid)
    writer.send_signal(signal.SIGKILL)
    writer.communicate(timeout=60)
    _wait_for(lambda: not _alive(pid))  # its stdin closed with the writer: it ended
    with _open(db) as memory:
        index = _index(memory)
        rows = {int(r[0]) for r in memory.store._core.conn.execute("SELECT id FROM memories")}  # type: ignore[attr-defined]
        assert len(rows) == 300
        assert index._ids(index.current("default")) == rows


KILLED_INGEST = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path[:0] = [{tests!r}]
    from test_lexical_index import _open, _items
    with _open(Path({db!r})) as memory:
        for start in range({start}, {total}, 2000):
            records = memory.remember_many(_items(start, 2000, session_id=str(start // 40)))
            # acknowledged: remember_many has returned, so the batch is committed
            print(records[0].id, records[-1].id, start, flush=True)
    """
)


@pytest.mark.slow
def test_sigkill_during_a_100k_ingest_loses_nothing_from_the_lexical_leg(
    tmp_path: Path,
) -> None:
    """The writer syncs the index after each 2,000-memory batch, so a kill at a random moment
    lands in an SQLite commit, a tantivy commit, or between them; twice, the second time with
    about 90k memories in the store."""
    db = tmp_path / "m.db"
    total, start = 100_000, 0
    acknowledged: dict[int, int] = {}  # memory id -> its token number
    rng = random.Random(4)
    # Killed once past ~40k memories and once past ~90k, a random moment after a batch.
    for target in (rng.randrange(30_000, 50_000), rng.randrange(80_000, 94_000)):
        script = KILLED_INGEST.format(
            tests=str(Path(__file__).parent), db=str(db), start=start, total=total
        )
        writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        assert writer.stdout is not None
        lines = [writer.stdout.readline()]
        while lines[-1] and int(lines[-1].split()[2]) < target:
            lines.append(writer.stdout.readline())
        time.sleep(rng.uniform(0.0, 0.4))  # inside the next batch's commits, or between
        writer.send_signal(signal.SIGKILL)
        out, _ = writer.communicate(timeout=60)
        for line in [*lines, *out.splitlines()]:
            if line.strip():
                first, last, n = (int(x) for x in line.split())
                acknowledged.update((first + i, n + i) for i in range(last - first + 1))
        start = max(acknowledged.values()) + 1
        assert start < total, "the writer finished before it was killed"
    assert len(acknowledged) >= 80_000
    with _open(db) as memory:
        conn = memory.store._core.conn  # type: ignore[attr-defined]
        rows = {int(r[0]) for r in conn.execute("SELECT id FROM memories")}
        assert set(acknowledged) <= rows
        index = _index(memory)
        assert index._ids(index.current("default")) == rows
        for memory_id in random.Random(2).sample(sorted(acknowledged), 300):
            assert _found(memory, acknowledged[memory_id]) == [memory_id]
