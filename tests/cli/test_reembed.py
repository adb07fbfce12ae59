"""``fivefold reembed``: a store moved to another embedding model, on both backends; a run
stopped half way (an error, and a real SIGKILL) goes on where it stopped; what cannot be moved
is refused before anything is written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from tests.embed.fake_openai import MODEL, FakeEndpoint, embed_toml, fake_endpoint

import fivefold
from fivefold import HashingEmbedder, Memory
from fivefold.cli.reembed import PROGRESS_KEY, reembed
from fivefold.embed.base import Vectors
from fivefold.errors import InvalidInput

TEXTS = [
    f"memory {i}: {word} likes the colour {colour}"
    for i, (word, colour) in enumerate(
        (w, c) for w in ("Priya", "Tane", "Kofi", "Maya", "Ines") for c in ("red", "blue", "green")
    )
]


class Counting:
    """The hashing model under another name, counting texts; it fails after ``fail_after``
    texts, as a killed run stops."""

    def __init__(self, dim: int = 48, fail_after: int | None = None) -> None:
        self.inner = HashingEmbedder(dim)
        self.fail_after = fail_after
        self.texts = 0

    @property
    def name(self) -> str:
        return f"counting-{self.inner.dim}"

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.fail_after is not None and self.texts + len(texts) > self.fail_after:
            raise RuntimeError("killed")
        self.texts += len(texts)
        return self.inner.embed(texts)


def fill(location: str) -> None:
    with Memory.open(location, embedder=HashingEmbedder(32)) as mem:
        mem.remember_many([{"content": t} for t in TEXTS[:10]])
        mem.remember_many([{"content": t, "namespace": "work"} for t in TEXTS[10:]])
        mem.relate("Priya", "manages", "Tane")  # an edge and its fact memory, id 16
        mem.forget(2)  # the copy keeps ids, gaps too


STORED = len(TEXTS) + 1 - 1


def test_a_store_moves_to_another_model(new_store: Callable[[], str]) -> None:
    source, destination = new_store(), new_store()
    fill(source)
    model = Counting()
    with (
        Memory.open(source, embedder=HashingEmbedder(32)) as src,
        Memory.open(destination, embedder=model) as dst,
    ):
        report = reembed(src, dst, batch=4, sample=5)
        assert report.verified, report
        assert report.copied == STORED
        assert report.model == "counting-48"
        assert report.resumed_after is None
        hits = dst.recall("what colour does Ines like?", namespace="work").hits
        assert hits
        assert all("Ines" in h.memory.content for h in hits[:3])
        assert dst.store.admin.copy_mark() is None
    with Memory.open(destination, embedder=Counting()) as dst:
        assert dst.stats().embedding_model == "counting-48"
        record = dst.get(1)
        stored = dst.store.search.vectors("default", [1])[1]
        assert np.allclose(stored, HashingEmbedder(48).embed([record.content])[0])
    with pytest.raises(fivefold.EmbeddingModelMismatch):
        Memory.open(destination, embedder=HashingEmbedder(32))
    with Memory.open(source, embedder=HashingEmbedder(32)) as src:  # left as it was
        assert src.stats().memories == STORED


def test_a_stopped_run_goes_on_where_it_stopped(tmp_path: Path) -> None:
    source, destination = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    fill(source)
    with (
        Memory.open(source, embedder=HashingEmbedder(32)) as src,
        Memory.open(destination, embedder=Counting(fail_after=9)) as dst,
    ):
        with pytest.raises(RuntimeError, match="killed"):
            reembed(src, dst, batch=4)
        assert dst.store.admin.copy_mark() is not None
        # Two batches of four written (ids 1, 3-9), each with its note; the third failed.
        assert dst.store.admin.progress(PROGRESS_KEY) == "9"
        assert dst.stats().memories == 8
    model = Counting()
    with (
        Memory.open(source, embedder=HashingEmbedder(32)) as src,
        Memory.open(destination, embedder=model) as dst,
    ):
        report = reembed(src, dst, batch=4, sample=3)
        assert report.verified, report
        assert report.resumed_after == 9
        assert model.texts == STORED - 8 + 3  # the rest, then the 3 vectors checked
        assert report.copied == STORED
        assert dst.stats().memories == STORED
        assert dst.store.admin.copy_mark() is None


def test_what_cannot_be_moved_is_refused(tmp_path: Path) -> None:
    source, full = str(tmp_path / "a.db"), str(tmp_path / "full.db")
    fill(source)
    with Memory.open(full, embedder=Counting()) as mem:
        mem.remember("already here")
    with Memory.open(source, embedder=HashingEmbedder(32)) as src:
        with (
            Memory.open(full, embedder=Counting()) as dst,
            pytest.raises(InvalidInput, match="already holds data"),
        ):
            reembed(src, dst)
        same = str(tmp_path / "same.db")
        with (
            Memory.open(same, embedder=HashingEmbedder(32)) as dst,
            pytest.raises(InvalidInput, match="embedded with 'hashing-bow-32' already"),
        ):
            reembed(src, dst)
    with Memory.open(same, embedder=HashingEmbedder(32)) as mem:
        assert mem.stats().memories == 0
    with Memory.open(full, embedder=Counting()) as mem:
        assert mem.stats().memories == 1


# -- the command, as a user runs it: from the packaged model to an endpoint ------------------------
@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with fake_endpoint() as fake:
        yield fake


def command(*args: str) -> list[str]:
    return [sys.executable, "-c", "from fivefold.cli.main import main; main()", *args]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIVEFOLD_")}
    return subprocess.run(command(*args), capture_output=True, text=True, timeout=300, env=env)


def test_the_command_moves_a_store_and_goes_on_after_a_kill(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    source, destination = tmp_path / "minilm.db", tmp_path / "endpoint.db"
    items = "\n".join(f'{{"content": "{t}"}}' for t in TEXTS)
    (tmp_path / "items.jsonl").write_text(items + "\n")
    done = cli("--db", str(source), "import", str(tmp_path / "items.jsonl"))
    assert done.returncode == 0, done.stderr
    config = tmp_path / "config.toml"
    config.write_text(embed_toml(endpoint))
    endpoint.delay_s = 0.3  # slow enough to be killed half way
    args = ("--config", str(config), "reembed", str(source), str(destination), "--batch", "2")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIVEFOLD_")}
    process = subprocess.Popen(
        command(*args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    deadline = time.monotonic() + 120
    while len(endpoint.batches) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    assert 3 <= len(endpoint.batches) < len(TEXTS) // 2
    endpoint.delay_s = 0.0
    done = cli(*args)
    assert done.returncode == 0, done.stderr
    assert "resumed after memory" in done.stdout
    assert "verified" in done.stdout
    assert f"{len(TEXTS)} memories embedded with 'openai:{MODEL}'" in done.stdout
    done = cli("--db", str(destination), "--config", str(config), "recall", "Ines blue", "--json")
    assert done.returncode == 0, done.stderr
    assert "Ines likes the colour blue" in done.stdout
    done = cli("--db", str(source), "recall", "Ines blue")  # the source, as it was
    assert done.returncode == 0, done.stderr
    done = cli("--config", str(config), "reembed", str(source), str(destination))
    assert done.returncode == 2
    assert "already holds data" in done.stderr


def test_the_unfinished_copy_of_another_source_is_not_gone_on_with(tmp_path: Path) -> None:
    first, second, destination = (str(tmp_path / n) for n in ("a.db", "b.db", "c.db"))
    fill(first)
    fill(second)
    with (
        Memory.open(first, embedder=HashingEmbedder(32)) as src,
        Memory.open(destination, embedder=Counting(fail_after=4)) as dst,
        pytest.raises(RuntimeError, match="killed"),
    ):
        reembed(src, dst, batch=4)
    with (
        Memory.open(second, embedder=HashingEmbedder(32)) as src,
        Memory.open(destination, embedder=Counting()) as dst,
        pytest.raises(InvalidInput, match="holds another copy that did not finish"),
    ):
        reembed(src, dst, batch=4)
    with Memory.open(destination, embedder=Counting()) as dst:
        assert dst.stats().memories == 4
