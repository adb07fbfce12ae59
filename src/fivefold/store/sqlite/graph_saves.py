"""Saving a namespace's HNSW graph, which never fails a read or a close: the graph is derived
(the next open patches the last saved one from the change log, or builds it again), so a save
that fails (a full disk, a file size limit, an I/O error) leaves the graph in memory, answers
the recall, and is said once. The next attempt waits until space may be back: enough changes
to the namespace since, or free space grown by the graph's size (each attempt on a full disk
costs a whole serialisation)."""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from fivefold.store.sqlite.dense import NamespaceIndex

__all__ = ["RETRY_AFTER_CHANGES", "GraphSaves"]

log = logging.getLogger("fivefold.store")

# Vector changes to a namespace after a failed save before it is tried again whatever the free
# space says (a file size limit or a quota is not seen in it): a tenth of a small graph's
# rebuild, and rare enough that a disk that stays full costs little.
RETRY_AFTER_CHANGES = 1024


@dataclass(frozen=True, slots=True)
class _Failed:
    log_seq: int  # the change log position the unsaved graph reflected
    needed: int  # free bytes on the graph's file system that would make room for it


class GraphSaves:
    """One store's graph saves, and the failures that hold the next attempt back."""

    def __init__(self) -> None:
        self._failed: dict[str, _Failed] = {}

    def failed(self, namespace: str) -> bool:
        return namespace in self._failed

    def save(self, namespace: str, index: NamespaceIndex, path: Path, store_id: str) -> bool:
        """Save ``index``'s graph to ``path`` unless a failure holds it back; True when saved."""
        size = index.hnsw_size()
        free = _free_bytes(path.parent)
        last = self._failed.get(namespace)
        if last is not None and not _space_may_be_back(last, index.log_seq, free):
            return False
        if free is not None and free < size:  # nothing to gain from a partial file
            self._fail(namespace, index, size, size, f"{free:,} bytes free")
            return False
        try:
            index.save_hnsw(path, store_id)
        except (OSError, RuntimeError) as exc:  # usearch says "Failed to serialize" alone
            # Room enough was free, yet the write failed (a quota, a file size limit): more
            # room than that, by a graph's size, before it is tried again.
            self._fail(namespace, index, (free or 0) + size, size, str(exc))
            return False
        if self._failed.pop(namespace, None) is not None:
            log.info("the HNSW graph of namespace %r is saved again", namespace)
        return True

    def _fail(
        self, namespace: str, index: NamespaceIndex, needed: int, size: int, why: str
    ) -> None:
        first = namespace not in self._failed
        self._failed[namespace] = _Failed(index.log_seq, needed)
        (log.warning if first else log.debug)(
            "the HNSW graph of namespace %r (%s bytes) was not saved (%s): recalls use it from "
            "memory; it is saved again once space may be back (a later open rebuilds it)",
            namespace,
            f"{size:,}",
            why,
        )


def _space_may_be_back(last: _Failed, log_seq: int, free: int | None) -> bool:
    if log_seq - last.log_seq >= RETRY_AFTER_CHANGES:
        return True
    return free is not None and free >= last.needed


def _free_bytes(folder: Path) -> int | None:
    """Free bytes where ``folder`` is (or would be made); None when it cannot be asked."""
    for place in (folder, *folder.parents):
        if place.exists():
            try:
                return shutil.disk_usage(place).free
            except OSError:
                return None
    return None
