"""``Memory.train``: fit learned fusion on a namespace's feedback, compare it with the rules on
held-out recalls, and keep it only if it does not lose (the seed's automatic rollback).

Every recall with feedback is asked again as learned fusion asks it, so the features are those
of the engine as it is now, not as it was when the feedback came. Every ``holdout_every``-th
recall (by feedback order) is held out: a model fit on the others ranks them, the rule
optimizer ranks them too, and recall@10 of each against the feedback's memories decides. The
model that is saved is then fit on every recall; it ranks from the next recall on when it was
accepted, and otherwise the rules (or the last accepted model) keep ranking.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from statistics import fmean

from fivefold.config import LearnedConfig
from fivefold.errors import InvalidInput
from fivefold.learned import fit, recall_at
from fivefold.model import TrainReport
from fivefold.reader import Reader
from fivefold.store.base import Store

__all__ = ["train"]


def train(reader: Reader, store: Store, namespace: str, config: LearnedConfig) -> TrainReport:
    # One entry a recall (its query and arguments): the last thing said of it. A recall_id
    # given feedback 30 times counted as 30 recalls, held out against copies of itself (a
    # hostile pass's find).
    latest = {(e.query, e.args): e for e in store.feedback(namespace)}
    entries = [e for e in latest.values() if any(v > 0 for v in e.labels.values())]
    if len(entries) < config.min_feedback:
        raise InvalidInput(
            f"namespace {namespace!r} has feedback on {len(entries)} recalls; training needs "
            f"{config.min_feedback} (learned.min_feedback): give feedback on more recalls"
        )
    every = config.holdout_every
    # At least one recall held out, and one to fit on (with min_feedback below holdout_every,
    # none was held out and the comparison's mean of nothing raised StatisticsError).
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
    accepted = model_recall >= rules_recall
    final = fit(examples, l2=config.l2)
    report: dict[str, float | str] = {
        "namespace": namespace,
        "recalls": len(entries),
        "held_out": len(held),
        "model_recall_at_10": round(model_recall, 4),
        "rules_recall_at_10": round(rules_recall, 4),
    }
    model = replace(final, trained_at=datetime.now(UTC), report=report)
    version = store.save_model(namespace, model.to_json(), accepted=accepted)
    return TrainReport(
        namespace=namespace,
        recalls=len(entries),
        held_out=len(held),
        model_recall=model_recall,
        rules_recall=rules_recall,
        accepted=accepted,
        version=version,
    )
