"""The embedded store's lexical index: one tantivy index per namespace, derived from the rows.

Why tantivy: FTS5's ``bm25()`` scores every document an OR-ed term matches, so a common word in
a query costs a scan of its whole posting list (on a large store, most of a recall). Tantivy
keeps block-max scores and stops early at the top k (block-max WAND), so its cost follows k,
not the list (BENCHMARKS.md).

What a document holds: the memory's id (a fast field, read without loading documents), its
own ``predicate`` and ``content``, and its ``window``: its content with its session
neighbours' text, each token repeated as ``context.WINDOW_REPEATS`` says (BM25F in one
field); each field has its own BM25 statistics and the caller's ``ColumnWeights`` boost each
at query time; ``user``, ``agent`` and ``type`` as exact terms for the scope and type filters. The
text is tokenized by FTS5's tokenizer (``store/tokens.py``: Porter stemming, diacritics
folded) and handed over as whitespace-separated tokens, so a term is the same thing here as in
the PostgreSQL backend. Scoring is tantivy's BM25 (k1 1.2, b 0.75, idf ln(1 + (N - n + 0.5) /
(n + 0.5))), summed over the fields with the weights as boosts.

How it stays in step: SQLite is the source of truth. Triggers append every memory whose text,
context or filter columns changed to ``lexical_log`` in the writing transaction, so a write is
acknowledged once SQLite commits. An index applies the entries after the last one it holds
(its sequence number is saved beside it after each tantivy commit): before every read, after a
``forget``, on close, and once enough are waiting after a writer's batch (then in the store's
indexer process, ``indexer.py``, on the other core; in the writer when there is none). A crash
between the two commits leaves entries to apply again (applying one re-reads the row:
idempotent). An index whose log has been pruned past it, whose folder is missing, damaged, of
another store or format, or whose document count disagrees with the rows after catching up, is
rebuilt from the rows. Several processes share the on-disk indexes: tantivy lets one writer
in at a time (a lock file), and a process that finds another's entries already applied only
reloads its reader.

Where an index cannot be written (a read-only store, an in-memory store, a failing disk), it
lives in memory, built from the rows when it is first needed.

``forget`` deletes the memory's document at once (a deletion bitmap hides it from every search
and statistic that follows); its stemmed tokens leave the segment files when tantivy merges the
segment.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import tantivy

from fivefold.errors import StoreError
from fivefold.store.shared.tokens import Tokenizer
from fivefold.store.sqlite import lexical_query, schema
from fivefold.store.sqlite.indexer import Indexer
from fivefold.store.sqlite.lexical_documents import BUILD_BATCH, Documents, tantivy_schema
from fivefold.store.sqlite.snapshot import snapshot
from fivefold.types import ColumnWeights, Finding, MemoryType, Scope

__all__ = ["LexicalIndexBusy", "LexicalIndexes"]

logger = logging.getLogger("fivefold.store")

FORMAT = 3  # of an index folder and its sidecar: a folder of another format is rebuilt
# A namespace's index is brought up to date (by the indexer process) once this many log entries
# wait for it, so a long ingest never leaves its first recall a large catch-up (10,000: well
# under a second). Fewer catch-ups are less work, not work put off: a turn re-indexed for
# context by several batches is indexed once, and each tantivy commit has a fixed cost.
SYNC_PENDING = 10_000
# How long a process waits for another's writer lock: a catch-up holds it under a second, a
# rebuild of a large namespace longer (then LexicalIndexBusy, unless it is this store's indexer).
LOCK_WAIT_S = 30.0
SYNC_HEAP = 64_000_000
BUILD_HEAP = 256_000_000


@dataclass
class _Index:
    """One namespace's index, the last log entry it holds, and how many documents it deleted
    since it was built (a replaced or forgotten memory's old text, which tantivy's statistics
    keep counting until a merge drops it; a count above 0 may already be merged away)."""

    index: tantivy.Index
    seq: int
    on_disk: bool
    stale: int = 0


class LexicalIndexes:
    """The namespaces' indexes of one store. Not thread-safe: the store calls it under its lock.

    ``catch_ups`` and ``rebuilds`` count how indexes were brought up to date (tests, doctor)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        location: str,
        *,
        store_id: str,
        read_only: bool,
        in_memory: bool = True,
    ) -> None:
        """``in_memory``: whether an index that cannot be written to its folder may live in
        memory instead (the indexer child's may not: one in its memory helps no reader)."""
        self._conn = conn
        # The indexer process opens the store by this path: absolute, whatever its cwd.
        self._location = location if location == ":memory:" else os.path.abspath(location)
        self._folder = None if location == ":memory:" else Path(location + ".lexical")
        self._store_id = store_id
        self._read_only = read_only
        self._in_memory = in_memory
        # Catch-ups during long ingests run in a child process (indexer.py), started on the
        # first batch's worth of waiting entries; None until then, or when it failed.
        self._indexer: Indexer | None = None
        self._indexer_failed = not in_memory or self._folder is None or read_only
        self._nudged: dict[str, int] = {}  # namespace -> its last log entry when last sent
        self._tokenizer = Tokenizer()
        self._schema = tantivy_schema()
        self._documents = Documents(conn, self._tokenizer)
        self._open: dict[str, _Index] = {}
        self.catch_ups = 0
        self.rebuilds = 0

    # -- reads ----------------------------------------------------------------------------------
    def search(
        self,
        scope: Scope,
        terms: Sequence[str],
        k: int,
        types: Sequence[MemoryType],
        within: Sequence[int] | None,
        weights: ColumnWeights,
    ) -> list[tuple[int, float]]:
        """BM25 of the scope's memories against ``terms`` (a repeated term counts again), best
        first, ties by id. Only memories matching at least one term come back."""
        query = lexical_query.bm25_query(
            self._schema,
            self._tokenizer,
            scope=scope,
            terms=terms,
            types=types,
            within=within,
            weights=weights,
        )
        if query is None or k <= 0:
            return []
        index = self.current(scope.namespace)
        if index is None:
            return []
        return lexical_query.ranked(index.index.searcher(), query, k)

    def frequencies(self, namespace: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The namespace's memory count and, per term, how many memories hold it in their
        ``content`` (the field BM25's reference memory holds every query term in; a term of
        several tokens counts as its rarest)."""
        index = self.current(namespace)
        if index is None:
            return 0, dict.fromkeys(terms, 0)
        return lexical_query.frequencies(index.index.searcher(), self._tokenizer, terms)

    # -- keeping in step --------------------------------------------------------------------
    def current(self, namespace: str) -> _Index | None:
        """The namespace's index with every committed change applied (None: no memories)."""
        index = self._open.get(namespace)
        last, pruned = self._log_state(namespace)
        if index is not None and index.seq >= max(last, pruned):
            return index
        if index is None and last == 0 and not self._has_rows(namespace):
            return None
        return self._bring_up(namespace, index)

    def _log_state(self, namespace: str) -> tuple[int, int]:
        last, pruned = self._conn.execute(schema.LEXICAL_LOG_STATE, {"ns": namespace}).fetchone()
        return int(last), int(pruned)

    def written(self, namespaces: Iterable[str]) -> None:
        """After a write transaction: once a batch's worth waits, have the indexer process
        apply it (or apply it here, when there is none)."""
        for namespace in sorted(set(namespaces)):
            index = self._open.get(namespace)
            since = max(index.seq if index is not None else 0, self._nudged.get(namespace, 0))
            waiting = self._conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM lexical_log WHERE namespace = ? AND seq > ? "
                "LIMIT ?)",
                (namespace, since, SYNC_PENDING),
            ).fetchone()[0]
            if waiting < SYNC_PENDING:
                continue
            if self._nudge(namespace):
                self._nudged[namespace] = self._log_state(namespace)[0]
            else:
                self.current(namespace)

    def _nudge(self, namespace: str) -> bool:
        if self._indexer_failed:
            return False
        if self._indexer is None:
            try:
                self._indexer = Indexer(self._location, self._store_id)
            except OSError as exc:
                logger.warning("lexical indexer process did not start (%s): indexing here", exc)
                self._indexer_failed = True
                return False
        if self._indexer.nudge(namespace):
            return True
        logger.warning("lexical indexer process %d exited: indexing here", self._indexer.pid)
        self._indexer_failed = True
        self._indexer.close()
        return False

    def _child_busy(self) -> bool:
        """Whether this store's indexer process is alive (its writer lock is worth waiting
        for: it is applying what this process would)."""
        return self._indexer is not None and self._indexer.alive

    def _stop_indexer(self) -> None:
        """Stop the indexer process (the next batch's worth of waiting entries starts another)."""
        if self._indexer is not None:
            self._indexer.close()
            self._indexer = None

    def close(self) -> None:
        """Stop the indexer process, then apply what waits for every namespace written (best
        effort: the indexes are derived, and the next open catches up from the log)."""
        self._stop_indexer()
        if self._read_only:
            return
        try:
            rows = self._conn.execute("SELECT DISTINCT namespace FROM lexical_log").fetchall()
            for (namespace,) in rows:
                self.current(str(namespace))
        except (StoreError, OSError, ValueError, sqlite3.Error):
            pass  # a damaged file or a failing disk: reads will say so, closing need not
        finally:
            self._open.clear()

    def prune_log(self) -> None:
        """Inside a write transaction: entries beyond the last ``LEXICAL_LOG_KEEP`` go (an
        index further behind is rebuilt from the rows)."""
        for statement in schema.PRUNE_LEXICAL_LOG:
            self._conn.execute(statement, {"keep": schema.LEXICAL_LOG_KEEP})

    def _has_rows(self, namespace: str) -> bool:
        row = self._conn.execute(
            "SELECT 1 FROM memories WHERE namespace = ? LIMIT 1", (namespace,)
        ).fetchone()
        return row is not None

    def _bring_up(self, namespace: str, index: _Index | None) -> _Index:
        path = None if self._folder is None else self._folder / _folder_name(namespace)
        if path is not None and (index is None or index.on_disk):
            loaded = index is None
            if index is None:
                index = self._load(namespace, path)
            if index is not None and self._adopt_saved(namespace, index, path):
                if not loaded or index.index.searcher().num_docs == self._count(namespace):
                    self._open[namespace] = index
                    return index
                index = None  # a saved index that disagrees with the rows: build it again
            if not self._read_only:
                try:
                    return self._bring_up_on_disk(namespace, index, path)
                except (OSError, ValueError):
                    if not self._in_memory:
                        raise
                    # a failing disk: recall goes on from an index in memory
        # In memory (an in-memory or read-only store, or a failing disk): apply, or build.
        if index is None or index.on_disk:
            return self._build(namespace, tantivy.Index(self._schema), None)
        return self._catch_up(namespace, index, None)

    def _adopt_saved(self, namespace: str, index: _Index, path: Path) -> bool:
        """Whether the saved index, as another process (or an earlier run) left it, is
        current: then this process reloads it rather than applying anything itself."""
        self._adopt(index, self._saved(namespace, path))
        return index.seq >= max(self._log_state(namespace))

    def _bring_up_on_disk(self, namespace: str, index: _Index | None, path: Path) -> _Index:
        if index is not None:
            return self._catch_up(namespace, index, path)
        path.mkdir(parents=True, exist_ok=True)
        try:
            built = tantivy.Index(self._schema, path=str(path))
        except ValueError:  # damaged, or another schema: start over
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True)
            built = tantivy.Index(self._schema, path=str(path))
        built.config_reader("Manual")
        return self._build(namespace, built, path, unless_current=True)

    def _load(self, namespace: str, path: Path) -> _Index | None:
        saved = self._saved(namespace, path)
        if saved is None or not tantivy.Index.exists(str(path)):
            return None
        try:
            index = tantivy.Index(self._schema, path=str(path), reuse=True)
            index.config_reader("Manual")
        except ValueError:
            return None
        return _Index(index, saved[0], on_disk=True, stale=saved[1])

    def _saved(self, namespace: str, path: Path) -> tuple[int, int] | None:
        """The sequence number and stale count saved with the index (None: no valid sidecar)."""
        try:
            saved = json.loads(_sidecar(path).read_text())
        except (OSError, ValueError):
            return None
        expected = {"format": FORMAT, "store": self._store_id, "namespace": namespace}
        if not isinstance(saved, dict) or any(saved.get(k) != v for k, v in expected.items()):
            return None
        seq, stale = saved.get("seq"), saved.get("stale")
        return (seq, stale) if isinstance(seq, int) and isinstance(stale, int) else None

    @staticmethod
    def _adopt(index: _Index, saved: tuple[int, int] | None) -> None:
        """Take what another process (or an earlier run) committed after ``index``."""
        if saved is not None and saved[0] > index.seq:
            index.index.reload()
            index.seq, index.stale = saved

    def _save(self, namespace: str, path: Path, index: _Index) -> None:
        sidecar = _sidecar(path)
        # Another process (the indexer) may save at the same moment: a temp file of its own.
        temp = sidecar.with_name(f"{sidecar.name}.{os.getpid()}.tmp")
        body = {
            "format": FORMAT,
            "store": self._store_id,
            "namespace": namespace,
            "seq": index.seq,
            "stale": index.stale,
        }
        temp.write_text(json.dumps(body))
        os.replace(temp, sidecar)

    def _catch_up(self, namespace: str, index: _Index, path: Path | None) -> _Index:
        with _locked_writer(index.index, patient=self._child_busy) as writer:
            if path is not None:  # the lock is ours: what did the last holder apply?
                self._adopt(index, self._saved(namespace, path))
            held = int(index.index.searcher().num_docs)
            documents: list[tantivy.Document] = []
            expected = 0
            with snapshot(self._conn):
                newest = int(self._conn.execute(schema.LEXICAL_LOG_NEWEST).fetchone()[0])
                if self._log_state(namespace)[1] > index.seq:  # entries it needs were pruned
                    changed = None
                else:
                    changed = list(
                        dict.fromkeys(
                            int(r[0])
                            for r in self._conn.execute(
                                schema.LEXICAL_LOG_SINCE, (namespace, index.seq)
                            )
                        )
                    )
                    documents = list(self._documents.of(namespace, changed))
                    expected = self._count(namespace)
            if changed is not None:
                for start in range(0, len(changed), BUILD_BATCH):
                    # By query: delete_documents_by_term misses u64 terms given a Python int.
                    chunk = changed[start : start + BUILD_BATCH]
                    writer.delete_documents_by_query(
                        tantivy.Query.term_set_query(self._schema, "id", chunk)
                    )
                for document in documents:
                    writer.add_document(document)
                writer.commit()
                # Saved before the lock is released: the next holder must not apply it again.
                index.index.reload()
                now_held = int(index.index.searcher().num_docs)
                index.seq = int(newest)
                index.stale += held + len(documents) - now_held
                if path is not None:
                    self._save(namespace, path, index)
        if changed is None:
            return self._build(namespace, index.index, path)
        self.catch_ups += 1
        if now_held != expected:  # something the log missed
            return self._build(namespace, index.index, path)
        self._open[namespace] = index
        return index

    def _build(
        self,
        namespace: str,
        built: tantivy.Index,
        path: Path | None = None,
        *,
        unless_current: bool = False,
    ) -> _Index:
        """Every document of the namespace from its rows, in one commit (a reader sees the old
        index or the new one). ``unless_current``: if, once the lock is ours, the folder holds a
        current index (another process built it while this one waited), adopt it instead."""
        with (
            _locked_writer(built, BUILD_HEAP, patient=self._child_busy) as writer,
            snapshot(self._conn),
        ):
            if unless_current and path is not None:
                adopted = self._current_saved(namespace, built, path)
                if adopted is not None:
                    self._open[namespace] = adopted
                    return adopted
            newest = int(self._conn.execute(schema.LEXICAL_LOG_NEWEST).fetchone()[0])
            writer.delete_all_documents()
            for document in self._documents.of(namespace, None):
                writer.add_document(document)
            writer.commit()
            built.reload()
            index = _Index(built, newest, on_disk=path is not None)
            if path is not None:  # before the lock is released, as in _catch_up
                self._save(namespace, path, index)
        self.rebuilds += 1
        self._open[namespace] = index
        return index

    def _current_saved(self, namespace: str, built: tantivy.Index, path: Path) -> _Index | None:
        """The index in ``path`` as its sidecar describes it, when it holds every logged change
        and as many documents as the namespace has memories (None: build it)."""
        saved = self._saved(namespace, path)
        if saved is None or saved[0] < max(self._log_state(namespace)):
            return None
        built.reload()
        if int(built.searcher().num_docs) != self._count(namespace):
            return None
        return _Index(built, saved[0], on_disk=True, stale=saved[1])

    def _count(self, namespace: str) -> int:
        """The namespace's memories, as its row in ``namespaces`` keeps them (counted in the
        writing transaction: counting the rows would read all of them)."""
        row = self._conn.execute(
            "SELECT memories FROM namespaces WHERE namespace = ?", (namespace,)
        ).fetchone()
        return 0 if row is None else int(row[0])

    def compact(self, namespaces: Sequence[str]) -> int:
        """Rebuild each index that deleted documents since it was built, so its statistics
        count the current rows only and a forgotten memory's text leaves its files; returns how
        many were rebuilt."""
        rebuilt = 0
        for namespace in namespaces:
            index = self.current(namespace)
            if index is None or index.stale == 0:
                continue
            if index.on_disk and self._folder is not None:
                self._build(namespace, index.index, self._folder / _folder_name(namespace))
            else:
                self._build(namespace, tantivy.Index(self._schema))
            rebuilt += 1
        return rebuilt

    # -- doctor and stats -------------------------------------------------------------------
    def check(self, namespaces: Sequence[str], *, repair: bool) -> list[Finding]:
        """Each namespace's index against its rows: the same ids, no more, no fewer; ``repair``
        also rebuilds an index whose statistics may still count deleted documents."""
        out = []
        for namespace in namespaces:
            part = f"lexical index of namespace {namespace!r}"
            try:
                index = self.current(namespace)
                held = self._ids(index)
            except (StoreError, OSError, ValueError) as exc:
                index, held, problem = None, None, str(exc)
            rows = {
                int(r[0])
                for r in self._conn.execute(
                    "SELECT id FROM memories WHERE namespace = ?", (namespace,)
                )
            }
            if held == rows:
                detail = f"{len(rows):,} memories, as in the rows"
                stale = 0 if index is None else index.stale
                if stale and repair:
                    self.compact([namespace])
                    detail += f"; rebuilt without {stale:,} deleted documents"
                elif stale:
                    detail += (
                        f"; BM25 statistics may still count up to {stale:,} deleted documents "
                        "(--repair rebuilds it)"
                    )
                out.append(Finding(part, True, detail, bool(stale and repair)))
                continue
            if held is not None:
                problem = f"{len(held - rows)} extra and {len(rows - held)} missing memories"
            fixed = False
            if repair:
                self._open.pop(namespace, None)
                self._stop_indexer()  # it may be writing into the folder deleted here
                if self._folder is not None and not self._read_only:
                    shutil.rmtree(self._folder / _folder_name(namespace), ignore_errors=True)
                    _sidecar(self._folder / _folder_name(namespace)).unlink(missing_ok=True)
                fixed = self._ids(self.current(namespace)) == rows
            out.append(Finding(part, fixed, problem, fixed))
        return out

    def _ids(self, index: _Index | None) -> set[int]:
        if index is None:
            return set()
        searcher = index.index.searcher()
        total = int(searcher.num_docs)
        if total == 0:
            return set()
        hits = searcher.search(tantivy.Query.all_query(), total, count=False).hits
        return set(lexical_query.ids_at(searcher, [a for _, a in hits]))

    @property
    def folder(self) -> Path | None:
        """Where the indexes live on disk (None for an in-memory store)."""
        return self._folder

    def forget_folder(self) -> None:
        """A new store at this path must not adopt an old store's indexes."""
        self._open.clear()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)


