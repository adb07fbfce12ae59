"""Learned fusion among several users: one user's feedback cannot set the namespace's model
(it is checked on users it was not fit on, and no user gives more than a share of it), and
``learned.scope = "user"`` gives each user a model of their own; on both backends, each store
a file (SQLite) or a schema (Postgres) of its own."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fivefold
from fivefold import InvalidInput
from fivefold.config import Config, LearnedConfig, OptimizerConfig
from fivefold.errors import ConfigError
from fivefold.learn.model import FEATURES, LearnedModel
from fivefold.learn.train import capped
from fivefold.types import LearnedScope, OptimizerMode

NOW = datetime(2026, 3, 20, 12, tzinfo=UTC)
NS = "shared"
NOT_TURNS = "the candidates are not conversation turns: the rules rank"
FILLER = (
    "and then we talked for a long while about the weather the garden the road home the "
    "market the late train and what everyone would cook for dinner on the long weekend"
)
PROBES = 25


def _config(**learned: object) -> Config:
    return Config(
        optimizer=OptimizerConfig(mode=OptimizerMode.LEARNED),
        learned=replace(LearnedConfig(), **learned),  # type: ignore[arg-type]
    )


@pytest.fixture
def opened(new_store: Callable[[], str]) -> Iterator[Callable[[Config], fivefold.Memory]]:
    """Opens one new store (on each backend) with a config of the test's; again with another
    config, the same store."""
    url = new_store()
    made: list[fivefold.Memory] = []

    def open_with(config: Config) -> fivefold.Memory:
        memory = fivefold.Memory.open(url, embedder=fivefold.HashingEmbedder(), config=config)
        made.append(memory)
        return memory

    yield open_with
    for memory in made:
        memory.close()


def _long_answers(mem: fivefold.Memory, user: str, topics: int, word: str = "topic") -> list[int]:
    """Per topic twelve short decoys the rules rank first, and one long memory: the longest
    candidate, which the rules rank below ten decoys. Returns each topic's long memory."""
    longest = []
    for t in range(topics):
        items = [
            {"content": f"{word}{t} decoy{d}", "user_id": user, "namespace": NS} for d in range(12)
        ]
        items.append({"content": f"{word}{t} {FILLER}", "user_id": user, "namespace": NS})
        longest.append(mem.remember_many(items)[-1].id)
    return longest


def _short_answers(mem: fivefold.Memory, user: str) -> list[int]:
    """Per probe one short answer the rules rank first, and twelve long decoys."""
    answers = []
    for t in range(PROBES):
        items = [{"content": f"probe{t} answer", "user_id": user, "namespace": NS}]
        items += [
            {"content": f"probe{t} {FILLER} {d}", "user_id": user, "namespace": NS}
            for d in range(12)
        ]
        answers.append(mem.remember_many(items)[0].id)
    return answers


def _mark(mem: fivefold.Memory, user: str, answers: list[int], word: str = "topic") -> None:
    for t, answer in enumerate(answers):
        result = mem.recall(f"{word}{t}", namespace=NS, user_id=user, now=NOW)
        mem.feedback(result.recall_id, relevant=[answer])


def _probes(mem: fivefold.Memory, user: str = "u2") -> list[list[int]]:
    return [
        [h.memory.id for h in mem.recall(f"probe{t}", namespace=NS, user_id=user, now=NOW).hits]
        for t in range(PROBES)
    ]


@pytest.mark.slow
def test_one_users_feedback_does_not_rank_another_users_recalls(
    opened: Callable[[Config], fivefold.Memory],
) -> None:
    """The audit's case: u1 alone marks the longest memory as every answer. The model beats
    the rules on u1's own held-out recalls, but that says nothing of u2: not accepted."""
    mem = opened(_config())
    _short_answers(mem, "u2")
    longest = _long_answers(mem, "u1", 30)
    before = _probes(mem)
    _mark(mem, "u1", longest)
    report = mem.train(namespace=NS)
    assert (report.recalls, report.held_out, report.held_out_users) == (30, 6, 0)
    assert report.model_recall > report.rules_recall
    assert not report.accepted
    assert "one user's feedback alone" in report.note
    assert _probes(mem) == before
    first = mem.recall("probe3", namespace=NS, user_id="u2", now=NOW)
    assert first.plan.reasons[-1] == NOT_TURNS
    assert mem.store.models.learned_model(NS) is None


@pytest.mark.slow
def test_a_user_who_gives_the_most_feedback_is_checked_on_the_others(
    opened: Callable[[Config], fivefold.Memory],
) -> None:
    """u1 gives adversarial feedback on 30 recalls, u2 honest feedback on 10: u1 is capped
    to u2's count (two users: half each), and the model fit on u1's feedback loses to the
    rules on u2's recalls, so u2's rankings stay as they were."""
    mem = opened(_config(min_feedback=10))
    honest = _short_answers(mem, "u2")
    longest = _long_answers(mem, "u1", 30)
    before = _probes(mem)
    _mark(mem, "u1", longest)
    _mark(mem, "u2", honest[:10], word="probe")
    report = mem.train(namespace=NS)
    assert (report.users, report.held_out_users, report.capped) == (2, 2, 20)
    assert report.recalls == 20
    assert report.model_recall < report.rules_recall
    assert not report.accepted
    assert _probes(mem) == before


