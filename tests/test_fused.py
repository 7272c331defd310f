"""The compiled passes of the variational fit (mdad.irt._fused): the softplus and the
sigmoid of every float32 logit the pass meets, the incomplete gamma function and the
digamma against scipy, and a guard that the pass stays vectorised."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit
from scipy.special import gammainc, psi

from mdad import kernels
from mdad.irt import _fused


def _pass(z: np.ndarray, y: np.ndarray) -> tuple[float, float, np.ndarray]:
    """The pass over the logits `z` (m, n): its two totals and its residual."""
    residual = np.array(z, np.float32)  # the logits in, the residual out
    y = np.ascontiguousarray(y, np.uint8 if np.isin(y, (0, 1)).all() else np.float32)
    n = residual.shape[1]
    softplus, products = _fused.residual_pass(residual, y, np.empty(n, np.float32),
                                              np.empty(n, np.int32))
    return softplus, products, residual


def test_the_sigmoid_of_every_float32_logit_within_float32_rounding():
    """Every 37th float32 from -100 to 100 (57 million values): y - p with y = 1 is 1 -
    sigmoid(z), within 2^-23 of float64's (two float32 roundings, of p and of y - p);
    and with y = 0, -p to a relative 3e-6 down to z = -87, where p is 1e-38."""
    top = int(np.float32(100).view(np.uint32))
    worst = worst_tail = 0.0
    for sign in (0, 1 << 31):
        for start in range(0, top + 1, 1 << 24):
            bits = np.arange(start, min(start + (1 << 24), top + 1), 37, dtype=np.uint32)
            z = (bits | np.uint32(sign)).view(np.float32)[None, :]
            _, _, residual = _pass(z, np.ones_like(z))
            exact = 1.0 / (1.0 + np.exp(z.astype(np.float64)))  # 1 - sigmoid(z)
            worst = max(worst, float(np.abs(residual - exact).max()))
            if sign:  # y = 0: -p itself, tiny below z = -16, to its relative accuracy
                _, _, residual = _pass(z, np.zeros_like(z))
                p = 1.0 / (1.0 + np.exp(-z.astype(np.float64)))
                tail = z[0] > -87
                worst_tail = max(worst_tail, float(np.max(np.abs(-residual[0][tail] / p[0][tail]
                                                                  - 1))))
    assert worst <= 2.0**-23
    assert worst_tail < 3e-6  # float32's ln 2 moves exp(-|z|) by |z| 2.8e-8 at most


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(1, 70), st.floats(0.01, 60.0), st.integers(0, 2**16))
def test_the_pass_is_softplus_sigmoid_and_sums(m, n, spread, seed):
    """Against float64 numpy on random shapes: the softplus and products totals and
    the residual, each to float32's rounding."""
    rng = np.random.default_rng(seed)
    z = (rng.standard_normal((m, n)) * spread).astype(np.float32)
    y = rng.random((m, n)).astype(np.float32)
    softplus, products, residual = _pass(z, y)
    z64, y64 = z.astype(np.float64), y.astype(np.float64)
    exact = y64 - 1.0 / (1.0 + np.exp(-z64))
    # each element within a few float32 roundings of its size
    exact_softplus = np.logaddexp(0.0, z64)
    assert softplus == pytest.approx(exact_softplus.sum(), rel=0,
                                     abs=2.0**-21 * exact_softplus.sum() + 1e-30)
    assert products == pytest.approx((y64 * z64).sum(), rel=0,
                                     abs=2.0**-23 * np.abs(y64 * z64).sum() + 1e-30)
    np.testing.assert_allclose(residual, exact, rtol=0, atol=2.0**-23)


def test_the_softplus_of_each_logit_by_hand():
    # softplus(0) = log 2; softplus(-87) = e^-87 (the clamp's edge); softplus(50) = 50
    for z, want in ((0.0, np.log(2.0)), (-87.0, np.exp(-87.0)), (50.0, 50.0),
                    (-3.0, np.log1p(np.exp(-3.0)))):
        softplus, _, residual = _pass(np.array([[z]]), np.array([[1.0]]))
        assert softplus == pytest.approx(want, rel=3e-7)
        assert residual[0, 0] == pytest.approx(1.0 / (1.0 + np.exp(z)), abs=2.0**-24)


def test_gamma_cdf_and_digamma_against_scipy():
    rng = np.random.default_rng(0)
    shapes, points = np.exp(rng.uniform(-7, 5, 4000)), np.exp(rng.uniform(-10, 5.5, 4000))
    ours = np.array([_fused.gamma_cdf(a, x) for a, x in zip(shapes, points, strict=True)])
    np.testing.assert_allclose(ours, gammainc(shapes, points), rtol=0, atol=1e-13)
    # large shapes, near their mean, where both expansions take the most steps
    for a in (2e4, 5e4, 1e5, 1e6):
        for x in (a - 3 * np.sqrt(a), a, a + 3 * np.sqrt(a)):
            assert _fused.gamma_cdf(a, x) == pytest.approx(gammainc(a, x), abs=1e-9)
    assert _fused.gamma_cdf(2.0, 0.0) == 0.0
    # P(1, x) = 1 - e^-x by hand
    assert _fused.gamma_cdf(1.0, 2.0) == pytest.approx(1 - np.exp(-2.0), abs=1e-15)
    ours = np.array([_fused.digamma(a) for a in shapes])
    np.testing.assert_allclose(ours, psi(shapes), rtol=1e-10, atol=1e-10)
    assert _fused.digamma(1.0) == pytest.approx(-np.euler_gamma, abs=1e-13)


