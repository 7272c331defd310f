"""The multidimensional 2PL fitted as tinyBenchmarks fitted it: stochastic variational
inference (SVI) on the hierarchical model of the py-irt fork it used.

The model (``P_ij = sigmoid(theta_i . a_j - D b_j)``, scales written as 1 / precision,
as the fork writes them):

    mu_b ~ N(0, 10),  u_b ~ Gamma(1, 1),  b_j ~ N(mu_b, 1 / u_b)
    mu_t ~ N(0, 10),  u_t ~ Gamma(1, 1),  theta_id ~ N(mu_t_d, 1 / u_t_d)   (D each)
    mu_a ~ N(0, 10),  u_a ~ Gamma(1, 1),  a_jd ~ N(mu_a_d, 1 / u_a_d)       (D each)

with a mean-field guide: a Normal (location, scale) for every Normal variable, a
Gamma (shape, rate) for every precision, all started at location 0, scale 1, shape and
rate 1. Each of `epochs` steps draws one sample of every variable, differentiates the
single-sample ELBO by the reparametrisation trick (the Gamma draws by their implicit
derivative, as pyro does), and moves every parameter (scales, shapes and rates on the
log scale) by Adam with learning rate 0.1. The fit keeps the parameters after the step
whose loss was lowest, as py-irt's trainer does, and reports the guide's locations.

Written with numpy because pyro (and torch, hundreds of megabytes) would be a
dependency for one fit; it is the same algorithm, not the same random numbers: its
results agree with the fork's in distribution (tests/test_variational.py, and the
tinyBenchmarks reproduction in the README).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mdad.errors import DataError

HYPER_SCALE = 10.0  # the prior scale of every location hyperparameter
EPOCHS = 2000
LEARNING_RATE = 0.1
_BETAS = (0.9, 0.999)
_EPS = 1e-8
_GAMMA_STEP = 1e-4  # relative step of the numerical derivative of the Gamma CDF


@dataclass(frozen=True, eq=False)
class VariationalFit:
    """The guide's locations after the best step.

    Attributes
    ----------
    discrimination_ : array of shape (n_items, dims)
    difficulty_ : array of shape (n_items,)
    ability_ : array of shape (n_models, dims)
    best_loss : the lowest single-sample loss (negative ELBO, nats) seen.
    """

    discrimination_: np.ndarray
    difficulty_: np.ndarray
    ability_: np.ndarray
    best_loss: float


# Elements of a block of rows (256 KiB each in float32): a block's temporaries stay in
# the core's cache, so the arithmetic between the models x items arrays' reads and
# writes costs no memory traffic (two fits share this machine's memory bandwidth).
_BLOCK_ELEMENTS = 1 << 16


def _loss_terms(logits: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """softplus(logits) and y - sigmoid(logits), computed stably, block of rows by block;
    `logits` is overwritten with y * logits. All arrays (n_models, n_items), y's dtype.

    Each element goes through the same operations as in one pass over whole arrays, so
    the results are the same bits; only the order in which elements are visited changes.
    """
    softplus, residual = np.empty_like(logits), np.empty_like(logits)
    rows = max(1, _BLOCK_ELEMENTS // max(logits.shape[1], 1))
    inverse = np.empty((rows, logits.shape[1]), dtype=logits.dtype)
    positive, nonnegative = np.empty_like(inverse), np.empty(inverse.shape, dtype=bool)
    for start in range(0, logits.shape[0], rows):
        block = slice(start, start + rows)
        z, soft, small = logits[block], softplus[block], residual[block]
        n = z.shape[0]
        inv, pos, nonneg = inverse[:n], positive[:n], nonnegative[:n]
        np.abs(z, out=small)
        np.negative(small, out=small)
        np.exp(small, out=small)  # exp(-|z|)
        np.add(small, 1.0, out=inv)
        np.divide(1.0, inv, out=inv)  # 1 / (1 + exp(-|z|))
        np.log1p(small, out=soft)
        np.maximum(z, 0.0, out=pos)
        soft += pos
        # sigmoid: inv where z >= 0, small * inv below. A masked copy or np.where
        # costs ten times this: small <= 1, so max(small, z >= 0) is 1 or small, exactly.
        np.greater_equal(z, 0, out=nonneg)
        np.maximum(small, nonneg, out=small)
        np.multiply(small, inv, out=small)
        np.subtract(y[block], small, out=small)  # y - P(correct)
        np.multiply(y[block], z, out=z)
    return softplus, residual


def _standard_gamma_derivative(shape: np.ndarray, draw: np.ndarray) -> np.ndarray:
    """d draw / d shape of a Gamma(shape, 1) draw held at its quantile: minus the
    CDF's derivative in the shape over the density (the implicit reparametrisation)."""
    from scipy.special import gammainc, gammaln

    step = _GAMMA_STEP * np.maximum(shape, 1.0)
    d_cdf = (gammainc(shape + step, draw) - gammainc(shape - step, draw)) / (2 * step)
    log_density = (shape - 1) * np.log(draw) - draw - gammaln(shape)
    return -d_cdf / np.exp(log_density)


