"""k-means as the reference code runs it, shared by confidence strata and tinyBenchmarks."""

from __future__ import annotations

import warnings

import numpy as np

# The reference code fixes k-means' seed, so clusters depend only on the data.
KMEANS_SEED = 42


def reference_kmeans(points: np.ndarray, n_clusters: int,
                     sample_weight: np.ndarray | None = None):  # -> sklearn KMeans
    """scikit-learn's KMeans (k-means++, ``n_init="auto"``, seed 42) fitted to
    `points` of shape (n_points, n_features).

    With fewer distinct points than clusters k-means repeats centroids; its
    ConvergenceWarning is silenced because callers handle that case (fewer strata,
    distinct anchors).
    """
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    # one OpenMP thread in this thread too: a limit set in another thread (a study's
    # `one_thread`, select's main thread) does not reach the fits' threads
    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="openmp"):
        warnings.simplefilter("ignore", ConvergenceWarning)
        return KMeans(n_clusters=n_clusters, n_init="auto", random_state=KMEANS_SEED).fit(
            np.asarray(points, dtype=np.float64), sample_weight=sample_weight)
