"""The compiled passes of the variational fit (`mdad.irt.variational`), by numba.

An epoch's cost is one pass over the models x items responses: from each logit, the
softplus (for the loss) and the sigmoid (for the residual). numpy needs about a dozen
passes over those arrays for it, and numba cannot vectorise exp and log without
Intel's SVML, which PyPI's llvmlite lacks. So they are written here as arithmetic that
vectorises:
- exp(-|z|) = 2^q exp(r): 2^q built in the float's exponent bits, r = x - q ln 2 in
  [0, ln 2) (one fused multiply-add where the CPU has it: fastmath's reassociation,
  which the float64 sums need to vectorise, folds a two-part ln 2 into one anyway; the
  float32 ln 2's error, 1.9e-8, moves r by at most 2.4e-6 at |z| = 87, where e is
  1e-38), exp(r) a polynomial;
- log1p(e) for e in (0, 1]: e times a polynomial.
Both polynomials are Chebyshev fits with errors at float32's rounding;
tests/test_fused.py checks the sigmoid of float32 logits across [-100, 100] and that
the pass stays vectorised. The small vectors' arithmetic (priors, guide, Adam) is here
too, as loops: numpy's dozens of calls on small arrays cost more than the arithmetic.

Imported only by a fit: numba takes half a second to import. Compiled once and cached
on disk (`cache=True`); where no cache can be written the kernels compile in each
process (`benchmarks/bench_variational.py` measures both).
"""

from __future__ import annotations

import math

import numpy as np

from mdad.kernels import compiled as _compile

# Here, not in mdad.kernels: numba's cache of these kernels is keyed on this file.
# No 'nnan' or 'ninf': the clamps below rely on min and max seeing what they see.
# No 'nsz': with it, a kernel compiled in this process and the same kernel read back
# from numba's disk cache gave the variational fit different losses (1e-10), so a first
# run after an install chose other anchors than every later run (tests/test_fused.py).
FASTMATH = {"arcp", "contract", "afn", "reassoc"}
OPTIONS = {"fastmath": FASTMATH, "boundscheck": False, "error_model": "numpy"}


def compiled(function):
    return _compile(function, OPTIONS)

_LOG2_E = np.float32(1.4426950408889634)
_LARGEST = np.float32(87.0)  # exp(-87) is float32's smallest normal order: 2^q stays normal
_ONE, _ZERO = np.float32(1.0), np.float32(0.0)
# exp(r) on [0, ln 2], degree 6 (relative error 2.6e-9), lowest order first
_E0, _E1, _E2, _E3, _E4, _E5, _E6 = (np.float32(c) for c in (
    1.000000002586889, 0.9999996366328484, 0.5000083152479038, 0.1665955537955195,
    0.04195454032799907, 0.007742257880394631, 0.0019726272180083976))
_LN2 = np.float32(0.6931471805599453)
# log1p(e) / e on [0, 1], degree 8 (relative error 3.1e-8), lowest order first: a
# multiple of e, so a tiny e keeps its relative accuracy
_L0, _L1, _L2, _L3, _L4, _L5, _L6, _L7, _L8 = (np.float32(c) for c in (
    0.9999999705406564, -0.49999501516787237, 0.33319271342496803, -0.2484436989240893,
    0.1911143108029864, -0.1367476970486526, 0.07836166801035187, -0.029588507387506232,
    0.005253457795633574))
_LOG_2PI = np.log(2 * np.pi)


