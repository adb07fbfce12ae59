"""A JSONL import reads its file as it writes: a batch is written before the lines after it
are read, so a file of any size is imported in memory bounded by the batch."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

import fivefold
from fivefold.cli.importers import import_file

WAIT_SECONDS = 30


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_the_first_batch_is_written_before_the_rest_of_the_file_is_read(tmp_path: Path) -> None:
    """The file is a pipe: its second half is written only once the import has opened the
    store for its first batch. An import that read the whole file first would wait for the
    end of the file that never comes until then."""
    path = tmp_path / "in.jsonl"
    os.mkfifo(path)
    opened = threading.Event()
    waited: list[bool] = []

    def feed() -> None:
        with path.open("w", encoding="utf-8") as pipe:
            for i in range(10):
                pipe.write(json.dumps({"content": f"early note {i}"}) + "\n")
            pipe.flush()
            waited.append(opened.wait(WAIT_SECONDS))
            for i in range(10):
                pipe.write(json.dumps({"content": f"late note {i}"}) + "\n")

    writer = threading.Thread(target=feed)
    writer.start()
    with fivefold.Memory.open(tmp_path / "m.db", embedder=fivefold.HashingEmbedder()) as memory:

        def first_batch() -> fivefold.Memory:
            opened.set()
            return memory

        report = import_file(first_batch, path, batch_size=10)
        writer.join()
        assert waited == [True]  # the store was opened before the file's end was written
        assert (report.records, report.imported) == (20, 20)
        assert memory.stats().memories == 20
