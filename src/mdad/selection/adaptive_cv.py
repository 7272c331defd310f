"""The adaptive test that chooses its own model, as a study method.

For each size (the budget) it cross-validates candidate tests on the sources
(`mdad.irt.cat_cv`): dimensions 1, 2, 3 and 5, then prior scales 0.5 and 2 at the
best of them, in 2 folds by model, each fold's tests (of at most `CV_HELD` of its
models) by fits on every other source; then gives every target the test with the
least held-out error, one item at a time, up to the chosen stop.
The folds, their fits and their tests are shared by every size of a pool; the final
fit is the one `adaptive` and `adaptive-md` share for that dimension.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from mdad import streams
from mdad.irt.cat_cv import CrossValidatedTests
from mdad.selection.adaptive import Adaptive, AdaptiveBenchmark, SessionCache
from mdad.selection.base import MicroBenchmark, SeenPool
from mdad.selection.registry import register
from mdad.selection.tinybenchmarks import fit_irt

CV_FOLDS = 2  # by model: each fold's tests are fitted on the other half of the sources
# held-out tests per fold, at most: the tests cost in proportion; 2 x 100 tell candidates
# apart on GPQA (their errors are paired: the same models, the same answers)
CV_HELD = 100


def _cross_validation(pool: SeenPool, stream: np.random.Generator) -> CrossValidatedTests:
    order = stream.permutation(pool.n_sources)
    # each fold tests at most CV_HELD of its models, and fits on every other source
    held = [np.sort(order[k::CV_FOLDS][:CV_HELD]) for k in range(CV_FOLDS)]

    def fit(fold: int, dims: int) -> tuple[np.ndarray, np.ndarray]:
        train = np.setdiff1d(np.arange(pool.n_sources), held[fold])
        model = fit_irt(pool.correctness[train], dims,
                        streams.rng(pool.seed, "adaptive-cv", "fit", fold, dims)).standardised()
        return model.discrimination_, model.difficulty_

    return CrossValidatedTests(pool.correctness, held, fit)


@register("adaptive-cv")
class AdaptiveCrossValidated(Adaptive):
    """An adaptive test that chooses its own model for each budget by cross-validation
    on the sources (2 folds, up to 100 held-out tests each): the dimension (1, 2, 3 or
    5) whose held-out estimates err least, then the prior scale (1, 0.5 or 2 times the
    sources' spread) at it, and when to stop (before the budget only where that errs
    less by over twice its standard error); then the D-optimal test of `adaptive-md`
    with that model. `mdad adaptive start --method adaptive-cv` chooses the same way on
    its 5 folds and prints the choice."""

    display_name: ClassVar[str] = "Adaptive, CV-chosen"
    line_style: ClassVar[str] = "-."
    min_sources: ClassVar[int] = 2 * CV_FOLDS + 2  # two to fit and to hold out, per fold

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        cv = pool.shared("adaptive-cv", lambda stream: _cross_validation(pool, stream))
        choice = cv.choose(size)
        dims, scale = choice.dims, choice.prior_scale
        model = pool.shared(f"irt-2pl-d{dims}",
                            lambda stream: fit_irt(pool.correctness, dims, stream))
        model = model.standardised()
        discrimination = model.discrimination_ * scale
        # at prior scale 1 the test is adaptive's or adaptive-md's: share their sessions
        suffix = "" if scale == 1 else f"-scale{scale:g}"
        sessions = pool.shared(f"adaptive-sessions-d{dims}-top1{suffix}",
                               lambda stream: SessionCache(int(stream.integers(2**63 - 1))))
        return AdaptiveBenchmark(
            np.arange(pool.n_items),
            discrimination=discrimination[:, 0] if dims == 1 else discrimination,
            difficulty=model.difficulty_, length=choice.stop, seed=sessions.seed,
            sessions=sessions)