@pytest.mark.slow
def test_benign_feedback_from_several_users_is_accepted(
    opened: Callable[[Config], fivefold.Memory],
) -> None:
    """Three users whose answers the rules miss: a model fit on any two finds the third's, so
    the check accepts it (it is not a check that always refuses), and it ranks them all."""
    mem = opened(_config(min_feedback=20))
    answers = {user: _long_answers(mem, user, 14) for user in ("a", "b", "c")}
    for user, found in answers.items():
        _mark(mem, user, found[:12])
    report = mem.train(namespace=NS)
    assert (report.users, report.held_out_users, report.recalls, report.capped) == (3, 3, 36, 0)
    assert report.rules_recall == 0.0
    assert report.model_recall == 1.0
    assert report.accepted
    for user, found in answers.items():  # topics no feedback named
        for t in (12, 13):
            result = mem.recall(f"topic{t}", namespace=NS, user_id=user, now=NOW)
            assert result.plan.reasons[-1] == f"learned fusion ranks: model v{report.version}"
            assert result.hits[0].memory.id == found[t]


@pytest.mark.slow
def test_the_share_cap_keeps_one_user_from_filling_the_model(
    opened: Callable[[Config], fivefold.Memory],
) -> None:
    """Four users, one with 20 recalls of feedback and three with 5: at most a third of the
    model's recalls may be one user's, so 7 of the 20 are kept (the newest), 22 in all."""
    mem = opened(_config(min_feedback=20))
    counts = {"big": 20, "x": 5, "y": 5, "z": 5}
    for user, count in counts.items():
        _mark(mem, user, _long_answers(mem, user, count))
    report = mem.train(namespace=NS)
    assert (report.recalls, report.capped, report.users) == (22, 13, 4)
    assert report.accepted
    with pytest.raises(InvalidInput, match=r"learned\.max_user_share"):
        opened(_config(min_feedback=23)).train(namespace=NS)


@pytest.mark.slow
def test_user_scope_gives_each_user_a_model_of_their_own(
    opened: Callable[[Config], fivefold.Memory],
) -> None:
    """With learned.scope = "user", u1's feedback makes u1's model, which ranks u1's recalls
    only: u2 (who gave none) stays on the rules, and so does a reader in namespace scope."""
    mem = opened(_config(scope="user"))
    _short_answers(mem, "u2")
    longest = _long_answers(mem, "u1", 33)
    before = _probes(mem)
    _mark(mem, "u1", longest[:30])
    report = mem.train(namespace=NS)
    (mine,) = report.per_user
    assert (mine.user_id, mine.recalls, mine.held_out, mine.accepted) == ("u1", 30, 6, True)
    assert (report.users, report.accepted, report.version) == (1, True, mine.version)
    assert mem.store.models.model_users(NS) == ["u1"]
    assert mem.store.models.learned_model(NS) is None
    for t in (30, 31, 32):  # u1's topics no feedback named
        result = mem.recall(f"topic{t}", namespace=NS, user_id="u1", now=NOW)
        assert (
            result.plan.reasons[-1] == f"learned fusion ranks: model v{mine.version} of user 'u1'"
        )
        assert result.hits[0].memory.id == longest[t]
    assert _probes(mem) == before
    assert mem.recall("probe1", namespace=NS, user_id="u2", now=NOW).plan.reasons[-1] == NOT_TURNS
    shared = opened(_config())
    assert shared.recall("topic31", namespace=NS, user_id="u1", now=NOW).plan.reasons[-1] == (
        NOT_TURNS
    )
    # Forgetting the user takes the model learned from them with it.
    mem.forget_scope(namespace=NS, user_id="u1")
    assert mem.store.models.model_users(NS) == []


def test_user_scope_needs_enough_feedback_from_one_user(
    opened: Callable[[Config], fivefold.Memory],
) -> None:
    mem = opened(_config(scope="user", min_feedback=3))
    for user in ("u1", "u2"):
        made = [mem.remember(f"note {n} of {user}", namespace=NS, user_id=user) for n in range(2)]
        for n, record in enumerate(made):
            result = mem.recall(f"note {n}", namespace=NS, user_id=user, now=NOW)
            mem.feedback(result.recall_id, relevant=[record.id])
    with pytest.raises(InvalidInput, match="feedback on 2 recalls from any one user"):
        mem.train(namespace=NS)