@compiled
def residual_pass(logits, y, powers_of_two, bits):  # pragma: no cover
    """One pass over the models x items arrays of an epoch: the logits in, the residual
    y - sigmoid(logit) out, in place (one array fewer for the cache to hold).

    Parameters
    ----------
    logits : float32 (m, n), theta @ a.T - D b, overwritten by the residual.
    y : (m, n), the responses in [0, 1]: float32, or uint8 for 0/1 responses (a
        quarter of the memory to read).
    powers_of_two, bits : float32 (n,) and int32 (n,) scratch.

    Returns
    -------
    (sum of softplus(logit), sum of y * logit): each row's sum in the logits' type,
    the total over rows in float64.
    """
    m, n = logits.shape
    scale = bits.view(np.float32)  # 2^q, once its exponent bits are written
    softplus_total = 0.0
    products_total = 0.0
    for i in range(m):
        for j in range(n):
            x = -min(abs(logits[i, j]), _LARGEST)
            q = np.floor(x * _LOG2_E)
            r = x - q * _LN2  # in [0, ln 2)
            powers_of_two[j] = _E0 + r * (_E1 + r * (_E2 + r * (_E3 + r * (
                _E4 + r * (_E5 + r * _E6)))))  # exp(r)
            bits[j] = (np.int32(q) + 127) << 23
        # a row's sums in the logits' type (float32: half the vector conversions,
        # 1.7x faster), the rows' in float64
        row_softplus = logits.dtype.type(0.0)
        row_products = logits.dtype.type(0.0)
        for j in range(n):
            z = logits[i, j]
            e = powers_of_two[j] * scale[j]  # exp(-|z|) in (0, 1]
            log1p = e * (_L0 + e * (_L1 + e * (_L2 + e * (_L3 + e * (_L4 + e * (
                _L5 + e * (_L6 + e * (_L7 + e * _L8))))))))
            row_softplus += log1p + max(z, _ZERO)
            inverse = _ONE / (_ONE + e)
            p = inverse if z >= _ZERO else e * inverse
            answer = y[i, j] * _ONE  # float32 from uint8 or float32; float64 stays
            logits[i, j] = answer - p
            row_products += answer * z
        softplus_total += row_softplus
        products_total += row_products
    return softplus_total, products_total


@compiled
def sample(loc, scale, normal, z, theta, a):  # pragma: no cover
    """The reparametrised draw z = loc + scale normal (n_normal,), and from it the
    matrices of the epoch's products, in their own dtype (float32 in a fit): theta (m,
    d + 1) the abilities beside a column of ones (left as it is), a (n, d + 1) the
    discriminations beside -d b, so that theta @ a.T is the logits."""
    for k in range(z.size):
        z[k] = loc[k] + scale[k] * normal[k]
    m, d = theta.shape[0], theta.shape[1] - 1
    n = a.shape[0]
    for i in range(m):
        for k in range(d):
            theta[i, k] = z[i * d + k]
    for j in range(n):
        for k in range(d):
            a[j, k] = z[m * d + j * d + k]
        a[j, d] = -d * z[m * d + n * d + j]


@compiled
def _rows_prior(values, likelihood, grads, mean, precision, d_mean, d_precision
                ):  # pragma: no cover
    """Rows of d values (t or a) under N(mean[k], 1 / precision[k]) in each column k:
    writes grads = likelihood - precision^2 (values - mean), d_mean (d,) the pull's
    column sums, d_precision (d,) d log p / d precision; returns log p."""
    rows, d = values.shape
    squares = np.zeros(d)
    d_mean[:] = 0.0
    for row in range(rows):
        for k in range(d):
            deviation = values[row, k] - mean[k]
            pull = precision[k] * precision[k] * deviation
            grads[row, k] = likelihood[row, k] - pull
            squares[k] += deviation * deviation
            d_mean[k] += pull
    log_p = 0.0
    for k in range(d):
        pk = precision[k]
        log_p += rows * (np.log(pk) - 0.5 * _LOG_2PI) - 0.5 * pk * pk * squares[k]
        d_precision[k] = rows / pk - pk * squares[k]
    return log_p


