"""Paired significance tests on the per-question scores of two systems, numpy only.

Both tests look at the differences ``d = a - b`` of two systems scored on the same questions, and
return the mean difference, a confidence interval for it and a two-sided p-value for "no
difference". Both are Monte Carlo: results depend only on the inputs and ``seed``, and the
p-value counts the observed statistic among the resamples ((1 + hits) / (1 + resamples)), so it
is never exactly 0 and an identical pair of systems gets p = 1.

- ``paired_bootstrap``: resample questions with replacement. The interval is the percentile
  interval of the resampled means; the p-value shifts that distribution to mean 0 (the null) and
  asks how often it lands at least as far from 0 as the observed mean.
- ``paired_permutation``: under the null, each question's two scores are exchangeable, so each
  difference keeps its size and gets a random sign. The interval comes from the same sign flips
  applied to the centred differences (a Rademacher wild bootstrap), so one set of draws serves
  both outputs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fivefold.errors import InvalidInput

__all__ = ["PairedComparison", "paired_bootstrap", "paired_permutation"]

# Bound on one batch of resamples (rows x questions), so 10,000 resamples of 2,000 questions do
# not allocate 160 MB at once.
_BATCH_CELLS = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class PairedComparison:
    """``mean_diff`` is mean(a - b); [``ci_low``, ``ci_high``] its interval at the requested
    confidence; ``p_value`` two-sided."""

    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    n: int
    resamples: int


def paired_bootstrap(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairedComparison:
    """Paired bootstrap test of mean(a - b) = 0 (see the module docstring)."""
    diffs = _differences(a, b, resamples, confidence)
    n = diffs.size
    observed = float(diffs.mean())
    rng = np.random.default_rng(seed)
    means = np.concatenate(
        [diffs[rng.integers(0, n, size=(rows, n))].mean(axis=1) for rows in _batches(resamples, n)]
    )
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    extreme = np.abs(means - observed) >= abs(observed) - _tolerance(diffs)
    return PairedComparison(
        mean_diff=observed,
        ci_low=float(low),
        ci_high=float(high),
        p_value=_p_value(extreme),
        n=n,
        resamples=resamples,
    )


def paired_permutation(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairedComparison:
    """Paired sign-flip permutation test of mean(a - b) = 0 (see the module docstring)."""
    diffs = _differences(a, b, resamples, confidence)
    n = diffs.size
    observed = float(diffs.mean())
    rng = np.random.default_rng(seed)
    null_parts: list[npt.NDArray[np.float64]] = []
    sign_parts: list[npt.NDArray[np.float64]] = []
    for rows in _batches(resamples, n):
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(rows, n))
        null_parts.append(signs @ diffs / n)
        sign_parts.append(signs.mean(axis=1))
    null = np.concatenate(null_parts)
    # mean(s * (d - observed)) = mean(s * d) - observed * mean(s): the wild bootstrap spread
    spread = null - observed * np.concatenate(sign_parts)
    low, high = np.quantile(spread, [(1 - confidence) / 2, (1 + confidence) / 2])
    extreme = np.abs(null) >= abs(observed) - _tolerance(diffs)
    return PairedComparison(
        mean_diff=observed,
        ci_low=observed - float(high),
        ci_high=observed - float(low),
        p_value=_p_value(extreme),
        n=n,
        resamples=resamples,
    )


def _differences(
    a: npt.ArrayLike, b: npt.ArrayLike, resamples: int, confidence: float
) -> npt.NDArray[np.float64]:
    try:
        first = np.asarray(a, dtype=np.float64)
        second = np.asarray(b, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"scores must be numbers ({exc})") from exc
    if first.ndim != 1 or first.shape != second.shape or first.size == 0:
        raise InvalidInput(
            f"expected two non-empty 1-D arrays of equal length, got shapes {first.shape} "
            f"and {second.shape}"
        )
    if not (np.isfinite(first).all() and np.isfinite(second).all()):
        raise InvalidInput("scores must be finite numbers")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise InvalidInput(f"resamples must be a positive integer, got {resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise InvalidInput(f"confidence must be strictly between 0 and 1, got {confidence!r}")
    return first - second


def _batches(resamples: int, n: int) -> Iterator[int]:
    """Row counts of the batches that make up ``resamples`` rows of ``n`` cells."""
    rows = max(1, _BATCH_CELLS // n)
    for start in range(0, resamples, rows):
        yield min(rows, resamples - start)


def _tolerance(diffs: npt.NDArray[np.float64]) -> float:
    """Slack for "at least as extreme": a resample equal to the observed mean can differ from it
    in the last bits because it was summed in another order."""
    return 1e-12 * max(1.0, float(np.abs(diffs).max()))


def _p_value(extreme: npt.NDArray[np.bool_]) -> float:
    return (1.0 + float(extreme.sum())) / (1.0 + extreme.size)
