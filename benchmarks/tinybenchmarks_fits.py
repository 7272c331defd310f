"""Why tinyBenchmarks' error was above the reference's: its anchors under each IRT fit
and anchor rule, on the same GPQA runs as `mdad run gpqa` (seed 0), against the
reference's per-run results (../shared/data/paper-reference/gpqa-estimation-results.csv).

Variants (error against the seen accuracy and Kendall tau, per run, then mean ± SE):
- map-distinct: the MAP fit of `mdad.irt`, a taken item replaced by the nearest free
  one (mdad before the fix; `tinybenchmarks-map` now);
- map-argmin: the same fit, each centroid's nearest item kept even when shared;
- variational: `mdad.irt.variational` (what `tinybenchmarks` uses now);
- pyro (with --pyro, needs `pip install torch pyro-ppl`): the py-irt fork's model
  fitted by pyro's SVI as its trainer does, argmin anchors: the reference's code path.

Each row also gives z = (ours - reference) / combined standard error.

Usage: python benchmarks/tinybenchmarks_fits.py [--runs 50] [--sources 100,300] [--pyro]
(about 2 minutes without --pyro on 2 cores; pyro's fits take 20 to 40 s each)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from mdad import streams
from mdad.data import load_dataset
from mdad.irt.variational import fit_variational
from mdad.selection.clustering import reference_kmeans
from mdad.selection.threads import one_thread
from mdad.selection.tinybenchmarks import fit_irt, irt_anchors
from mdad.study import StudyConfig, plan_study
from mdad.study.cells import draw_design, seen_pool

SIZES = (10, 25, 50, 100, 200)
REFERENCE = Path(__file__).resolve().parents[2] / "shared/data/paper-reference"


def argmin_anchors(discrimination, difficulty, size):
    """The reference's rule: each centroid's nearest item, shared or not."""
    embedding = np.column_stack([discrimination, difficulty])
    uniform = np.full(embedding.shape[0], 1.0 / embedding.shape[0])
    kmeans = reference_kmeans(embedding, size, sample_weight=uniform)
    distance = ((kmeans.cluster_centers_[:, None] - embedding[None]) ** 2).sum(axis=2)
    return (np.argmin(distance, axis=1),
            np.bincount(kmeans.labels_, minlength=size) / embedding.shape[0])


def pyro_fit(responses, dims=10, epochs=2000, seed=42):
    """The fork's hierarchical multidim 2PL by pyro's SVI (Trace_ELBO, Adam 0.1), the
    guide's locations after the step of lowest loss."""
    import pyro
    import pyro.distributions as dist
    import torch
    from torch.distributions import constraints

    torch.set_num_threads(1)
    n, n_items = responses.shape
    obs = torch.tensor(responses, dtype=torch.float)

    def model():
        def hyper(name, size):
            with pyro.plate(f"mu_{name}_plate", size):
                mu = pyro.sample(f"mu_{name}", dist.Normal(torch.tensor(0.), torch.tensor(10.)))
            with pyro.plate(f"u_{name}_plate", size):
                u = pyro.sample(f"u_{name}", dist.Gamma(torch.tensor(1.), torch.tensor(1.)))
            return mu, u
        mu_b, u_b = hyper("b", 1)
        mu_t, u_t = hyper("theta", dims)
        mu_g, u_g = hyper("gamma", dims)
        with pyro.plate("thetas", n, dim=-2), pyro.plate("theta_dims", dims, dim=-1):
            theta = pyro.sample("theta", dist.Normal(mu_t, 1.0 / u_t))
        with pyro.plate("bs", n_items, dim=-2), pyro.plate("bs_dims", 1, dim=-1):
            b = pyro.sample("b", dist.Normal(mu_b, 1.0 / u_b))
        with pyro.plate("gammas", n_items, dim=-2), pyro.plate("gamma_dims", dims, dim=-1):
            gamma = pyro.sample("gamma", dist.Normal(mu_g, 1.0 / u_g))
        logits = theta @ gamma.T - dims * b[:, 0][None, :]
        with pyro.plate("obs_rows", n, dim=-2), pyro.plate("obs_cols", n_items, dim=-1):
            pyro.sample("obs", dist.Bernoulli(logits=logits), obs=obs)

    def guide():
        positive = constraints.positive

        def normal(name, shape):
            loc = pyro.param(f"loc_{name}", torch.zeros(shape))
            scale = pyro.param(f"scale_{name}", torch.ones(shape), constraint=positive)
            return dist.Normal(loc, scale)

        def gamma(name, size):
            return dist.Gamma(pyro.param(f"alpha_{name}", torch.ones(size), constraint=positive),
                              pyro.param(f"beta_{name}", torch.ones(size), constraint=positive))
        for name, size in (("b", 1), ("theta", dims), ("gamma", dims)):
            with pyro.plate(f"mu_{name}_plate", size):
                pyro.sample(f"mu_{name}", normal(f"mu_{name}", size))
            with pyro.plate(f"u_{name}_plate", size):
                pyro.sample(f"u_{name}", gamma(name, size))
        with pyro.plate("thetas", n, dim=-2), pyro.plate("theta_dims", dims, dim=-1):
            pyro.sample("theta", normal("ability", (n, dims)))
        with pyro.plate("bs", n_items, dim=-2), pyro.plate("bs_dims", 1, dim=-1):
            pyro.sample("b", normal("diff", (n_items, 1)))
        with pyro.plate("gammas", n_items, dim=-2), pyro.plate("gamma_dims", dims, dim=-1):
            pyro.sample("gamma", normal("disc", (n_items, dims)))

    pyro.set_rng_seed(seed)
    pyro.clear_param_store()
    svi = pyro.infer.SVI(model, guide, pyro.optim.Adam({"lr": 0.1}), loss=pyro.infer.Trace_ELBO())
    best, params = np.inf, None
    for _ in range(epochs):
        loss = svi.step()
        if loss < best:
            best = loss
            params = (pyro.param("loc_disc").detach().numpy().copy(),
                      pyro.param("loc_diff").detach().numpy()[:, 0].copy())
    return params


