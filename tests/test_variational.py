"""The SVI fit of the py-irt fork's model (mdad.irt.variational): its gradient against
finite differences, its bits against the plain one-array-per-variable fit
(tests/reference_variational.py), and its behaviour on data simulated from known
parameters."""

from __future__ import annotations

import numpy as np
import pytest
import reference_variational as reference
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import gammainc, gammaincinv

from mdad.errors import DataError
from mdad.irt import variational
from mdad.irt.variational import GuideLayout, draw_noise, elbo_gradients, fit_variational


def _held_gamma(layout, params, moved, gamma):
    """The Gamma draws at `moved` held at their quantile at `params` (the implicit
    reparametrisation's reading)."""
    old, new = (np.exp(layout.sections(p)[2]) for p in (params, moved))
    return gammaincinv(new, gammainc(old, gamma))


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    y = (rng.random((7, 5)) < 0.4).astype(float)
    layout = GuideLayout(7, 5, 2)
    # away from the symmetric start, so every term is exercised
    params = 0.3 * rng.standard_normal(layout.size)
    normal, gamma = draw_noise(layout, params, rng)
    _, grads = elbo_gradients(layout, params, y, normal, gamma)
    h = 1e-6
    for key, view in layout.named(np.arange(layout.size)).items():
        for index in view.ravel()[:3]:
            up, down = params.copy(), params.copy()
            up[index] += h
            down[index] -= h
            numeric = (elbo_gradients(layout, up, y, normal,
                                      _held_gamma(layout, params, up, gamma))[0]
                       - elbo_gradients(layout, down, y, normal,
                                        _held_gamma(layout, params, down, gamma))[0]) / (2 * h)
            assert grads[index] == pytest.approx(numeric, rel=1e-4, abs=1e-4), key


def test_layout_places_every_parameter_once_in_the_forks_shapes():
    layout = GuideLayout(4, 3, 2)
    named = layout.named(np.arange(layout.size))
    assert named["loc_t"].shape == (4, 2) and named["logscale_a"].shape == (3, 2)
    assert named["loc_b"].shape == (3,) and named["lograte_u_b"].shape == (1,)
    assert len(named) == 18
    assert np.array_equal(np.sort(np.concatenate([v.ravel() for v in named.values()])),
                          np.arange(layout.size))
    # the draws follow the order t, a, b, mu_t, mu_a, mu_b, as one Normal draw each
    normal, gamma = draw_noise(layout, np.zeros(layout.size), np.random.default_rng(4))
    again = np.random.default_rng(4)
    separate = [again.standard_normal(shape) for shape in
                [(4, 2), (3, 2), (3,), (2,), (2,), (1,)]]
    assert np.array_equal(normal, np.concatenate([x.ravel() for x in separate]))
    assert gamma.shape == (layout.n_gamma,) and (gamma > 0).all()
    with pytest.raises(ValueError, match="neither"):
        layout.split(np.zeros(layout.size))


@pytest.mark.parametrize(("n_models", "n_items", "dims", "fractional"), [
    (7, 5, 2, False), (30, 40, 3, True), (150, 440, 1, False), (3, 2, 4, False)])
def test_the_fit_is_the_plain_fits_bits(n_models, n_items, dims, fractional):
    """The flat-vector fit equals the one-array-per-variable fit bit for bit (150 x 440
    crosses a block of rows), and so does one gradient at a point away from the start."""
    rng = np.random.default_rng(n_models)
    y = rng.random((n_models, n_items))
    y = y if fractional else (y < 0.4).astype(float)
    fast = fit_variational(y, dims, rng=np.random.default_rng(9), epochs=40)
    plain = reference.fit(y, dims, np.random.default_rng(9), epochs=40)
    for got, want in zip((fast.discrimination_, fast.difficulty_, fast.ability_,
                          fast.best_loss), plain, strict=True):
        assert np.array_equal(got, want)
    layout = GuideLayout(n_models, n_items, dims)
    params = 0.5 * rng.standard_normal(layout.size)
    normal, gamma = draw_noise(layout, params, np.random.default_rng(3))
    named = {key: view.copy() for key, view in layout.named(params).items()}
    noise = reference.draw_noise(named, np.random.default_rng(3))
    y32 = y.astype(np.float32)
    loss, grads = elbo_gradients(layout, params, y32, normal, gamma)
    plain_loss, plain_grads = reference.elbo_gradients(named, y32, noise)
    assert loss == plain_loss
    for key, view in layout.named(grads).items():
        assert np.array_equal(view, plain_grads[key]), key


def test_fit_recovers_the_item_ordering_of_simulated_data():
    """One dimension, 200 models: the fitted offsets D*b order the items as the true
    difficulties do, and the discriminations' signs agree up to the model's sign."""
    rng = np.random.default_rng(1)
    ability = rng.standard_normal(200)
    a_true = rng.uniform(0.8, 2.0, 30)
    b_true = np.linspace(-2, 2, 30)
    y = (rng.random((200, 30)) < 1 / (1 + np.exp(-(np.outer(ability, a_true) - b_true))))
    fit = fit_variational(y.astype(float), 1, rng=np.random.default_rng(2), epochs=600)
    assert np.corrcoef(fit.difficulty_, b_true)[0, 1] > 0.95
    sign = np.sign(np.corrcoef(fit.ability_[:, 0], ability)[0, 1])
    assert np.corrcoef(sign * fit.discrimination_[:, 0], a_true)[0, 1] > 0.3
    assert abs(np.corrcoef(fit.ability_[:, 0], ability)[0, 1]) > 0.9


