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
The loss decides nothing else, so a step's exact loss is computed only when a fast
bound on it (`_loss_margin`) cannot rule the step out: the fit is the same bits.

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


class _Workspace:
    """The models x items arrays of an epoch (and the blocks' temporaries), allocated
    once per fit. Fresh ones each epoch cost page faults whenever the allocator had
    returned the memory to the system: a 420 x 448 fit ran up to 2.5 times slower."""

    def __init__(self, n_models: int, n_items: int, dims: int, dtype: np.dtype) -> None:
        self.theta = np.empty((n_models, dims), dtype)
        self.a = np.empty((n_items, dims), dtype)
        self.logits, self.softplus, self.residual, self.products = (
            np.empty((n_models, n_items), dtype) for _ in range(4))
        rows = min(n_models, max(1, _BLOCK_ELEMENTS // max(n_items, 1)))
        self.inverse, self.positive = (np.empty((rows, n_items), dtype) for _ in range(2))
        self.nonnegative = np.empty((rows, n_items), dtype=bool)
        self.zeros = np.zeros((rows, n_items), dtype)


def _loss_terms(logits: np.ndarray, y: np.ndarray, workspace: _Workspace | None = None,
                *, exact: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """softplus(logits), y - sigmoid(logits) and y * logits, computed stably, block of
    rows by block. All arrays (n_models, n_items), y's dtype; the results are
    `workspace`'s arrays when it is given (a new one by default).

    `exact`: softplus by ``np.log1p(exp(-|z|))``, as the fit has always had it; else by
    ``np.log(1 + exp(-|z|))`` in y's dtype, six times faster and within
    `SOFTPLUS_ERROR` of it in every element (`_loss_margin`). The other two results are
    the same bits either way.

    Each element goes through the same operations as in one pass over whole arrays, so
    the results are the same bits; only the order in which elements are visited changes.
    """
    if workspace is None:
        workspace = _Workspace(logits.shape[0], logits.shape[1], 1, logits.dtype)
    softplus, residual, products = workspace.softplus, workspace.residual, workspace.products
    inverse, positive, nonnegative, zeros = (workspace.inverse, workspace.positive,
                                             workspace.nonnegative, workspace.zeros)
    rows = inverse.shape[0]
    for start in range(0, logits.shape[0], rows):
        block = slice(start, start + rows)
        z, soft, small = logits[block], softplus[block], residual[block]
        n = z.shape[0]
        inv, pos, nonneg = inverse[:n], positive[:n], nonnegative[:n]
        np.abs(z, out=small)
        np.negative(small, out=small)
        np.exp(small, out=small)  # exp(-|z|)
        np.add(small, 1.0, out=inv)
        if exact:
            np.log1p(small, out=soft)
        else:  # numpy's float32 log1p is a scalar loop; its log is vectorised
            np.log(inv, out=soft)
        np.divide(1.0, inv, out=inv)  # 1 / (1 + exp(-|z|))
        np.maximum(z, zeros[:n], out=pos)  # three times faster than against 0.0
        soft += pos
        # sigmoid: inv where z >= 0, small * inv below. A masked copy or np.where
        # costs ten times this: small <= 1, so max(small, z >= 0) is 1 or small, exactly.
        np.greater_equal(z, 0, out=nonneg)
        np.maximum(small, nonneg, out=small)
        np.multiply(small, inv, out=small)
        np.subtract(y[block], small, out=small)  # y - P(correct)
        np.multiply(y[block], z, out=products[block])
    return softplus, residual, products


# The most the approximate softplus of `_loss_terms` can differ from the exact one in an
# element before the sum: log(1 + s) and log1p(s) differ by at most 2 units of 2^-24
# over every float32 s in (0, 1] (tests/test_variational.py checks them all), and the
# sum with max(z, 0) rounds each by half a unit of its last place. Four times that.
SOFTPLUS_ERROR = 2.0**-21
_ROUNDING = 2.0**-20  # relative: the float32 sums' rounding, and far above float64's


def _loss_margin(n_elements: int, softplus_total: float, loss: _Loss) -> float:
    """The most a loss from the approximate softplus (its float64 total
    `softplus_total` over `n_elements`) can differ from the loss from the exact one."""
    magnitude = (softplus_total + abs(loss.products_total) + abs(loss.log_q)
                 + sum(abs(term) for term in loss.log_p_terms))
    return 2 * n_elements * SOFTPLUS_ERROR + _ROUNDING * magnitude


@dataclass(frozen=True)
class _Loss:
    """The single-sample loss (negative ELBO) but for the softplus total: log p is
    the float64 total of y * logits minus the softplus total, plus `log_p_terms` in
    order; the loss is minus (log p - `log_q`). Adding in this order keeps the bits."""

    products_total: float
    log_p_terms: tuple[float, ...]
    log_q: float

    def at(self, softplus_total: float) -> float:
        log_p = float(self.products_total - softplus_total)
        for term in self.log_p_terms:
            log_p += term
        return -(log_p - self.log_q)


def _standard_gamma_derivative(shape: np.ndarray, draw: np.ndarray) -> np.ndarray:
    """d draw / d shape of a Gamma(shape, 1) draw held at its quantile: minus the
    CDF's derivative in the shape over the density (the implicit reparametrisation)."""
    from scipy.special import gammainc, gammaln

    step = _GAMMA_STEP * np.maximum(shape, 1.0)
    d_cdf = (gammainc(shape + step, draw) - gammainc(shape - step, draw)) / (2 * step)
    log_density = (shape - 1) * np.log(draw) - draw - gammaln(shape)
    return -d_cdf / np.exp(log_density)


_NORMALS = ("t", "a", "b", "mu_t", "mu_a", "mu_b")  # the order their noise is drawn in
_PRECISIONS = ("u_t", "u_a", "u_b")
_PRIORS = (("t", "mu_t", "u_t"), ("a", "mu_a", "u_a"), ("b", "mu_b", "u_b"))
_LOG_2PI = np.log(2 * np.pi)
_LOG_HYPER_NORMALISER = np.log(HYPER_SCALE * np.sqrt(2 * np.pi))


class GuideLayout:
    """Where each guide parameter sits in one flat vector of `size` floats:
    ``[loc | logscale]`` over the Normal variables t (n_models, dims), a (n_items,
    dims), b (n_items,), mu_t (dims,), mu_a (dims,), mu_b (1,), in the order their
    noise is drawn, then ``[logshape | lograte]`` over the precisions u_t (dims,), u_a
    (dims,), u_b (1,).

    One vector makes an epoch's arithmetic a few array operations whatever the number
    of variables; every operation is elementwise or a sum over one variable, so the
    numbers are those of one array per variable, bit for bit.
    """

    def __init__(self, n_models: int, n_items: int, dims: int) -> None:
        self.dims = dims
        self.shapes = {"t": (n_models, dims), "a": (n_items, dims), "b": (n_items,),
                       "mu_t": (dims,), "mu_a": (dims,), "mu_b": (1,),
                       "u_t": (dims,), "u_a": (dims,), "u_b": (1,)}
        self._places: dict[str, slice] = {}  # each variable's slice of its section
        for names in (_NORMALS, _PRECISIONS):
            offset = 0
            for name in names:
                size = int(np.prod(self.shapes[name]))
                self._places[name] = slice(offset, offset + size)
                offset += size
        self.n_normal = self._places["mu_b"].stop
        self.n_gamma = self._places["u_b"].stop
        self.size = 2 * (self.n_normal + self.n_gamma)

    def sections(self, flat: np.ndarray) -> tuple[np.ndarray, ...]:
        """Views (loc, logscale, logshape, lograte) into `flat` of shape (size,)."""
        normal, gamma = self.n_normal, self.n_gamma
        return (flat[:normal], flat[normal:2 * normal], flat[2 * normal:2 * normal + gamma],
                flat[2 * normal + gamma:])

    def split(self, vector: np.ndarray) -> dict[str, np.ndarray]:
        """Views into a vector of shape (n_normal,) or (n_gamma,), one per variable of
        that kind, each of the variable's shape."""
        if vector.shape[0] not in (self.n_normal, self.n_gamma):
            raise ValueError(f"a vector of {vector.shape[0]} values is neither the Normal "
                             f"variables' ({self.n_normal}) nor the precisions' "
                             f"({self.n_gamma})")
        names = _NORMALS if vector.shape[0] == self.n_normal else _PRECISIONS
        return {name: vector[self._places[name]].reshape(self.shapes[name]) for name in names}

    def named(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        """Views into `flat`, keyed as the fork names the parameters (loc_t,
        logscale_t, ..., logshape_u_t, lograte_u_t, ...)."""
        loc, logscale, logshape, lograte = self.sections(flat)
        views = {}
        for prefix, section in (("loc", loc), ("logscale", logscale),
                                ("logshape", logshape), ("lograte", lograte)):
            views.update({f"{prefix}_{name}": view
                          for name, view in self.split(section).items()})
        return views


class _Adam:
    """torch.optim.Adam's update (no weight decay, no amsgrad) of the flat vector
    `params` by the flat vector `gradient`, in place."""

    def __init__(self, params: np.ndarray, lr: float) -> None:
        self.params, self.lr, self.t = params, lr, 0
        self.gradient = np.zeros_like(params)
        self.m, self.v = np.zeros_like(params), np.zeros_like(params)
        self._scratch, self._step = np.empty_like(params), np.empty_like(params)

    def step(self) -> None:
        self.t += 1
        b1, b2 = _BETAS
        c1, c2 = 1 - b1**self.t, 1 - b2**self.t
        g, scratch, step = self.gradient, self._scratch, self._step
        self.m *= b1
        self.m += np.multiply(g, 1 - b1, out=scratch)
        self.v *= b2
        np.multiply(g, 1 - b2, out=scratch)
        scratch *= g
        self.v += scratch
        # lr / c1 * m / (sqrt(v) / sqrt(c2) + eps), operation by operation
        np.sqrt(self.v, out=scratch)
        scratch /= np.sqrt(c2)
        scratch += _EPS
        np.multiply(self.m, self.lr / c1, out=step)
        step /= scratch
        self.params -= step


def elbo_gradients(layout: GuideLayout, params: np.ndarray, y: np.ndarray,
                   normal: np.ndarray, gamma: np.ndarray,
                   gradient: np.ndarray | None = None, workspace: _Workspace | None = None
                   ) -> tuple[float, np.ndarray]:
    """The single-sample loss (negative ELBO) at the flat `params` (see `GuideLayout`)
    with the standard draws `normal` (n_normal,) and `gamma` (n_gamma,), a Gamma(shape,
    1) draw per precision, and its gradient with respect to `params`, written into
    `gradient` (shape (size,); a new array by default). The models x items arithmetic is
    in the dtype of `y` (n_models, n_items), in `workspace` (a new one by default).

    Exposed for tests, which check the gradient by finite differences with the same
    draws (the Gamma draws then follow their implicit derivative).
    """
    loss, softplus_total, gradient = _elbo(layout, params, y, normal, gamma, gradient,
                                           workspace, exact=True)
    return loss.at(softplus_total), gradient


def _elbo(layout: GuideLayout, params: np.ndarray, y: np.ndarray, normal: np.ndarray,
          gamma: np.ndarray, gradient: np.ndarray | None, workspace: _Workspace | None,
          *, exact: bool) -> tuple[_Loss, float, np.ndarray]:
    """`elbo_gradients`' loss but for its softplus total, that total (`exact` or not,
    see `_loss_terms`) and the gradient; the workspace's logits are left in place."""
    from scipy.special import gammaln, psi

    dims = layout.dims
    loc, logscale, logshape, lograte = layout.sections(params)
    scale = np.exp(logscale)
    z_flat = loc + scale * normal
    shape, rate = np.exp(logshape), np.exp(lograte)
    u_flat = gamma / rate
    z, u = layout.split(z_flat), layout.split(u_flat)

    theta, a, b = z["t"], z["a"], z["b"]
    # The models x items arrays in y's dtype: the fit passes float32, half the time and
    # far finer than the single-sample noise of the gradient; sums are in float64.
    work = y.dtype
    if workspace is None:
        workspace = _Workspace(y.shape[0], y.shape[1], dims, work)
    theta_w, a_w, logits = workspace.theta, workspace.a, workspace.logits
    theta_w[...], a_w[...] = theta, a
    np.matmul(theta_w, a_w.T, out=logits)
    logits -= work.type(dims) * b.astype(work)[None, :]
    softplus, residual, products = _loss_terms(logits, y, workspace, exact=exact)
    softplus_total = float(softplus.sum(dtype=np.float64))
    products_total = float(products.sum(dtype=np.float64))
    log_p_terms: list[float] = []
    # d log p / d each sampled variable, and / d each precision
    dz_flat = np.zeros(layout.n_normal)
    dz = layout.split(dz_flat)
    dz["t"][...] = residual @ a_w
    dz["a"][...] = residual.T @ theta_w
    dz["b"][...] = -dims * residual.sum(axis=0, dtype=np.float64)
    du_flat = np.empty(layout.n_gamma)
    du = layout.split(du_flat)
    for value, mean, precision in _PRIORS:
        # log N(x; mu, 1/u) = log u - u^2 (x - mu)^2 / 2 - log sqrt(2 pi)
        deviation = z[value] - z[mean]
        precision_value = u[precision]
        squared_precision, squared_deviation = precision_value**2, deviation**2
        pulled = squared_precision * deviation
        log_p_terms.append(float((np.log(precision_value) * np.ones_like(deviation)).sum()
                                 - 0.5 * (squared_precision * squared_deviation).sum()
                                 - 0.5 * _LOG_2PI * deviation.size))
        dz[value] -= pulled
        dz[mean] += pulled.sum(axis=0)
        du[precision][...] = (deviation.shape[0] / precision_value
                              - precision_value * squared_deviation.sum(axis=0))
    for name in ("mu_t", "mu_a", "mu_b"):  # mu ~ N(0, 10)
        log_p_terms.append(float(-0.5 * (z[name] ** 2).sum() / HYPER_SCALE**2
                                 - z[name].size * _LOG_HYPER_NORMALISER))
        dz[name] -= z[name] / HYPER_SCALE**2
    for name in _PRECISIONS:  # u ~ Gamma(1, 1): log p = -u
        log_p_terms.append(float(-u[name].sum()))
    du_flat -= 1.0

    gradient = np.empty(layout.size) if gradient is None else gradient
    d_loc, d_logscale, d_logshape, d_lograte = layout.sections(gradient)
    log_q = 0.0
    for terms in layout.split(-logscale - 0.5 * normal**2 - 0.5 * _LOG_2PI).values():
        log_q += float(terms.sum())
    np.negative(dz_flat, out=d_loc)
    # d ELBO / d log scale = scale * dlogp/dz * eps + 1 (the entropy's)
    np.multiply(scale, dz_flat, out=d_logscale)
    d_logscale *= normal
    d_logscale += 1.0
    np.negative(d_logscale, out=d_logscale)
    alpha, beta, value = shape, rate, u_flat
    log_terms = (alpha * np.log(beta) - gammaln(alpha) + (alpha - 1) * np.log(value)
                 - beta * value)
    for terms in layout.split(log_terms).values():
        log_q += float(terms.sum())
    d_value_d_alpha = _standard_gamma_derivative(alpha, gamma) / beta
    d_value_d_beta = -value / beta
    d_logq_d_value = (alpha - 1) / value - beta
    d_logq_d_alpha = np.log(beta) - psi(alpha) + np.log(value)
    d_logq_d_beta = alpha / beta - value
    d_elbo_d_alpha = ((du_flat - d_logq_d_value) * d_value_d_alpha - d_logq_d_alpha)
    d_elbo_d_beta = ((du_flat - d_logq_d_value) * d_value_d_beta - d_logq_d_beta)
    np.multiply(-alpha, d_elbo_d_alpha, out=d_logshape)
    np.multiply(-beta, d_elbo_d_beta, out=d_lograte)
    return _Loss(products_total, tuple(log_p_terms), log_q), softplus_total, gradient


def draw_noise(layout: GuideLayout, params: np.ndarray, rng: np.random.Generator
               ) -> tuple[np.ndarray, np.ndarray]:
    """One standard draw per guide variable at the flat `params`: N(0, 1) for the
    Normal ones, shape (n_normal,), and Gamma(shape, 1) for the precisions, shape
    (n_gamma,) (scaled by their rates in `elbo_gradients`)."""
    normal = rng.standard_normal(layout.n_normal)
    shape = np.exp(layout.sections(params)[2])
    return normal, np.maximum(rng.standard_gamma(shape), 1e-300)


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
    layout = GuideLayout(y.shape[0], y.shape[1], dims)
    params = np.zeros(layout.size)  # every location, log scale, shape and rate 0
    optimiser = _Adam(params, learning_rate)
    views = layout.named(params)
    y = y.astype(np.float32)
    workspace = _Workspace(y.shape[0], y.shape[1], dims, y.dtype)
    best_loss, best = np.inf, None
    for _ in range(epochs):
        normal, gamma = draw_noise(layout, params, rng)
        loss, softplus_total, _ = _elbo(layout, params, y, normal, gamma,
                                        optimiser.gradient, workspace, exact=False)
        # Only the best step's loss matters, so the exact softplus (most of an epoch's
        # time) is computed only when the approximate one cannot rule the step out:
        # the steps, and the one kept, are those of the exact loss at every step.
        if loss.at(softplus_total) - _loss_margin(y.size, softplus_total, loss) < best_loss:
            exact_total = _loss_terms(workspace.logits, y, workspace)[0].sum(dtype=np.float64)
            loss_value = loss.at(float(exact_total))
        else:
            loss_value = np.inf
        optimiser.step()
        if loss_value < best_loss:  # py-irt exports the parameters after the step
            best_loss = loss_value
            best = (views["loc_a"].copy(), views["loc_b"].copy(), views["loc_t"].copy())
    assert best is not None
    return VariationalFit(best[0], best[1], best[2], float(best_loss))
