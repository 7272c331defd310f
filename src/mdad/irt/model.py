"""Multidimensional two-parameter logistic (2PL) IRT, fitted by maximum a posteriori.

The probability that model i answers item j correctly is

    P_ij = sigmoid(theta_i . a_j - D * b_j)

with ability theta_i (D values), discrimination a_j (D values) and one difficulty b_j
per item: the parametrisation of the py-irt fork that tinyBenchmarks (and the paper)
used, whose ``item_curve`` sums ``a_jd * theta_d - b_j`` over the D dimensions. Its
per-dimension clip at +-30 is left out: it only matters where P is within 1e-13 of 0
or 1. Priors, comparable to that fork's hierarchical ones: theta_i ~ N(0, I) (it
fixes the scale), a_jd ~ N(0, 1) (the prior mean of its discrimination precision),
b_j ~ N(mu_b, 1/u_b) with a flat mu_b and u_b ~ Gamma(1, 1). All are fitted jointly
by L-BFGS on the exact gradient of the log posterior. The discrimination's precision
is not fitted: a joint MAP over it collapses every a_j to 0 (the prior density grows
without bound), which a test guards against.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mdad.errors import ConfigError, DataError, check_positive, check_whole, float_array


@dataclass(frozen=True, eq=False)
class IrtFit:
    """How a fit went.

    Attributes
    ----------
    log_posterior : the maximised log posterior (nats), priors included.
    log_likelihood : its data part, sum over observed cells.
    n_iterations, converged : as reported by L-BFGS.
    """

    log_posterior: float
    log_likelihood: float
    n_iterations: int
    converged: bool


def softplus_and_sigmoid(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log(1 + exp(z)) and 1 / (1 + exp(-z)), stable for any z, from one exp (faster
    than scipy's log_expit and expit); the fit itself uses the compiled pass."""
    small = np.exp(-np.abs(z))
    softplus = np.maximum(z, 0.0) + np.log1p(small)
    inverse = 1.0 / (1.0 + small)
    return softplus, np.where(z >= 0, inverse, small * inverse)


