"""Slow, independent reference for the paper's "Diversity" selection (discrete OPE DPP).

This is an oracle for testing a fast implementation; it does not import ``mdad``. The
specification it follows is ``/tmp/dpp_spec.md`` (summarised here).

What the paper's code does (``dpp_selection`` in ``microbenchmarks.py`` of
gyauney/micro-benchmarking-reliability, calling ``draw_discrete_OPE`` of the DPPcoresets
code vendored as ``dpp_src/samplers.py``):

1. ``X`` = gold-option confidences of the *source* models on the *seen* items, shape
   items x models.
2. ``Z = PCA(n_components=min(min(X.shape), 4), svd_solver="randomized").fit_transform(X)``.
3. Keep the items whose every coordinate lies in ``[q_0.01, q_0.99]`` (per-coordinate
   ``np.quantile``, linear interpolation, inclusive bounds).
4. Rescale each coordinate of the kept points affinely onto ``[-0.99, 0.99]`` (min/max
   over the kept points).
5. Discrete OPE with ``m = n`` (the number of items to select):

   * the first ``m`` multi-indices ``alpha`` in N^d, taken layer by layer (layer ``k`` =
     the indices with ``max(alpha) == k``, ``k = 0, 1, 2, ...``) and, inside a layer, in
     lexicographic order (last coordinate fastest, as ``itertools.product``);
   * ``V[i, j] = prod_l X[i, l] ** alpha_j[l]`` (monomials, no Jacobi polynomials, no
     weight function, no KDE);
   * ``Q`` = orthonormal basis of the column span of ``V`` (the paper: thin Householder
     QR); the DPP is the projection DPP with kernel ``K = Q Q^T`` (rank ``m``);
   * a sample is drawn with the chain rule (Gram-Schmidt): ``m`` picks, pick ``t`` takes an
     unpicked item with probability ``residual_i / (m - t)`` where ``residual_i`` is the
     squared norm of row ``Q_i`` after projecting out the rows already picked;
   * ``weights = 1 / (N * K_ii)`` for the picked items (returned but *not used* by the paper,
     whose estimate is the plain mean over the picked items).

A sample always has exactly ``m`` distinct items (``m <= N`` required).

Randomness here always comes from a ``numpy.random.Generator`` passed by the caller. The
sampler consumes exactly one ``rng.random()`` per pick and inverts the cumulative
distribution over the still-available items in increasing index order with
``searchsorted(..., side="right")``, which is what ``RandomState.choice(a, p=p)`` (used by
dppy) does with its one uniform. So with a generator whose uniform stream equals the
legacy global ``RandomState``'s, the picks coincide with the paper's code (up to
floating-point ties at CDF boundaries).

Numerics: the monomial Vandermonde matrix is ill conditioned (total degree up to
``d * layer``). The span of the monomials of a *downward-closed* multi-index set (which the
ordering produces) equals the span of the tensor Chebyshev polynomials of the same
indices, so ``basis="chebyshev"`` gives the same kernel in exact arithmetic with far better
conditioning; ``basis="monomial"`` mirrors the paper's arithmetic.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "ref_discrete_ope_features",
    "ref_discrete_ope_kernel",
    "ref_diversity_preprocess",
    "ref_draw_discrete_ope",
    "ref_inclusion_probabilities",
    "ref_multi_indices",
    "ref_ope_weights",
    "ref_subset_probability",
    "ref_vandermonde",
]

#: Tail quantile of the outlier filter (the paper's ``thrs``).
TAIL_QUANTILE = 0.01

#: Half-width of the rescaled box (the paper's ``0.99``).
BOX_HALF_WIDTH = 0.99

#: A Gram-Schmidt residual below this fraction of the column's norm is called rank loss.
RANK_TOL = 1e-12


# ---------------------------------------------------------------------------------------
# Multi-indices and feature matrix
# ---------------------------------------------------------------------------------------


def ref_multi_indices(n: int, d: int) -> np.ndarray:
    """First ``n`` multi-indices of N^d in the paper's (BaHa16 "layer") order.

    Layer ``k`` holds every ``alpha`` in ``{0..k}^d`` with ``max(alpha) == k``, listed in
    lexicographic order with the first coordinate most significant. Layers come in
    increasing ``k``. Example ``d=2``: (0,0) (0,1) (1,0) (1,1) (0,2) (1,2) (2,0) (2,1) (2,2).

    Returns an int array of shape ``(n, d)``.
    """
    if n < 1 or d < 1:
        raise ValueError(f"need n >= 1 and d >= 1, got n={n}, d={d}")
    out: list[tuple[int, ...]] = []
    k = 0
    while len(out) < n:
        base = k + 1
        for code in range(base**d):
            # digits of `code` in base k+1, most significant first
            digits = []
            rest = code
            for _ in range(d):
                digits.append(rest % base)
                rest //= base
            alpha = tuple(reversed(digits))
            if max(alpha) == k:
                out.append(alpha)
                if len(out) == n:
                    break
        k += 1
    return np.array(out, dtype=np.int64)


def _chebyshev_1d(x: float, degree: int) -> float:
    """T_degree(x) by the three-term recurrence."""
    if degree == 0:
        return 1.0
    t_prev, t_cur = 1.0, x
    for _ in range(degree - 1):
        t_prev, t_cur = t_cur, 2.0 * x * t_cur - t_prev
    return t_cur


def ref_vandermonde(X: np.ndarray, n: int, basis: str = "monomial") -> np.ndarray:
    """The N x n matrix of the first ``n`` tensor-product polynomials evaluated at ``X``.

    ``basis="monomial"``: ``V[i, j] = prod_l X[i, l] ** alpha_j[l]`` (the paper's matrix,
    ``0 ** 0 == 1``). ``basis="chebyshev"``: ``prod_l T_{alpha_j[l]}(X[i, l])``; same column
    span because the index set is downward closed.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (points x dims), got shape {X.shape}")
    if basis not in ("monomial", "chebyshev"):
        raise ValueError(f"unknown basis {basis!r}")
    alphas = ref_multi_indices(n, X.shape[1])
    N = X.shape[0]
    V = np.empty((N, n), dtype=np.float64)
    for i in range(N):
        for j in range(n):
            value = 1.0
            for coord in range(X.shape[1]):
                e = int(alphas[j, coord])
                if basis == "monomial":
                    value *= float(X[i, coord]) ** e
                else:
                    value *= _chebyshev_1d(float(X[i, coord]), e)
            V[i, j] = value
    return V


