"""The SVI fit of the py-irt fork's model (mdad.irt.variational): its gradient against
finite differences, its loss and gradient against the plain one-array-per-variable fit
(tests/reference_variational.py), its normal draws, and its behaviour on data
simulated from known parameters. Its distribution of results against the reference's:
tests/test_paper_reference.py."""

from __future__ import annotations

import numpy as np
import pytest
import reference_variational as reference
from scipy import stats
from scipy.special import gammainc, gammaincinv

from mdad.errors import ConfigError, DataError
from mdad.irt.variational import (
    GuideLayout,
    draw_noise,
    elbo_gradients,
    fit_variational,
    standard_normals,
)


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
    # one Normal draw per variable, in the order t, a, b, mu_t, mu_a, mu_b
    normal, gamma = draw_noise(layout, np.zeros(layout.size), np.random.default_rng(4))
    assert np.array_equal(normal, standard_normals(np.random.default_rng(4), layout.n_normal))
    assert gamma.shape == (layout.n_gamma,) and (gamma > 0).all()
    with pytest.raises(ValueError, match="neither"):
        layout.split(np.zeros(layout.size))


def test_the_normal_draws_are_normal_and_independent():
    """Box and Muller's transform of 32-bit words: a Kolmogorov-Smirnov test against
    N(0, 1), independent pairs (one word's radius, another's angle), against numpy's
    own transcendental functions, and no draw beyond the 6.8 that 32 bits reach."""
    draws = standard_normals(np.random.default_rng(0), 200_001)
    assert draws.shape == (200_001,)
    assert stats.kstest(draws, "norm").pvalue > 1e-3
    assert abs(np.corrcoef(draws[:-1], draws[1:])[0, 1]) < 0.01
    assert abs(np.corrcoef(draws[:100_000] ** 2, draws[100_001:] ** 2)[0, 1]) < 0.01
    assert np.abs(draws).max() < np.sqrt(-2 * np.log(0.5 * 2.0**-32))
    # the same words through numpy's log, cos and sin
    words = np.random.default_rng(0).bit_generator.random_raw(100_001).view(np.uint32)
    radius = np.sqrt(-2 * np.log((words[:100_001] + 0.5) * 2.0**-32))
    angle = words[100_001:] * (2 * np.pi * 2.0**-32)
    exact = np.concatenate([radius * np.cos(angle), radius * np.sin(angle)])[:200_001]
    np.testing.assert_allclose(draws, exact, rtol=1e-4, atol=1e-8)
    assert np.mean(draws**4) == pytest.approx(3.0, abs=0.05)


@pytest.mark.parametrize(("n_models", "n_items", "dims", "fractional"), [
    (7, 5, 2, False), (30, 40, 3, True), (150, 440, 1, False), (3, 2, 4, False)])
def test_the_loss_and_gradient_are_the_plain_fits(n_models, n_items, dims, fractional):
    """At a point away from the start and the same draws, the compiled epoch gives the
    plain numpy fit's loss and gradient (tests/reference_variational.py, one numpy
    operation per step) to float32's rounding of the models x items arithmetic."""
    rng = np.random.default_rng(n_models)
    y = rng.random((n_models, n_items))
    y = (y if fractional else (y < 0.4).astype(float)).astype(np.float32)
    layout = GuideLayout(n_models, n_items, dims)
    params = 0.5 * rng.standard_normal(layout.size)
    normal, gamma = draw_noise(layout, params, np.random.default_rng(3))
    named = {key: view.copy() for key, view in layout.named(params).items()}
    noise = {**layout.split(normal), **layout.split(gamma)}
    loss, grads = elbo_gradients(layout, params, y, normal, gamma)
    plain_loss, plain_grads = reference.elbo_gradients(named, y, noise)
    assert loss == pytest.approx(plain_loss, rel=1e-6)
    for key, view in layout.named(grads).items():
        scale = np.abs(plain_grads[key]).max() + 1e-3
        np.testing.assert_allclose(view, plain_grads[key], rtol=1e-4, atol=1e-4 * scale,
                                   err_msg=key)


