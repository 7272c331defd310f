"""The SVI fit of the py-irt fork's model (mdad.irt.variational): its gradient against
finite differences, and its behaviour on data simulated from known parameters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import gammainc, gammaincinv

from mdad.errors import DataError
from mdad.irt import variational
from mdad.irt.variational import (
    _initial,
    draw_noise,
    elbo_gradients,
    fit_variational,
)


def _moved(params, noise, key, h):
    """`params` with `key` moved by h at every entry of the chosen index, and the Gamma
    draws held at their quantile (the implicit reparametrisation's reading)."""
    moved = {k: v.copy() for k, v in params.items()}
    moved[key] = moved[key] + h
    held = dict(noise)
    for name in ("u_t", "u_a", "u_b"):
        old = np.exp(params[f"logshape_{name}"])
        new = np.exp(moved[f"logshape_{name}"])
        held[name] = gammaincinv(new, gammainc(old, noise[name]))
    return moved, held


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    y = (rng.random((7, 5)) < 0.4).astype(float)
    params = _initial(7, 5, 2)
    # away from the symmetric start, so every term is exercised
    for key, value in params.items():
        params[key] = value + 0.3 * rng.standard_normal(value.shape)
    noise = draw_noise(params, rng)
    _, grads = elbo_gradients(params, y, noise)
    h = 1e-6
    for key, value in params.items():
        flat = value.ravel()
        for index in range(min(flat.size, 3)):
            direction = np.zeros_like(flat)
            direction[index] = h
            up, up_noise = _moved(params, noise, key, direction.reshape(value.shape))
            down, down_noise = _moved(params, noise, key, -direction.reshape(value.shape))
            numeric = (elbo_gradients(up, y, up_noise)[0]
                       - elbo_gradients(down, y, down_noise)[0]) / (2 * h)
            assert grads[key].ravel()[index] == pytest.approx(numeric, rel=1e-4, abs=1e-4), key


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
@given(st.integers(1, 40), st.integers(1, 50), st.integers(1, 300), st.integers(0, 2**16))
def test_loss_terms_are_the_same_bits_in_any_blocks(n_models, n_items, block, seed):
    """Blocks only change the order elements are visited in: any block size gives the
    bits of one pass, and the values are softplus(z), y - sigmoid(z) and y * z."""
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((n_models, n_items)) * 30).astype(np.float32)
    y = (rng.random((n_models, n_items)) < 0.5).astype(np.float32)
    whole = variational._BLOCK_ELEMENTS
    try:
        variational._BLOCK_ELEMENTS = block
        blocked = variational._loss_terms(logits.copy(), y)
        variational._BLOCK_ELEMENTS = n_models * n_items
        scaled_logits = logits.copy()
        one_pass = variational._loss_terms(scaled_logits, y)
    finally:
        variational._BLOCK_ELEMENTS = whole
    for a, b in zip(blocked, one_pass, strict=True):
        assert np.array_equal(a, b)
    z = logits.astype(np.float64)
    softplus, residual = one_pass
    np.testing.assert_allclose(softplus, np.logaddexp(0.0, z), rtol=1e-6, atol=1e-30)
    np.testing.assert_allclose(residual, y - 1.0 / (1.0 + np.exp(-z)), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(scaled_logits, y * logits)
