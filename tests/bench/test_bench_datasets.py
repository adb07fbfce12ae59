from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fivefold.bench import datasets
from fivefold.bench.datasets import (
    Dataset,
    Doc,
    Query,
    load_beir,
    load_locomo,
    load_longmemeval,
)
from fivefold.errors import InvalidInput

DATA = Path(__file__).parent / "data"
# the LoCoMo README's place for the data: ../shared/data/locomo/ beside the repository
LOCOMO_PUBLIC = Path(__file__).resolve().parents[3] / "shared/data/locomo/locomo_public.json"


def test_public_names() -> None:
    assert sorted(datasets.__all__) == [
        "Dataset",
        "Doc",
        "Query",
        "load_beir",
        "load_locomo",
        "load_longmemeval",
    ]


# --- LoCoMo -----------------------------------------------------------------------------------


def test_locomo_docs_one_per_turn_in_session_order() -> None:
    data = load_locomo(DATA / "locomo_tiny.json")
    assert data.name == "locomo"
    assert [doc.id for doc in data.docs] == [
        "conv-a/D1:1",
        "conv-a/D1:2",
        "conv-a/D1:3",
        "conv-a/D2:1",
        "conv-a/D2:2",
        "conv-b/D1:1",
        "conv-b/D2:1",
        "conv-b/D10:1",
    ]
    image = data.docs[2]
    assert image == Doc(
        id="conv-a/D1:3",
        content="Ann: A beagle, look! [image: a photo of a small dog on a couch]",
        namespace="conv-a",
        event_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        session="conv-a/session_1",
        speaker="Ann",
    )
    assert data.docs[3].content == "Bob: How is the beagle doing?"
    # 12:05 am is just after midnight, 12:30 pm just after noon
    assert data.docs[5].event_at == datetime(2024, 1, 1, 0, 5, tzinfo=UTC)
    assert data.docs[6].event_at == datetime(2024, 1, 2, 12, 30, tzinfo=UTC)


def test_locomo_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """Refused as "not valid JSON" (the JSONL reader took one already)."""
    marked = tmp_path / "locomo_bom.json"
    marked.write_bytes(b"\xef\xbb\xbf" + (DATA / "locomo_tiny.json").read_bytes())
    assert load_locomo(marked).docs == load_locomo(DATA / "locomo_tiny.json").docs


def test_locomo_queries_follow_the_evidence_protocol() -> None:
    data = load_locomo(DATA / "locomo_tiny.json")
    by_id = {query.id: query for query in data.queries}
    assert list(by_id) == ["conv-a/q0", "conv-a/q1", "conv-a/q2", "conv-a/q4", "conv-b/q0"]
    assert by_id["conv-a/q1"].relevant == {"conv-a/D1:3", "conv-a/D2:1"}
    assert by_id["conv-a/q1"].relevant_sessions == {"conv-a/session_1", "conv-a/session_2"}
    assert by_id["conv-a/q2"].relevant == {"conv-a/D2:2"}
    assert by_id["conv-a/q4"].relevant == {"conv-a/D2:1", "conv-a/D1:2"}
    assert by_id["conv-b/q0"].relevant == {"conv-b/D2:1", "conv-b/D10:1"}
    assert [query.category for query in data.queries] == ["4", "1", "2", "5", "2"]
    # a day after the last session, which is not the last date key (session_3 has no turns key)
    assert by_id["conv-a/q0"].now == datetime(2023, 6, 20, 10, 4, tzinfo=UTC)
    assert by_id["conv-b/q0"].now == datetime(2024, 2, 4, 21, 15, tzinfo=UTC)
    assert by_id["conv-a/q0"] == Query(
        id="conv-a/q0",
        text="What pet did Ann adopt?",
        namespace="conv-a",
        category="4",
        relevant=frozenset({"conv-a/D1:1"}),
        now=datetime(2023, 6, 20, 10, 4, tzinfo=UTC),
        relevant_sessions=frozenset({"conv-a/session_1"}),
    )
    assert data.notes == (
        "skipped 3 questions with no valid evidence: conv-a/q3, conv-a/q5, conv-a/q6",
    )


@pytest.mark.skipif(not LOCOMO_PUBLIC.exists(), reason=f"{LOCOMO_PUBLIC} is not present")
def test_locomo_public_counts() -> None:
    data = load_locomo(LOCOMO_PUBLIC)
    assert len({doc.namespace for doc in data.docs}) == 7
    assert len(data.docs) == 3944
    assert len(set(data.session_of().values())) == 181
    assert sum("[image: " in doc.content for doc in data.docs) == 850
    # README: 209/213/66/553/312 questions; two category-3 questions have empty evidence
    assert Counter(query.category for query in data.queries) == {
        "1": 209,
        "2": 213,
        "3": 64,
        "4": 553,
        "5": 312,
    }
    assert len(data.queries) == 1351
    assert data.notes == ("skipped 2 questions with no valid evidence: conv-26/q30, conv-26/q46",)
    latest: dict[str, datetime] = {}
    for doc in data.docs:
        assert doc.event_at is not None
        latest[doc.namespace] = max(doc.event_at, latest.get(doc.namespace, doc.event_at))
    for query in data.queries:
        assert query.now is not None
        assert (query.now - latest[query.namespace]).days == 1


