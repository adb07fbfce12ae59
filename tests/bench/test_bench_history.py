"""``fivefold bench updates`` and ``fivefold bench facts`` run end to end on small data folders
of the packaged formats (the hashing embedder: no model needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from fivefold.bench.cli import bench
from fivefold.bench.updates import load_users

LISBON = "I live in a flat in Lisbon near the river."
UTRECHT = "We moved to Utrecht; the new place is by the canal."
TOBI = "Tobi goes to Barlow Hall High School."
ZARA = "Zara goes to Oakbank Primary School."


def _said(key: str, content: str, when: str) -> dict[str, Any]:
    return {"id": key, "content": content, "written_at": when, "event_at": None}


def _updates_user(name: str) -> dict[str, Any]:
    return {
        "user": name,
        "now": "2026-10-01T00:00:00+00:00",
        "background": [_said(f"{name}:b1", "I trained as a nurse in Salford.", "2024-01-01")],
        "chains": [
            {
                "id": f"{name}:c1",
                "statements": [
                    _said(f"{name}:c1:1", LISBON, "2024-02-01"),
                    _said(f"{name}:c1:2", UTRECHT, "2026-01-10"),
                ],
                "present": [{"id": f"{name}:c1:qp1", "text": "Which city do I live in?"}],
                "past": [
                    {"id": f"{name}:c1:qh1", "text": "Where did I live before Utrecht?",
                     "answer": f"{name}:c1:1"}
                ],
            }
        ],
        "coexisting": [
            {
                "id": f"{name}:p1",
                "statements": [
                    _said(f"{name}:p1:1", TOBI, "2026-09-05"),
                    _said(f"{name}:p1:2", ZARA, "2026-09-05T00:01"),
                ],
                "questions": [
                    {"id": f"{name}:p1:q1", "text": "Which school does Tobi go to?",
                     "relevant": [f"{name}:p1:1"]}
                ],
            }
        ],
    }  # fmt: skip


def _updates_folder(root: Path) -> Path:
    for name in ("lena", "priya"):
        (root / f"{name}.json").write_text(json.dumps(_updates_user(name)), encoding="utf-8")
    pair = {
        "id": "x01",
        "a": {"user": "lena", **_said("x01:a", "My blood type is O positive.", "2025-01-01")},
        "b": {"user": "priya", **_said("x01:b", "My blood type is A.", "2025-01-02")},
        "questions": [
            {"user": "lena", "text": "What's my blood type?", "relevant": ["x01:a"]},
            {"user": "priya", "text": "What blood type am I?", "relevant": ["x01:b"]},
        ],
    }
    (root / "shared_scope.json").write_text(json.dumps({"pairs": [pair]}), encoding="utf-8")
    return root


def test_updates_counts_each_kind_of_question_and_what_was_marked(tmp_path: Path) -> None:
    folder = _updates_folder(tmp_path)
    users = load_users(folder)
    assert [u.name for u in users] == ["lena", "priya"]
    kinds = sorted(q.kind for q in users[0].questions)
    assert kinds == ["coexisting", "coexisting", "past", "present"]
    out = tmp_path / "updates.json"
    ran = CliRunner().invoke(
        bench, ["updates", "--data", str(folder), "--embedder", "hashing", "--json", str(out)]
    )
    assert ran.exit_code == 0, ran.output
    assert "| fivefold | dev |" in ran.output
    body = json.loads(out.read_text())
    assert set(body) == {"fivefold", "history-off", "recency", "bm25"}
    engine, off = body["fivefold"], body["history-off"]
    assert engine["dev"]["present"] == engine["held out"]["present"] == 1
    assert engine["all"]["coexisting"] == 4  # a pair's question and a shared one, per user
    assert engine["all"]["memories"] == 2 * 5 + 2
    # The move supersedes the old home on its own, for each user; nothing else is marked.
    assert (engine["all"]["links"], engine["all"]["linked"]) == (2, 2)
    assert engine["all"]["false_supersessions"] == 0
    assert engine["all"]["current_first"] == 2
    assert off["all"]["links"] == off["all"]["linked"] == 0  # not counted without history


def _facts_folder(root: Path) -> Path:
    memories = [
        {
            "id": "maya:m1",
            "content": "I bike in along the river trail, 35 minutes each way.",
            "written_at": "2026-01-08T09:10:00+00:00",
            "event_at": None,
            "type": "fact",
        },
        {
            "id": "maya:m2",
            "content": "A full Kestrel pipeline takes about 18 minutes.",
            "written_at": "2026-01-09T09:10:00+00:00",
            "event_at": None,
            "type": "fact",
        },
        {
            "id": "maya:m3",
            "content": "My badge number is 40417.",
            "written_at": "2026-01-10T09:10:00+00:00",
            "event_at": None,
            "type": "fact",
        },
    ]
    questions = [
        {"id": "maya:q1", "text": "What's my badge number?", "stratum": "identifier",
         "relevant": ["maya:m3"]},
        {"id": "maya:q2", "text": "How do I bike in?", "stratum": "paraphrase",
         "relevant": ["maya:m1"]},
        {"id": "maya:q3", "text": "What is my blood type?", "stratum": "abstain", "relevant": []},
    ]  # fmt: skip
    user = {
        "user": "maya",
        "name": "Maya Lindqvist",
        "now": "2026-09-15T09:00:00+00:00",
        "memories": memories,
        "relations": [{"source": "Maya Lindqvist", "relation": "reports_to", "target": "Helena"}],
        "aliases": [["Maya Lindqvist", "Maya"]],
        "questions": questions,
    }
    (root / "maya.json").write_text(json.dumps(user), encoding="utf-8")
    return root


def test_facts_scores_recall_at_5_per_stratum_with_the_baselines(tmp_path: Path) -> None:
    folder = _facts_folder(tmp_path)
    out = tmp_path / "facts.json"
    ran = CliRunner().invoke(
        bench, ["facts", "--data", str(folder), "--embedder", "hashing", "--json", str(out)]
    )
    assert ran.exit_code == 0, ran.output
    body = json.loads(out.read_text())
    assert set(body) == {"fivefold", "bm25", "dense", "rrf"}
    engine = body["fivefold"]
    assert engine["keys"] == ["maya:q1", "maya:q2", "maya:q3"]
    assert engine["recall"][0] == 1.0  # the badge number, by its words
    assert engine["recall"][2] == 0.0  # nothing answers an abstain question
    assert "### dev users (maya, kofi)" in ran.output
    assert "### held out users" not in ran.output  # none in this folder
