"""Logistic regression by Newton's method: what learned fusion and confidence calibration fit."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def fit_logistic(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], *, l2: float = 1e-3, steps: int = 50
) -> npt.NDArray[np.float64]:
    """Logistic regression by Newton's method with a small ridge (the bias unpenalised)."""
    weights = np.zeros(x.shape[1])
    ridge = np.full(x.shape[1], l2)
    ridge[0] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ weights, -50.0, 50.0)))
        gradient = x.T @ (p - y) + ridge * weights
        hessian = (x.T * (p * (1.0 - p))) @ x + np.diag(ridge) + 1e-9 * np.eye(x.shape[1])
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return weights


__all__ = ["fit_logistic"]
