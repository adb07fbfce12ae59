"""Bulk import for ``fivefold import``: JSONL (one ``remember`` record per line) and LoCoMo
JSON (one memory per turn, the project's benchmark protocol), in batches with a progress bar.

Each batch is one transaction, checked whole before it is written (``remember_many``), so an
import interrupted or stopped at a bad record has committed a prefix of whole batches and
nothing half-valid. A bad record is reported with its line (JSONL) or its position (LoCoMo):
``on_error="stop"`` (the default) ends the import there, ``"skip"`` leaves it out and goes on.

Each batch notes in its own transaction how far the import has come (``Store.progress``):
the records done and a digest of them, under a key made from the first record. Run again on
the same store, an import whose first records are the ones noted starts after them: an import
killed half way, stopped at a bad line since fixed, or of a file that has grown since is not
written twice (a rerun duplicated every record the killed run had committed). ``again``
imports every record whatever was noted.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.progress import Progress

from fivefold import validate
from fivefold.errors import InvalidInput
from fivefold.memory import Memory
from fivefold.store.records import Progress as JobProgress
from fivefold.types import MemoryRecord
from fivefold.write.prepare import check

OnError = Literal["stop", "skip"]
DEFAULT_NAMESPACE = "default"  # ``Memory.remember``'s


@dataclass(frozen=True, slots=True)
class Record:
    where: str  # "line 12" or "record 12", for messages
    fields: dict[str, Any] | None
    problem: str | None = None


@dataclass
class ImportReport:
    imported: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    earlier: int = 0  # records an earlier import of the same records had done: not again
    records: int = 0  # records in the file
    repeats: int = 0  # of the imported records, those that repeated a stored memory exactly


class _Noted(Exception):
    """The store opened for the first batch notes this import's progress: the records done
    (``done``) and their digest, from which the import decides where it starts."""

    def __init__(self, done: int, digest: str) -> None:
        super().__init__(done)
        self.done, self.digest = done, digest


class ImportInterrupted(KeyboardInterrupt):
    """Ctrl-C during an import: ``report`` counts the batches that were committed. When a batch
    was being written (records ``first`` to ``last``) it may or may not have been (an interrupt
    just after its commit cannot be told from one just before); between two batches ``last``
    is None and nothing from ``first`` on was written (``first`` None: every batch was)."""

    def __init__(self, report: ImportReport, first: str | None, last: str | None) -> None:
        super().__init__(f"interrupted at {first or 'the end'}")
        self.report, self.first, self.last = report, first, last


def import_file(
    opened: Callable[[], Memory],
    path: Path,
    *,
    fmt: str = "auto",
    namespace: str | None = None,
    batch_size: int = 256,
    on_error: OnError = "stop",
    checked: Callable[[object], None] = check,
    report: ImportReport | None = None,
    again: bool = False,
) -> ImportReport:
    """Import ``path`` into the store ``opened()`` returns, called by the first batch that
    writes. ``checked`` refuses a record as that store would (``extract.prepare.check`` with the
    store's limits): a batch is checked with it before the store is opened, and a record before
    an unreadable line before that line is reported. ``report`` (a new one if not given) counts
    the batches as they commit, for a caller to read after an interrupt that is not
    ``ImportInterrupted`` (one while the file is read, or after the last batch). ``again``:
    import every record, even those an earlier import noted as done (see the module)."""
    if batch_size < 1:
        raise InvalidInput("batch size must be at least 1")
    if on_error not in ("stop", "skip"):
        raise InvalidInput(f"on_error must be 'stop' or 'skip', got {on_error!r}")
    if namespace is not None:
        validate.name_text(namespace, "namespace")  # once, not once a record
    if fmt == "auto":
        fmt = "jsonl" if path.suffix.lower() in (".jsonl", ".ndjson") else "locomo"

    def read() -> Iterator[Record]:
        # Read as it is written, a batch at a time: the file is never held whole.
        records = _jsonl(path) if fmt == "jsonl" else _locomo(path)
        return records if namespace is None else (_in(r, namespace) for r in records)

    report = ImportReport() if report is None else report
    digests = _Digests(fmt)
    mem = _Opened(opened, checked=checked, resume=not again)
    # On stderr, as migrate's, and only to a terminal: stdout and a log get the result line
    # alone (the bar left a blank line on stdout, and to a log a blank line before an error).
    console = Console(stderr=True)
    # Where an interrupt finds the import: (the records committed, the batch being written or
    # None, the memories imported before it), set in one assignment so that a signal between
    # two statements never reads half of it.
    state: tuple[int, Sequence[Record] | None, int] = (0, None, 0)
    try:  # the whole loop: an interrupt between two batches (in the bar's advance) is one too
        with Progress(console=console, transient=True, disable=not console.is_terminal) as bar:
            task = bar.add_task(f"importing {path.name}", total=None)
            source, start = read(), 0
            while batch := list(itertools.islice(source, batch_size)):
                end = start + len(batch)
                digests.extend(batch)
                state = (start, batch, report.imported)
                try:
                    _write_batch(
                        mem,
                        batch,
                        report=report,
                        path=path,
                        on_error=on_error,
                        checked=checked,
                        progress=(digests.key, digests.note()),
                    )
                except _Noted as noted:  # the store, just opened, holds a note: nothing written
                    # Read again from the start of the file: the note may lie before this batch
                    # (the records read since were not kept), or after it. What was left out
                    # so far is either the earlier run's or is met again.
                    report.skipped.clear()
                    source = read()
                    report.earlier = start = _resumed(noted, digests, source, path)
                    state = (start, None, report.imported)
                    bar.update(task, completed=start)
                    continue
                state = (end, None, report.imported)
                bar.advance(task, len(batch))
                start = end
            report.records = start
    except KeyboardInterrupt:
        done, flight, before = state
        report.skipped.sort(key=_in_order)
        if flight is None and done == 0:  # while the first batch was read: nothing written
            raise
        if flight is None:  # nothing in flight: the report is exact
            following = next(itertools.islice(read(), done, None), None)
            where = None if following is None else following.where
            raise ImportInterrupted(report, where, None) from None
        report.imported = before
        raise ImportInterrupted(report, flight[0].where, flight[-1].where) from None
    report.skipped.sort(key=_in_order)
    return report


def _in_order(skipped: tuple[str, str]) -> int:
    return int(skipped[0].split()[-1])  # "line 12" -> 12


def _in(record: Record, namespace: str) -> Record:
    if record.fields is None:
        return record
    return Record(record.where, {**record.fields, "namespace": namespace})


class _Opened:
    """The store, opened by the first batch with a record to write, once its records pass
    ``checked``: an import refused at its first record makes no store at a new path. Once
    open, a progress noted under the batch's key is raised (``_Noted``, with ``resume``)
    before anything is written; each batch then replaces the note it last saw, or none."""

    def __init__(
        self, opened: Callable[[], Memory], *, checked: Callable[[object], None], resume: bool
    ) -> None:
        self._opened = opened
        self._checked = checked
        self._resume = resume
        self._mem: Memory | None = None
        self._seen: str | None = None  # the note as this import last read or wrote it

    def remember_many(
        self, items: list[dict[str, Any]], progress: tuple[str, str]
    ) -> list[MemoryRecord]:
        key, value = progress
        if self._mem is None:
            for position, item in enumerate(items):
                try:
                    self._checked(item)
                except InvalidInput as exc:
                    raise InvalidInput(exc.detail, item=position) from exc
            self._mem = self._opened()
            self._seen = self._mem.store.admin.progress(key)
            if self._seen is not None and self._resume:
                done, digest = _read_note(self._seen)
                raise _Noted(done, digest)
        written = self._mem.writer.remember_many(
            items, progress=JobProgress(key, value, self._seen)
        )
        self._seen = value
        return written


def _resumed(noted: _Noted, digests: _Digests, source: Iterator[Record], path: Path) -> int:
    """Where an import noted before resumes: after its records, when they are this file's
    first ones (read from ``source``, the file from its start). Other records under the same
    key are refused, not written again whole: the file changed since (a line left out fixed,
    say) or another begins as it does, and either way the rows of the earlier import are in
    the store already."""
    digests.restart()
    digests.extend(itertools.islice(source, noted.done))
    if digests.done == noted.done and digests.of_read() == noted.digest:
        return noted.done
    raise InvalidInput(
        f"{path}: an earlier import into this store began with the same record but went on "
        f"with other records ({noted.done:,} noted; this file has {digests.done:,} or more): "
        "the file changed since, or another file begins as this one does, or the namespace "
        "given differs. Nothing imported; to import only what is new, put it in a file of "
        "its own; --again imports every record, those already written a second time"
    )


class _Digests:
    """The import's key (its format and first record, as imported: in the namespace it is put
    in) and a running digest of the records read so far, in order."""

    def __init__(self, fmt: str) -> None:
        self._head = hashlib.sha256(f"{fmt}\0".encode())
        self.key = ""
        self._running, self.done = self._head.copy(), 0

    def extend(self, records: Iterable[Record]) -> None:
        for record in records:
            canonical = _canonical(record)
            if not self.key:
                self.key = (
                    "import:" + hashlib.sha256(self._head.digest() + canonical).hexdigest()[:32]
                )
            self._running.update(canonical)
            self.done += 1

    def restart(self) -> None:
        self._running, self.done = self._head.copy(), 0

    def of_read(self) -> str:
        return self._running.hexdigest()

    def note(self) -> str:
        return json.dumps({"done": self.done, "digest": self.of_read()})


def _canonical(record: Record) -> bytes:
    """A record as it is written: a record naming no namespace is written to "default", as
    one given ``-n default`` (the two made different keys: the same memories twice)."""
    if record.fields is None:
        value: dict[str, Any] = {"unreadable": record.problem}
    else:
        value = {**record.fields, "namespace": record.fields.get("namespace") or DEFAULT_NAMESPACE}
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _read_note(noted: str) -> tuple[int, str]:
    """(records done, their digest) of a stored note; (0, '') when it cannot be read (a
    note that says nothing resumes nothing)."""
    try:
        value = json.loads(noted)
        return int(value["done"]), str(value["digest"])
    except (ValueError, TypeError, KeyError):
        return 0, ""


def _write_batch(
    mem: _Opened,
    batch: Sequence[Record],
    *,
    report: ImportReport,
    path: Path,
    on_error: OnError,
    checked: Callable[[object], None],
    progress: tuple[str, str],
) -> None:
    """One transaction for the batch's good records and the import's ``progress`` (noted
    with them, so that it says exactly what is written); a refused record is reported (and the
    import stopped, or the record left out and the rest retried). A stop names the first bad
    record in the file's order: the records before an unreadable line are checked before that
    line is named (only then: in skip mode each unreadable line would check them again)."""
    pending = list(batch)
    while True:
        bad = next((r for r in pending if r.problem is not None), None)
        if bad is not None and on_error == "stop":  # (skipped ones are listed in order anyway)
            bad = _first_refused(pending[: pending.index(bad)], checked) or bad
        if bad is None:
            if not pending:  # every record left out: nothing to write (nor a store to make)
                return
            try:
                written = mem.remember_many([r.fields or {} for r in pending], progress)
                report.imported += len(pending)
                report.repeats += sum(not r.created for r in written)
                return
            except InvalidInput as exc:
                if exc.item is None:
                    raise
                bad = pending[exc.item]
                bad = Record(bad.where, bad.fields, exc.detail)
        if on_error == "stop":
            memories = "memory" if report.imported == 1 else "memories"
            earlier = f", after {report.earlier:,} an earlier run did" if report.earlier else ""
            raise InvalidInput(
                f"{path}: {bad.where}: {bad.problem}; stopped there with {report.imported} "
                f"{memories} imported (whole batches before it{earlier}); --on-error skip "
                "leaves bad records out"
            )
        report.skipped.append((bad.where, bad.problem or ""))
        pending = [r for r in pending if r.where != bad.where]


def _first_refused(records: Sequence[Record], checked: Callable[[object], None]) -> Record | None:
    """The first of ``records`` (each read) that ``checked`` refuses, with why."""
    for record in records:
        try:
            checked(record.fields or {})
        except InvalidInput as exc:
            return Record(record.where, record.fields, exc.detail)
    return None


def _jsonl(path: Path) -> Iterator[Record]:
    # Read as bytes: one line of bad UTF-8 is that line's problem, not the file's.
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"line {number}"
            try:
                # A byte order mark opens files some Windows editors write: not content.
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                yield Record(where, None, f"not UTF-8 text (byte {exc.start + 1})")
                continue
            if not line.strip():
                continue
            yield _parse(line, where)


def _parse(line: str, where: str) -> Record:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return Record(where, None, f"not valid JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        return Record(where, None, "JSON nested too deeply")
    if not isinstance(value, dict):
        return Record(where, None, f"a JSON object is expected, got {type(value).__name__}")
    return Record(where, value)


def _locomo(path: Path) -> Iterator[Record]:
    from fivefold.bench.datasets import load_locomo

    dataset = load_locomo(path)
    for position, doc in enumerate(dataset.docs, start=1):
        yield Record(
            f"record {position}",
            {
                "content": doc.content,
                "event_at": doc.event_at,
                "created_at": doc.event_at,
                "namespace": doc.namespace,
                "session_id": doc.session,
                "metadata": {"dia_id": doc.id.split("/", 1)[-1]},
            },
        )