def test_a_users_model_is_stored_beside_the_namespaces(
    opened: Callable[[Config], fivefold.Memory],
) -> None:
    models = opened(_config()).store.models
    assert models.save_model(NS, '{"n": 1}', accepted=True) == 1
    assert models.save_model(NS, '{"u": 1}', accepted=True, user_id="u1") == 2
    assert models.save_model(NS, '{"u": 2}', accepted=False, user_id="u1") == 3
    assert models.save_model(NS, '{"v": 1}', accepted=True, user_id="u2") == 4
    assert models.learned_model(NS) == (1, '{"n": 1}')
    assert models.learned_model(NS, "u1") == (2, '{"u": 1}')
    assert models.learned_model(NS, "u3") is None
    assert models.learned_model("other", "u1") is None
    assert models.model_users(NS) == ["u1", "u2"]
    assert models.model_users("other") == []


def test_a_store_before_user_models_keeps_its_model(new_store: Callable[[], str]) -> None:
    """A store made before a model could be a user's (SQLite schema 9, Postgres 10): opening it
    adds the column, and the model it held is the namespace's."""
    url = new_store()
    with fivefold.Memory.open(url, embedder=fivefold.HashingEmbedder()) as mem:
        mem.store.models.save_model(NS, '{"old": 1}', accepted=True)
    if url.startswith("postgresql"):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP INDEX models_user")
            conn.execute("ALTER TABLE models DROP COLUMN user_id")
            conn.execute("UPDATE fivefold_meta SET value = '10' WHERE key = 'schema_version'")
    else:
        with sqlite3.connect(url) as conn:
            conn.execute("DROP INDEX models_user")
            conn.execute("ALTER TABLE models DROP COLUMN user_id")
            conn.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
        conn.close()
    with fivefold.Memory.open(url, embedder=fivefold.HashingEmbedder()) as mem:
        assert mem.store.models.learned_model(NS) == (1, '{"old": 1}')
        assert mem.store.models.model_users(NS) == []
        assert mem.store.models.save_model(NS, "{}", accepted=True, user_id="u1") == 2


def test_learned_settings_are_checked() -> None:
    assert LearnedConfig(scope="user").scope is LearnedScope.USER  # type: ignore[arg-type]
    assert LearnedConfig().scope is LearnedScope.NAMESPACE
    assert LearnedConfig().max_user_share == pytest.approx(1 / 3)
    for bad in ({"scope": "team"}, {"max_user_share": 0.0}, {"max_user_share": 1.5}):
        with pytest.raises(ConfigError, match="learned"):
            LearnedConfig(**bad)  # type: ignore[arg-type]


def test_the_cap_keeps_each_users_newest() -> None:
    assert capped({"a": list(range(10)), "b": [0, 1]}, 1 / 3) == {"a": [8, 9], "b": [0, 1]}
    assert capped({"a": list(range(10))}, 1 / 3) == {"a": list(range(10))}
    kept = capped({"a": list(range(30)), "b": [0] * 5, "c": [0] * 5, "d": [0] * 5}, 1 / 3)
    assert kept["a"] == list(range(23, 30))


@given(
    st.lists(st.integers(1, 60), min_size=2, max_size=8),
    st.floats(0.05, 1.0),
)
def test_no_user_is_kept_past_the_share(counts: list[int], share: float) -> None:
    groups = {n: list(range(count)) for n, count in enumerate(counts)}
    kept = capped(groups, share)
    sizes = [len(kept[n]) for n in groups]
    bound = max(share, 1 / len(counts))
    assert max(sizes) <= bound * sum(sizes) + 1e-9
    assert min(sizes) == min(counts)  # the smallest user is never cut
    for n, count in enumerate(counts):
        assert kept[n] == groups[n][count - sizes[n] :]  # the newest
    # The most that fits: one more from each user at the cap would break it.
    top = max(sizes)
    if top < max(counts):
        assert top + 1 > bound * sum(min(c, top + 1) for c in counts)


def test_a_user_without_a_model_of_their_own_falls_back_to_the_namespaces(
    opened: Callable[[Config], fivefold.Memory],
) -> None:
    flat = LearnedModel(
        features=FEATURES,
        coefficients=(0.0,) * len(FEATURES),
        means=(0.0,) * len(FEATURES),
        scales=(1.0,) * len(FEATURES),
    )
    mem = opened(_config(scope="user"))
    for user in ("u1", "u2"):
        mem.remember(f"Priya leads Kestrel, says {user}", namespace=NS, user_id=user)
    mem.store.models.save_model(NS, flat.to_json(), accepted=True)
    mine = replace(flat, report={"user_id": "u1"}).to_json()
    mem.store.models.save_model(NS, mine, accepted=True, user_id="u1")

    def ranks(memory: fivefold.Memory, user: str | None) -> str:
        found = memory.recall("Kestrel", namespace=NS, user_id=user, now=NOW)
        return next(r for r in found.plan.reasons if r.startswith("learned fusion"))

    assert ranks(mem, "u1") == "learned fusion ranks: model v2 of user 'u1'"
    assert ranks(mem, "u2") == "learned fusion ranks: model v1"
    assert ranks(mem, None) == "learned fusion ranks: model v1"
    shared = opened(_config())  # namespace scope: one model for every user
    assert ranks(shared, "u1") == "learned fusion ranks: model v1"