@compiled
def gradient(z, u, dtheta, da, scale, logscale, normal, hyper_scale, dz, du, d_loc,
             d_logscale):  # pragma: no cover
    """The Normal variables' part of the loss's gradient, and what the precisions'
    part needs.

    From the likelihood's gradients (dtheta (m, d) = residual @ a, da (n, d + 1) =
    residual.T @ theta, the extra column the residual's column sums), adds the priors'
    (`mdad.irt.variational`'s model) to write d log p / dz into `dz` (n_normal,) and d
    log p / du into `du` (n_gamma,); then, by the reparametrisation z = loc + scale
    normal, d_loc = -dz and d_logscale = -(scale dz normal + 1), the 1 the
    entropy's. `z` is the flat draw (t, a, b, mu_t, mu_a, mu_b), `u` the precisions
    (u_t, u_a, u_b); float64.

    Returns
    -------
    (log p of the draw under the priors, log q of the Normal variables' draw)
    """
    m, d = dtheta.shape
    n = da.shape[0]
    b, means = m * d + n * d, m * d + n * d + n
    # t and a: rows of d, each column k with its mean mu[k] and precision u[k]
    log_p = _rows_prior(z[:m * d].reshape(m, d), dtheta, dz[:m * d].reshape(m, d),
                        z[means:means + d], u[:d], dz[means:means + d], du[:d])
    log_p += _rows_prior(z[m * d:b].reshape(n, d), da[:, :d], dz[m * d:b].reshape(n, d),
                         z[means + d:means + 2 * d], u[d:2 * d],
                         dz[means + d:means + 2 * d], du[d:2 * d])
    # b: n values, one mean and one precision
    mu_b, ub = means + 2 * d, u[2 * d]
    square_sum = 0.0
    pulled_sum = 0.0
    for j in range(n):
        deviation = z[b + j] - z[mu_b]
        square_sum += deviation * deviation
        pull = ub * ub * deviation
        dz[b + j] = -d * da[j, d] - pull
        pulled_sum += pull
    dz[mu_b] = pulled_sum
    log_p += n * (np.log(ub) - 0.5 * _LOG_2PI) - 0.5 * ub * ub * square_sum
    du[2 * d] = n / ub - ub * square_sum
    # the means ~ N(0, hyper_scale); the precisions ~ Gamma(1, 1): log p = -u
    for k in range(means, z.size):
        log_p -= 0.5 * z[k] * z[k] / hyper_scale**2 + np.log(hyper_scale) + 0.5 * _LOG_2PI
        dz[k] -= z[k] / hyper_scale**2
    for k in range(u.size):
        log_p -= u[k]
        du[k] -= 1.0
    log_q = 0.0
    for k in range(dz.size):
        d_loc[k] = -dz[k]
        d_logscale[k] = -(scale[k] * dz[k] * normal[k] + 1.0)
        log_q -= logscale[k] + 0.5 * normal[k] * normal[k] + 0.5 * _LOG_2PI
    return log_p, log_q


@compiled
def digamma(x):  # pragma: no cover
    """psi(x) for x > 0: the recurrence psi(x) = psi(x + 1) - 1 / x up to 10, then the
    asymptotic series (error below 1e-13 there)."""
    result = 0.0
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    inverse = 1.0 / x
    square = inverse * inverse
    return result + math.log(x) - 0.5 * inverse - square * (
        1.0 / 12 - square * (1.0 / 120 - square * (1.0 / 252 - square * (
            1.0 / 240 - square * (1.0 / 132)))))