class LexicalIndexBusy(StoreError):
    """Another process holds a lexical index's writer for longer than a catch-up takes."""


def _folder_name(namespace: str) -> str:
    import hashlib

    return hashlib.sha256(namespace.encode()).hexdigest()[:24]


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


@contextlib.contextmanager
def _locked_writer(
    index: tantivy.Index, heap: int = SYNC_HEAP, *, patient: Callable[[], bool] = lambda: False
) -> Iterator[tantivy.IndexWriter]:
    """The index's writer, waiting while another process holds it (beyond ``LOCK_WAIT_S`` only
    while ``patient()``: this store's own indexer is alive, and a build of a large namespace
    takes it longer); released (with the merges its commit started finished) on the way out.
    Still held after that: ``LexicalIndexBusy``, never mistaken for a failing disk."""
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            writer = index.writer(heap, 1)
            break
        except ValueError as exc:
            if "lock" not in str(exc).lower():
                raise
            if time.monotonic() > deadline and not patient():
                raise LexicalIndexBusy(
                    f"another process has held the lexical index's writer for over "
                    f"{LOCK_WAIT_S:.0f} s (a rebuild of a large namespace?): try again"
                ) from exc
            time.sleep(0.005)
    try:
        yield writer
    except BaseException:
        with contextlib.suppress(ValueError):
            writer.rollback()
        raise
    finally:
        writer.wait_merging_threads()
