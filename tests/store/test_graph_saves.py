"""A saved HNSW graph that cannot be written (a full disk, a file size limit) never fails a
recall: the recall answers from the graph in memory, no partial file is left in the graph
folder, the failure is said once, and the save is tried again only once space may be back.
Run in a process of its own under a real file size limit (``RLIMIT_FSIZE``): the operating
system refuses every write past it (EFBIG)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.store.test_dense_sync import HNSW, _items, _nearest, _open

from fivefold.store.sqlite.graph_saves import RETRY_AFTER_CHANGES

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")

LIMITED = textwrap.dedent(
    """
    import json, logging, resource, signal, sys
    from pathlib import Path
    sys.path[:0] = [{tests!r}]
    from test_dense_sync import _open, _items, _nearest, HNSW
    from fivefold.store.sqlite.graph_saves import RETRY_AFTER_CHANGES
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    db, limit, lift = Path({db!r}), {limit}, {lift}
    out = {{}}
    with _open(db, HNSW) as memory:
        core = memory.store._core
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG from write(2), not a signal
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
        out["hits"] = [_nearest(memory, 7)[0] for _ in range(3)]
        out["recalled"] = len(memory.recall("note tok7x written").hits)
        out["reloads"] = core.reloads
        out["left"] = sorted(p.name for p in db.with_name(db.name + ".vindex").glob("*"))
        if lift:  # room again, then enough changes for a save to be tried at close
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
            memory.remember_many(_items(10_000, RETRY_AFTER_CHANGES))
            out["after_writes"] = _nearest(memory, 10_005)[0]
    print(json.dumps(out))
    """
)


def _store(tmp_path: Path) -> tuple[Path, int]:
    """A store above the threshold of 200 (an HNSW graph), its graph folder gone (rebuilt on
    the next recall), and the graph's size."""
    db = tmp_path / "memory.db"
    with _open(db, HNSW) as memory:
        ids = [r.id for r in memory.remember_many(_items(0, 2_000))]
        assert _nearest(memory, 7)[0] == ids[7] == 8
        size = memory.store._core.dense["default"].hnsw_size()  # type: ignore[attr-defined]
    shutil.rmtree(tmp_path / "memory.db.vindex")
    return db, int(size)


def _run_limited(db: Path, *, limit: int, lift: bool) -> tuple[dict[str, object], str]:
    script = LIMITED.format(tests=str(Path(__file__).parent), db=str(db), limit=limit, lift=lift)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def test_a_graph_that_cannot_be_saved_leaves_the_recall_answered_and_no_file(
    tmp_path: Path,
) -> None:
    db, size = _store(tmp_path)
    assert size > 100_000
    out, stderr = _run_limited(db, limit=size // 4, lift=False)
    assert out["hits"] == [8, 8, 8]  # the nearest vector to memory 8's, from the graph in memory
    assert out["recalled"]
    assert out["reloads"] == 1  # built once: later recalls did not build (and fail) again
    assert out["left"] == []  # no staging file, nor a graph without its description
    warnings = [line for line in stderr.splitlines() if "was not saved" in line]
    assert len(warnings) == 1, stderr  # said once: close did not try (and say) it again
    assert warnings[0].startswith("WARNING")
    assert "Traceback" not in stderr
    # The next open, with room, builds the graph again and saves it.
    with _open(db, HNSW) as memory:
        assert [h.memory.id for h in memory.recall("note tok7x written").hits]
    assert list((tmp_path / "memory.db.vindex").glob("*.usearch"))


def test_a_failed_save_is_tried_again_after_enough_changes(tmp_path: Path) -> None:
    db, size = _store(tmp_path)
    out, stderr = _run_limited(db, limit=size // 4, lift=True)
    assert out["after_writes"] == 2_000 + 6  # memory 10,005, the 6th of the new batch
    assert len([line for line in stderr.splitlines() if "was not saved" in line]) == 1
    graphs = list((tmp_path / "memory.db.vindex").glob("*.usearch"))
    assert len(graphs) == 1  # saved at close: the changes since made a new attempt worth it
    description = json.loads(graphs[0].with_suffix(".json").read_text(encoding="utf-8"))
    assert description["count"] == 2_000 + RETRY_AFTER_CHANGES
    assert not list((tmp_path / "memory.db.vindex").glob("*.tmp"))


def test_no_save_is_tried_without_room_and_one_is_once_room_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Free space below the graph's size: no attempt (no partial file filling the disk
    further); room for it again: saved at the next chance."""
    from collections import namedtuple

    from fivefold.store.sqlite import graph_saves

    db, size = _store(tmp_path)
    usage = namedtuple("usage", "total used free")
    free = {"bytes": size // 2}
    monkeypatch.setattr(graph_saves.shutil, "disk_usage", lambda _: usage(10**12, 0, free["bytes"]))
    folder = tmp_path / "memory.db.vindex"
    with _open(db, HNSW) as memory:
        assert _nearest(memory, 7)[0] == 8
        saves = memory.store._core.graph_saves  # type: ignore[attr-defined]
        assert saves.failed("default")
        assert not folder.exists() or not list(folder.glob("*"))
        free["bytes"] = size * 2
    assert not saves.failed("default")  # saved at close
    assert len(list(folder.glob("*.usearch"))) == 1
