"""Speed of the floating-point-safe integer samplers against numpy's float samplers.

For ``n`` draws (10^4, 10^5, 10^6; ``--quick``: 10^4, 10^5) times, best of 5
runs, in the same process and with the same ``numpy.random.Generator``:

* ``rng.standard_normal(n)`` and ``rng.laplace(size=n)`` (the float baselines;
  their cost does not depend on the scale),
* ``sample_discrete_gaussian(sigma, n, rng)`` (CKS 2020, Algorithm 3) and
  ``sample_discrete_laplace(t, n, rng)`` (Algorithm 2) from
  :mod:`skdp.mechanisms._discrete`, for the scales 3, 2^20 and 2^30
  (``t = int(scale)``),

and the ratio of each time to ``standard_normal``'s at the same ``n``.
Target: the discrete Gaussian with ``sigma = 2^20`` at ``n = 10^6`` within 10x
of ``standard_normal``. Absolute times depend on the machine and its load;
compare the ratios. Prints a markdown table; writes
``benchmarks/results/samplers.csv``.

Run: ``python3 benchmarks/bench_samplers.py [--quick]``.
"""

import argparse

import numpy as np

import _common  # noqa: E402  (puts the checkout's skdp on sys.path)

from skdp.mechanisms._discrete import (  # noqa: E402
    sample_discrete_gaussian,
    sample_discrete_laplace,
)

SCALES = (("3", 3.0), ("2^20", 2.0**20), ("2^30", 2.0**30))
FIELDS = ["n", "sampler", "scale", "best_ms", "x_standard_normal"]
TARGET = 10.0


def _best(fn):
    return _common.best_time(fn, repeat=5)


def run(quick=False):
    """Return the table rows (dicts keyed by ``FIELDS``)."""
    rng = np.random.default_rng(0)
    sizes = (10**4, 10**5) if quick else (10**4, 10**5, 10**6)
    rows = []
    for n in sizes:
        base = _best(lambda: rng.standard_normal(n))
        timed = [("standard_normal", "-", base),
                 ("laplace (float)", "-", _best(lambda: rng.laplace(size=n)))]
        for label, s in SCALES:
            timed.append(("discrete_gaussian", label,
                          _best(lambda: sample_discrete_gaussian(s, n, rng))))
        for label, s in SCALES:
            timed.append(("discrete_laplace", label,
                          _best(lambda: sample_discrete_laplace(int(s), n, rng))))
        for name, label, sec in timed:
            rows.append({"n": n, "sampler": name, "scale": label, "best_ms": sec * 1e3,
                         "x_standard_normal": sec / base})
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 10^4 and 10^5 only")
    args = parser.parse_args(argv)
    rows = run(args.quick)
    print("| n | sampler | scale | best of 5 (ms) | x standard_normal |")
    print("|---:|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['n']:,} | {r['sampler']} | {r['scale']} | {r['best_ms']:.2f} "
              f"| {r['x_standard_normal']:.2f} |")
    target = [r for r in rows if r["n"] == 10**6 and r["sampler"] == "discrete_gaussian"
              and r["scale"] == "2^20"]
    if target:
        ratio = target[0]["x_standard_normal"]
        verdict = "met" if ratio <= TARGET else "NOT met"
        print(f"\ntarget: discrete Gaussian, sigma = 2^20, n = 10^6 within {TARGET:g}x of "
              f"standard_normal: {ratio:.2f}x ({verdict})")
    _common.write_csv("samplers.csv", FIELDS, rows)


if __name__ == "__main__":
    main()