# --- LongMemEval ------------------------------------------------------------------------------


def test_longmemeval_indexes_user_turns_per_question() -> None:
    data = load_longmemeval(DATA / "longmemeval_tiny.json")
    assert data.name == "longmemeval_tiny"
    assert [doc.id for doc in data.docs] == [
        "q-user/sharegpt_f1_0:1",
        "q-user/answer_a1:1",
        "q-user/answer_a1:3",
        "q-user/ultrachat_9:1",
        "q-asst/sharegpt_f1_0:1",
        "q-asst/answer_b2:1",
        "q-multi/answer_c1:2",
        "q-multi/sharegpt_f1_0:1",
        "q-multi/answer_c2:1",
    ]
    assert all(doc.speaker == "user" for doc in data.docs)
    assert data.docs[1] == Doc(
        id="q-user/answer_a1:1",
        content="I just graduated with a degree in Business Administration.",
        namespace="q-user",
        event_at=datetime(2023, 5, 21, 10, 0, tzinfo=UTC),
        session="q-user/answer_a1",
        speaker="user",
    )


def test_longmemeval_relevance_and_skips() -> None:
    data = load_longmemeval(DATA / "longmemeval_tiny.json")
    by_id = {query.id: query for query in data.queries}
    assert list(by_id) == ["q-user", "q-asst", "q-multi"]
    assert by_id["q-user"] == Query(
        id="q-user",
        text="What degree did I graduate with?",
        namespace="q-user",
        category="single-session-user",
        relevant=frozenset({"q-user/answer_a1:1"}),
        now=datetime(2023, 5, 30, 23, 40, tzinfo=UTC),
        relevant_sessions=frozenset({"q-user/answer_a1"}),
    )
    # the evidence is an assistant turn, which is not indexed: session-level relevance only
    assert by_id["q-asst"].relevant == frozenset()
    assert by_id["q-asst"].relevant_sessions == {"q-asst/answer_b2"}
    assert by_id["q-multi"].relevant == {"q-multi/answer_c1:2", "q-multi/answer_c2:1"}
    assert by_id["q-multi"].relevant_sessions == {"q-multi/answer_c1", "q-multi/answer_c2"}
    assert data.notes == (
        "q-multi: dropped repeated session 'sharegpt_f1_0'",
        "q-lost: skipped, no evidence in its haystack",
    )


# --- BEIR -------------------------------------------------------------------------------------


def test_beir_directory() -> None:
    data = load_beir(DATA / "beir_tiny")
    assert data.name == "beir_tiny"
    assert [(doc.id, doc.content) for doc in data.docs] == [
        ("d1", "Beagles Beagles are small scent hounds."),
        ("d2", "Hiking boots need breaking in."),
        ("d3", "Trail running is hiking, faster."),
        ("d4", "Cats Cats sleep most of the day."),
    ]
    assert {doc.namespace for doc in data.docs} == {"beir_tiny"}
    assert [(query.id, query.relevant) for query in data.queries] == [
        ("q1", frozenset({"d1"})),
        ("q2", frozenset({"d2", "d3"})),
    ]
    assert data.queries[1] == Query(
        id="q2",
        text="hiking gear",
        namespace="beir_tiny",
        category="all",
        relevant=frozenset({"d2", "d3"}),
        now=None,
    )
    assert data.notes == ("dropped 2 relevant qrels naming an unknown query or doc",)


# --- Errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("loader", [load_locomo, load_longmemeval])
def test_missing_and_unparseable_json_files(
    loader: Callable[[Path], Dataset], tmp_path: Path
) -> None:
    with pytest.raises(InvalidInput, match=re.escape("nope.json: file not found")):
        loader(tmp_path / "nope.json")
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    with pytest.raises(InvalidInput, match=re.escape("broken.json: not valid JSON")):
        loader(broken)
    broken.write_text("{}", encoding="utf-8")
    with pytest.raises(InvalidInput, match=re.escape("broken.json: expected a JSON list")):
        loader(broken)


