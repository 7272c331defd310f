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

An epoch is three float32 matrix products (BLAS: scipy's, which numba calls) and one
compiled pass over the models x items responses (`mdad.irt._fused`, by numba), which
takes the softplus and the sigmoid of every logit; a row's sums are in float32, the
rows' in float64. The whole loop, noise and Adam included, is compiled and runs without
Python's lock, some tenths of a second of epochs a call (Ctrl-C is answered between
calls): fits in threads use every core, and work beside them (imports) holds up no fit.
Written without pyro (and torch, hundreds of megabytes) for one fit; it is the same
algorithm, not the same random numbers: its results agree with the fork's in
distribution (tests/test_variational.py, and the tinyBenchmarks reproduction in
docs/explanation/reproduction.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mdad.errors import DataError, check_positive, check_type, check_whole, float_array

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


class _Workspace:
    """The arrays of an epoch, allocated once per fit: fresh ones each epoch cost page
    faults whenever the allocator had returned the memory to the system.

    theta (m, d + 1) holds the abilities beside a column of ones and a (n, d + 1) the
    discriminations beside -D b: theta @ a.T is the logits, and the last column of
    residual.T @ theta the residual's column sums, each in one BLAS product.
    `arrays` is the tuple `mdad.irt._fused.elbo` takes."""

    def __init__(self, layout: GuideLayout, n_models: int, n_items: int,
                 dtype: np.dtype) -> None:
        dims = layout.dims
        theta = np.ones((n_models, dims + 1), dtype)
        a, da = (np.empty((n_items, dims + 1), dtype) for _ in range(2))
        self.arrays = (
            theta, a, np.empty((n_items, dims), dtype), np.empty((n_models, n_items), dtype),
            np.empty((n_models, dims), dtype), da, np.empty(n_items, dtype),
            np.empty(n_items, np.int32), *(np.empty(layout.n_normal) for _ in range(2)),
            np.empty(layout.n_gamma), np.empty(layout.n_normal),
            np.empty(layout.n_normal, np.int64))


_NORMALS = ("t", "a", "b", "mu_t", "mu_a", "mu_b")  # the order their noise is drawn in
_PRECISIONS = ("u_t", "u_a", "u_b")


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


def elbo_gradients(layout: GuideLayout, params: np.ndarray, y: np.ndarray,
                   normal: np.ndarray, gamma: np.ndarray,
                   gradient: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """The single-sample loss (negative ELBO) at the flat `params` (see `GuideLayout`)
    with the standard draws `normal` (n_normal,) and `gamma` (n_gamma,), a Gamma(shape,
    1) draw per precision, and its gradient with respect to `params`, written into
    `gradient` (shape (size,); a new array by default). The models x items arithmetic
    is in float64 when `y` (n_models, n_items) is (for finite differences: the
    polynomials keep their float32 accuracy, but the rounding of the sums is gone), else
    in float32.

    Exposed for tests, which check the gradient by finite differences with the same
    draws (the Gamma draws then follow their implicit derivative).

    Raises
    ------
    ValueError
        When the arrays' shapes are not the layout's: the compiled kernels do not
        check their bounds.
    """
    sizes = (params.shape, normal.shape, gamma.shape, y.ndim == 2 and layout.shapes["b"][0])
    if sizes != ((layout.size,), (layout.n_normal,), (layout.n_gamma,), y.shape[-1]) or (
            layout.shapes["t"][0] != y.shape[0]) or (
            gradient is not None and gradient.shape != (layout.size,)):
        raise ValueError("params, draws, responses or gradient do not fit the layout")
    from mdad.irt import _fused

    work = _Workspace(layout, y.shape[0], y.shape[1],
                      np.dtype(np.float64 if y.dtype == np.float64 else np.float32))
    gradient = np.empty(layout.size) if gradient is None else gradient
    loss = _fused.elbo(params, y, normal, gamma, gradient, layout.n_normal, HYPER_SCALE,
                       _GAMMA_STEP, work.arrays)
    return loss, gradient


def draw_noise(layout: GuideLayout, params: np.ndarray, rng: np.random.Generator
               ) -> tuple[np.ndarray, np.ndarray]:
    """One standard draw per guide variable at the flat `params`: N(0, 1) for the
    Normal ones, shape (n_normal,), and Gamma(shape, 1) for the precisions, shape
    (n_gamma,) (scaled by their rates in `elbo_gradients`): `mdad.irt._fused.draw`,
    as a fit's epoch draws them."""
    from mdad.irt import _fused

    normal, gamma = _noise(layout)
    _fused.draw(rng, layout.sections(params)[2], *normal, gamma)
    return normal[0][:layout.n_normal], gamma


def _noise(layout: GuideLayout) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """Room for an epoch's draws: (normal draws of even size, their scratch), gamma."""
    half = (layout.n_normal + 1) // 2
    return (np.empty(2 * half), np.empty(half)), np.empty(layout.n_gamma)


def standard_normals(rng: np.random.Generator, n: int) -> np.ndarray:
    """n N(0, 1) draws (float64) by Box and Muller's transform of `rng`'s raw 32-bit
    words (`mdad.irt._fused.box_muller`): a fifth of the time of `rng.standard_normal`,
    which took a tenth of an epoch. The draws stop at 6.8 (the largest 32 bits give;
    beyond it lies a share 1e-11 of the normal)."""
    from mdad.irt import _fused

    half = (n + 1) // 2
    out = np.empty(2 * half)
    _fused.box_muller(rng.bit_generator.random_raw(half).view(np.uint32), out,
                      np.empty(half))
    return out[:n]


# Epochs per compiled call: about 20 million cells, a few tenths of a second, so that
# Ctrl-C in the main thread is answered between calls.
_CELLS_PER_CALL = 20_000_000


def fit_variational(responses: np.ndarray, dims: int, *, rng: np.random.Generator,
                    epochs: int = EPOCHS, learning_rate: float = LEARNING_RATE
                    ) -> VariationalFit:
    """Fit the fork's hierarchical multidimensional 2PL to complete 0/1 (or [0, 1])
    `responses` of shape (n_models, n_items) by SVI (see the module docstring), in
    `epochs` (at least 1) steps. `rng` is drawn from without its lock: give each
    thread's fit its own generator.

    Raises
    ------
    ConfigError
        For `dims` or `epochs` that are not whole numbers >= 1, a `learning_rate` that
        is not a finite number > 0, or an `rng` that is not a numpy Generator.
    DataError
        With fewer than 2 models or items, missing cells, or values outside [0, 1];
        or when the fit diverges (a loss that is not a number).
    """
    from mdad.irt import _fused

    check_whole(dims, "dims")
    check_whole(epochs, "epochs")
    check_positive(learning_rate, "learning_rate")
    check_type(rng, np.random.Generator, "rng", "a numpy Generator (np.random.default_rng)")
    y = float_array(responses, "responses")
    if y.ndim != 2 or y.shape[0] < 2 or y.shape[1] < 2:
        raise DataError(f"IRT fit needs at least 2 models and 2 items; got shape {y.shape}",
                        parameters=("responses",))
    if np.isnan(y).any() or (y < 0).any() or (y > 1).any():
        raise DataError("variational IRT fit: responses must be complete scores in [0, 1]",
                        parameters=("responses",))
    layout = GuideLayout(y.shape[0], y.shape[1], dims)
    params = np.zeros(layout.size)  # every location, log scale, shape and rate 0
    state = (params, *(np.zeros(layout.size) for _ in range(3)))  # gradient, Adam's moments
    work = _Workspace(layout, y.shape[0], y.shape[1], np.dtype(np.float32))
    normal, gamma = _noise(layout)
    # 0/1 responses as bytes: a quarter of the memory each epoch reads
    binary = bool(np.all((y == 0) | (y == 1)))
    y = np.ascontiguousarray(y, dtype=np.uint8 if binary else np.float32)
    best, best_loss = np.zeros(layout.n_normal), np.inf
    chunk = max(1, _CELLS_PER_CALL // y.size)
    for start in range(1, epochs + 1, chunk):
        # py-irt exports the parameters after the step of the lowest loss
        best_loss, diverged = _fused.fit_epochs(
            rng, y, start, min(start + chunk, epochs + 1), state, best, best_loss,
            layout.n_normal, HYPER_SCALE, _GAMMA_STEP, learning_rate, *_BETAS, _EPS,
            work.arrays, (*normal, gamma))
        if diverged:
            raise DataError(f"variational IRT fit diverged at epoch {diverged} of {epochs} "
                            f"(its loss is not a number); a smaller learning rate than "
                            f"{learning_rate} may converge")
    views = layout.split(best)
    return VariationalFit(views["a"].copy(), views["b"].copy(), views["t"].copy(),
                          float(best_loss))
