"""How often an adaptive test's MAP ability stops short of the mode, as `mdad adaptive
next` computes it (`posterior_ability`, from the prior mean, on every answer so far),
and how far its estimate then is from the mode's.

Starts GPQA's `adaptive-cv` test (budget 100, batches of 10: 5-D, prior sd 2 on
GPQA), gives every model of GPQA its batches with its real answers, and checks the
gradient of the log posterior after each. Run it with `PYTHONPATH=OLD/src` to see an
earlier version (before 2026-12-07's line search: 22 of 4,200 not at the mode,
estimates up to 3.2 points off).

Usage: python benchmarks/newton_convergence.py
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from mdad.data.registry import load_dataset
from mdad.irt.cat import best_items, posterior_ability
from mdad.practice.adaptive import start_adaptive_test


def main() -> None:
    dataset = load_dataset("gpqa")
    test = start_adaptive_test(dataset, budget=100, batch=10, method="adaptive-cv")
    a, b = test.discrimination, test.difficulty
    dims = a.shape[1]
    scores = np.asarray(dataset.matrix.scores(), dtype=np.float64)
    short, total, worst = 0, 0, 0.0
    for row in scores:
        answered: list[int] = []
        theta, covariance = np.zeros((1, dims)), np.eye(dims)[None]
        for _ in range(10):
            available = np.ones((1, a.shape[0]), dtype=bool)
            available[0, answered] = False
            answered += best_items(theta, covariance, available, a, b, 10)[0].tolist()
            items, y = np.array(answered), row[answered]
            theta, covariance = posterior_ability(a[items][None], b[items][None], y[None])
            total += 1
            z = a[items] @ theta[0] - dims * b[items]
            if np.abs((y - expit(z)) @ a[items] - theta[0]).max() <= 1e-6:
                continue
            short += 1

            def negative(t: np.ndarray, items=items, y=y) -> float:
                z = a[items] @ t - dims * b[items]
                return -float((y * z - np.logaddexp(0, z)).sum()) + 0.5 * float(t @ t)

            mode = minimize(negative, theta[0], method="BFGS", options={"gtol": 1e-10}).x
            worst = max(worst, abs(_accuracy(theta[0], a, b, items, y)
                                   - _accuracy(mode, a, b, items, y)))
    print(f"{test.choice.describe() if test.choice else test.method}")
    print(f"not at the mode: {short} of {total} posteriors; largest estimate error there: "
          f"{100 * worst:.1f} points")


def _accuracy(theta: np.ndarray, a: np.ndarray, b: np.ndarray, items: np.ndarray,
              y: np.ndarray) -> float:
    p = expit(a @ theta - a.shape[1] * b)
    p[items] = y
    return float(p.mean())


if __name__ == "__main__":
    main()
