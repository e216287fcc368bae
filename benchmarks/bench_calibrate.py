"""Time mechanism calibration for 1000-dimensional queries.

Target (issue 2): ``calibrate`` for a 1000-dimensional query takes under
10 ms (analytic Gaussian, i.n.i.d.). Prints a table; writes
``benchmarks/results/calibrate.csv``.

Run: ``python3 benchmarks/bench_calibrate.py``
"""

import time
import warnings

import numpy as np

import _common  # noqa: E402  (puts the checkout's skdp on sys.path)

from skdp.mechanisms import Query, available_mechanisms, calibrate


def _time(fn, repeat=50):
    fn()  # warm-up
    best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - t0) / repeat)
    return best


def main():
    rng = np.random.default_rng(0)
    d = 1000
    profile = rng.pareto(1.5, size=d) + 1e-3
    queries = {
        "l2 (d=1000)": Query(shape=(d,), l2_sensitivity=1.0),
        "profile (d=1000)": Query(shape=(d,), sensitivity_profile=profile),
    }
    rows = []
    for qname, q in queries.items():
        for name in available_mechanisms() + ["auto"]:
            eps, delta = 1.0, 1e-5
            if name == "gaussian":
                eps = 0.9
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    calibrate(q, eps, delta, mechanism=name)
            except ValueError:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = _time(lambda: calibrate(q, eps, delta, mechanism=name))
            rows.append((qname, name, t * 1e3))
    print(f"{'query':<18} {'mechanism':<18} {'calibrate (ms)':>14}")
    for qname, name, ms in rows:
        print(f"{qname:<18} {name:<18} {ms:>14.3f}")
    _common.write_csv("calibrate.csv", ["query", "mechanism", "calibrate_ms"], rows)


if __name__ == "__main__":
    main()