@pytest.mark.parametrize("fractional", [False, True])
def test_the_compiled_fit_is_the_loop_of_its_tested_steps(fractional, monkeypatch):
    """`fit_variational`'s compiled loop (`_fused.fit_epochs`, in calls of several
    epochs) is draw_noise, elbo_gradients and torch's Adam step after step, keeping the
    locations after the step of the lowest loss: the same floats."""
    from mdad.irt import _fused, variational

    rng = np.random.default_rng(7)
    y = rng.random((9, 6))
    y = (y if fractional else (y < 0.5).astype(float))
    layout = GuideLayout(9, 6, 2)
    params, first, second = np.zeros(layout.size), np.zeros(layout.size), np.zeros(layout.size)
    best_loss, best, draws = np.inf, None, np.random.default_rng(11)
    answers = y.astype(np.float32) if fractional else y.astype(np.uint8)
    for step in range(1, 31):
        normal, gamma = draw_noise(layout, params, draws)
        loss, gradient = elbo_gradients(layout, params, answers, normal, gamma)
        _fused.adam(params, gradient, first, second, step, 0.1, 0.9, 0.999, 1e-8)
        if loss < best_loss:
            best_loss, best = loss, layout.split(params[:layout.n_normal].copy())
    # calls of 7 epochs: 30 is not a multiple
    monkeypatch.setattr(variational, "_CELLS_PER_CALL", 7 * y.size)
    fit = fit_variational(y, 2, rng=np.random.default_rng(11), epochs=30)
    assert fit.best_loss == best_loss
    assert np.array_equal(fit.ability_, best["t"]) and np.array_equal(fit.difficulty_, best["b"])
    assert np.array_equal(fit.discrimination_, best["a"])


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


def test_a_diverging_fit_stops_with_an_error_instead_of_hanging():
    """At learning rate 10 the parameters overflow within a few epochs: the compiled
    loop stops at the first loss that is not a number (a NaN Gamma shape would make
    the Gamma sampler's rejection loop run forever), and the error says where."""
    y = (np.random.default_rng(0).random((6, 5)) < 0.5).astype(float)
    with pytest.raises(DataError, match="diverged at epoch"):
        fit_variational(y, 2, rng=np.random.default_rng(0), learning_rate=10.0)
    for options, parameter in (({"epochs": 0}, "epochs"), ({"epochs": 2.5}, "epochs"),
                               ({"learning_rate": -1.0}, "learning_rate"),
                               ({"rng": 0}, "rng")):
        call = {"rng": np.random.default_rng(0), **options}
        with pytest.raises(ConfigError, match=f"^{parameter} must be") as info:
            fit_variational(y, 2, **call)
        assert info.value.parameters == (parameter,)
    with pytest.raises(ConfigError, match=r"^dims must be"):
        fit_variational(y, 0, rng=np.random.default_rng(0))
    with pytest.raises(DataError, match=r"^responses must be numbers"):
        fit_variational(np.full((3, 3), "x"), 2, rng=np.random.default_rng(0))


def test_the_compiled_draws_are_numpy_s_own():
    """`_fused.draw` takes the generator's 32-bit words and then a Gamma draw per
    precision from numpy's own sampler, in numpy's order: the same floats as numpy's
    calls on a twin generator (shapes far from 1 too); a shape that is not a positive
    number gives NaN, not an endless draw."""
    from mdad.irt import _fused

    logshape = np.log([0.05, 0.7, 1.0, 3.5, 40.0])
    normal, work, gamma = np.empty(8), np.empty(4), np.empty(5)
    rng, twin = np.random.default_rng(21), np.random.default_rng(21)
    _fused.draw(rng, logshape, normal, work, gamma)
    expected = np.empty(8)
    _fused.box_muller(twin.integers(0, 2**32, 8, dtype=np.uint32), expected, np.empty(4))
    np.testing.assert_array_equal(normal, expected)
    np.testing.assert_allclose(gamma, np.maximum(twin.standard_gamma(np.exp(logshape)),
                                                 1e-300), rtol=1e-14)
    assert rng.random() == twin.random()  # both streams left at the same place
    _fused.draw(rng, np.array([np.nan, np.inf, 0.0]), normal, work, gamma[:3])
    assert np.isnan(gamma[:2]).all() and gamma[2] > 0
