"""The compiled pass of the MAP fit (`mdad.irt.model`): the log likelihood and its
gradient from one pass over the models x items responses, by numba.

numpy needs about a dozen passes over models x items arrays for it (the logits, the
softplus, the sigmoid, the residual, the mask, four products); this pass reads the
responses once and keeps every per-cell value in registers. float64 throughout, with
libm's exp and log1p, no fast-math: L-BFGS's line search compares values that differ
in their sixth digit. It holds no Python lock, so that fits can run in threads.
Imported only by a fit: numba takes half a second to import.
"""

from __future__ import annotations

import math

import numpy as np

from mdad.kernels import compiled

# no fast-math: libm's own results (stated here: numba's cache is keyed on this file)
EXACT = {"boundscheck": False, "error_model": "numpy"}


def _loglik_pass(theta, a, offset, y, mask, grad_theta, grad_a, grad_offset
                 ):  # pragma: no cover
    """Sum over cells of mask * (y z - softplus(z)), z = theta_i . a_j - offset_j, and
    its gradient, written into `grad_theta` (n, D), `grad_a` (m, D) and
    `grad_offset` (m,), which must hold zeros. `mask` is (n, m), or (0, 0) when every
    cell is observed. Cells and rows are summed in a fixed order, so one machine gives
    the same bits every time (another libm's exp may differ in the last bit)."""
    n, m = y.shape
    dims = theta.shape[1]
    masked = mask.shape[0] > 0
    total = 0.0
    for i in range(n):
        row = 0.0
        for j in range(m):
            z = -offset[j]
            for d in range(dims):
                z += theta[i, d] * a[j, d]
            e = math.exp(-abs(z))
            inverse = 1.0 / (1.0 + e)
            p = inverse if z >= 0.0 else e * inverse
            value = y[i, j] * z - (max(z, 0.0) + math.log1p(e))
            residual = y[i, j] - p
            if masked:
                value *= mask[i, j]
                residual *= mask[i, j]
            row += value
            grad_offset[j] -= residual
            for d in range(dims):
                grad_theta[i, d] += residual * a[j, d]
                grad_a[j, d] += residual * theta[i, d]
        total += row
    return total


loglik_pass = compiled(_loglik_pass, EXACT)


def loglik_and_gradient(theta: np.ndarray, a: np.ndarray, offset: np.ndarray,
                        y: np.ndarray, mask: np.ndarray | None
                        ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """The 2PL log likelihood sum of mask * (y z - softplus(z)) over models x items,
    z = theta @ a.T - offset, and its gradient in theta (n, D), a (m, D) and offset
    (m,). `y` (n, m) holds 0 where `mask` (n, m, 0/1) is 0; None: every cell counts."""
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    a = np.ascontiguousarray(a, dtype=np.float64)
    grad_theta, grad_a = np.zeros_like(theta), np.zeros_like(a)
    grad_offset = np.zeros(a.shape[0])
    total = loglik_pass(theta, a, np.ascontiguousarray(offset, dtype=np.float64), y,
                        np.empty((0, 0)) if mask is None else mask,
                        grad_theta, grad_a, grad_offset)
    return float(total), grad_theta, grad_a, grad_offset
