"""DP-SGD noise multiplier at the same replace-one (epsilon, delta): old vs new accounting.

*old*: the Renyi (RDP) accountant of ``dp-accounting`` under add/remove at
``(epsilon / 2, delta / (1 + e^(epsilon/2)))``, converted to replace-one by
group privacy (skdp up to this change); its multiplier is ``sigma / C'`` with
``C'`` the add/remove sensitivity = the per-record radius.

*new*: ``dp-accounting``'s PLD accountant with ``NeighboringRelation.REPLACE_ONE``
(:mod:`skdp._accounting`); the multiplier is also ``sigma / C'`` with the same
per-record radius, so the ratio old / new is the ratio of the noise standard
deviations DP-SGD adds. Target (issue 16): ratio >= 1.1 in typical settings.

A second table compares the objective route's (AMP) Gaussian scale for ``K``
one-vs-rest classes: the ``chi_{2K}`` bound, the per-block bound of
``skdp.linear_model._erm`` ("K classes") and a plain Gaussian of the same l2
sensitivity (what a fixed, data-independent shift would need).

Measured (AMP table, ``eps_3 = 0.9``, ``delta_1 = 1e-5``, noise per unit
sensitivity; the block bound uses the sign of the loss derivative, see
``skdp.linear_model._erm``, "K classes")::

       K   chi_2K   blocks    plain  chi/blocks  blocks/plain
       1    4.688    4.109    4.107     1.141        1.001
       2    5.265    4.111    4.107     1.281        1.001
       5    6.437    4.228    4.107     1.522        1.030
      10    7.796    4.533    4.107     1.720        1.104
      50   13.718    6.405    4.107     2.142        1.560

(before the sign was used, blocks/plain was 1.04 / 1.08 / 1.37 for K = 1 /
2 / 10 and 2.21 for K = 50).

Writes ``benchmarks/results/dpsgd_accounting.csv`` and ``amp_multiclass.csv``.
Run: ``python3 benchmarks/bench_dpsgd_accounting.py [--quick]``.
"""

import argparse
import functools
import time

import numpy as np

import _common  # noqa: E402  (puts the checkout's skdp on sys.path)

from skdp._accounting import poisson_gaussian_noise_multiplier  # noqa: E402

SETTINGS = [  # (epsilon, delta, sampling rate q, steps T)
    (0.1, 1e-5, 0.01, 100),
    (0.5, 1e-5, 0.01, 500),
    (1.0, 1e-5, 0.01, 1000),
    (1.0, 1e-5, 0.05, 200),
    (2.0, 1e-5, 0.1, 100),
    (5.0, 1e-5, 0.01, 1000),
    (8.0, 1e-5, 0.004, 3750),
]
QUICK = [(1.0, 1e-5, 0.01, 1000), (2.0, 1e-5, 0.1, 100)]


@functools.lru_cache(maxsize=None)
def old_multiplier(epsilon, delta, q, steps, rtol=1e-4):
    """The former analysis, written here from dp_accounting's RDP accountant."""
    import dp_accounting as dpa

    eps0, delta0 = epsilon / 2.0, delta / (1.0 + np.exp(epsilon / 2.0))

    def eps_of(z):
        acc = dpa.rdp.RdpAccountant()
        acc.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps))
        return acc.get_epsilon(delta0)

    lo, hi = 0.1, 0.2
    while eps_of(hi) > eps0:
        lo, hi = hi, 2 * hi
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if eps_of(mid) <= eps0 else (mid, hi)
    return hi


def main(quick=False):
    rows = []
    print(f"{'epsilon':>7} {'delta':>7} {'q':>6} {'steps':>6} {'old z':>8} {'new z':>8} "
          f"{'old/new':>8} {'new s':>6}")
    for eps, delta, q, T in (QUICK if quick else SETTINGS):
        z_old = old_multiplier(eps, delta, q, T)
        t0 = time.perf_counter()
        z_new = poisson_gaussian_noise_multiplier(eps, delta, q, T)
        dt = time.perf_counter() - t0
        rows.append([eps, delta, q, T, z_old, z_new, z_old / z_new, dt])
        print(f"{eps:7.2f} {delta:7.0e} {q:6.3f} {T:6d} {z_old:8.4f} {z_new:8.4f} "
              f"{z_old / z_new:8.3f} {dt:6.1f}")
    path = _common.write_csv("dpsgd_accounting.csv",
                             ["epsilon", "delta", "q", "steps", "z_old", "z_new", "ratio", "new_s"], rows)
    print("wrote", path)

    from skdp.linear_model._erm import amp_multiclass_sigma, amp_noise_sigma
    from skdp.mechanisms.gaussian import analytic_gaussian_mu

    eps3, delta1 = 0.9, 1e-5
    print(f"\nAMP noise scale per unit sensitivity at eps_3={eps3}, delta_1={delta1}")
    print(f"{'K':>4} {'chi_2K':>8} {'blocks':>8} {'plain':>8} {'chi/blocks':>10} {'blocks/plain':>12}")
    amp_rows = []
    for K in (1, 2, 5, 10, 50):
        chi = amp_noise_sigma(eps3, delta1, 1.0, 2 * K)
        blk = amp_multiclass_sigma(eps3, delta1, 1.0, K)
        plain = 1.0 / analytic_gaussian_mu(eps3, delta1)
        amp_rows.append([K, chi, blk, plain])
        print(f"{K:4d} {chi:8.3f} {blk:8.3f} {plain:8.3f} {chi / blk:10.3f} {blk / plain:12.3f}")
    print("wrote", _common.write_csv("amp_multiclass.csv", ["K", "sigma_chi", "sigma_blocks", "sigma_plain"],
                                     amp_rows))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    main(ap.parse_args().quick)