def test_same_generator_same_fit_and_bad_input_is_refused():
    y = (np.random.default_rng(3).random((10, 6)) < 0.5).astype(float)
    first = fit_variational(y, 2, rng=np.random.default_rng(5), epochs=50)
    again = fit_variational(y, 2, rng=np.random.default_rng(5), epochs=50)
    assert np.array_equal(first.discrimination_, again.discrimination_)
    y[0, 0] = np.nan
    with pytest.raises(DataError, match="complete scores"):
        fit_variational(y, 2, rng=np.random.default_rng(5), epochs=5)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(1, 50), st.integers(1, 300), st.integers(0, 2**16),
       st.booleans())
def test_loss_terms_are_the_same_bits_in_any_blocks(n_models, n_items, block, seed, exact):
    """Blocks only change the order elements are visited in: any block size gives the
    bits of one pass, and the values are softplus(z), y - sigmoid(z) and y * z."""
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((n_models, n_items)) * 30).astype(np.float32)
    y = (rng.random((n_models, n_items)) < 0.5).astype(np.float32)
    whole = variational._BLOCK_ELEMENTS
    try:
        variational._BLOCK_ELEMENTS = block
        blocked = [a.copy() for a in variational._loss_terms(logits, y, exact=exact)]
        variational._BLOCK_ELEMENTS = n_models * n_items
        one_pass = variational._loss_terms(logits, y, exact=exact)
    finally:
        variational._BLOCK_ELEMENTS = whole
    for a, b in zip(blocked, one_pass, strict=True):
        assert np.array_equal(a, b)
    z = logits.astype(np.float64)
    softplus, residual, products = one_pass
    np.testing.assert_allclose(softplus, np.logaddexp(0.0, z), rtol=1e-6,
                               atol=1e-30 if exact else variational.SOFTPLUS_ERROR)
    np.testing.assert_allclose(residual, y - 1.0 / (1.0 + np.exp(-z)), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(products, y * logits)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60), st.integers(1, 60), st.floats(0.01, 40), st.integers(0, 2**16))
def test_the_approximate_softplus_stays_within_its_margin(n_models, n_items, spread, seed):
    """Element by element within SOFTPLUS_ERROR plus the float32 rounding of the sum
    with max(z, 0), the same residual and products bits, and a loss within
    `_loss_margin` of the exact one at random points of a fit."""
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((n_models, n_items)) * spread).astype(np.float32)
    y = (rng.random((n_models, n_items)) < 0.5).astype(np.float32)
    exact = [a.copy() for a in variational._loss_terms(logits, y, exact=True)]
    approximate = variational._loss_terms(logits, y, exact=False)
    assert np.array_equal(exact[1], approximate[1]) and np.array_equal(exact[2], approximate[2])
    difference = np.abs(exact[0].astype(np.float64) - approximate[0])
    assert (difference <= variational.SOFTPLUS_ERROR + 2.0**-23 * exact[0]).all()

    layout = GuideLayout(n_models, n_items, 2)
    params = 0.5 * rng.standard_normal(layout.size)
    normal, gamma = draw_noise(layout, params, rng)
    loss, total, _ = variational._elbo(layout, params, y, normal, gamma, None, None,
                                       exact=False)
    exact_loss = elbo_gradients(layout, params, y, normal, gamma)[0]
    margin = variational._loss_margin(y.size, total, loss)
    assert abs(loss.at(total) - exact_loss) <= margin
    assert margin < 1e-5 * abs(exact_loss) + 1e-5 * y.size  # and it is not vacuous


def _log_against_log1p(step: int) -> float:
    """The largest |log(1 + s) - log1p(s)| in float32 over every `step`-th float32 s in
    (0, 1], in units of 2^-24."""
    worst, top = 0.0, int(np.float32(1).view(np.uint32))
    for start in range(1, top + 1, step << 22):
        s = np.arange(start, min(start + (step << 22), top + 1), step,
                      dtype=np.uint32).view(np.float32)
        gap = np.abs(np.log(np.float32(1) + s).astype(np.float64) - np.log1p(s))
        worst = max(worst, float(gap.max()))
    return worst / 2.0**-24


def test_log_of_one_plus_is_within_two_units_of_log1p_sampled():
    """SOFTPLUS_ERROR rests on this bound (the whole range is the slow test below)."""
    assert _log_against_log1p(step=997) <= 2
    assert variational.SOFTPLUS_ERROR >= 4 * 2 * 2.0**-24


@pytest.mark.slow
def test_log_of_one_plus_is_within_two_units_of_log1p_everywhere():
    """Every one of the 1,065,353,216 float32 values in (0, 1], as this machine's numpy
    computes them (about 25 s)."""
    assert _log_against_log1p(step=1) <= 2


def test_the_fit_skips_exact_losses_and_keeps_the_plain_fits_bits(monkeypatch):
    """600 epochs, past the early steps where every loss is a new best: most steps'
    exact softplus is never computed, and the fit is still the plain fit's bits."""
    y = (np.random.default_rng(8).random((40, 60)) < 0.45).astype(float)
    exact_calls = []
    loss_terms = variational._loss_terms

    def counting(*args, exact=True, **kwargs):
        exact_calls.append(exact)
        return loss_terms(*args, exact=exact, **kwargs)

    monkeypatch.setattr(variational, "_loss_terms", counting)
    fast = fit_variational(y, 3, rng=np.random.default_rng(4), epochs=600)
    plain = reference.fit(y, 3, np.random.default_rng(4), epochs=600)
    for got, want in zip((fast.discrimination_, fast.difficulty_, fast.ability_,
                          fast.best_loss), plain, strict=True):
        assert np.array_equal(got, want)
    assert exact_calls.count(False) == 600
    assert 0 < exact_calls.count(True) < 200