def _orthonormal_columns(A: np.ndarray) -> np.ndarray:
    """Modified Gram-Schmidt, applied twice per column ("twice is enough")."""
    N, m = A.shape
    Q = np.zeros((N, m), dtype=np.float64)
    for j in range(m):
        v = A[:, j].copy()
        original_norm = float(np.sqrt(v @ v))
        for _ in range(2):
            for i in range(j):
                v -= (Q[:, i] @ v) * Q[:, i]
        norm = float(np.sqrt(v @ v))
        if original_norm == 0.0 or norm <= RANK_TOL * original_norm:
            raise ValueError(
                f"feature column {j} is (numerically) in the span of the previous ones "
                f"(relative residual {norm / original_norm if original_norm else 0.0:.2e}); "
                "the discrete OPE kernel is not defined (the paper's QR would silently "
                "return an arbitrary direction here)"
            )
        Q[:, j] = v / norm
    return Q


def ref_discrete_ope_features(X: np.ndarray, n: int, basis: str = "monomial") -> np.ndarray:
    """N x n matrix with orthonormal columns spanning the first ``n`` polynomials at ``X``.

    Any orthonormal basis of that span defines the same DPP; compare kernels, not
    features, across implementations.
    """
    X = np.asarray(X, dtype=np.float64)
    if n > X.shape[0]:
        raise ValueError(f"cannot select n={n} of N={X.shape[0]} points (need n <= N)")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or inf")
    return _orthonormal_columns(ref_vandermonde(X, n, basis=basis))


def ref_discrete_ope_kernel(X: np.ndarray, n: int, basis: str = "monomial") -> np.ndarray:
    """The N x N orthogonal projection kernel ``K = Q Q^T`` of the discrete OPE (rank n)."""
    Q = ref_discrete_ope_features(X, n, basis=basis)
    N = Q.shape[0]
    K = np.zeros((N, N), dtype=np.float64)
    for i in range(N):
        for j in range(i, N):
            K[i, j] = K[j, i] = float(Q[i] @ Q[j])
    return K


