"""What both backends write and report alike about the store itself: the meta keys of a copy's
mark and of a job's progress (and the noting of it), the findings ``check`` reports on them, the
check that each memory a feedback labels is there, and the refusal of a store built with another
model."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from fivefold.errors import EmbeddingModelMismatch, NotFound, StoreError
from fivefold.store.records import Progress
from fivefold.types import Finding

COPY_MARK = "copy_in_progress"  # the meta key of ``Admin.mark_copy``
PROGRESS_PREFIX = "progress:"  # the meta keys of ``Admin.progress``
PROGRESS_MOVED = (
    "another run of the same import wrote to this store meanwhile (its progress moved): "
    "nothing of this batch was written; run the command again once the other has ended"
)
COPY_REFUSED = (
    "another copy into this store is under way or did not finish, or it holds data (memories, "
    "entities, relations, aliases, feedback or a model)"
)


def note_progress(
    run: Callable[[str, tuple[str, ...]], int],
    progress: Progress,
    *,
    insert: str,
    update: str,
    location: str,
) -> None:
    """Note a job's ``progress`` in the write's transaction: ``insert`` (key, value) where
    there was no note, else ``update`` (value, key, previous); ``run`` executes one and says
    how many rows it changed. Not one: another run of the job moved the note meanwhile."""
    key = PROGRESS_PREFIX + progress.key
    if progress.previous is None:
        noted = run(insert, (key, progress.value))
    else:
        noted = run(update, (progress.value, key, progress.previous))
    if noted != 1:  # raised in the write's transaction: it is rolled back
        raise StoreError(f"{location}: {PROGRESS_MOVED}")


def labels_found(labels: Mapping[int, float], found: Iterable[int]) -> None:
    """``add_feedback``'s check, in its transaction, that each labelled memory is there: a
    forget between the caller's check and the write would leave a label of no memory."""
    if missing := sorted(set(labels) - set(found)):
        raise NotFound(f"no memory with id {missing[0]} (forgotten meanwhile)")


def unfinished_copy(note: str, memories: int) -> Finding:
    """``check``'s finding for a copy mark left behind (or a copy still running)."""
    return Finding(
        "copy",
        False,
        f"a copy into this store has not finished ({note}; {memories:,} memories copied): "
        "if it is not still running, copy again into an empty store (a new file, or a new "
        "Postgres schema); no repair clears this",
    )


def mistyped_rows(rows: str, mistyped: int, *, repaired: bool) -> Finding:
    """``check``'s finding on the ``rows`` (mentions; on Postgres postings too) that carry their
    memory's type, so that each type's read finds them: one with another type is missed by its
    own type's read (and by every read, when the type is none of the memory types)."""
    part = f"{rows}' memory types"
    if not mistyped:
        return Finding(part, True, f"every one of the {rows} carries its memory's type")
    detail = f"{mistyped:,} {rows} carry another type than their memory's (reads miss them)"
    return Finding(part, repaired, detail, repaired)


def check_model(meta: Mapping[str, str], *, location: str, model: str, dim: int) -> None:
    """Refuse to open a store with another embedding model (or width) than it was built with."""
    stored = meta.get("embedding_model", "?")
    if stored != model or meta.get("embedding_dim") != str(dim):
        raise EmbeddingModelMismatch(
            f"{location} was built with embedding model {stored!r} "
            f"({meta.get('embedding_dim')}-d) but is being opened with {model!r} "
            f"({dim}-d): set [embed] in the config to the model it was built with, or "
            "move it to this one with `fivefold reembed`",
            stored_model=stored,
            stored_dim=int(width) if (width := meta.get("embedding_dim", "")).isdigit() else None,
        )
