"""Loaders that turn each benchmark format into one neutral structure: docs to ingest, queries
with their relevant doc ids, and the namespace that scopes both.

Doc, query and session ids are unique across a whole ``Dataset`` (prefixed by their namespace
where the source reuses them), so a runner can keep one flat map from doc id to doc or session.
Dates are UTC: the sources give wall-clock times with no zone, and one fixed zone keeps "a day
after the last session" unambiguous. Malformed input raises ``InvalidInput`` naming the file and
the record; the known quirks of each source are handled as its protocol says and recorded in
``Dataset.notes``."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from fivefold.errors import InvalidInput

__all__ = ["Dataset", "Doc", "Query", "load_beir", "load_locomo", "load_longmemeval"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Doc:
    """One memory to ingest. ``session`` groups docs for session-level metrics (None when the
    source has no sessions); ``speaker`` is who said it, when the source says."""

    id: str
    content: str
    namespace: str
    event_at: datetime | None
    session: str | None
    speaker: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """One question, asked at time ``now`` inside ``namespace``. ``relevant`` holds doc ids and
    may be empty when only session-level relevance is known (LongMemEval questions whose evidence
    is an assistant turn): score those at session level only. ``category`` is the source's own
    label, kept as a string."""

    id: str
    text: str
    namespace: str
    category: str
    relevant: frozenset[str]
    now: datetime | None
    relevant_sessions: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class Dataset:
    """Docs and queries of one benchmark. Construction checks that ids are unique and that every
    relevant doc or session exists in the query's own namespace, so a loader bug cannot silently
    deflate recall. ``notes`` says what the loader skipped or dropped, for the report."""

    name: str
    docs: tuple[Doc, ...]
    queries: tuple[Query, ...]
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_dataset(self)

    def session_of(self) -> dict[str, str]:
        """Doc id -> session id, for the docs that belong to a session."""
        return {doc.id: doc.session for doc in self.docs if doc.session is not None}


def _check_dataset(dataset: Dataset) -> None:
    where = f"dataset {dataset.name!r}"
    namespace_of: dict[str, str] = {}
    sessions: set[tuple[str, str]] = set()
    for doc in dataset.docs:
        if doc.id in namespace_of:
            raise InvalidInput(f"{where}: duplicate doc id {doc.id!r}")
        namespace_of[doc.id] = doc.namespace
        if doc.session is not None:
            sessions.add((doc.namespace, doc.session))
    query_ids: set[str] = set()
    for query in dataset.queries:
        if query.id in query_ids:
            raise InvalidInput(f"{where}: duplicate query id {query.id!r}")
        query_ids.add(query.id)
        if not query.relevant and not query.relevant_sessions:
            raise InvalidInput(f"{where}: query {query.id!r} has no relevant doc or session")
        outside = sorted(d for d in query.relevant if namespace_of.get(d) != query.namespace)
        outside += sorted(
            s for s in query.relevant_sessions if (query.namespace, s) not in sessions
        )
        if outside:
            raise InvalidInput(
                f"{where}: query {query.id!r} names {outside[0]!r}, which is no doc or session "
                f"of its namespace {query.namespace!r}"
            )


# --- LoCoMo -----------------------------------------------------------------------------------

_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_DIA_ID = re.compile(r"D\d+:\d+")
_LOCOMO_DATE = re.compile(
    r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})\s*", re.I
)
# Month names spelt out here, because strptime's %B follows the process locale.
_MONTH_NAMES = (
    "january february march april may june july august september october november december"
)
_MONTHS = {n: i for i, m in enumerate(_MONTH_NAMES.split(), start=1) for n in (m, m[:3])}


def load_locomo(path: str | os.PathLike[str]) -> Dataset:
    """Load LoCoMo (``locomo10.json`` or a subset) with the project's retrieval protocol: one doc
    per turn (``"<speaker>: <text>"`` plus ``" [image: <caption>]"`` on image turns) dated by its
    session, one namespace per conversation, queries asked one day after the last session.
    Evidence strings are split on ``[;,\\s]+`` and only ``D<n>:<n>`` ids of existing turns are
    kept; a question left with no evidence is skipped. All five categories ("1".."5") are
    returned: the caller decides which to score."""
    file = Path(path)
    samples = _read_json(file)
    if not isinstance(samples, list):
        raise InvalidInput(f"{file}: expected a JSON list of samples, got {type(samples).__name__}")
    docs: list[Doc] = []
    queries: list[Query] = []
    skipped: list[str] = []
    for index, sample in enumerate(samples):
        sample_id = _get(sample, "sample_id", str, f"{file}: sample {index}")
        where = f"{file}: sample {sample_id!r}"
        turns, now = _locomo_turns(sample, sample_id, where)
        docs.extend(turns.values())
        for query in _locomo_questions(sample, turns=turns, now=now, where=where):
            if query.relevant:
                queries.append(query)
            else:
                skipped.append(query.id)
    notes = (f"skipped {len(skipped)} questions with no valid evidence: {', '.join(skipped)}",)
    return Dataset(
        name="locomo", docs=tuple(docs), queries=tuple(queries), notes=notes if skipped else ()
    )


def _locomo_turns(sample: object, sample_id: str, where: str) -> tuple[dict[str, Doc], datetime]:
    """Docs of one conversation keyed by dia_id, and the query time."""
    conversation = _get(sample, "conversation", dict, where)
    keys = sorted(
        (int(match.group(1)), key) for key in conversation if (match := _SESSION_KEY.fullmatch(key))
    )
    if not keys:
        raise InvalidInput(f"{where}: the conversation has no session_<n> key")
    turns: dict[str, Doc] = {}
    dates: list[datetime] = []
    for _, key in keys:
        when = _parse_locomo_date(
            _get(conversation, f"{key}_date_time", str, where), f"{where}, {key}"
        )
        dates.append(when)
        for index, turn in enumerate(_get(conversation, key, list, where)):
            at = f"{where}, {key} turn {index}"
            dia_id, doc = _locomo_doc(
                turn, namespace=sample_id, session=f"{sample_id}/{key}", when=when, where=at
            )
            if dia_id in turns:
                raise InvalidInput(f"{at}: dia_id {dia_id!r} appears twice")
            turns[dia_id] = doc
    return turns, max(dates) + timedelta(days=1)


def _locomo_doc(
    turn: object, *, namespace: str, session: str, when: datetime, where: str
) -> tuple[str, Doc]:
    speaker = _get(turn, "speaker", str, where)
    dia_id = _get(turn, "dia_id", str, where)
    content = f"{speaker}: {_get(turn, 'text', str, where)}"
    caption = _optional(turn, "blip_caption", str, where)
    if caption:
        content += f" [image: {caption}]"
    doc = Doc(
        id=f"{namespace}/{dia_id}",
        content=content,
        namespace=namespace,
        event_at=when,
        session=session,
        speaker=speaker,
    )
    return dia_id, doc


def _locomo_questions(
    sample: object, *, turns: Mapping[str, Doc], now: datetime, where: str
) -> Iterator[Query]:
    """One query per question, with empty relevance when none of its evidence survives."""
    sample_id = _get(sample, "sample_id", str, where)
    for index, record in enumerate(_get(sample, "qa", list, where)):
        at = f"{where}, qa {index}"
        text = _get(record, "question", str, at)
        category = str(_get(record, "category", int, at))
        found = [turns[dia_id] for dia_id in _evidence_ids(record, at) if dia_id in turns]
        yield Query(
            id=f"{sample_id}/q{index}",
            text=text,
            namespace=sample_id,
            category=category,
            relevant=frozenset(doc.id for doc in found),
            now=now,
            relevant_sessions=frozenset(doc.session for doc in found if doc.session),
        )


def _evidence_ids(record: object, where: str) -> list[str]:
    ids: list[str] = []
    for item in _get(record, "evidence", list, where):
        if not isinstance(item, str):
            raise InvalidInput(f"{where}: evidence items must be strings, got {item!r}")
        ids.extend(part for part in _EVIDENCE_SPLIT.split(item) if _DIA_ID.fullmatch(part))
    return ids


def _parse_locomo_date(text: str, where: str) -> datetime:
    """Parse ``"1:56 pm on 8 May, 2023"`` as UTC."""
    match = _LOCOMO_DATE.fullmatch(text)
    month = _MONTHS.get(match.group(5).lower()) if match else None
    if match is None or month is None:
        raise InvalidInput(f"{where}: cannot parse date {text!r} (like '1:56 pm on 8 May, 2023')")
    hour, minute, half, day, _, year = match.groups()
    hour_24 = int(hour) % 12 + (12 if half.lower() == "p" else 0)
    try:
        return datetime(int(year), month, int(day), hour_24, int(minute), tzinfo=UTC)
    except ValueError as exc:
        raise InvalidInput(f"{where}: invalid date {text!r} ({exc})") from exc


# --- LongMemEval ------------------------------------------------------------------------------

_LONGMEMEVAL_DATE = re.compile(
    r"\s*(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\(\w+\))?(?:\s+(\d{1,2}):(\d{2}))?\s*"
)


def load_longmemeval(path: str | os.PathLike[str]) -> Dataset:
    """Load a LongMemEval file (``longmemeval_s.json``, ``_m`` or ``_oracle``) with the official
    retrieval protocol: each question gets its own namespace holding the user turns of its own
    haystack (assistant turns are not indexed), turn-level relevance is the user turns marked
    ``has_answer``, session-level relevance is ``answer_session_ids``, and abstention questions
    (``question_id`` ending in ``_abs``) are skipped. Category is ``question_type``.

    Doc ids are ``"<question_id>/<session_id>:<n>"`` with ``n`` counting every turn from 1, as the
    official scripts do. A session id repeated within one haystack (13 histories of
    LongMemEval-S repeat a filler session, xiaowu0162/LongMemEval#54) keeps its first copy; a
    repeat whose turns differ from the first is an error."""
    file = Path(path)
    records = _read_json(file)
    if not isinstance(records, list):
        raise InvalidInput(
            f"{file}: expected a JSON list of questions, got {type(records).__name__}"
        )
    docs: list[Doc] = []
    queries: list[Query] = []
    notes: list[str] = []
    for index, record in enumerate(records):
        question_id = _get(record, "question_id", str, f"{file}: record {index}")
        if question_id.endswith("_abs"):
            continue
        where = f"{file}: question {question_id!r}"
        question_docs, query, dropped = _longmemeval_question(record, question_id, where)
        notes.extend(f"{question_id}: dropped repeated session {sid!r}" for sid in dropped)
        if query is None:
            notes.append(f"{question_id}: skipped, no evidence in its haystack")
            continue
        docs.extend(question_docs)
        queries.append(query)
    return Dataset(name=file.stem, docs=tuple(docs), queries=tuple(queries), notes=tuple(notes))


def _longmemeval_question(
    record: object, question_id: str, where: str
) -> tuple[list[Doc], Query | None, list[str]]:
    """Docs of one question's haystack, its query (None without evidence), repeated sessions."""
    session_ids = _str_list(record, "haystack_session_ids", where)
    dates = _str_list(record, "haystack_dates", where)
    sessions = _get(record, "haystack_sessions", list, where)
    if not len(session_ids) == len(dates) == len(sessions):
        raise InvalidInput(
            f"{where}: haystack_session_ids, haystack_dates and haystack_sessions differ in "
            f"length ({len(session_ids)}, {len(dates)}, {len(sessions)})"
        )
    docs: list[Doc] = []
    relevant: set[str] = set()
    first_copy: dict[str, object] = {}
    dropped: list[str] = []
    for session_id, date, turns in zip(session_ids, dates, sessions, strict=True):
        at = f"{where}, session {session_id!r}"
        if session_id in first_copy:
            if turns != first_copy[session_id]:
                raise InvalidInput(f"{at}: the session id repeats with different turns")
            dropped.append(session_id)
            continue
        first_copy[session_id] = turns
        when = _parse_longmemeval_date(date, at)
        session_docs, session_relevant = _longmemeval_session(
            turns, namespace=question_id, session_id=session_id, when=when, where=at
        )
        docs.extend(session_docs)
        relevant |= session_relevant
    answer_sessions = {
        f"{question_id}/{sid}" for sid in _str_list(record, "answer_session_ids", where)
    } & {doc.session for doc in docs}
    if not relevant and not answer_sessions:
        return docs, None, dropped
    query = Query(
        id=question_id,
        text=_get(record, "question", str, where),
        namespace=question_id,
        category=_get(record, "question_type", str, where),
        relevant=frozenset(relevant),
        now=_parse_longmemeval_date(_get(record, "question_date", str, where), where),
        relevant_sessions=frozenset(answer_sessions),
    )
    return docs, query, dropped


def _longmemeval_session(
    turns: object, *, namespace: str, session_id: str, when: datetime, where: str
) -> tuple[list[Doc], set[str]]:
    if not isinstance(turns, list):
        raise InvalidInput(
            f"{where}: a session must be a list of turns, got {type(turns).__name__}"
        )
    docs: list[Doc] = []
    relevant: set[str] = set()
    for number, turn in enumerate(turns, start=1):
        at = f"{where} turn {number}"
        if _get(turn, "role", str, at) != "user":
            continue
        doc = Doc(
            id=f"{namespace}/{session_id}:{number}",
            content=_get(turn, "content", str, at),
            namespace=namespace,
            event_at=when,
            session=f"{namespace}/{session_id}",
            speaker="user",
        )
        docs.append(doc)
        if _optional(turn, "has_answer", bool, at):
            relevant.add(doc.id)
    return docs, relevant


def _parse_longmemeval_date(text: str, where: str) -> datetime:
    """Parse ``"2023/05/20 (Sat) 02:21"`` as UTC; the weekday is ignored (it is redundant)."""
    match = _LONGMEMEVAL_DATE.fullmatch(text)
    if match is None:
        raise InvalidInput(
            f"{where}: cannot parse date {text!r} (expected '2023/05/20 (Sat) 02:21')"
        )
    year, month, day, hour, minute = match.groups()
    try:
        return datetime(
            int(year), int(month), int(day), int(hour or 0), int(minute or 0), tzinfo=UTC
        )
    except ValueError as exc:
        raise InvalidInput(f"{where}: invalid date {text!r} ({exc})") from exc


# --- BEIR -------------------------------------------------------------------------------------

_QRELS_HEADER = ["query-id", "corpus-id", "score"]


def load_beir(directory: str | os.PathLike[str], *, split: str = "test") -> Dataset:
    """Load a BEIR-format directory: ``corpus.jsonl`` (``_id``, ``title``, ``text``),
    ``queries.jsonl`` (``_id``, ``text``) and ``qrels/<split>.tsv`` (header ``query-id corpus-id
    score``; relevant means score > 0). Doc content is ``"<title> <text>"``. One namespace, named
    after the directory; category ``"all"``. Only queries with a relevant doc are kept, in
    ``queries.jsonl`` order; qrels rows naming an unknown query or doc are dropped (noted), and a
    split that keeps no query at all is an error."""
    root = Path(directory)
    namespace = root.name
    docs = tuple(_beir_corpus(root / "corpus.jsonl", namespace))
    texts = _beir_queries(root / "queries.jsonl")
    qrels_path = root / "qrels" / f"{split}.tsv"
    qrels = _beir_qrels(qrels_path)
    doc_ids = {doc.id for doc in docs}
    queries: list[Query] = []
    dropped = 0
    for query_id, text in texts.items():
        judged = qrels.pop(query_id, set())
        relevant = frozenset(judged & doc_ids)
        dropped += len(judged) - len(relevant)
        if relevant:
            queries.append(
                Query(
                    id=query_id,
                    text=text,
                    namespace=namespace,
                    category="all",
                    relevant=relevant,
                    now=None,
                )
            )
    dropped += sum(len(judged) for judged in qrels.values())
    if not queries:
        raise InvalidInput(f"{qrels_path}: no query has a relevant doc in the corpus")
    notes = (f"dropped {dropped} relevant qrels naming an unknown query or doc",) if dropped else ()
    return Dataset(name=namespace, docs=docs, queries=tuple(queries), notes=notes)


def _beir_corpus(path: Path, namespace: str) -> Iterator[Doc]:
    for where, record in _read_jsonl(path):
        title = _optional(record, "title", str, where) or ""
        text = _get(record, "text", str, where)
        yield Doc(
            id=_get(record, "_id", str, where),
            content=f"{title} {text}".strip(),
            namespace=namespace,
            event_at=None,
            session=None,
            speaker=None,
        )


def _beir_queries(path: Path) -> dict[str, str]:
    texts: dict[str, str] = {}
    for where, record in _read_jsonl(path):
        query_id = _get(record, "_id", str, where)
        if query_id in texts:
            raise InvalidInput(f"{where}: duplicate query id {query_id!r}")
        texts[query_id] = _get(record, "text", str, where)
    return texts


def _beir_qrels(path: Path) -> dict[str, set[str]]:
    """Query id -> ids of docs judged relevant (score > 0)."""
    relevant: dict[str, set[str]] = {}
    lines = ((n, line) for n, line in enumerate(_read_text(path).splitlines(), 1) if line.strip())
    _, header = next(lines, (0, ""))
    if header.split() != _QRELS_HEADER:
        raise InvalidInput(f"{path}: expected the header 'query-id<TAB>corpus-id<TAB>score'")
    for number, line in lines:
        try:
            query_id, doc_id, score = line.split("\t")
            graded = int(score)
        except ValueError as exc:
            raise InvalidInput(
                f"{path}: line {number}: expected 'query-id<TAB>corpus-id<TAB>integer score', "
                f"got {line!r}"
            ) from exc
        if graded > 0:
            relevant.setdefault(query_id, set()).add(doc_id)
    return relevant


# --- Reading and checking records -------------------------------------------------------------


def _read_text(path: Path) -> str:
    try:
        return path.read_text(
            encoding="utf-8-sig"
        )  # a byte order mark (Windows editors'): not text
    except FileNotFoundError as exc:
        raise InvalidInput(f"{path}: file not found") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot read the file ({exc})") from exc


def _read_json(path: Path) -> Any:
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path}: not valid JSON ({exc})") from exc


def _read_jsonl(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, record) for each non-blank line."""
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}: line {number}"
        try:
            yield where, json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{where}: not valid JSON ({exc})") from exc


def _get(record: object, key: str, kind: type[_T], where: str) -> _T:
    if not isinstance(record, dict):
        raise InvalidInput(f"{where}: expected a JSON object, got {type(record).__name__}")
    if key not in record:
        raise InvalidInput(f"{where}: missing {key!r}")
    value = record[key]
    # bool is an int subclass; a JSON true where a number belongs is still malformed
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InvalidInput(
            f"{where}: {key!r} must be {kind.__name__}, got {type(value).__name__} {value!r:.60}"
        )
    return value


def _optional(record: object, key: str, kind: type[_T], where: str) -> _T | None:
    if isinstance(record, dict) and record.get(key) is None:
        return None
    return _get(record, key, kind, where)


def _str_list(record: object, key: str, where: str) -> list[str]:
    values = _get(record, key, list, where)
    for value in values:
        if not isinstance(value, str):
            raise InvalidInput(f"{where}: {key!r} must hold strings, got {value!r:.60}")
    return values
