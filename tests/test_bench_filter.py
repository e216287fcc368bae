"""Smoke test of benchmarks/bench_filter.py (``--quick``, in a subprocess).

The counts are checked against the Gaussian-DP closed form computed here
(scipy.stats.norm and brentq), not against numbers recorded from skdp.
"""

import csv
import math

from scipy.optimize import brentq
from scipy.stats import norm

from test_benchmarks import BENCH, _run  # noqa: F401  (same subprocess helper)


def _mu_cap(eps, delta):
    f = lambda m: norm.cdf(-eps / m + m / 2) - math.exp(eps) * norm.cdf(-eps / m - m / 2) - delta  # noqa: E731
    return brentq(f, 1e-6, 50, xtol=1e-15)


def test_bench_filter_quick(tmp_path):
    out = _run("bench_filter.py", tmp_path, "--quick", timeout=600)
    assert "| PrivatePCA (analytic Gaussian) |" in out
    with open(tmp_path / "filter.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        basic, filt = int(r["basic"]), int(r["filter"])
        eps = 1.0 if r["ledger"].startswith("(1.0") else 3.0
        assert basic == round(eps / 0.1)  # (0.1, 1e-7) fits under basic composition
        assert filt >= basic  # a ledger of one kind of fit: the filter never accepts fewer
        if r["mu"] != "-":  # Gaussian fits: sqrt(k) mu within the GDP cap (99% of delta after
            mu = float(r["mu"])  # the conversion, or all of it)
            assert math.floor(_mu_cap(eps, 0.99e-5) ** 2 / mu**2) <= filt
            assert filt <= math.floor(_mu_cap(eps, 1e-5) ** 2 / mu**2 * (1 + 1e-9))
