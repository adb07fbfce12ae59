"""An import run again starts after the records an earlier import of them wrote, on both
backends: the progress is noted in each batch's own transaction, so it never says more or less
than what was written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fivefold
from fivefold.errors import InvalidInput
from fivefold.importers import import_file


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
        twice = import_file(lambda: memory, path, again=True)
        assert twice.imported == 20
        assert _contents(memory) == sorted(contents * 2)


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
