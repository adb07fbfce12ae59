from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

from fivefold.bench import stats
from fivefold.bench.stats import PairedComparison, paired_bootstrap, paired_permutation
from fivefold.errors import InvalidInput

PairedTest = Callable[..., PairedComparison]
TESTS = [paired_bootstrap, paired_permutation]


def test_public_names() -> None:
    assert sorted(stats.__all__) == ["PairedComparison", "paired_bootstrap", "paired_permutation"]


@pytest.mark.parametrize("test", TESTS)
def test_identical_systems(test: PairedTest) -> None:
    scores = np.random.default_rng(1).random(300)
    result = test(scores, scores.copy(), resamples=2000, seed=3)
    assert result.mean_diff == 0.0
    assert result.p_value == 1.0
    assert result.ci_low <= 0.0 <= result.ci_high
    assert (result.n, result.resamples) == (300, 2000)


@pytest.mark.parametrize("test", TESTS)
def test_large_consistent_difference(test: PairedTest) -> None:
    rng = np.random.default_rng(2)
    b = rng.random(200)
    a = b + 0.1 + rng.normal(0.0, 0.05, size=200)
    result = test(a, b, resamples=5000, seed=0)
    assert result.p_value < 0.01
    assert 0.0 < result.ci_low < result.mean_diff < result.ci_high
    assert result.mean_diff == pytest.approx(float(np.mean(a - b)))
    flipped = test(b, a, resamples=5000, seed=0)
    assert flipped.mean_diff == pytest.approx(-result.mean_diff)
    assert flipped.p_value < 0.01
    assert flipped.ci_high < 0.0


@pytest.mark.parametrize("test", TESTS)
def test_deterministic_under_a_seed(test: PairedTest) -> None:
    rng = np.random.default_rng(4)
    a, b = rng.random(150), rng.random(150)
    assert test(a, b, resamples=3000, seed=9) == test(list(a), list(b), resamples=3000, seed=9)
    assert test(a, b, resamples=3000, seed=9) != test(a, b, resamples=3000, seed=10)


def test_permutation_p_value_approaches_the_exact_one() -> None:
    diffs = np.array([0.9, -0.2, 0.4, 0.1, 0.6, -0.5, 0.3, 0.8, -0.1, 0.2, 0.7, 0.05])
    observed = abs(diffs.mean())
    flips = np.array(list(itertools.product([-1.0, 1.0], repeat=diffs.size)))
    exact = float(np.mean(np.abs(flips @ diffs / diffs.size) >= observed - 1e-12))
    result = paired_permutation(diffs, np.zeros_like(diffs), resamples=40_000, seed=5)
    assert 0.01 < exact < 0.2  # the case is informative: neither trivially 0 nor 1
    assert result.p_value == pytest.approx(exact, abs=0.01)


@pytest.mark.parametrize("test", TESTS)
def test_interval_matches_the_normal_theory_one(test: PairedTest) -> None:
    rng = np.random.default_rng(6)
    diffs = rng.normal(0.05, 0.3, size=2000)
    result = test(diffs, np.zeros_like(diffs), resamples=4000, seed=1)
    half_width = 1.96 * diffs.std(ddof=1) / np.sqrt(diffs.size)
    assert result.ci_low == pytest.approx(diffs.mean() - half_width, abs=0.1 * half_width)
    assert result.ci_high == pytest.approx(diffs.mean() + half_width, abs=0.1 * half_width)


@pytest.mark.parametrize("test", TESTS)
@pytest.mark.parametrize(
    ("a", "b", "kwargs", "message"),
    [
        ([1.0, 2.0], [1.0], {}, "equal length"),
        ([], [], {}, "non-empty"),
        ([[1.0]], [[1.0]], {}, "1-D"),
        ([1.0, float("nan")], [1.0, 2.0], {}, "finite"),
        (["high"], ["low"], {}, "must be numbers"),
        ([1.0], [2.0], {"resamples": 0}, "resamples"),
        ([1.0], [2.0], {"confidence": 1.0}, "confidence"),
    ],
)
def test_arguments_are_checked(
    test: PairedTest, a: object, b: object, kwargs: dict[str, float], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        test(a, b, **kwargs)