@compiled
def gamma_cdf(a, x):  # pragma: no cover
    """The regularised lower incomplete gamma function P(a, x) (scipy's gammainc), for
    a > 0 and x >= 0: its series below x = a + 1, else one minus the continued fraction
    of Q by Lentz's method (Numerical Recipes, 6.2), each to float64 rounding."""
    if x <= 0.0:
        return 0.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    # both converge in O(sqrt(a)) steps near x = a; 1,000 alone stopped short at a = 5e4
    limit = 1000 + int(50.0 * math.sqrt(a))
    if x < a + 1.0:
        term = 1.0 / a
        total = term
        for n in range(1, limit):
            term *= x / (a + n)
            total += term
            if term < total * 1e-17:
                break
        return total * math.exp(log_front)
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for n in range(1, limit):
        an = -n * (n - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return 1.0 - math.exp(log_front) * h


@compiled
def precisions(shape, rate, draw, relative_step, du, d_logshape, d_lograte
               ):  # pragma: no cover
    """The precisions' part of the loss's gradient, by their Gamma(shape, rate) guide
    and the implicit reparametrisation u = draw / rate, draw ~ Gamma(shape, 1): d draw
    / d shape is minus the CDF's central difference in the shape (step `relative_step`
    of the shape, so that shape - step stays positive) over the density.

    `du` (n_gamma,) is d log p / du (`gradient`). Writes d_logshape and d_lograte (the
    loss's, so minus the ELBO's) and returns the precisions' log q.
    """
    log_q = 0.0
    for k in range(shape.size):
        alpha, beta, x = shape[k], rate[k], draw[k]
        step = relative_step * alpha
        d_cdf = (gamma_cdf(alpha + step, x) - gamma_cdf(alpha - step, x)) / (2.0 * step)
        u = x / beta
        log_gamma = math.lgamma(alpha)
        log_beta = math.log(beta)
        log_q += alpha * log_beta - log_gamma + (alpha - 1.0) * math.log(u) - beta * u
        density = math.exp((alpha - 1.0) * math.log(x) - x - log_gamma)
        d_u_d_alpha = -d_cdf / density / beta
        pull = du[k] - ((alpha - 1.0) / u - beta)  # d log p / du - d log q / du
        d_alpha = pull * d_u_d_alpha - (log_beta - digamma(alpha) + math.log(u))
        d_beta = pull * (-u / beta) - (alpha / beta - u)
        d_logshape[k] = -alpha * d_alpha
        d_lograte[k] = -beta * d_beta
    return log_q


# On [0, (pi/2)^2] in w = x^2: sin(x) / x and cos(x), degree 5 (errors 3e-11, 2e-10);
# on [0, 1/9] in w = s^2: atanh(s) / s, so log(m) = 2 s P(s^2), s = (m - 1) / (m + 1)
# (error 7e-11). Lowest order first.
_SIN = (0.9999999999829694, -0.16666666616917297, 0.008333330977504185,
        -0.0001984086155325063, 2.7525287126195117e-06, -2.3889498381335324e-08)
_COS = (0.9999999997799043, -0.49999999356956465, 0.041666636208929936,
        -0.0013888360842553259, 2.4760135517119607e-05, -2.6051076352015977e-07)
_ATANH = (0.9999999999020048, 0.33333339626646946, 0.1999934740608391,
          0.14310311699477812, 0.10697133733021089, 0.12204701625358462)
_EXPONENT = np.int64(0x7FF) << 52
_ONE_BITS = np.int64(1023) << 52
_HALF_PI, _LN2_64 = np.pi / 2, np.log(2.0)


@compiled
def box_muller(words, out, work):  # pragma: no cover
    """N(0, 1) draws into `out` float64, by Box and Muller's transform of as many
    uint32 `words`: the first half give the radii, the second the angles, each its own
    32 bits. `work` is float64 scratch of half the size.

    log, cos and sin are polynomials (`_ATANH`, `_COS`, `_SIN`, errors below 1e-9),
    the logarithm's exponent read from the float's bits, so the loops vectorise.
    """
    half = words.size // 2
    bits = work.view(np.int64)
    for k in range(half):
        work[k] = words[k] + 0.5  # a uniform in (0, 1) times 2^32, exactly
    for k in range(half):
        exponent = ((bits[k] & _EXPONENT) >> 52) - 1023
        bits[k] = (bits[k] & ~_EXPONENT) | _ONE_BITS  # the mantissa m in [1, 2)
        out[k] = np.float64(exponent - 32) * _LN2_64  # log of 2^exponent / 2^32
    for k in range(half):
        m = work[k]
        s = (m - 1.0) / (m + 1.0)
        w = s * s
        log_m = 2.0 * s * (_ATANH[0] + w * (_ATANH[1] + w * (_ATANH[2] + w * (
            _ATANH[3] + w * (_ATANH[4] + w * _ATANH[5])))))
        work[k] = np.sqrt(-2.0 * (out[k] + log_m))  # the radius
    for k in range(half):
        t = words[half + k] * (4.0 / 2.0**32)  # the angle in quarter turns, in [0, 4)
        quarter = np.floor(t)
        x = (t - quarter) * _HALF_PI
        w = x * x
        sine = x * (_SIN[0] + w * (_SIN[1] + w * (_SIN[2] + w * (_SIN[3] + w * (
            _SIN[4] + w * _SIN[5])))))
        cosine = _COS[0] + w * (_COS[1] + w * (_COS[2] + w * (_COS[3] + w * (
            _COS[4] + w * _COS[5]))))
        # rotate by the quarter turns: (cos, sin) -> (-sin, cos) each
        odd = quarter == 1.0 or quarter == 3.0
        first = sine if odd else cosine
        second = cosine if odd else sine
        flip_first = -1.0 if (quarter == 1.0 or quarter == 2.0) else 1.0
        flip_second = -1.0 if quarter >= 2.0 else 1.0
        radius = work[k]
        out[k] = radius * flip_first * first
        out[half + k] = radius * flip_second * second


@compiled
def adam(params, gradient, first, second, step, lr, beta1, beta2, eps):  # pragma: no cover
    """torch.optim.Adam's update (no weight decay, no amsgrad), step `step` (from 1),
    of `params` by `gradient`, in place."""
    c1 = 1.0 - beta1**step
    root_c2 = np.sqrt(1.0 - beta2**step)
    for k in range(params.size):
        g = gradient[k]
        first[k] = beta1 * first[k] + (1.0 - beta1) * g
        second[k] = beta2 * second[k] + (1.0 - beta2) * g * g
        params[k] -= lr / c1 * first[k] / (np.sqrt(second[k]) / root_c2 + eps)


# exp(r) on [-ln 2 / 2, ln 2 / 2]: its Taylor series to degree 12 (error 2e-16)
_EXP64 = tuple(1.0 / math.factorial(k) for k in range(13))
_LOG2_E64 = 1.4426950408889634


@compiled
def exp64(x, out, bits):  # pragma: no cover
    """exp of float64 `x` (n,) into `out` (n,), `bits` int64 (n,) scratch; x is clamped
    into [-700, 700]. 2^q in the float's exponent bits times a polynomial, so the loops
    vectorise (a libm exp per element took five times numpy's). Relative error below
    1e-13 in that range (fastmath folds the two parts of ln 2: |q| ulp(ln 2))."""
    powers = bits.view(np.float64)
    for k in range(x.size):
        v = min(max(x[k], -700.0), 700.0)
        q = np.floor(v * _LOG2_E64 + 0.5)
        r = v - q * _LN2_64
        out[k] = _EXP64[0] + r * (_EXP64[1] + r * (_EXP64[2] + r * (_EXP64[3] + r * (
            _EXP64[4] + r * (_EXP64[5] + r * (_EXP64[6] + r * (_EXP64[7] + r * (
                _EXP64[8] + r * (_EXP64[9] + r * (_EXP64[10] + r * (_EXP64[11] + r * (
                    _EXP64[12]))))))))))))
        bits[k] = (np.int64(q) + 1023) << 52
    for k in range(x.size):
        out[k] *= powers[k]


@compiled
def draw(rng, logshape, normal, work, gamma):  # pragma: no cover
    """An epoch's noise from the numpy Generator `rng`: N(0, 1) draws into `normal`
    (float64, of even size) by `box_muller` of as many 32-bit words (those
    ``rng.integers(0, 2**32, n, np.uint32)`` gives: the generator's raw 64-bit words
    cut in two, unless a half word was left over from such a draw before), `work`
    float64 scratch of half that size; then a Gamma(exp(logshape[k]), 1) draw per
    precision into `gamma`, at least 1e-300 (NaN for a shape that is not a positive
    number)."""
    box_muller(rng.integers(0, 4294967296, normal.size, np.uint32), normal, work)
    for k in range(gamma.size):
        shape = math.exp(logshape[k])
        # a diverged fit's shape: NaN, never a draw (its rejection loop would not end)
        gamma[k] = (max(rng.standard_gamma(shape), 1e-300)
                    if 0.0 < shape < math.inf else math.nan)


@compiled
def elbo(params, y, normal, gamma, grad, n_normal, hyper_scale, gamma_step, work
         ):  # pragma: no cover
    """The single-sample loss at the flat `params` (`mdad.irt.variational.GuideLayout`)
    with the standard draws `normal` (at least n_normal,) and `gamma` (n_gamma,); its
    gradient written into `grad`. `work` is the tuple of `_Workspace.arrays`.

    Three products (BLAS, through scipy's, as numba calls it) and `residual_pass`
    over the models x items arrays; `sample`, `gradient` and `precisions` for the
    rest."""
    (theta, a, discrimination, residual, dtheta, da, powers, bits, z, dz, du, scale,
     scale_bits) = work
    n, g = n_normal, gamma.size
    loc, logscale = params[:n], params[n:2 * n]
    logshape, lograte = params[2 * n:2 * n + g], params[2 * n + g:]
    exp64(logscale, scale, scale_bits)
    sample(loc, scale, normal, z, theta, a)
    d = discrimination.shape[1]
    for j in range(a.shape[0]):
        for k in range(d):
            discrimination[j, k] = a[j, k]
    np.dot(theta, a.T, residual)
    softplus_total, products_total = residual_pass(residual, y, powers, bits)
    np.dot(residual, discrimination, dtheta)
    np.dot(residual.T, theta, da)
    shape, rate = np.exp(logshape), np.exp(lograte)
    log_prior, log_q = gradient(z, gamma / rate, dtheta, da, scale, logscale, normal,
                                hyper_scale, dz, du, grad[:n], grad[n:2 * n])
    log_q += precisions(shape, rate, gamma, gamma_step, du, grad[2 * n:2 * n + g],
                        grad[2 * n + g:])
    return -(products_total - softplus_total + log_prior - log_q)


@compiled
def fit_epochs(rng, y, start, stop, state, best, best_loss, n_normal, hyper_scale,
               gamma_step, lr, beta1, beta2, eps, work, noise):  # pragma: no cover
    """Adam steps `start` to `stop` - 1 (counted from 1) of the fit, in place: each draws the noise
    (`draw`), takes the loss and gradient (`elbo`) and moves the parameters (`adam`);
    after a step whose loss is below `best_loss`, its locations are copied into
    `best` (n_normal,). `state` is (params, grad, first, second), `noise` (normal,
    its scratch, gamma). Returns the lowest loss.

    Runs without Python's lock: the caller's thread holds it once per call, not
    dozens of times an epoch. Returns (the lowest loss, 0), or (the lowest loss, the
    step) at the first step whose loss is not a number: the fit diverged, and the
    parameters are left as they were before it."""
    params, grad, first, second = state
    normal, normal_work, gamma = noise
    g = gamma.size
    for step in range(start, stop):
        draw(rng, params[2 * n_normal:2 * n_normal + g], normal, normal_work, gamma)
        loss = elbo(params, y, normal, gamma, grad, n_normal, hyper_scale, gamma_step, work)
        if not math.isfinite(loss):
            return best_loss, step
        adam(params, grad, first, second, step, lr, beta1, beta2, eps)
        if loss < best_loss:
            best_loss = loss
            best[:] = params[:n_normal]
    return best_loss, 0
