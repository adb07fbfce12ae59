"""``Memory.train``: fit learned fusion on a namespace's feedback, compare it with the rules on
held-out recalls, and keep it only if it does better: a model is promoted on evidence, never
by default.

Every recall with feedback is asked again as learned fusion asks it, so the features are those
of the engine as it is now, not as it was when the feedback came. A feedback's user is the user
its recall was asked for (a recall asked without one is the namespace's own).

A namespace model (``learned.scope = "namespace"``) ranks every user's recalls, so it is held
out by user: the users are dealt into ``holdout_every`` parts (one each when fewer), and each
part's recalls are ranked by a model fit on the other parts' feedback only, and by the rules;
recall@10 of each, averaged per user and then over the users (one user with many recalls does
not outvote the others), decides: the model must do better. No user gives more than
``max_user_share`` of any fit's recalls (at least an equal share), their newest kept. With
the namespace's own recalls alone, every ``holdout_every``-th recall (by feedback order) is
held out instead. One user's feedback alone shows nothing about other users: its model is
not accepted for the namespace (``learned.scope = "user"`` gives that user one of their own).

A user's model (``learned.scope = "user"``) is fit on that user's feedback alone and held out
by recall, as the namespace's own; it ranks that user's recalls only.

The model that is saved is then fit on every recall kept; it ranks from the next recall on
when it was accepted, and otherwise the rules (or the last accepted model) keep ranking.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from statistics import fmean
from typing import Protocol, TypeVar

from fivefold.config import LearnedConfig
from fivefold.errors import InvalidInput
from fivefold.learn.model import Example, LearnedModel, fit, recall_at
from fivefold.store.protocol import Store
from fivefold.store.records import Feedback
from fivefold.types import LearnedScope, TrainReport

__all__ = ["Asker", "capped", "questions", "train"]

K = TypeVar("K")
T = TypeVar("T")
ONE_USER = (
    "fit on one user's feedback alone, it shows nothing of other users: not accepted for the "
    'namespace (learned.scope = "user" gives a user a model of their own)'
)


class Asker(Protocol):
    """What training asks of the read pipeline: each feedback's recall asked again."""

    def question(self, entry: Feedback) -> Hashable | None:
        """The question a feedback's recall asked (equal for the same question however its
        recall_id was written); None for a recall that cannot be asked again."""
        ...

    def asker(self, entry: Feedback) -> str | None:
        """The user a feedback's recall was asked for (None: the namespace's own recall)."""
        ...

    def examples(self, entries: Sequence[Feedback]) -> list[Example]:
        """Each recall's candidates with their features, labelled by its feedback."""
        ...

    def ranking(self, entry: Feedback, model: LearnedModel | None) -> list[int]:
        """The ids the recall ranks first, by ``model`` or (None) by the rules."""
        ...


@dataclass(frozen=True, slots=True)
class _Check:
    """A held-out comparison: recall@10 of the candidate model and of the rules."""

    held_out: int
    held_out_users: int
    model_recall: float
    rules_recall: float


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


def capped(groups: Mapping[K, Sequence[T]], share: float) -> dict[K, list[T]]:
    """Each group's last items, as many as keep any one group at most ``share`` of all that is
    kept; never below an equal share (two groups: half each), so some of each group stays."""
    if len(groups) < 2:
        return {key: list(items) for key, items in groups.items()}
    bound = max(share, 1.0 / len(groups))
    counts = [len(items) for items in groups.values()]
    most = max(counts)
    # A lower cap cuts the total too (the capped groups give less): step down until it fits.
    while most > 1 and most > bound * sum(min(n, most) for n in counts) + 1e-9:
        most -= 1
    return {key: list(items[max(len(items) - most, 0) :]) for key, items in groups.items()}


def train(reader: Asker, store: Store, namespace: str, config: LearnedConfig) -> TrainReport:
    entries = questions(reader, store.models.feedback(namespace))
    users: dict[str | None, list[Feedback]] = {}
    for entry in entries:  # in the order of each user's first question
        users.setdefault(reader.asker(entry), []).append(entry)
    if config.scope is LearnedScope.USER:
        return _train_each(_Fitting(reader, store, namespace, config), users)
    _enough(namespace, len(entries), config)
    fitting = _Fitting(reader, store, namespace, config)
    if len(users) < 2:
        return _train_alone(fitting, entries, next(iter(users)))
    return _train_shared(fitting, users)


def _enough(namespace: str, count: int, config: LearnedConfig, why: str = "") -> None:
    if count < config.min_feedback:
        raise InvalidInput(
            f"namespace {namespace!r} has feedback on {count} recalls{why}; training needs "
            f"{config.min_feedback} (learned.min_feedback): give feedback on more recalls"
        )