def ref_inclusion_probabilities(X: np.ndarray, n: int, basis: str = "monomial") -> np.ndarray:
    """P(item i in the sample) = K_ii = squared norm of row i of Q; sums to n."""
    Q = ref_discrete_ope_features(X, n, basis=basis)
    return np.array([float(Q[i] @ Q[i]) for i in range(Q.shape[0])])


def ref_ope_weights(X: np.ndarray, n: int, basis: str = "monomial") -> np.ndarray:
    """The paper's per-item weights ``1 / (N * K_ii)`` for all N items."""
    pi = ref_inclusion_probabilities(X, n, basis=basis)
    return 1.0 / (len(pi) * pi)


def ref_subset_probability(X: np.ndarray, n: int, subset, basis: str = "monomial") -> float:
    """P(sample == subset) = det(K_S) for |S| == n (0 for any other size)."""
    subset = list(subset)
    if len(subset) != n or len(set(subset)) != n:
        return 0.0
    K = ref_discrete_ope_kernel(X, n, basis=basis)
    return float(np.linalg.det(K[np.ix_(subset, subset)]))


# ---------------------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------------------


def ref_draw_discrete_ope(
    X: np.ndarray, n: int, rng: np.random.Generator, basis: str = "monomial"
) -> tuple[np.ndarray, np.ndarray]:
    """One sample of the discrete OPE by the chain rule; returns (indices, weights).

    ``indices`` (int64, length n, all distinct) are in pick order; ``weights[t]`` is
    ``1 / (N * K_ii)`` of ``indices[t]``. Exactly ``n`` calls to ``rng.random()``.
    """
    Q = ref_discrete_ope_features(X, n, basis=basis)
    return _chain_rule_draw(Q, rng)


