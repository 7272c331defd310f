"""The compiled Newton steps of an adaptive test in progress (`mdad.irt.cat`), by
numba: each examinee's MAP ability on its own answers, from where it stood.

The steps are `posterior_ability`'s (damped, halved until the log posterior rises,
stopped by a step shorter than the tolerance), one examinee at a time: numpy needs a
dozen calls a step (the logits, the sigmoid, the log posterior, batched products for
the gradient and the D x D information, a batched solve), each on arrays of a few
numbers per examinee, so that their overhead, not the arithmetic, is the cost. Each
examinee stops when its own step is short enough (numpy's loop, when every one's is),
and solves by Cholesky: the abilities agree with numpy's to about 1e-10
(`tests/test_adaptive.py`). float64, libm's exp and log1p, no fast-math.

Imported only by a test under way: numba takes half a second to import.
"""

from __future__ import annotations

import math

import numpy as np

from mdad.kernels import compiled

# no fast-math: libm's own results (stated here: numba's cache is keyed on this file)
EXACT = {"boundscheck": False, "error_model": "numpy"}


def _newton_pass(a, c, y, k, theta, covariance, tol, max_steps, max_step
                 ):  # pragma: no cover
    """For each examinee i, Newton's method on the log posterior of its first `k`
    answers under a N(0, I) prior, from `theta[i]` (updated in place): each step
    damped to at most `max_step` long and halved until the log posterior rises by
    1e-4 of its slope (up to rounding), until a step is shorter than `tol` (taken) or
    after `max_steps`; `covariance[i]` receives the inverse posterior information
    where the last step started. a (n, >=k, D), c and y (n, >=k), theta (n, D),
    covariance (n, D, D)."""
    n = theta.shape[0]
    dims = theta.shape[1]
    point = np.empty(dims)
    trial = np.empty(dims)
    gradient = np.empty(dims)
    trial_gradient = np.empty(dims)
    precision = np.empty((dims, dims))
    trial_precision = np.empty((dims, dims))
    lower = np.empty((dims, dims))  # Cholesky factor of the precision
    step = np.empty(dims)
    for i in range(n):
        for d in range(dims):
            point[d] = theta[i, d]
        value = _evaluate(a, c, y, k, i, point, gradient, precision)
        for _ in range(max_steps):
            _cholesky(precision, lower)
            _cholesky_solve(lower, gradient, step)
            norm = 0.0
            for d in range(dims):
                norm += step[d] * step[d]
            norm = math.sqrt(norm)
            scale = min(1.0, max_step / max(norm, 1e-300))
            slope = 0.0
            for d in range(dims):
                step[d] *= scale
                slope += gradient[d] * step[d]
            if norm < tol:
                for d in range(dims):
                    point[d] += step[d]
                break
            fraction = 1.0
            for _ in range(50):
                for d in range(dims):
                    trial[d] = point[d] + fraction * step[d]
                trial_value = _evaluate(a, c, y, k, i, trial, trial_gradient,
                                        trial_precision)
                if trial_value >= (value + 1e-4 * fraction * slope
                                   - 1e-12 * (1.0 + abs(value))):
                    break
                fraction /= 2
            value = trial_value
            for d in range(dims):
                point[d] = trial[d]
                gradient[d] = trial_gradient[d]
                for e in range(d + 1):
                    precision[d, e] = trial_precision[d, e]
        for d in range(dims):
            theta[i, d] = point[d]
        # the covariance where the last step started: the inverse, column by column
        for d in range(dims):
            for e in range(dims):
                trial[e] = 1.0 if d == e else 0.0
            _cholesky_solve(lower, trial, step)
            for e in range(dims):
                covariance[i, e, d] = step[e]


def _evaluate(a, c, y, k, i, point, gradient, precision):  # pragma: no cover
    """Examinee i's log posterior at `point` (up to a constant), returned; its
    gradient and the lower triangle of its posterior information written into
    `gradient` (D,) and `precision` (D, D)."""
    dims = point.shape[0]
    value = 0.0
    for d in range(dims):
        gradient[d] = -point[d]
        value -= 0.5 * point[d] * point[d]
        for e in range(d + 1):
            precision[d, e] = 1.0 if d == e else 0.0
    for j in range(k):
        z = -c[i, j]
        for d in range(dims):
            z += a[i, j, d] * point[d]
        small = math.exp(-abs(z))
        p = (1.0 if z >= 0.0 else small) / (1.0 + small)
        value += y[i, j] * z - (max(z, 0.0) + math.log1p(small))
        residual = y[i, j] - p
        weight = p * (1.0 - p)
        for d in range(dims):
            gradient[d] += residual * a[i, j, d]
            weighted = weight * a[i, j, d]
            for e in range(d + 1):
                precision[d, e] += weighted * a[i, j, e]
    return value


def _cholesky(precision, lower):  # pragma: no cover
    """The lower Cholesky factor of the symmetric positive definite `precision`
    (its lower triangle is read) into `lower`."""
    dims = precision.shape[0]
    for d in range(dims):
        total = precision[d, d]
        for e in range(d):
            total -= lower[d, e] * lower[d, e]
        lower[d, d] = math.sqrt(total)
        for f in range(d + 1, dims):
            total = precision[f, d]
            for e in range(d):
                total -= lower[f, e] * lower[d, e]
            lower[f, d] = total / lower[d, d]


def _cholesky_solve(lower, right, out):  # pragma: no cover
    """Solve L L' x = right into `out`, L lower triangular (D, D)."""
    dims = right.shape[0]
    for d in range(dims):
        total = right[d]
        for e in range(d):
            total -= lower[d, e] * out[e]
        out[d] = total / lower[d, d]
    for d in range(dims - 1, -1, -1):
        total = out[d]
        for e in range(d + 1, dims):
            total -= lower[e, d] * out[e]
        out[d] = total / lower[d, d]


_evaluate = compiled(_evaluate, EXACT)
_cholesky = compiled(_cholesky, EXACT)
_cholesky_solve = compiled(_cholesky_solve, EXACT)
newton_pass = compiled(_newton_pass, EXACT)


def newton(a: np.ndarray, c: np.ndarray, y: np.ndarray, k: int, theta: np.ndarray, *,
           tol: float, max_steps: int, max_step: float) -> tuple[np.ndarray, np.ndarray]:
    """MAP abilities (n, D) and the covariance where each examinee's last Newton step
    started (n, D, D), from the first `k` columns of `a` (n, m, D), the offsets `c`
    (n, m) and the answers `y` (n, m), starting at `theta` (n, D; not modified);
    `max_steps` at least 1."""
    if max_steps < 1:
        raise ValueError(f"max_steps must be at least 1; got {max_steps}")
    theta = np.array(theta, dtype=np.float64, order="C")
    covariance = np.empty((theta.shape[0], theta.shape[1], theta.shape[1]))
    newton_pass(a, c, y, k, theta, covariance, tol, max_steps, max_step)
    return theta, covariance
