"""``fivefold bench facts``: what agents store most, facts, preferences and dated events written
one by one (the data in ``bench/data/facts``, written for fivefold: four fictional users). Each
user's memories, relations and aliases are written into that user's scope in order, then every
question is asked at the file's ``now``, and scored by recall@5 (the share of its answering
memories in the top 5) per stratum; an abstain question (nothing stored answers it) is scored by
the confidence of its top hit, which should be below what answered questions get.

Systems, from one run: ``fivefold`` (the default engine), and the plain baselines over the same
store with the optimizer off: ``bm25`` (the lexical leg alone), ``dense`` (the semantic leg
alone) and ``rrf`` (plain RRF, k = 60, of the two). Significance: a paired bootstrap of each
baseline against fivefold on recall@5. Users are split: maya and kofi are the users the rules
were written against; ines and tane are held out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from fivefold.bench.stats import paired_bootstrap
from fivefold.config import Config, OptimizerConfig
from fivefold.embed.base import Embedder
from fivefold.errors import InvalidInput
from fivefold.memory import Memory
from fivefold.read.fuse import plain_rrf
from fivefold.types import OptimizerMode, RetrieverName

DEV_USERS = ("maya", "kofi")
HELD_OUT_USERS = ("ines", "tane")
SYSTEMS = ("fivefold", "bm25", "dense", "rrf")
K = 5
DEPTH = 50
ABSTAIN = "abstain"


@dataclass(frozen=True, slots=True)
class Question:
    key: str
    text: str
    stratum: str
    relevant: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class User:
    name: str
    now: datetime
    data: Mapping[str, Any]
    questions: tuple[Question, ...]


def load_users(folder: Path | None = None) -> list[User]:
    root = folder or Path(str(resources.files("fivefold.bench").joinpath("data/facts")))
    users = []
    for path in sorted(root.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        questions = tuple(
            Question(q["id"], q["text"], q["stratum"], tuple(q["relevant"]))
            for q in data["questions"]
        )
        users.append(User(data["user"], datetime.fromisoformat(data["now"]), data, questions))
    return users


@dataclass
class Scores:
    """Per question (in the users' order): recall@5, and the top hit's confidence."""

    keys: list[str] = field(default_factory=list)
    strata: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    confidence: list[float] = field(default_factory=list)


def write_user(mem: Memory, user: User) -> dict[str, int]:
    """The user's memories (in order, at their times), relations and aliases; memory ids."""
    ids: dict[str, int] = {}
    for m in user.data["memories"]:
        item = {"content": m["content"], "created_at": m["written_at"], "user_id": user.name}
        for name in ("event_at", "type"):
            if m.get(name) is not None:
                item[name] = m[name]
        ids[m["id"]] = mem.remember_many([item])[0].id
    for r in user.data.get("relations", ()):
        mem.relate(
            r["source"],
            r["relation"],
            r["target"],
            kind=r.get("kind", "structural"),
            valid_from=r.get("valid_from"),
            valid_to=r.get("valid_to"),
            user_id=user.name,
        )
    for name, *others in user.data.get("aliases", ()):  # a name and its other names
        for alias in others:
            try:
                mem.alias(name, alias)
            except InvalidInput:  # a name that names another entity already: left out
                continue
    return ids


def run_user(engine: Memory, plain: Memory, user: User, out: Mapping[str, Scores]) -> None:
    ids = write_user(engine, user)
    write_user(plain, user)
    for q in user.questions:
        wanted = {ids[k] for k in q.relevant}
        result = engine.recall(q.text, k=DEPTH, user_id=user.name, now=user.now)
        found = {"fivefold": [h.memory.id for h in result.hits]}
        top = {"fivefold": result.hits[0].confidence if result.hits else 0.0}
        explained = plain.explain(q.text, k=DEPTH, user_id=user.name, now=user.now)
        runs = {r.name: r for r in explained.runs}
        legs = [runs[n] for n in (RetrieverName.SEMANTIC, RetrieverName.LEXICAL) if n in runs]
        found["bm25"] = _ids(runs.get(RetrieverName.LEXICAL))
        found["dense"] = _ids(runs.get(RetrieverName.SEMANTIC))
        found["rrf"] = [f.id for f in plain_rrf(legs)]
        for system in SYSTEMS:
            scores = out[system]
            scores.keys.append(q.key)
            scores.strata.append(q.stratum)
            scores.users.append(user.name)
            hit = len(wanted & set(found[system][:K])) / len(wanted) if wanted else 0.0
            scores.recall.append(hit)
            scores.confidence.append(top.get(system, 0.0))


def _ids(run: Any) -> list[int]:
    return [] if run is None else [item.id for item in run.items]


def run_all(users: Sequence[User], embedder: Embedder, db: str | None) -> dict[str, Scores]:
    out = {system: Scores() for system in SYSTEMS}
    plain_config = Config(optimizer=OptimizerConfig(mode=OptimizerMode.OFF))
    with (
        Memory.open(db or ":memory:", embedder=embedder) as engine,
        Memory.open(":memory:", embedder=embedder, config=plain_config) as plain,
    ):
        for user in users:
            run_user(engine, plain, user, out)
    return out


def summary(results: Mapping[str, Scores], users: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per system: recall@5 over answerable questions of ``users``, and per stratum."""
    out: dict[str, dict[str, float]] = {}
    for system, s in results.items():
        rows: dict[str, list[float]] = {}
        for stratum, user, value in zip(s.strata, s.users, s.recall, strict=True):
            if user in users and stratum != ABSTAIN:
                rows.setdefault(stratum, []).append(value)
                rows.setdefault("all", []).append(value)
        out[system] = {k: float(np.mean(v)) for k, v in sorted(rows.items())}
    return out


def abstain_separation(scores: Scores, users: Sequence[str]) -> tuple[float, float]:
    """The share of abstain questions whose top confidence is below the answerable ones' 10th
    percentile, and that percentile."""
    rows = list(zip(scores.confidence, scores.strata, scores.users, scores.recall, strict=True))
    answered = [c for c, s, u, r in rows if u in users and s != ABSTAIN and r > 0]
    abstain = [c for c, s, u, _ in rows if u in users and s == ABSTAIN]
    if not answered or not abstain:
        return 0.0, 0.0
    floor = float(np.percentile(answered, 10))
    return float(np.mean([c < floor for c in abstain])), floor


def table(results: Mapping[str, Scores], users: Sequence[str]) -> str:
    figures = summary(results, users)
    strata = [k for k in figures["fivefold"] if k != "all"]
    header = "| system | all | " + " | ".join(strata) + " |"
    lines = [header, "|---" * (len(strata) + 2) + "|"]
    for system, row in figures.items():
        cells = " | ".join(f"{100 * row.get(k, 0.0):.1f}" for k in strata)
        lines.append(f"| {system} | {100 * row['all']:.1f} | {cells} |")
    base = results["fivefold"]
    mask = [u in users and s != ABSTAIN for u, s in zip(base.users, base.strata, strict=True)]
    a = np.array(base.recall)[mask]
    for system in SYSTEMS[1:]:
        b = np.array(results[system].recall)[mask]
        test = paired_bootstrap(a, b, resamples=2000)
        lines.append(
            f"\nfivefold - {system}: {100 * test.mean_diff:+.1f} points "
            f"[{100 * test.ci_low:+.1f}, {100 * test.ci_high:+.1f}], p = {test.p_value:.3f}"
        )
    share, floor = abstain_separation(base, users)
    lines.append(
        f"\nabstain: {100 * share:.0f} % below the answered questions' 10th percentile "
        f"of confidence ({floor:.3f})"
    )
    return "\n".join(lines)


__all__ = ["load_users", "run_all", "table"]