def measure(runs: int, sources: tuple[int, ...], with_pyro: bool) -> pd.DataFrame:
    matrix = load_dataset("gpqa").matrix
    plan = plan_study(matrix, StudyConfig(methods=("tinybenchmarks",), n_runs=runs,
                                          sources=sources))
    rows = []
    with one_thread():
        for run in range(runs):
            design = draw_design(matrix, plan, run)
            targets = matrix.correctness[design.targets][:, design.seen].astype(float)
            seen = targets.mean(axis=1)
            for n_sources in sources:
                pool = seen_pool(matrix, design, n_sources, seed=0)
                y = np.asarray(pool.correctness, dtype=float)
                rng = streams.rng(0, "fits", run, n_sources)
                fits = {"map": fit_irt(y, 10, rng), "variational": fit_variational(y, 10, rng=rng)}
                rules = {"map-distinct": (fits["map"], irt_anchors),
                         "map-argmin": (fits["map"], argmin_anchors),
                         "variational": (fits["variational"], irt_anchors)}
                chosen = {name: [rule(fit.discrimination_, fit.difficulty_, size) for size in SIZES]
                          for name, (fit, rule) in rules.items()}
                if with_pyro:
                    a, b = pyro_fit(y)
                    chosen["pyro"] = [argmin_anchors(a, b, size) for size in SIZES]
                for name, per_size in chosen.items():
                    for size, (anchors, weights) in zip(SIZES, per_size, strict=True):
                        estimate = targets[:, anchors] @ weights
                        rows.append({"variant": name, "sources": n_sources, "size": size,
                                     "distinct": np.unique(anchors).size,
                                     "mae": np.abs(estimate - seen).mean(),
                                     "tau": kendalltau(estimate, seen).statistic})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--sources", default="100,300")
    parser.add_argument("--pyro", action="store_true")
    args = parser.parse_args()
    sources = tuple(int(s) for s in args.sources.split(","))
    ours = measure(args.runs, sources, args.pyro)
    reference = pd.read_csv(REFERENCE / "gpqa-estimation-results.csv", index_col=0)
    reference.columns = ["dataset", "size", "fraction", "sources", "technique", "mae",
                         "mae_unseen", "tau", "tau_unseen"]
    reference = reference[reference.technique == "tinyBenchmarks"].assign(variant="reference")
    table = pd.concat([ours, reference[ours.columns.drop("distinct")]])
    grouped = table[table.sources.isin(sources)].groupby(["sources", "variant", "size"])
    summary = pd.concat({"mae": grouped.mae.mean() * 100, "mae_se": grouped.mae.sem() * 100,
                         "tau": grouped.tau.mean(), "tau_se": grouped.tau.sem(),
                         "distinct": grouped.distinct.mean()}, axis=1)
    for (n_sources, _variant, size), row in summary.iterrows():
        ref = summary.loc[(n_sources, "reference", size)]
        summary.loc[(n_sources, _variant, size), "z_mae"] = (
            (row.mae - ref.mae) / np.hypot(row.mae_se, ref.mae_se))
        summary.loc[(n_sources, _variant, size), "z_tau"] = (
            (row.tau - ref.tau) / np.hypot(row.tau_se, ref.tau_se))
    print("error in points, tau; z against the reference's per-run mean")
    print(summary.round(3).to_string())


if __name__ == "__main__":
    main()
