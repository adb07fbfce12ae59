"""Learned fusion on a quality benchmark, never scored on a namespace it was trained on.

Feedback goes in as a user gives it: every scored question with evidence memories is recalled
through the rule optimizer and ``Memory.feedback`` names them as relevant. The namespaces are
dealt into at most ``FOLDS`` folds (LoCoMo's seven conversations: one each, leave one out);
each namespace gets the model fit on the examples of every other fold, saved as its model, so
learned fusion ranks each question with a model that never saw its conversation. The model
fit on every namespace is what a packaged default is (``--save-model``); its held-out figure is
the cross-validated one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from fivefold.bench.datasets import Query
from fivefold.learn.model import Example, LearnedModel, fit
from fivefold.memory import Memory
from fivefold.types import OptimizerMode

__all__ = ["FOLDS", "cross_validate", "namespaces_to_learn"]

FOLDS = 7


def namespaces_to_learn(queries: Sequence[Query]) -> list[str]:
    """The namespaces with questions that name evidence memories (LongMemEval's name only
    sessions); cross-validation needs at least two."""
    return sorted({q.namespace for q in queries if q.relevant})


def cross_validate(
    mem: Memory,
    queries: Sequence[Query],
    memory_of: Mapping[str, int],
    *,
    k_max: int,
    budget: str,
) -> LearnedModel:
    """Give feedback on every question, save each namespace's leave-one-out model in ``mem``'s
    store, and return the model fit on all of them. ``memory_of``: doc id -> memory id."""
    config = replace(mem.config, optimizer=replace(mem.config.optimizer, mode=OptimizerMode.RULE))
    rules = Memory(mem.store, mem.embedder, config)
    for query in queries:
        relevant = sorted(memory_of[d] for d in query.relevant if d in memory_of)
        if not relevant:
            continue
        result = rules.recall(
            query.text, k_max, namespace=query.namespace, now=query.now, budget=budget
        )
        rules.feedback(result.recall_id, relevant=relevant)
    namespaces = namespaces_to_learn(queries)
    examples: dict[str, list[Example]] = {ns: rules.examples(namespace=ns) for ns in namespaces}
    l2 = mem.config.learned.l2
    folds = min(FOLDS, len(namespaces))
    fold_of = {ns: n % folds for n, ns in enumerate(namespaces)}
    for fold in range(folds):
        others = [x for ns in namespaces if fold_of[ns] != fold for x in examples[ns]]
        model = fit(others, l2=l2)
        held = [ns for ns in namespaces if fold_of[ns] == fold]
        report = {"trained_on": f"the namespaces outside fold {fold + 1} of {folds}"}
        payload = replace(model, report=report).to_json()
        for namespace in held:
            mem.store.models.save_model(namespace, payload, accepted=True)
    everything = fit([x for ns in namespaces for x in examples[ns]], l2=l2)
    return replace(everything, report={"trained_on": f"{len(namespaces)} namespaces"})
