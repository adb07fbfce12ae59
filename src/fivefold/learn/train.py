"""``Memory.train``: fit learned fusion on a namespace's feedback, compare it with the rules on
held-out recalls, and keep it only if it does better: a model is promoted on evidence, never
by default.

Every recall with feedback is asked again as learned fusion asks it, so the features are those
of the engine as it is now, not as it was when the feedback came. Every ``holdout_every``-th
recall (by feedback order) is held out: a model fit on the others ranks them, the rule
optimizer ranks them too, and recall@10 of each against the feedback's memories decides: the
model must do better. The model that is saved is then fit on every recall; it ranks from the
next recall on when it was accepted, and otherwise the rules (or the last accepted model) keep
ranking.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from statistics import fmean
from typing import Protocol

from fivefold.config import LearnedConfig
from fivefold.errors import InvalidInput
from fivefold.learn.model import Example, LearnedModel, fit, recall_at
from fivefold.store.protocol import Store
from fivefold.store.records import Feedback
from fivefold.types import TrainReport

__all__ = ["Asker", "questions", "train"]


class Asker(Protocol):
    """What training asks of the read pipeline: each feedback's recall asked again."""

    def question(self, entry: Feedback) -> Hashable | None:
        """The question a feedback's recall asked (equal for the same question however its
        recall_id was written); None for a recall that cannot be asked again."""
        ...

    def examples(self, entries: Sequence[Feedback]) -> list[Example]:
        """Each recall's candidates with their features, labelled by its feedback."""
        ...

    def ranking(self, entry: Feedback, model: LearnedModel | None) -> list[int]:
        """The ids the recall ranks first, by ``model`` or (None) by the rules."""
        ...


def questions(asker: Asker, feedback: Sequence[Feedback]) -> list[Feedback]:
    """One entry a question (the query and every argument of its recall but the time it was
    asked), the last thing said of it, with a memory that answered. Otherwise a recall_id
    given feedback many times counts as many recalls, held out against copies of itself; so
    does one question asked many times, or one recall_id written many ways (padded, or with
    keys of its own)."""
    latest: dict[Hashable, Feedback] = {}
    for entry in feedback:
        key = asker.question(entry)
        if key is None:  # kept by an older version that took it: not a question to train on
            continue
        latest.pop(key, None)  # in the order of each question's last feedback
        latest[key] = entry
    return [e for e in latest.values() if any(v > 0 for v in e.labels.values())]


def train(reader: Asker, store: Store, namespace: str, config: LearnedConfig) -> TrainReport:
    entries = questions(reader, store.models.feedback(namespace))
    if len(entries) < config.min_feedback:
        raise InvalidInput(
            f"namespace {namespace!r} has feedback on {len(entries)} recalls; training needs "
            f"{config.min_feedback} (learned.min_feedback): give feedback on more recalls"
        )
    every = config.holdout_every
    # At least one recall held out, and one to fit on (with min_feedback below holdout_every,
    # none would be held out, and the comparison's mean of nothing would raise StatisticsError).
    held = [e for n, e in enumerate(entries) if n % every == every - 1] or entries[-1:]
    if len(held) == len(entries):
        raise InvalidInput(
            f"namespace {namespace!r} has feedback on {len(entries)} recall; training needs two "
            "at least: one to fit on, one held out to compare with the rules"
        )
    held_ids = {e.id for e in held}
    examples = reader.examples(entries)
    candidate = fit([x for x in examples if x.group not in held_ids], l2=config.l2)
    model_recall = fmean(recall_at(reader.ranking(e, candidate), e.labels) for e in held)
    rules_recall = fmean(recall_at(reader.ranking(e, None), e.labels) for e in held)
    # Promoted only when it does better: a model that ties the rules may have learned nothing
    # (a flat one, from feedback that called every memory relevant, ties them and would rank
    # by id).
    accepted = model_recall > rules_recall
    final = fit(examples, l2=config.l2)
    report: dict[str, float | str] = {
        "namespace": namespace,
        "recalls": len(entries),
        "held_out": len(held),
        "model_recall_at_10": round(model_recall, 4),
        "rules_recall_at_10": round(rules_recall, 4),
    }
    model = replace(final, trained_at=datetime.now(UTC), report=report)
    version = store.models.save_model(namespace, model.to_json(), accepted=accepted)
    return TrainReport(
        namespace=namespace,
        recalls=len(entries),
        held_out=len(held),
        model_recall=model_recall,
        rules_recall=rules_recall,
        accepted=accepted,
        version=version,
    )
