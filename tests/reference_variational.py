"""The variational fit of `mdad.irt.variational` written plainly, one array per
variable and one pass per operation, as it was before the fit moved to one flat vector
(commit 7abfc20): the tests hold the fast fit to these bits, so that a reordered
operation there shows, not only a wrong gradient.

Each function performs the same floating-point operations, in the same order, on the
same values as the fast fit; it is slower only by its number of numpy calls.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammainc, gammaln, psi

NORMALS = {"t": "models", "a": "items", "b": "items_1d", "mu_t": "dims", "mu_a": "dims",
           "mu_b": "one"}
PRECISIONS = ("u_t", "u_a", "u_b")


def shapes(n_models: int, n_items: int, dims: int) -> dict[str, tuple[int, ...]]:
    sizes = {"models": (n_models, dims), "items": (n_items, dims), "items_1d": (n_items,),
             "dims": (dims,), "one": (1,)}
    result = {name: sizes[kind] for name, kind in NORMALS.items()}
    result.update({"u_t": (dims,), "u_a": (dims,), "u_b": (1,)})
    return result


def initial(n_models: int, n_items: int, dims: int) -> dict[str, np.ndarray]:
    shape = shapes(n_models, n_items, dims)
    params = {}
    for name in NORMALS:
        params[f"loc_{name}"] = np.zeros(shape[name])
        params[f"logscale_{name}"] = np.zeros(shape[name])
    for name in PRECISIONS:
        params[f"logshape_{name}"] = np.zeros(shape[name])
        params[f"lograte_{name}"] = np.zeros(shape[name])
    return params


def draw_noise(params: dict[str, np.ndarray], rng: np.random.Generator
               ) -> dict[str, np.ndarray]:
    noise = {name: rng.standard_normal(params[f"loc_{name}"].shape) for name in NORMALS}
    for name in PRECISIONS:
        noise[name] = np.maximum(rng.standard_gamma(np.exp(params[f"logshape_{name}"])),
                                 1e-300)
    return noise


def _gamma_derivative(shape: np.ndarray, draw: np.ndarray) -> np.ndarray:
    step = 1e-4 * np.maximum(shape, 1.0)
    d_cdf = (gammainc(shape + step, draw) - gammainc(shape - step, draw)) / (2 * step)
    log_density = (shape - 1) * np.log(draw) - draw - gammaln(shape)
    return -d_cdf / np.exp(log_density)


def elbo_gradients(params: dict[str, np.ndarray], y: np.ndarray,
                   noise: dict[str, np.ndarray]) -> tuple[float, dict[str, np.ndarray]]:
    dims = params["loc_a"].shape[1]
    z, scale = {}, {}
    for name in NORMALS:
        scale[name] = np.exp(params[f"logscale_{name}"])
        z[name] = params[f"loc_{name}"] + scale[name] * noise[name]
    shape, rate, u = {}, {}, {}
    for name in PRECISIONS:
        shape[name] = np.exp(params[f"logshape_{name}"])
        rate[name] = np.exp(params[f"lograte_{name}"])
        u[name] = noise[name] / rate[name]
    work = y.dtype
    theta_w, a_w = z["t"].astype(work), z["a"].astype(work)
    logits = theta_w @ z["a"].T.astype(work)
    logits -= work.type(dims) * z["b"].astype(work)[None, :]
    small = np.exp(-np.abs(logits))
    inverse = 1.0 / (small + 1.0)
    softplus = np.log1p(small) + np.maximum(logits, 0.0)
    residual = y - np.maximum(small, logits >= 0) * inverse
    log_p = float(np.sum(y * logits, dtype=np.float64) - softplus.sum(dtype=np.float64))
    dz = {"t": (residual @ a_w).astype(np.float64),
          "a": (residual.T @ theta_w).astype(np.float64),
          "b": -dims * residual.sum(axis=0, dtype=np.float64),
          "mu_t": np.zeros(dims), "mu_a": np.zeros(dims), "mu_b": np.zeros(1)}
    du = {}
    for value, mean, precision in (("t", "mu_t", "u_t"), ("a", "mu_a", "u_a"),
                                   ("b", "mu_b", "u_b")):
        deviation = z[value] - z[mean]
        pv = u[precision]
        axis = 0 if deviation.ndim > 1 else None
        log_p += float(np.sum(np.log(pv) * np.ones_like(deviation))
                       - 0.5 * np.sum(pv**2 * deviation**2)
                       - 0.5 * np.log(2 * np.pi) * deviation.size)
        dz[value] = dz[value] - pv**2 * deviation
        pulled = pv**2 * deviation
        dz[mean] = dz[mean] + (pulled.sum(axis=axis) if axis is not None
                               else np.atleast_1d(pulled.sum()))
        spread = ((deviation**2).sum(axis=axis) if axis is not None
                  else np.atleast_1d((deviation**2).sum()))
        du[precision] = deviation.shape[0] / pv - pv * spread
    for name in ("mu_t", "mu_a", "mu_b"):
        log_p += float(-0.5 * np.sum(z[name] ** 2) / 10.0**2
                       - z[name].size * np.log(10.0 * np.sqrt(2 * np.pi)))
        dz[name] = dz[name] - z[name] / 10.0**2
    for name in PRECISIONS:
        log_p += float(-np.sum(u[name]))
        du[name] = du[name] - 1.0
    log_q = 0.0
    grads = {}
    for name in NORMALS:
        log_q += float(np.sum(-params[f"logscale_{name}"] - 0.5 * noise[name] ** 2
                              - 0.5 * np.log(2 * np.pi)))
        grads[f"loc_{name}"] = -dz[name]
        grads[f"logscale_{name}"] = -(scale[name] * dz[name] * noise[name] + 1.0)
    for name in PRECISIONS:
        alpha, beta, value = shape[name], rate[name], u[name]
        log_q += float(np.sum(alpha * np.log(beta) - gammaln(alpha)
                              + (alpha - 1) * np.log(value) - beta * value))
        d_value_d_alpha = _gamma_derivative(alpha, noise[name]) / beta
        d_logq_d_value = (alpha - 1) / value - beta
        d_elbo_d_alpha = ((du[name] - d_logq_d_value) * d_value_d_alpha
                          - (np.log(beta) - psi(alpha) + np.log(value)))
        d_elbo_d_beta = ((du[name] - d_logq_d_value) * (-value / beta)
                         - (alpha / beta - value))
        grads[f"logshape_{name}"] = -alpha * d_elbo_d_alpha
        grads[f"lograte_{name}"] = -beta * d_elbo_d_beta
    return -(log_p - log_q), grads


def fit(responses: np.ndarray, dims: int, rng: np.random.Generator, epochs: int
        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(discrimination, difficulty, ability, best loss) after the best of `epochs`
    steps of torch's Adam at 0.1, each parameter its own array."""
    params = initial(responses.shape[0], responses.shape[1], dims)
    y = np.asarray(responses, dtype=np.float64).astype(np.float32)
    m = {key: np.zeros_like(value) for key, value in params.items()}
    v = {key: np.zeros_like(value) for key, value in params.items()}
    best_loss, best = np.inf, None
    for t in range(1, epochs + 1):
        loss, grads = elbo_gradients(params, y, draw_noise(params, rng))
        c1, c2 = 1 - 0.9**t, 1 - 0.999**t
        for key, g in grads.items():
            m[key] = 0.9 * m[key] + (1 - 0.9) * g
            v[key] = 0.999 * v[key] + (1 - 0.999) * g * g
            params[key] = params[key] - 0.1 / c1 * m[key] / (np.sqrt(v[key]) / np.sqrt(c2)
                                                              + 1e-8)
        if loss < best_loss:
            best_loss = loss
            best = (params["loc_a"].copy(), params["loc_b"].copy(), params["loc_t"].copy())
    assert best is not None
    return best[0], best[1], best[2], float(best_loss)