def _views(flat: np.ndarray, params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Views into `flat`, one per parameter in order, each of that parameter's shape."""
    ends = np.cumsum([value.size for value in params.values()])
    return {key: flat[end - value.size:end].reshape(value.shape)
            for (key, value), end in zip(params.items(), ends, strict=True)}


class _Adam:
    """torch.optim.Adam's update (no weight decay, no amsgrad) on every parameter at
    once: the parameters are views into one flat array, so a step is a few array
    operations whatever their number."""

    def __init__(self, params: dict[str, np.ndarray], lr: float) -> None:
        self.lr, self.t = lr, 0
        self.flat = np.concatenate([value.ravel() for value in params.values()])
        self.views = _views(self.flat, params)
        self.gradient = np.zeros_like(self.flat)
        self.gradient_views = _views(self.gradient, params)
        self.m = np.zeros_like(self.flat)
        self.v = np.zeros_like(self.flat)

    def step(self, grads: dict[str, np.ndarray]) -> None:
        for key, grad in grads.items():
            self.gradient_views[key][...] = grad
        self.t += 1
        b1, b2 = _BETAS
        c1, c2 = 1 - b1**self.t, 1 - b2**self.t
        g = self.gradient
        self.m *= b1
        self.m += (1 - b1) * g
        self.v *= b2
        self.v += (1 - b2) * g * g
        self.flat -= self.lr / c1 * self.m / (np.sqrt(self.v) / np.sqrt(c2) + _EPS)


def _initial(n_models: int, n_items: int, dims: int) -> dict[str, np.ndarray]:
    """Guide parameters: locations 0, log scales 0, log shapes and rates 0."""
    shapes = {"t": (n_models, dims), "a": (n_items, dims), "b": (n_items,),
              "mu_t": (dims,), "mu_a": (dims,), "mu_b": (1,)}
    params = {}
    for name, shape in shapes.items():
        params[f"loc_{name}"] = np.zeros(shape)
        params[f"logscale_{name}"] = np.zeros(shape)
    for name, size in (("u_t", dims), ("u_a", dims), ("u_b", 1)):
        params[f"logshape_{name}"] = np.zeros(size)
        params[f"lograte_{name}"] = np.zeros(size)
    return params


def elbo_gradients(params: dict[str, np.ndarray], y: np.ndarray, noise: dict[str, np.ndarray]
                   ) -> tuple[float, dict[str, np.ndarray]]:
    """The single-sample loss (negative ELBO) at `params` with the standard draws
    `noise` (a N(0, 1) array per Normal variable, a Gamma(shape, 1) draw per
    precision), and its gradient with respect to every parameter. The models x items
    arithmetic is in the dtype of `y` (n_models, n_items).

    Exposed for tests, which check the gradient by finite differences with the same
    draws (the Gamma draws then follow their implicit derivative).
    """
    from scipy.special import gammaln, psi

    dims = params["loc_a"].shape[1]
    z, scale = {}, {}
    for name in ("t", "a", "b", "mu_t", "mu_a", "mu_b"):
        scale[name] = np.exp(params[f"logscale_{name}"])
        z[name] = params[f"loc_{name}"] + scale[name] * noise[name]
    shape, rate, u = {}, {}, {}
    for name in ("u_t", "u_a", "u_b"):
        shape[name] = np.exp(params[f"logshape_{name}"])
        rate[name] = np.exp(params[f"lograte_{name}"])
        u[name] = noise[name] / rate[name]

    theta, a, b = z["t"], z["a"], z["b"]
    # The models x items arrays in y's dtype: the fit passes float32, half the time and
    # far finer than the single-sample noise of the gradient; sums are in float64.
    work = y.dtype
    logits = theta.astype(work) @ a.T.astype(work)
    logits -= work.type(dims) * b.astype(work)[None, :]
    softplus, residual = _loss_terms(logits, y)  # logits now y * logits
    softplus_total = softplus.sum(dtype=np.float64)
    log_p = float(np.sum(logits, dtype=np.float64) - softplus_total)
    # d log p / d each sampled variable
    theta_w, a_w = theta.astype(work), a.astype(work)
    dz = {"t": (residual @ a_w).astype(np.float64), "a": (residual.T @ theta_w).astype(np.float64),
          "b": -dims * residual.sum(axis=0, dtype=np.float64)}
    du: dict[str, np.ndarray] = {}
    dz["mu_t"], dz["mu_a"], dz["mu_b"] = (np.zeros(dims), np.zeros(dims), np.zeros(1))
    for value, mean, precision, dvalue, dmean in (
            ("t", "mu_t", "u_t", "t", "mu_t"), ("a", "mu_a", "u_a", "a", "mu_a"),
            ("b", "mu_b", "u_b", "b", "mu_b")):
        # log N(x; mu, 1/u) = log u - u^2 (x - mu)^2 / 2 - log sqrt(2 pi)
        deviation = z[value] - z[mean]
        precision_value = u[precision]
        axis = 0 if deviation.ndim > 1 else None
        log_p += float(np.sum(np.log(precision_value) * np.ones_like(deviation))
                       - 0.5 * np.sum(precision_value**2 * deviation**2)
                       - 0.5 * np.log(2 * np.pi) * deviation.size)
        dz[dvalue] = dz[dvalue] - precision_value**2 * deviation
        pulled = precision_value**2 * deviation
        dz[dmean] = dz[dmean] + (pulled.sum(axis=axis) if axis is not None
                                 else np.atleast_1d(pulled.sum()))
        count = deviation.shape[0] if deviation.ndim > 1 else deviation.size
        spread = (deviation**2).sum(axis=axis) if axis is not None else np.atleast_1d(
            (deviation**2).sum())
        du[precision] = count / precision_value - precision_value * spread
    for name in ("mu_t", "mu_a", "mu_b"):  # mu ~ N(0, 10)
        log_p += float(-0.5 * np.sum(z[name] ** 2) / HYPER_SCALE**2
                       - z[name].size * np.log(HYPER_SCALE * np.sqrt(2 * np.pi)))
        dz[name] = dz[name] - z[name] / HYPER_SCALE**2
    for name in ("u_t", "u_a", "u_b"):  # u ~ Gamma(1, 1): log p = -u
        log_p += float(-np.sum(u[name]))
        du[name] = du[name] - 1.0

    log_q = 0.0
    grads: dict[str, np.ndarray] = {}
    for name in z:
        log_q += float(np.sum(-params[f"logscale_{name}"] - 0.5 * noise[name] ** 2
                              - 0.5 * np.log(2 * np.pi)))
        grads[f"loc_{name}"] = -dz[name]
        # d ELBO / d log scale = scale * dlogp/dz * eps + 1 (the entropy's)
        grads[f"logscale_{name}"] = -(scale[name] * dz[name] * noise[name] + 1.0)
    for name in u:
        alpha, beta, value = shape[name], rate[name], u[name]
        log_q += float(np.sum(alpha * np.log(beta) - gammaln(alpha)
                              + (alpha - 1) * np.log(value) - beta * value))
        d_value_d_alpha = _standard_gamma_derivative(alpha, noise[name]) / beta
        d_value_d_beta = -value / beta
        d_logq_d_value = (alpha - 1) / value - beta
        d_logq_d_alpha = np.log(beta) - psi(alpha) + np.log(value)
        d_logq_d_beta = alpha / beta - value
        d_elbo_d_alpha = ((du[name] - d_logq_d_value) * d_value_d_alpha - d_logq_d_alpha)
        d_elbo_d_beta = ((du[name] - d_logq_d_value) * d_value_d_beta - d_logq_d_beta)
        grads[f"logshape_{name}"] = -alpha * d_elbo_d_alpha
        grads[f"lograte_{name}"] = -beta * d_elbo_d_beta
    return -(log_p - log_q), grads


def draw_noise(params: dict[str, np.ndarray], rng: np.random.Generator
               ) -> dict[str, np.ndarray]:
    """One standard draw per guide variable: N(0, 1) for the Normal ones, Gamma(shape,
    1) for the precisions (scaled by their rates in `elbo_gradients`)."""
    noise = {name: rng.standard_normal(params[f"loc_{name}"].shape)
             for name in ("t", "a", "b", "mu_t", "mu_a", "mu_b")}
    for name in ("u_t", "u_a", "u_b"):
        noise[name] = np.maximum(rng.standard_gamma(np.exp(params[f"logshape_{name}"])),
                                 1e-300)
    return noise


def fit_variational(responses: np.ndarray, dims: int, *, rng: np.random.Generator,
                    epochs: int = EPOCHS, learning_rate: float = LEARNING_RATE
                    ) -> VariationalFit:
    """Fit the fork's hierarchical multidimensional 2PL to complete 0/1 (or [0, 1])
    `responses` of shape (n_models, n_items) by SVI (see the module docstring).

    Raises
    ------
    DataError
        With fewer than 2 models or items, missing cells, or values outside [0, 1].
    """
    y = np.asarray(responses, dtype=np.float64)
    if y.ndim != 2 or y.shape[0] < 2 or y.shape[1] < 2:
        raise DataError(f"IRT fit needs at least 2 models and 2 items; got shape {y.shape}")
    if np.isnan(y).any() or (y < 0).any() or (y > 1).any():
        raise DataError("variational IRT fit: responses must be complete scores in [0, 1]")
    optimiser = _Adam(_initial(y.shape[0], y.shape[1], dims), learning_rate)
    params = optimiser.views  # updated in place by each step
    y = y.astype(np.float32)
    best_loss, best = np.inf, None
    for _ in range(epochs):
        loss, grads = elbo_gradients(params, y, draw_noise(params, rng))
        optimiser.step(grads)
        if loss < best_loss:  # py-irt exports the parameters after the step
            best_loss = loss
            best = (params["loc_a"].copy(), params["loc_b"].copy(), params["loc_t"].copy())
    assert best is not None
    return VariationalFit(best[0], best[1], best[2], float(best_loss))
