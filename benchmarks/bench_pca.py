"""Benchmark: PrivatePCA against scikit-learn's non-private PCA.

Metrics (on the true covariance ``C`` of the data, centred with the true
mean; ``V`` = the ``k`` returned components as columns):

* ``captured`` = ``trace(V^T C V) / (sum of the top-k eigenvalues of C)``
  (1.0 is optimal; scikit-learn's exact PCA attains it);
* ``of_total`` = ``trace(V^T C V) / trace(C)`` (share of all variance);
* ``fit_s``: median wall-clock fit time; ``x_skl``: ratio to
  ``PCA(svd_solver="full")`` on the same data.

Private entries: mean (and std) over 5 seeds (``--quick``: 1 seed, one timed
fit, synthetic set 20000 x 200). The non-private baseline is the row with
mechanism ``"sklearn PCA (non-private)"`` and an empty epsilon.

Data sets (rows scaled to unit norm, so ``data_norm=1`` is a public bound):

* ``digits``: scikit-learn's digits (1797 x 64), k = 10;
* ``synthetic``: 100000 x 200, Gaussian with power-law spectrum
  ``s_j = j^-1`` in a random basis plus a mean offset, k = 10.

Writes ``benchmarks/results/pca.csv`` with columns ``dataset, mechanism,
epsilon, delta, captured, captured_std, of_total, fit_s, x_sklearn,
noise_used`` (``noise_used``: the core mechanism actually used, or why the
mechanism is not applicable; then the metric cells are empty).

Run: ``python3 benchmarks/bench_pca.py [--quick]``.
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA

import _common  # noqa: E402  (puts the checkout's skdp on sys.path)

from skdp.decomposition import PrivatePCA  # noqa: E402
from skdp.exceptions import PrivacyGuaranteeWarning  # noqa: E402

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)
MECHANISMS = ("auto", "analyze_gauss", "inid_gaussian", "mvg", "r1smg")
DELTA = 1e-5
FIELDS = ["dataset", "mechanism", "epsilon", "delta", "captured", "captured_std", "of_total", "fit_s",
          "x_sklearn", "noise_used"]


def unit_rows(X):
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)


def digits():
    return unit_rows(load_digits().data.astype(float))


def synthetic(n=100_000, d=200, seed=0):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    s = 1.0 / np.arange(1, d + 1)
    X = (rng.normal(size=(n, d)) * s) @ Q.T + 0.3 * Q[:, -1]  # offset off the top axes
    X /= np.quantile(np.linalg.norm(X, axis=1), 0.99)  # public rescaling, then clip to 1
    return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))


def scores(V, C, k):
    ev = np.linalg.eigvalsh(C)[::-1]
    cap = np.trace(V.T @ C @ V)
    return cap / ev[:k].sum(), cap / np.trace(C)


def timed(fn, repeats):
    """Median wall-clock time of ``repeats`` calls (after one untimed warm-up if repeats > 1)."""
    times, out = [], None
    if repeats > 1:
        fn()
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, float(np.median(times))


def run(name, X, k, seeds, time_repeats):
    C = np.cov(X, rowvar=False)
    skl, t_skl = timed(lambda: PCA(n_components=k, svd_solver="full").fit(X), time_repeats)
    cap, tot = scores(skl.components_.T, C, k)
    rows = [(name, "sklearn PCA (non-private)", "-", cap, 0.0, tot, t_skl, 1.0, "")]
    for eps in EPSILONS:
        for mech in MECHANISMS:
            caps, tots, times, used, note = [], [], [], "", ""
            for seed in range(seeds):
                est = PrivatePCA(n_components=k, epsilon=eps, delta=DELTA, mechanism=mech,
                                 data_norm=1.0, random_state=seed)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", PrivacyGuaranteeWarning)
                        _, t = timed(lambda: est.fit(X), time_repeats if seed == 0 else 1)
                except ValueError as e:
                    note = "n/a: " + str(e).split(": ", 1)[-1][:60]
                    break
                c, o = scores(est.components_.T, C, k)
                caps.append(c)
                tots.append(o)
                times.append(t)
                used = est.noise_spec_.mechanism + ("" if est.noise_spec_.verified else " (NOT DP)")
            if note:
                rows.append((name, mech, eps, np.nan, np.nan, np.nan, np.nan, np.nan, note))
                continue
            rows.append((name, mech, eps, np.mean(caps), np.std(caps), np.mean(tots),
                         times[0], times[0] / t_skl, used))
    return rows


def csv_rows(rows):
    """The table rows as CSV records (empty epsilon/delta for the non-private baseline)."""
    out = []
    for (ds, mech, eps, cap, sd, tot, t, ratio, used) in rows:
        nonpriv = eps == "-"
        cells = ["" if np.isnan(v) else v for v in (cap, sd, tot, t, ratio)]
        out.append([ds, mech, "" if nonpriv else eps, "" if nonpriv else DELTA, *cells, used])
    return out


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true",
                        help="1 seed, 1 timed fit and a smaller synthetic set (smoke run)")
    args = parser.parse_args(argv)
    seeds = 1 if args.quick else 5
    time_repeats = 1 if args.quick else 3
    sets = [("digits", digits(), 10),
            ("synthetic", synthetic(n=20_000 if args.quick else 100_000), 10)]
    print(f"delta = {DELTA}, data_norm = 1 (rows scaled to unit norm), centered=False "
          f"(private mean from the same release); mean +- std over {seeds} seed(s)\n")
    print("| data | mechanism | eps | captured (top-k) | of total | fit s | x sklearn | noise used |")
    print("|---|---|---|---|---|---|---|---|")
    all_rows = []
    for name, X, k in sets:
        rows = run(name, X, k, seeds, time_repeats)
        all_rows += rows
        for (ds, mech, eps, cap, sd, tot, t, ratio, used) in rows:
            if np.isnan(cap):
                print(f"| {ds} | {mech} | {eps} | - | - | - | - | {used} |")
            else:
                print(f"| {ds} | {mech} | {eps} | {cap:.3f} +- {sd:.3f} | {tot:.3f} | {t:.3f} | "
                      f"{ratio:.2f} | {used} |")
    path = _common.write_csv("pca.csv", FIELDS, csv_rows(all_rows))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
