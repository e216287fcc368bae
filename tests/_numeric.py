"""Numeric maximisation over a box, the independent oracle of the sensitivity tests."""

import numpy as np


def numeric_max(f, bounds, n_starts=300, seed=0):
    """``max f`` over the box ``bounds`` by L-BFGS-B from ``n_starts`` uniform random starts."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(seed)
    best = 0.0
    for _ in range(n_starts):
        x0 = [rng.uniform(lo, hi) for lo, hi in bounds]
        res = minimize(lambda q: -f(q), x0, method="L-BFGS-B", bounds=bounds)
        best = max(best, -res.fun)
    return best