def test_the_pass_stays_vectorised():
    """The guard against a silent slowdown: in the compiled pass's optimised LLVM IR the
    arithmetic is on vectors of float32 (<8 x float> on this machine's AVX, <4 x float>
    on SSE or NEON), and no exp or log function is called. An aliased output, a Python
    object or a libm call in the loop would turn it scalar, 2 to 8 times slower,
    without a word."""
    # compiled afresh with the module's options: numba shows no code it read from its cache
    fresh = njit(**_fused.OPTIONS)(_fused.residual_pass.py_func)
    f32 = np.float32
    for answers in (np.uint8, f32):  # 0/1 responses, and partial credit
        fresh(np.zeros((2, 3), f32), np.zeros((2, 3), answers), np.zeros(3, f32),
              np.zeros(3, np.int32))
    for ir in fresh.inspect_llvm().values():
        vector = re.findall(r"\b(?:fmul|fadd|fsub|fdiv)\b[^\n]*<(?:4|8|16) x float>", ir)
        assert len(vector) >= 12, f"only {len(vector)} vector float32 operations"
        assert not re.search(r"@(?:llvm\.)?(?:exp|log|log1p)(?:f|\.)", ir)


def test_a_kernel_compiles_where_no_cache_can_be_written(monkeypatch):
    """numba refuses `cache=True` when no folder can take its cache (a read-only
    install, no writable home): the kernel is then compiled in each process, and works."""
    import numba

    def no_cache(**options):
        if options.get("cache"):
            raise RuntimeError("cannot cache function 'adam': no locator available for file")
        return numba.njit(**options)

    monkeypatch.setattr(kernels, "njit", no_cache)
    adam = kernels.compiled(_fused.adam.py_func, _fused.OPTIONS)
    params, gradient = np.ones(3), np.array([1.0, -1.0, 0.0])
    first, second = np.zeros(3), np.zeros(3)
    adam(params, gradient, first, second, 1, 0.1, 0.9, 0.999, 1e-8)
    # the first step of Adam moves each parameter by the learning rate, against its sign
    np.testing.assert_allclose(params, [0.9, 1.1, 1.0], atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-700.0, 700.0), min_size=1, max_size=40))
def test_exp64_is_numpy_s_exp_to_1e_13(values):
    x = np.array(values)
    out = np.empty_like(x)
    _fused.exp64(x, out, np.empty(x.size, np.int64))
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-13, atol=0)


def test_exp64_by_hand_and_at_its_clamp():
    x = np.array([0.0, 1.0, -1.0, np.log(2.0) / 2, 800.0, -800.0])
    out = np.empty_like(x)
    _fused.exp64(x, out, np.empty(x.size, np.int64))
    assert out[0] == 1.0
    assert out[1] == pytest.approx(np.e, rel=1e-15) and out[2] == pytest.approx(1 / np.e, rel=1e-15)
    assert out[3] == pytest.approx(np.sqrt(2.0), rel=1e-15)
    assert out[4] == pytest.approx(np.exp(700.0), rel=1e-13)  # clamped, not inf
    assert out[5] == pytest.approx(np.exp(-700.0), rel=1e-13)


_FIT_AND_PRINT = """
import hashlib, numpy as np
from mdad.irt.variational import fit_variational
y = (np.random.default_rng(0).random((300, 448)) < np.linspace(0.2, 0.8, 448)).astype(np.uint8)
for seed in range(3):
    fit = fit_variational(y, 10, rng=np.random.default_rng(seed), epochs=200)
    print(float(fit.best_loss).hex(), hashlib.sha256(fit.discrimination_.tobytes()).hexdigest())
"""


@pytest.mark.slow
def test_a_kernel_compiled_here_and_one_read_from_the_cache_fit_alike(tmp_path):
    """The first process after an install compiles the kernels and writes numba's disk
    cache; every later one reads them from it. Both must give the same fit, bit for
    bit: with fast-math's 'nsz' they did not (losses 1e-10 apart), and a first `mdad
    run` chose other tinyBenchmarks anchors than every later one."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    runs = [subprocess.run([sys.executable, "-c", _FIT_AND_PRINT], env=env, text=True,
                           capture_output=True, timeout=600, check=True).stdout
            for _ in range(2)]
    assert any((tmp_path / "numba").rglob("*.nbi")), "the first process wrote no cache"
    assert runs[0] == runs[1]
    assert len(set(runs[0].split())) == 6  # three fits, each its own loss and parameters
