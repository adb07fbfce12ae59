"""An import run again starts after the records an earlier import of them wrote, on both
backends: the progress is noted in each batch's own transaction, so it never says more or less
than what was written."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fivefold
from fivefold.cli.importers import import_file
from fivefold.errors import InvalidInput, StoreError
from fivefold.store.records import Progress


def _write(path: Path, contents: list[str]) -> None:
    path.write_text("".join(json.dumps({"content": c}) + "\n" for c in contents))


def _contents(memory: fivefold.Memory) -> list[str]:
    return sorted(r.content for r in memory.browse(limit=1_000))


def test_a_stopped_import_fixed_and_run_again_writes_each_record_once(
    store_url: str, tmp_path: Path
) -> None:
    with fivefold.Memory.open(store_url, embedder=fivefold.HashingEmbedder()) as memory:
        path = tmp_path / "in.jsonl"
        contents = [f"note {i:02d}" for i in range(20)]
        _write(path, contents)
        lines = path.read_text().splitlines()
        lines[13] = '{"content": "bad", "importance": 7}'
        path.write_text("\n".join(lines) + "\n")
        with pytest.raises(InvalidInput, match="line 14"):
            import_file(lambda: memory, path, batch_size=5)
        assert _contents(memory) == contents[:10]
        _write(path, contents)  # fixed
        report = import_file(lambda: memory, path, batch_size=5)
        assert (report.earlier, report.imported) == (10, 10)
        assert _contents(memory) == contents
        again = import_file(lambda: memory, path, batch_size=7)  # any batch size: by record
        assert (again.earlier, again.imported) == (20, 0)
        assert _contents(memory) == contents
        # Every record again: each repeats a stored memory exactly, so none is stored twice.
        twice = import_file(lambda: memory, path, again=True)
        assert (twice.imported, twice.repeats) == (20, 20)
        assert _contents(memory) == contents


def test_records_other_than_those_noted_are_refused_not_written_twice(
    store_url: str, tmp_path: Path
) -> None:
    """Same first record, another second one (the file changed, or another begins as it
    does): the digest differs; writing every record would put the earlier ones in twice."""
    with fivefold.Memory.open(store_url, embedder=fivefold.HashingEmbedder()) as memory:
        path = tmp_path / "in.jsonl"
        _write(path, ["first", "second", "third"])
        assert import_file(lambda: memory, path).imported == 3
        _write(path, ["first", "changed", "third", "fourth"])
        with pytest.raises(InvalidInput, match="--again"):
            import_file(lambda: memory, path)
        assert _contents(memory) == ["first", "second", "third"]
        assert import_file(lambda: memory, path, again=True).imported == 4


def test_a_line_left_out_and_fixed_is_refused_with_what_to_do(
    store_url: str, tmp_path: Path
) -> None:
    """In skip mode the noted records include the line left out: fixed, they are not the
    same records, and nothing is written (the fixed line alone can be imported by itself)."""
    with fivefold.Memory.open(store_url, embedder=fivefold.HashingEmbedder()) as memory:
        path = tmp_path / "in.jsonl"
        path.write_text('{"content": "a"}\n{not json\n{"content": "c"}\n')
        report = import_file(lambda: memory, path, on_error="skip", batch_size=2)
        assert (report.imported, len(report.skipped)) == (2, 1)
        path.write_text('{"content": "a"}\n{"content": "b"}\n{"content": "c"}\n')
        with pytest.raises(InvalidInput, match="--again"):
            import_file(lambda: memory, path, on_error="skip", batch_size=2)
        assert _contents(memory) == ["a", "c"]


def test_a_resumed_import_reports_each_line_left_out_once(store_url: str, tmp_path: Path) -> None:
    with fivefold.Memory.open(store_url, embedder=fivefold.HashingEmbedder()) as memory:
        path = tmp_path / "in.jsonl"
        path.write_text('{"content": "a"}\n{"content": "b"}\n')
        assert import_file(lambda: memory, path, batch_size=1).imported == 2
        with path.open("a") as grown:
            grown.write('{not json\n{"content": "d"}\n')
        report = import_file(lambda: memory, path, on_error="skip", batch_size=3)
        assert (report.earlier, report.imported) == (2, 1)
        assert [where for where, _ in report.skipped] == ["line 3"]
        assert _contents(memory) == ["a", "b", "d"]


def test_a_note_that_moved_since_it_was_read_refuses_the_batch(store_url: str) -> None:
    """Two runs of one import at once: each batch replaces the note its run last saw, so the
    second to write finds it moved and writes nothing (both wrote every record before)."""
    with fivefold.Memory.open(store_url, embedder=fivefold.HashingEmbedder()) as memory:
        store = memory.store
        first = memory.writer.remember_many([{"content": "a"}], progress=Progress("job", "1", None))
        assert store.admin.progress("job") == "1"
        with pytest.raises(StoreError, match="another run of the same import"):
            memory.writer.remember_many([{"content": "b"}], progress=Progress("job", "2", None))
        with pytest.raises(StoreError, match="another run of the same import"):
            memory.writer.remember_many([{"content": "c"}], progress=Progress("job", "2", "0"))
        assert store.admin.progress("job") == "1"
        assert _contents(memory) == ["a"]
        memory.writer.remember_many([{"content": "d"}], progress=Progress("job", "2", "1"))
        assert store.admin.progress("job") == "2"
        assert [r.content for r in memory.browse()] == ["d", first[0].content]


def _items_with_vectors(count: int) -> str:
    rng = np.random.default_rng(3)
    return "".join(
        json.dumps({"content": f"entry {i}", "vector": rng.standard_normal(384).tolist()}) + "\n"
        for i in range(count)
    )


@pytest.mark.slow
def test_two_runs_of_one_import_at_once_write_each_record_once(tmp_path: Path) -> None:
    """Real processes started together: the run that finds the note moved stops with nothing
    of its batch written (a run read the note once, at its start: both wrote every record);
    the same command run again then imports only what is left."""
    rng = np.random.default_rng(3)
    path = tmp_path / "big.jsonl"
    path.write_text(
        "".join(
            json.dumps({"content": f"entry {i}", "vector": rng.standard_normal(384).tolist()})
            + "\n"
            for i in range(1_000)
        )
    )
    db = tmp_path / "both.db"
    command = [sys.executable, "-c", "from fivefold.cli.main import main; main()", "--db", str(db)]
    command += ["import", str(path), "--batch-size", "20"]
    runs = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    said = [run.communicate(timeout=300) for run in runs]
    assert all("Traceback" not in err for _, err in said), said
    again = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0, again.stderr
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        contents = sorted(str(r[0]) for r in conn.execute("SELECT content FROM memories"))
    assert contents == sorted(f"entry {i}" for i in range(1_000))


def test_the_namespace_given_or_not_is_the_same_import(store_url: str, tmp_path: Path) -> None:
    """A record naming no namespace goes to "default", as with ``namespace="default"``."""
    with fivefold.Memory.open(store_url, embedder=fivefold.HashingEmbedder()) as memory:
        path = tmp_path / "in.jsonl"
        _write(path, [f"note {i}" for i in range(6)])
        assert import_file(lambda: memory, path, namespace="default").imported == 6
        report = import_file(lambda: memory, path)
        assert (report.earlier, report.imported) == (6, 0)


def test_lines_left_out_by_the_earlier_run_are_not_reported_again(
    store_url: str, tmp_path: Path
) -> None:
    with fivefold.Memory.open(store_url, embedder=fivefold.HashingEmbedder()) as memory:
        path = tmp_path / "in.jsonl"
        bad = "{not json\n" * 5
        path.write_text(bad + "".join(json.dumps({"content": f"g{i}"}) + "\n" for i in range(5)))
        first = import_file(lambda: memory, path, on_error="skip", batch_size=5)
        assert (first.imported, len(first.skipped)) == (5, 5)
        with path.open("a") as grown:
            grown.write("".join(json.dumps({"content": f"n{i}"}) + "\n" for i in range(4)))
        report = import_file(lambda: memory, path, on_error="skip", batch_size=2)
        assert (report.earlier, report.imported, report.skipped) == (10, 4, [])