def _locomo_sample() -> dict[str, object]:
    return json.loads((DATA / "locomo_tiny.json").read_text(encoding="utf-8"))[0]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("conversation", "session_1_date_time"), "yesterday", "session_1: cannot parse date"),
        (("conversation", "session_2_date_time"), "1:00 pm on 31 June, 2023", "invalid date"),
        (("conversation", "session_1", 0, "text"), None, r"turn 0: 'text' must be str"),
        (("qa", 0, "category"), "4", r"qa 0: 'category' must be int"),
        (("qa", 1, "evidence"), "D1:3", r"qa 1: 'evidence' must be list"),
        (("conversation", "session_1", 1, "dia_id"), "D1:1", "dia_id 'D1:1' appears twice"),
    ],
)
def test_locomo_malformed_records(
    tmp_path: Path, path: tuple[str | int, ...], value: object, message: str
) -> None:
    sample = _locomo_sample()
    node: object = sample
    for key in path[:-1]:
        node = node[key]  # type: ignore[index]
    node[path[-1]] = value  # type: ignore[index]
    file = tmp_path / "locomo.json"
    file.write_text(json.dumps([sample]), encoding="utf-8")
    with pytest.raises(InvalidInput, match=message) as caught:
        load_locomo(file)
    assert "locomo.json: sample 'conv-a'" in str(caught.value)


def _longmemeval_records() -> list[dict[str, object]]:
    return json.loads((DATA / "longmemeval_tiny.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("haystack_dates", ["2023/05/20 (Sat) 02:21"], "differ in length"),
        ("question_date", "May 30", "cannot parse date 'May 30'"),
        ("haystack_session_ids", ["a", 7, "c"], "'haystack_session_ids' must hold strings"),
        ("haystack_sessions", [[], "oops", []], "must be a list of turns"),
        ("haystack_sessions", [[], [["user", "hi"]], []], "turn 1: expected a JSON object"),
        ("question", None, "'question' must be str"),
    ],
)
def test_longmemeval_malformed_records(
    tmp_path: Path, key: str, value: object, message: str
) -> None:
    records = _longmemeval_records()
    records[0][key] = value
    file = tmp_path / "lme.json"
    file.write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(InvalidInput, match=message) as caught:
        load_longmemeval(file)
    assert "lme.json: question 'q-user'" in str(caught.value)


def test_longmemeval_repeated_session_with_other_turns(tmp_path: Path) -> None:
    records = _longmemeval_records()
    records[3]["haystack_sessions"][3][0]["content"] = "Something else."  # type: ignore[index]
    file = tmp_path / "lme.json"
    file.write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(InvalidInput, match="'sharegpt_f1_0': the session id repeats"):
        load_longmemeval(file)


def _beir_copy(tmp_path: Path) -> Path:
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        (root / name).write_bytes((DATA / "beir_tiny" / name).read_bytes())
    return root


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("qrels/test.tsv", None, r"test.tsv: file not found"),
        ("corpus.jsonl", None, r"corpus.jsonl: file not found"),
        ("qrels/test.tsv", "q1\td1\t1\n", "expected the header"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\thigh\n", "line 2: expected"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1 d1 1\n", "line 2: expected"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq3\td4\t1\n", None),
        ("queries.jsonl", '{"_id": "q1", "text": "a"}\n{"_id": "q1"', "line 2: not valid JSON"),
        ("queries.jsonl", '{"_id": "q1", "text": "a"}\n{"_id": "q1", "text": "b"}', "duplicate"),
        ("corpus.jsonl", '{"_id": "d1", "title": "t"}', r"line 1: missing 'text'"),
        ("corpus.jsonl", '{"_id": 1, "text": "t"}', r"line 1: '_id' must be str, got int 1"),
        ("corpus.jsonl", '{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}', "duplicate"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t0\n", "no query has a relevant"),
    ],
)
def test_beir_malformed_files(
    tmp_path: Path, name: str, content: str | None, message: str | None
) -> None:
    root = _beir_copy(tmp_path)
    if content is None:
        (root / name).unlink()
    else:
        (root / name).write_text(content, encoding="utf-8")
    if message is None:  # a well-formed variant of the same file loads, so the cases can fail
        assert [query.id for query in load_beir(root).queries] == ["q3"]
        return
    with pytest.raises(InvalidInput, match=message):
        load_beir(root)


def test_dataset_rejects_relevance_outside_the_namespace() -> None:
    doc = Doc(id="a/1", content="x", namespace="a", event_at=None, session="a/s", speaker=None)
    query = Query(
        id="q", text="x", namespace="b", category="c", relevant=frozenset({"a/1"}), now=None
    )
    with pytest.raises(InvalidInput, match="names 'a/1', which is no doc or session"):
        Dataset(name="t", docs=(doc,), queries=(query,))
    empty = Query(id="q", text="x", namespace="a", category="c", relevant=frozenset(), now=None)
    with pytest.raises(InvalidInput, match="no relevant doc or session"):
        Dataset(name="t", docs=(doc,), queries=(empty,))
    sessions = Query(
        id="q",
        text="x",
        namespace="a",
        category="c",
        relevant=frozenset(),
        now=None,
        relevant_sessions=frozenset({"a/s"}),
    )
    assert Dataset(name="t", docs=(doc,), queries=(sessions,)).session_of() == {"a/1": "a/s"}
