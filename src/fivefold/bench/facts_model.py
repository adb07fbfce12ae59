"""The packaged facts model (``learned_facts.json``): learned fusion fit on the dev users of
``fivefold bench facts``, never on the held-out ones, so the benchmark's held-out figure is
one the model never saw.

Feedback goes in as a user gives it: each answerable question of a dev user is recalled
through the rule optimizer and ``Memory.feedback`` names its answering memories; the model is
``learned.fit`` over those recalls' examples (the rule plan's candidates, as learned fusion
ranks them), on a store that holds the dev users alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from fivefold.bench.facts import DEPTH, DEV_USERS, User, write_user
from fivefold.config import Config, OptimizerConfig
from fivefold.embed.base import Embedder
from fivefold.errors import InvalidInput
from fivefold.learn.model import LearnedModel, fit
from fivefold.memory import Memory
from fivefold.types import OptimizerMode

__all__ = ["fit_facts_model"]


def fit_facts_model(users: Sequence[User], embedder: Embedder) -> LearnedModel:
    """The model fit on the questions of ``users`` that are dev users (in the benchmark's
    order), with the default ``learned.l2``; its report says what it was fit on."""
    dev = [u for u in users if u.name in DEV_USERS]
    if not dev:
        raise InvalidInput(f"no dev users ({', '.join(DEV_USERS)}) to fit the facts model on")
    config = Config(optimizer=OptimizerConfig(mode=OptimizerMode.RULE))
    questions = 0
    with Memory.open(":memory:", embedder=embedder, config=config) as mem:
        for user in dev:
            ids = write_user(mem, user)
            for q in user.questions:
                if not q.relevant:  # an abstain question: nothing answers it
                    continue
                result = mem.recall(q.text, k=DEPTH, user_id=user.name, now=user.now)
                mem.feedback(result.recall_id, relevant=[ids[k] for k in q.relevant])
                questions += 1
        model = fit(mem.examples(), l2=config.learned.l2)
    names = ", ".join(u.name for u in dev)
    report = {
        "trained_on": f"fivefold bench facts, dev users ({names}): {questions} questions",
        "embedder": embedder.name,
    }
    return replace(model, report=report)