def _observed(responses: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Responses with NaN replaced by 0, and the 0/1 mask of observed cells."""
    values = float_array(responses, "responses")
    if values.ndim != 2:
        raise DataError(f"{where}: responses must be 2-D (models x items), got {values.ndim}-D",
                        parameters=("responses",))
    observed = ~np.isnan(values)
    if np.any((values[observed] < 0) | (values[observed] > 1)):
        raise DataError(f"{where}: responses must be scores in [0, 1]", parameters=("responses",))
    return np.where(observed, values, 0.0), observed.astype(np.float64)


class MultidimensionalIrt:
    """Multidimensional 2PL IRT model with hierarchical priors, fitted by MAP.

    Parameters
    ----------
    dims : number of ability dimensions D (the paper: 10).
    max_iter : L-BFGS iteration limit.
    tol : relative tolerance on the log posterior (L-BFGS ``ftol``).
    random_state : seed of the small jitter added to the deterministic start: an int >= 0,
        None, or what `numpy.random.default_rng` takes (a SeedSequence, BitGenerator or
        Generator); the same seed and data give the same parameters, bit for bit.

    Attributes (after `fit`)
    ------------------------
    discrimination_ : array of shape (n_items, dims)
    difficulty_ : array of shape (n_items,)
    ability_ : array of shape (n_models, dims), the training models' abilities.
    fit_ : IrtFit
    """

    def __init__(self, dims: int = 10, *, max_iter: int = 1000, tol: float = 1e-6,
                 random_state: int | None = 0) -> None:
        self.dims = dims
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, responses: np.ndarray, *,
            initial_items: tuple[np.ndarray, np.ndarray] | None = None) -> MultidimensionalIrt:
        """Fit item and ability parameters to `responses`.

        Parameters
        ----------
        responses : array of shape (n_models, n_items)
            Scores in [0, 1] (0/1 for correctness; fractions act as soft labels);
            NaN marks an unobserved cell, which the likelihood skips.
        initial_items : (discrimination, difficulty), optional
            Start from these item parameters (e.g. a fit on overlapping data), with
            the abilities that are MAP given them, instead of the default start.

        Raises
        ------
        DataError
            With fewer than 2 models or items, or values outside [0, 1].
        """
        from scipy.optimize import minimize

        from mdad.irt._map_pass import loglik_and_gradient

        # checked here, not in the constructor (scikit-learn's way: it only stores them)
        check_whole(self.dims, "dims")
        check_whole(self.max_iter, "max_iter")
        if not isinstance(self.random_state, np.random.SeedSequence | np.random.Generator
                          | np.random.BitGenerator | None):
            check_whole(self.random_state, "random_state", minimum=0)
        check_positive(self.tol, "tol")
        y, observed = _observed(responses, "IRT fit")
        if not observed.any():
            raise DataError("IRT fit: every response is missing (NaN); nothing to fit",
                            parameters=("responses",))
        n_models, n_items = y.shape
        if n_models < 2 or n_items < 2:
            raise DataError(f"IRT fit needs at least 2 models and 2 items; got {n_models} "
                            f"models x {n_items} items")
        dims = self.dims
        start = (self._start(y, observed) if initial_items is None
                 else self._warm_start(responses, *initial_items))
        mask = None if observed.all() else observed
        sizes = (n_models * dims, n_items * dims, n_items, 2)

        def unpack(x: np.ndarray) -> tuple[np.ndarray, ...]:
            theta, a, b, hyper = np.split(x, np.cumsum(sizes)[:-1])
            return theta.reshape(n_models, dims), a.reshape(n_items, dims), b, hyper

        def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
            # The optimiser works on the offset D * b_j, which is better scaled than b_j.
            theta, a, offset, (log_ub, mu_b) = unpack(x)
            ub = np.exp(log_ub)
            loglik, d_theta, d_a, d_offset = loglik_and_gradient(theta, a, offset, y, mask)
            d = offset / dims - mu_b
            sq_a, sq_b = float(np.sum(a * a)), float(d @ d)
            # The Gamma(1, 1) hyperprior on exp(log_ub) includes the Jacobian.
            log_post = (loglik - 0.5 * float(np.sum(theta * theta)) - 0.5 * sq_a
                        + 0.5 * n_items * log_ub - 0.5 * ub * sq_b + log_ub - ub)
            grad = np.concatenate([
                (d_theta - theta).ravel(),
                (d_a - a).ravel(),
                d_offset - ub * d / dims,
                [0.5 * n_items - 0.5 * ub * sq_b + 1.0 - ub, ub * d.sum()],
            ])
            return -log_post, -grad

        result = minimize(objective, start, jac=True, method="L-BFGS-B",
                          options={"maxiter": self.max_iter, "ftol": self.tol, "gtol": 1e-6,
                                   "maxcor": 20})
        theta, a, offset, _ = unpack(result.x)
        self.ability_, self.discrimination_, self.difficulty_ = theta, a, offset / dims
        loglik = self.log_likelihood(responses)
        self.fit_ = IrtFit(-float(result.fun), loglik, int(result.nit), bool(result.success))
        return self

    def _start(self, y: np.ndarray, observed: np.ndarray) -> np.ndarray:
        """A deterministic start from the leading singular vectors of the centred
        responses, plus a seeded jitter that breaks exact symmetries."""
        n_models, n_items = y.shape
        dims = self.dims
        counts = observed.sum(axis=0)
        item_mean = (y.sum(axis=0) + 0.5) / (counts + 1.0)
        offset = -np.log(item_mean / (1 - item_mean))
        centred = observed * (y - item_mean)
        u, s, vt = np.linalg.svd(centred, full_matrices=False)
        k = min(dims, s.size)
        theta = np.zeros((n_models, dims))
        a = np.zeros((n_items, dims))
        scale = np.sqrt(n_models)
        theta[:, :k] = u[:, :k] * scale
        a[:, :k] = 4.0 * vt[:k].T * s[:k] / (scale * np.sqrt(np.maximum(counts, 1.0)))[:, None]
        rng = np.random.default_rng(self.random_state)
        theta += 0.01 * rng.standard_normal(theta.shape)
        a += 0.01 * rng.standard_normal(a.shape)
        hyper = [0.0, float(offset.mean()) / dims]
        return np.concatenate([theta.ravel(), a.ravel(), offset, hyper])

    def _warm_start(self, responses: np.ndarray, discrimination: np.ndarray,
                    difficulty: np.ndarray) -> np.ndarray:
        a = np.asarray(discrimination, dtype=np.float64)
        if a.shape != (np.shape(responses)[1], self.dims):
            raise ConfigError(f"initial_items: discrimination must have shape "
                              f"({np.shape(responses)[1]}, {self.dims}); got {a.shape}")
        offset = self.dims * np.asarray(difficulty, dtype=np.float64)
        theta = map_ability(responses, a, difficulty)
        hyper = [0.0, float(offset.mean()) / self.dims]
        return np.concatenate([theta.ravel(), a.ravel(), offset, hyper])

    def _check_fitted(self) -> None:
        if not hasattr(self, "discrimination_"):
            raise ConfigError("this MultidimensionalIrt is not fitted; call fit(responses) "
                              "first")

    def standardised(self) -> MultidimensionalIrt:
        """The same fit with its training abilities re-expressed to mean 0 and identity
        covariance, so that the N(0, I) prior of a new model's ability is the training
        models' own spread.

        The likelihood fixes the abilities only up to a shift and linear map that the
        item parameters absorb: with theta = mean + T z (T T' the abilities'
        covariance), ``theta . a_j - D b_j = z . (T' a_j) - (D b_j - a_j . mean)``, so
        every training model's P(correct) is unchanged. Why it matters: with many
        items and few models the fit can sit far from its own prior (on mmlu-pro-29's
        29 models the 1-D abilities had mean -7.3 and sd 4.9), and a new model started
        at 0 is then predicted below every training model. A direction in which the
        training abilities do not vary (fewer models than dimensions) gets
        discrimination 0: nothing is known about a new model's ability along it.
        Returns a new object; this one is unchanged.
        """
        self._check_fitted()
        theta = self.ability_
        mean = theta.mean(axis=0)
        variance, axes = np.linalg.eigh(np.atleast_2d(np.cov(theta, rowvar=False, bias=True)))
        spread = np.sqrt(np.clip(variance, 0.0, None))
        # Below this the spread is the eigensolver's rounding (of order sqrt(eps)), not data.
        spread[spread <= 1e-6 * spread.max()] = 0.0
        transform = axes * spread  # T = V diag(sqrt(w)), T T' = the covariance
        inverse = np.divide(1.0, spread, out=np.zeros_like(spread), where=spread > 0)
        standard = MultidimensionalIrt(self.dims, max_iter=self.max_iter, tol=self.tol,
                                       random_state=self.random_state)
        standard.discrimination_ = self.discrimination_ @ transform
        standard.difficulty_ = self.difficulty_ - self.discrimination_ @ mean / self.dims
        standard.ability_ = (theta - mean) @ axes * inverse
        standard.fit_ = self.fit_
        return standard

    def probability(self, ability: np.ndarray) -> np.ndarray:
        """P(correct) of models with `ability` (n_models, dims) on every item:
        shape (n_models, n_items)."""
        self._check_fitted()
        return item_curve(np.asarray(ability), self.discrimination_, self.difficulty_)

    def log_likelihood(self, responses: np.ndarray) -> float:
        """Log-likelihood (nats) of the training `responses` at the fitted parameters."""
        self._check_fitted()
        y, observed = _observed(responses, "IRT log-likelihood")
        if y.shape != (self.ability_.shape[0], self.difficulty_.size):
            raise DataError(f"IRT log-likelihood: responses must be the training shape "
                            f"{(self.ability_.shape[0], self.difficulty_.size)}; got {y.shape}",
                            parameters=("responses",))
        z = self.ability_ @ self.discrimination_.T - self.dims * self.difficulty_
        return float(np.sum(observed * (y * z - softplus_and_sigmoid(z)[0])))

    def estimate_ability(self, responses: np.ndarray, items: np.ndarray | None = None,
                         *, max_iter: int = 100) -> np.ndarray:
        """MAP abilities, shape (n_models, dims), of new models from `responses` of
        shape (n_models, len(items)) on the fitted `items` (all when None); see
        `map_ability`."""
        self._check_fitted()
        if items is not None:
            items = np.asarray(items)
            n = self.difficulty_.size
            if (items.ndim != 1 or not np.issubdtype(items.dtype, np.integer)
                    or ((items < -n) | (items >= n)).any()):
                raise DataError(f"items must be indices of the fitted items, 0..{n - 1}",
                                parameters=("items",))
        a = self.discrimination_ if items is None else self.discrimination_[items]
        b = self.difficulty_ if items is None else self.difficulty_[items]
        return map_ability(responses, a, b, max_iter=max_iter)


def item_curve(ability: np.ndarray, discrimination: np.ndarray,
               difficulty: np.ndarray) -> np.ndarray:
    """P(correct), shape (n_models, n_items), for abilities (n_models, D),
    discriminations (n_items, D) and difficulties (n_items,).

    Raises
    ------
    DataError
        For shapes that do not fit together or values that are not finite.
    """
    from scipy.special import expit

    a, b = _items(discrimination, difficulty)
    theta = float_array(ability, "ability")
    if theta.ndim != 2 or theta.shape[1] != a.shape[1] or not np.isfinite(theta).all():
        raise DataError(f"ability must be finite, of shape (n_models, {a.shape[1]}); got "
                        f"{theta.shape}", parameters=("ability",))
    return expit(theta @ a.T - a.shape[1] * b)


def _items(discrimination: np.ndarray, difficulty: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The item parameters as float arrays (n_items, D) and (n_items,), or a DataError
    naming the one that does not fit."""
    a = float_array(discrimination, "discrimination")
    b = float_array(difficulty, "difficulty")
    if a.ndim != 2 or not np.isfinite(a).all():
        raise DataError(f"discrimination must be finite, of shape (n_items, D); got {a.shape}",
                        parameters=("discrimination",))
    if b.shape != (a.shape[0],) or not np.isfinite(b).all():
        raise DataError(f"difficulty must be finite, of shape ({a.shape[0]},), one per item; "
                        f"got {b.shape}", parameters=("difficulty",))
    return a, b


def map_ability(responses: np.ndarray, discrimination: np.ndarray, difficulty: np.ndarray,
                *, max_iter: int = 100) -> np.ndarray:
    """MAP abilities (prior N(0, I)) of models from their responses on some items.

    Parameters
    ----------
    responses : array of shape (n_models, n_items), scores in [0, 1], NaN if unanswered.
    discrimination : array of shape (n_items, D); difficulty : array of shape (n_items,).

    Returns
    -------
    array of shape (n_models, D); the prior mean 0 for a model with no observed item.
    The log posterior is strictly concave; Newton steps for all models at once, each
    damped to at most 2 long and halved until the log posterior rises (`line_search`),
    reach its unique mode from the prior mean (without the halving, a fifth of 10-D
    cases with few, strongly discriminating items circled it for ever).
    """
    from scipy.special import expit

    check_whole(max_iter, "max_iter")
    a, b = _items(discrimination, difficulty)
    dims = a.shape[1]
    offset = dims * b
    y, observed = _observed(responses, "IRT ability")
    if y.shape[1] != a.shape[0]:
        raise DataError(f"IRT ability: responses have {y.shape[1]} items, expected {a.shape[0]}")

    def evaluate(theta: np.ndarray, rows: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray]:
        z = theta @ a.T - offset
        # P by expit, as before the line search: where no step is halved, the same bits
        value = (observed[rows] * (y[rows] * z - softplus_and_sigmoid(z)[0])).sum(axis=1)
        return value - 0.5 * (theta * theta).sum(axis=1), expit(z)

    theta = np.zeros((y.shape[0], dims))
    value, p = evaluate(theta, slice(None))
    eye = np.eye(dims)
    for _ in range(max_iter):
        grad = (observed * (y - p)) @ a - theta
        curvature = observed * p * (1 - p)
        hessian = np.matmul((curvature[:, :, None] * a).transpose(0, 2, 1), a) + eye
        step = np.linalg.solve(hessian, grad[..., None])[..., 0]
        norm = np.linalg.norm(step, axis=1)
        step *= np.minimum(1.0, 2.0 / np.maximum(norm, 1e-300))[:, None]
        theta, value, p = line_search(theta, step, (grad * step).sum(axis=1), norm < 1e-8,
                                      value, evaluate)
        if norm.max(initial=0.0) < 1e-8:
            break
    return theta


def line_search(theta: np.ndarray, step: np.ndarray, slope: np.ndarray, taken: np.ndarray,
                value: np.ndarray,
                evaluate: Callable[[np.ndarray, np.ndarray | slice],
                                   tuple[np.ndarray, np.ndarray]]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A backtracking line search on concave log posteriors, one per row: theta + t
    step, t the first of 1, 1/2, 1/4, ... at which the log posterior rises from `value`
    (n,) by at least 1e-4 t `slope` (Armijo's condition; `slope` (n,), the gradient
    along `step`) less a rounding allowance of 1e-12 (1 + |value|); rows `taken` (steps
    within the tolerance) take t = 1.
    `evaluate(points, rows)` gives the log posterior (m,) and P (m, k) of `points`
    (m, D), the rows `rows` (an index or slice) of theta. Returns the new theta (n, D),
    log posterior (n,) and P (n, k)."""
    scale = np.ones(theta.shape[0])
    new = theta + step
    new_value, p = evaluate(new, slice(None))
    for _ in range(50):  # 2**-50: no step of an ascent direction needs more
        short = ~taken & (new_value < value + 1e-4 * scale * slope
                          - 1e-12 * (1.0 + np.abs(value)))
        if not short.any():
            break
        scale[short] /= 2
        new[short] = theta[short] + scale[short, None] * step[short]
        new_value[short], p[short] = evaluate(new[short], short)
    return new, new_value, p