def _chain_rule_draw(Q: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Chain-rule sample of the projection DPP with kernel Q Q^T (Q: N x n, orthonormal)."""
    N, n = Q.shape
    weights_all = 1.0 / (N * np.array([float(Q[i] @ Q[i]) for i in range(N)]))

    available = np.ones(N, dtype=bool)
    picked: list[int] = []
    directions: list[np.ndarray] = []  # orthonormal basis of span{Q_j : j picked}
    # residual[i] = squared distance of row Q_i to span(directions)
    #             = |Q_i|^2 - sum_e (Q_i . e)^2   (Pythagoras, e orthonormal)
    residual = np.einsum("ij,ij->i", Q, Q)
    for t in range(n):
        if directions:
            coef = Q @ directions[-1]  # component of every row along the newest direction
            residual = residual - coef**2
        candidates = np.flatnonzero(available)
        mass = np.abs(residual[candidates])
        total = float(mass.sum())
        if abs(total - (n - t)) > 1e-6 * n:
            raise FloatingPointError(
                f"residual mass {total!r} != {n - t} at pick {t}: kernel not a projection"
            )
        cdf = np.cumsum(mass)
        cdf /= cdf[-1]
        u = rng.random()
        j = int(candidates[int(np.searchsorted(cdf, u, side="right"))])
        picked.append(j)
        available[j] = False
        # new direction: Q_j minus its projection on the current span (twice)
        v = Q[j].copy()
        if directions:
            E = np.array(directions)  # rows: orthonormal directions so far
            for _ in range(2):
                v -= E.T @ (E @ v)
        directions.append(v / np.sqrt(v @ v))
    indices = np.array(picked, dtype=np.int64)
    return indices, weights_all[indices]


# ---------------------------------------------------------------------------------------
# Preprocessing as in dpp_selection
# ---------------------------------------------------------------------------------------


def _pca_scores(X: np.ndarray, k: int, random_state, pca_solver: str) -> np.ndarray:
    if pca_solver == "randomized":
        from sklearn.decomposition import PCA  # optional dependency, imported lazily

        return PCA(
            n_components=k, svd_solver="randomized", random_state=random_state
        ).fit_transform(X)
    if pca_solver == "exact":
        centered = X - X.mean(axis=0)
        U, S, Vt = np.linalg.svd(centered, full_matrices=False)
        U, S, Vt = U[:, :k], S[:k], Vt[:k]
        # sklearn's sign rule (svd_flip, u_based_decision=False): the largest-|.| entry of
        # each component is positive
        for c in range(k):
            big = int(np.argmax(np.abs(Vt[c])))
            if Vt[c, big] < 0:
                Vt[c] = -Vt[c]
                U[:, c] = -U[:, c]
        return U * S
    raise ValueError(f"unknown pca_solver {pca_solver!r}")


def ref_diversity_preprocess(
    conf_items_by_models: np.ndarray,
    n_components: int = 4,
    pca_random_state=0,
    pca_solver: str = "randomized",
) -> tuple[np.ndarray, np.ndarray]:
    """PCA, 1%/99% tail filter and rescaling to [-0.99, 0.99], as ``dpp_selection``.

    Returns ``(X_rescaled, kept)`` where ``kept`` are the row indices (into the input)
    of the points that survive the filter, increasing; ``X_rescaled[r]`` belongs to item
    ``kept[r]``. ``pca_solver="randomized"`` is the paper's (needs scikit-learn; the paper
    passes no random_state, i.e. the global numpy RNG); ``"exact"`` uses a full SVD.
    """
    X = np.asarray(conf_items_by_models, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"expected items x models, got shape {X.shape}")
    k = min(min(X.shape), n_components)
    Z = _pca_scores(X, k, pca_random_state, pca_solver)

    low = np.quantile(Z, TAIL_QUANTILE, axis=0)
    high = np.quantile(Z, 1 - TAIL_QUANTILE, axis=0)
    keep = []
    for i in range(Z.shape[0]):
        inside = True
        for c in range(k):
            if not (low[c] <= Z[i, c] <= high[c]):
                inside = False
        keep.append(inside)
    kept = np.flatnonzero(np.array(keep, dtype=bool))
    Zk = Z[kept]

    out = np.empty_like(Zk)
    for c in range(k):
        lo, hi = float(Zk[:, c].min()), float(Zk[:, c].max())
        if not hi > lo:
            raise ValueError(
                f"PCA coordinate {c} is constant on the kept items; the paper's rescaling "
                "divides by zero here"
            )
        out[:, c] = BOX_HALF_WIDTH * (2.0 * (Zk[:, c] - lo) / (hi - lo) - 1.0)
    return out, kept


# ---------------------------------------------------------------------------------------
# Self-check
# ---------------------------------------------------------------------------------------


def _synthetic_confidences(rng: np.random.Generator, n_items: int, n_models: int) -> np.ndarray:
    """Gold-option confidences from a small 2-parameter logistic model plus noise."""
    ability = rng.normal(size=n_models)
    difficulty = rng.normal(size=n_items)
    discrimination = rng.lognormal(0.0, 0.4, size=n_items)
    logits = discrimination[:, None] * (ability[None, :] - difficulty[:, None])
    logits += 0.5 * rng.normal(size=logits.shape)
    return 1.0 / (1.0 + np.exp(-logits))


def _self_check() -> None:
    import itertools
    import time

    rng = np.random.default_rng(12345)

    # 1. ordering: matches the documented example and is downward closed
    expected = [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
        (0, 2),
        (1, 2),
        (2, 0),
        (2, 1),
        (2, 2),
        (0, 3),
        (1, 3),
        (2, 3),
    ]
    assert [tuple(a) for a in ref_multi_indices(12, 2)] == expected
    for d in (1, 2, 3, 4):
        idx = {tuple(a) for a in ref_multi_indices(100, d)}
        for a in idx:
            for c in range(d):
                if a[c] > 0:
                    b = list(a)
                    b[c] -= 1
                    assert tuple(b) in idx, (a, d)
    print("ordering: ok (example for d=2, downward closed for d=1..4, n=100)")

    # 2. the paper's setting: N=224 seen items, n=100
    conf = _synthetic_confidences(rng, 224, 300)
    X, kept = ref_diversity_preprocess(conf, pca_random_state=0)
    print(
        f"preprocess: {conf.shape[0]} items -> {len(kept)} kept, X in "
        f"[{X.min():.3f}, {X.max():.3f}], d={X.shape[1]}"
    )
    n = 100
    t0 = time.perf_counter()
    K = ref_discrete_ope_kernel(X, n)
    t_kernel = time.perf_counter() - t0
    pi = np.diag(K).copy()
    assert np.isclose(pi.sum(), n, atol=1e-8), pi.sum()
    assert np.all(pi > -1e-12) and np.all(pi < 1 + 1e-12)
    assert np.allclose(K @ K, K, atol=1e-10)
    K_cheb = ref_discrete_ope_kernel(X, n, basis="chebyshev")
    print(
        f"kernel: sum K_ii = {pi.sum():.12f}, max |K^2 - K| = {np.abs(K @ K - K).max():.1e}, "
        f"max |K_monomial - K_chebyshev| = {np.abs(K - K_cheb).max():.1e}, "
        f"K_ii in [{pi.min():.3f}, {pi.max():.3f}]"
    )

    t0 = time.perf_counter()
    idx, w = ref_draw_discrete_ope(X, n, np.random.default_rng(0))
    t_draw = time.perf_counter() - t0
    assert len(idx) == n and len(set(idx.tolist())) == n
    assert np.allclose(w, 1.0 / (len(X) * pi[idx]))
    print(f"timing N={len(X)}, n={n}: kernel {t_kernel:.3f}s, one draw {t_draw:.3f}s")
    X224 = rng.uniform(-0.99, 0.99, size=(224, 4))
    t0 = time.perf_counter()
    ref_inclusion_probabilities(X224, n)
    t_pi = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref_draw_discrete_ope(X224, n, np.random.default_rng(1))
    t_draw224 = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref_discrete_ope_kernel(X224, n)
    t_k224 = time.perf_counter() - t0
    print(
        f"timing N=224, n={n}: inclusion probabilities {t_pi:.3f}s, N x N kernel "
        f"{t_k224:.3f}s, one draw (features included) {t_draw224:.3f}s"
    )

    # 3. empirical inclusion frequencies over many draws vs K_ii
    n_draws = 2000
    counts = np.zeros(len(X))
    draw_rng = np.random.default_rng(2024)
    t0 = time.perf_counter()
    Q = ref_discrete_ope_features(X, n)  # the kernel is fixed: draw from it directly
    for _ in range(n_draws):
        s, _ = _chain_rule_draw(Q, draw_rng)
        assert len(s) == n and len(np.unique(s)) == n
        counts[s] += 1
    t_many = time.perf_counter() - t0
    freq = counts / n_draws
    sd = np.sqrt(np.clip(pi * (1 - pi), 1e-12, None) / n_draws)
    z = (freq - pi) / sd
    print(
        f"{n_draws} draws in {t_many:.1f}s: max |freq - K_ii| = {np.abs(freq - pi).max():.4f}, "
        f"max |z| = {np.abs(z).max():.2f}, mean z^2 = {np.mean(z**2):.3f}"
    )
    assert np.abs(z).max() < 5.0
    assert 0.7 < np.mean(z**2) < 1.3

    # 4. exact law on a tiny ground set: subset frequencies vs det(K_S)
    Xs = rng.uniform(-0.99, 0.99, size=(7, 2))
    ns = 3
    subsets = list(itertools.combinations(range(7), ns))
    probs = np.array([ref_subset_probability(Xs, ns, S) for S in subsets])
    assert np.isclose(probs.sum(), 1.0, atol=1e-10), probs.sum()
    tiny_rng = np.random.default_rng(7)
    n_tiny = 20000
    tally = dict.fromkeys(subsets, 0)
    Qs = ref_discrete_ope_features(Xs, ns)
    for _ in range(n_tiny):
        s, _ = _chain_rule_draw(Qs, tiny_rng)
        tally[tuple(sorted(s.tolist()))] += 1
    obs = np.array([tally[S] for S in subsets], dtype=float)
    mask = probs * n_tiny >= 5
    chi2 = float(np.sum((obs[mask] - n_tiny * probs[mask]) ** 2 / (n_tiny * probs[mask])))
    dof = int(mask.sum()) - 1
    print(
        f"tiny exact law (N=7, n=3): sum det(K_S) = {probs.sum():.12f}, "
        f"chi2 = {chi2:.1f} on {dof} dof"
    )
    assert obs[~mask].sum() <= max(10.0, 3 * n_tiny * probs[~mask].sum() + 10)
    assert chi2 < dof + 5 * np.sqrt(2 * dof)

    print("self-check passed")


if __name__ == "__main__":
    _self_check()