class _Fitting:
    """One training run: each recall's examples made once, and the rules' recall@10 of it."""

    def __init__(self, reader: Asker, store: Store, namespace: str, config: LearnedConfig) -> None:
        self.reader, self.store, self.namespace, self.config = reader, store, namespace, config
        self._examples: dict[int, Example] = {}
        self._rules: dict[int, float] = {}

    def fit(self, entries: Sequence[Feedback]) -> LearnedModel:
        missing = [e for e in entries if e.id not in self._examples]
        self._examples.update((x.group, x) for x in self.reader.examples(missing))
        return fit([self._examples[e.id] for e in entries], l2=self.config.l2)

    def recall(self, entries: Sequence[Feedback], model: LearnedModel) -> tuple[float, float]:
        """Mean recall@10 over ``entries`` of ``model`` and of the rules."""
        for e in entries:
            if e.id not in self._rules:
                self._rules[e.id] = recall_at(self.reader.ranking(e, None), e.labels)
        found = fmean(recall_at(self.reader.ranking(e, model), e.labels) for e in entries)
        return found, fmean(self._rules[e.id] for e in entries)

    def by_recall(self, entries: Sequence[Feedback]) -> _Check:
        """Every ``holdout_every``-th recall held out: ranked by a model fit on the others."""
        every = self.config.holdout_every
        # At least one recall held out, and one to fit on (with min_feedback below
        # holdout_every, none would be held out, and the mean of nothing would raise).
        held = [e for n, e in enumerate(entries) if n % every == every - 1] or [entries[-1]]
        if len(held) == len(entries):
            raise InvalidInput(
                f"namespace {self.namespace!r} has feedback on {len(entries)} recall; training "
                "needs two at least: one to fit on, one held out to compare with the rules"
            )
        held_ids = {e.id for e in held}
        candidate = self.fit([e for e in entries if e.id not in held_ids])
        return _Check(len(held), 0, *self.recall(held, candidate))

    def by_user(self, users: Mapping[str | None, Sequence[Feedback]]) -> _Check:
        """The users dealt into parts, each part ranked by a model fit on the others'
        feedback (capped); recall@10 per user, then the mean over the users."""
        order = list(users)
        parts = min(len(order), self.config.holdout_every)
        found: list[tuple[float, float]] = []
        for part in range(parts):
            held = [u for n, u in enumerate(order) if n % parts == part]
            others = {u: users[u] for u in order if u not in held}
            kept = capped(others, self.config.max_user_share)
            candidate = self.fit(_in_order(others, kept))
            found += [self.recall(users[user], candidate) for user in held]
        held_out = sum(len(group) for group in users.values())
        return _Check(held_out, len(order), fmean(m for m, _ in found), fmean(r for _, r in found))

    def save(
        self,
        kept: Sequence[Feedback],
        check: _Check,
        *,
        user_id: str | None,
        users: int,
        capped_out: int = 0,
        note: str = "",
    ) -> TrainReport:
        """The model fit on every recall kept, saved (as ``user_id``'s, or the namespace's)
        and accepted only when it beat the rules and ``note`` says nothing against it. A model
        that ties the rules may have learned nothing (a flat one, from feedback that called
        every memory relevant, ties them and would rank by id)."""
        beat = check.model_recall > check.rules_recall
        accepted = beat and not note
        report: dict[str, float | str] = {
            "namespace": self.namespace,
            "recalls": len(kept),
            "held_out": check.held_out,
            "held_out_users": check.held_out_users,
            "model_recall_at_10": round(check.model_recall, 4),
            "rules_recall_at_10": round(check.rules_recall, 4),
        }
        if user_id is not None:
            report["user_id"] = user_id
        model = replace(self.fit(kept), trained_at=datetime.now(UTC), report=report)
        version = self.store.models.save_model(
            self.namespace, model.to_json(), accepted=accepted, user_id=user_id
        )
        return TrainReport(
            namespace=self.namespace,
            recalls=len(kept),
            held_out=check.held_out,
            model_recall=check.model_recall,
            rules_recall=check.rules_recall,
            accepted=accepted,
            version=version,
            user_id=user_id,
            users=users,
            held_out_users=check.held_out_users,
            capped=capped_out,
            note=note if beat else "",
        )


def _in_order(
    users: Mapping[str | None, Sequence[Feedback]], kept: Mapping[str | None, Sequence[Feedback]]
) -> list[Feedback]:
    """The recalls ``capped`` kept, in the users' order and each user's."""
    ids = {e.id for group in kept.values() for e in group}
    return [e for group in users.values() for e in group if e.id in ids]


def _train_alone(fitting: _Fitting, entries: Sequence[Feedback], user: str | None) -> TrainReport:
    """A namespace model from one user's feedback: held out by recall; accepted only when
    that user is the namespace itself (its own recalls, asked for no user)."""
    check = fitting.by_recall(entries)
    note = "" if user is None else ONE_USER
    return fitting.save(entries, check, user_id=None, users=1, note=note)


def _train_shared(fitting: _Fitting, users: Mapping[str | None, Sequence[Feedback]]) -> TrainReport:
    config = fitting.config
    kept = _in_order(users, capped(users, config.max_user_share))
    share = f" once no user gives more than {config.max_user_share:.2g} (learned.max_user_share)"
    _enough(fitting.namespace, len(kept), config, share)
    check = fitting.by_user(users)
    total = sum(len(group) for group in users.values())
    return fitting.save(kept, check, user_id=None, users=len(users), capped_out=total - len(kept))


def _train_each(fitting: _Fitting, users: Mapping[str | None, Sequence[Feedback]]) -> TrainReport:
    """A model per user with enough feedback, on that user's alone (the namespace's own
    recalls make the namespace's model); the report adds them up."""
    config = fitting.config
    enough = {u: group for u, group in users.items() if len(group) >= config.min_feedback}
    if not enough:
        most = max((len(group) for group in users.values()), default=0)
        _enough(fitting.namespace, most, config, ' from any one user (learned.scope = "user")')
    reports = tuple(
        fitting.save(group, fitting.by_recall(group), user_id=user, users=1)
        for user, group in enough.items()
    )
    return TrainReport(
        namespace=fitting.namespace,
        recalls=sum(r.recalls for r in reports),
        held_out=sum(r.held_out for r in reports),
        model_recall=fmean(r.model_recall for r in reports),
        rules_recall=fmean(r.rules_recall for r in reports),
        accepted=any(r.accepted for r in reports),
        version=max(r.version for r in reports),
        users=len(reports),
        per_user=reports,
    )
