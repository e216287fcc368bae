"""Test MSE of PrivateOLS methods vs epsilon, and the cost of the private sketch.

Datasets
--------
* sklearn diabetes (n=442, d=10), 70/30 split. Public bounds assumed:
  features as shipped (max row norm 0.33) with ``data_norm = 0.35``; the label
  range [0, 350] is public, labels are mapped to ``(y - 175) / 175`` in
  [-1, 1] (``label_bound = 1``) and MSE is reported on the original scale.
* synthetic 100000 x 20: x uniform in the unit ball's cube [-1,1]^20 / sqrt(20)
  (``data_norm = 1``), y = x w + 0.1 N(0,1) clipped to [-2, 2]
  (``label_bound = 2``), w with unit-norm-ish entries; 80/20 split.

delta = 1/n^2 (the estimators' default). Each private entry is the mean over
``REPS`` seeds. Methods "ls" and "als" are NOT verified DP (they warn).

Also times ``gaussian_sketch`` (the released ``r x d`` sketch
``G [Z; sigma I]``) against one matrix product of the same size
(``(r x n) @ (n x d)`` with a pre-drawn ``G``), to report the ratio, for both
samplers: ``gram`` (default; draws the sketch from its exact distribution,
rows i.i.d. ``N(0, Z^T Z + sigma^2 I)``, without forming ``G``) and
``explicit`` (generates ``G`` in chunks and multiplies). Times are the best
of 3 runs.

``--crossover`` prints only the table behind ``method="auto"``: test MSE
(mean +- sd over ``--seeds`` seeds) of "adassp", "ssp", "sketch" and
"auto" on diabetes as in issue 16 (rows at unit norm, y centred and scaled
to [-1, 1], 70/30 split) and on synthetic data for n in {1000, 10000,
100000}, d in {5, 10, 20, 50}, epsilon in {0.1, 0.3, 1, 3}, with the rule's
public noise-to-signal ratio ``rho`` (writes benchmarks/results/ols_crossover.csv).

``--weak`` prints only the table behind the first rule of ``method="auto"`` (the private
mean at weak budgets): on diabetes and synthetic data (n in {1000, 3000, 10000}, d in
{5, 10, 20, 50}) at the epsilons where the rule's ``rho`` is 1.5, 2.5, 3.5, 5, 7 and 10, the
test MSE (mean over ``--seeds``, default 10) of "ssp", "mean" and "auto", with the rule's
public intercept noise ``sd_int`` (``_auto_intercept_noise``; "mean" is chosen at
``sd_int >= 0.1``); writes benchmarks/results/ols_weak.csv.

Run: ``python3 benchmarks/bench_ols.py [--quick]`` (writes
benchmarks/results/ols.csv; ``--quick``: 1 seed, synthetic 20 000 x 20, the
first sketch size only).
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split

import _common  # noqa: F401  (puts the checkout's skdp on sys.path)

from skdp.exceptions import PrivacyGuaranteeWarning
from skdp.linear_model._ols import PrivateOLS
from skdp.mechanisms.ndis import gaussian_sketch

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)
METHODS = ("adassp", "ssp", "sketch", "mean", "ls", "als")
REPS = 5


def _datasets(n_synthetic=100_000):
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    yield "diabetes", Xtr, (ytr - 175) / 175, Xte, yte, 0.35, 1.0, 175.0
    rng = np.random.default_rng(0)
    n, d = n_synthetic, 20
    X = rng.uniform(-1, 1, size=(n, d)) / np.sqrt(d)
    w = rng.uniform(-1, 1, size=d)
    y = np.clip(X @ w + 0.1 * rng.standard_normal(n), -2, 2)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)
    yield "synthetic", Xtr, ytr, Xte, yte, 1.0, 2.0, 1.0


def _diabetes_unit():
    """Diabetes as in issue 16: rows at unit norm, y centred and scaled to [-1, 1], 70/30 split."""
    X, y = load_diabetes(return_X_y=True)
    y = y - y.mean()
    return train_test_split(_common.unit_rows(X), y / np.abs(y).max(), test_size=0.3, random_state=0)


def _synthetic(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(int(n / 0.8), d)) / np.sqrt(d)
    w = rng.uniform(-1, 1, size=d)
    y = np.clip(X @ w + 0.1 * rng.standard_normal(len(X)), -2, 2)
    return train_test_split(X, y, test_size=0.2, random_state=0)


def crossover(seeds=20, quick=False):
    """Test MSE of the verified methods and of ``"auto"`` vs n, d, epsilon (mean +- sd over seeds).

    The table behind the rule of ``method="auto"`` (see :class:`skdp.PrivateOLS`): ``rho`` is
    the public noise-to-signal ratio of the rule (``_auto_rho``); ``mean`` is the training-mean
    predictor, ``LR`` non-private least squares.
    """
    from skdp.linear_model._ols import _auto_rho

    cases = [("diabetes", 309, 10, _diabetes_unit(), 1.0)]
    grid_n, grid_d = ((1000, 10000), (5, 20)) if quick else ((1000, 10000, 100000), (5, 10, 20, 50))
    cases += [(f"synthetic", n, d, _synthetic(n, d), 2.0) for n in grid_n for d in grid_d]
    methods = ("adassp", "ssp", "sketch", "mean", "auto")
    print(f"\nmethod crossovers: test MSE, mean +- sd over {seeds} seeds, delta = 1/n^2")
    print(f"{'data':10s} {'n':>6s} {'d':>3s} {'eps':>4s} {'rho':>7s} {'mean':>7s} {'LR':>7s} "
          + " ".join(f"{m:>15s}" for m in methods) + "  auto->")
    rows = []
    for name, n, d, (Xtr, Xte, ytr, yte), lb in cases:
        base = float(np.mean((ytr.mean() - yte) ** 2))
        lr = float(np.mean((LinearRegression().fit(Xtr, ytr).predict(Xte) - yte) ** 2))
        for eps in ((0.3, 1.0) if quick else (0.1, 0.3, 1.0, 3.0)):
            cells, chosen = [], None
            for m in methods:
                mses = []
                for s in range(seeds):
                    reg = PrivateOLS(method=m, epsilon=eps, data_norm=1.0, label_bound=lb, random_state=s)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", PrivacyGuaranteeWarning)
                        reg.fit(Xtr, ytr)
                    mses.append(float(np.mean((reg.predict(Xte) - yte) ** 2)))
                    chosen = reg.method_
                cells.append((float(np.mean(mses)), float(np.std(mses))))
                rows.append(dict(dataset=f"{name} n={len(ytr)} d={d}", method=m, epsilon=eps,
                                 mse=cells[-1][0], fit_s=""))
            rho = _auto_rho(len(ytr), d, eps, 1.0 / len(ytr) ** 2, True)
            print(f"{name:10s} {len(ytr):6d} {d:3d} {eps:4g} {rho:7.3f} {base:7.4f} {lr:7.4f} "
                  + " ".join(f"{a:7.4f}+-{b:6.4f}" for a, b in cells) + f"  {chosen}", flush=True)
    return rows


def weak(seeds=10, quick=False):
    """SSP against the private mean where the budget is weak (the first rule of ``"auto"``)."""
    from scipy.optimize import brentq

    from skdp.linear_model._ols import AUTO_MEAN_NOISE, _auto_intercept_noise, _auto_rho

    cases = [("diabetes", 10, _diabetes_unit(), 1.0)]
    grid_n, grid_d = ((1000,), (5, 20)) if quick else ((1000, 3000, 10000), (5, 10, 20, 50))
    cases += [(f"synthetic", d, _synthetic(n, d), 2.0) for n in grid_n for d in grid_d]
    print(f"\nweak budgets: test MSE, mean over {seeds} seeds, delta = 1/n^2; 'auto' picks 'mean' at "
          f"sd_int >= {AUTO_MEAN_NOISE}")
    print(f"{'data':10s} {'n':>6s} {'d':>3s} {'eps':>7s} {'rho':>5s} {'sd_int':>7s} {'mean_np':>8s} "
          f"{'ssp':>8s} {'mean':>8s} {'auto':>8s} {'ssp/mean':>8s}")
    rows = []
    for name, d, (Xtr, Xte, ytr, yte), lb in cases:
        n = len(ytr)
        base = float(np.mean((ytr.mean() - yte) ** 2))
        for target in ((2.5, 7.0) if quick else (1.5, 2.5, 3.5, 5.0, 7.0, 10.0)):
            eps = brentq(lambda e: _auto_rho(n, d, e, 1.0 / n**2, True) - target, 1e-4, 100)
            res = {}
            for m in ("ssp", "mean", "auto"):
                mses = []
                for s in range(seeds):
                    reg = PrivateOLS(method=m, epsilon=eps, data_norm=1.0, label_bound=lb, random_state=s)
                    mses.append(float(np.mean((reg.fit(Xtr, ytr).predict(Xte) - yte) ** 2)))
                res[m] = float(np.mean(mses))
                rows.append(dict(dataset=f"{name} n={n} d={d}", method=m, epsilon=eps, mse=res[m],
                                 fit_s=""))
            sd = _auto_intercept_noise(n, d, eps, 1.0 / n**2)
            print(f"{name:10s} {n:6d} {d:3d} {eps:7.4f} {target:5.1f} {sd:7.4f} {base:8.4f} "
                  f"{res['ssp']:8.4f} {res['mean']:8.4f} {res['auto']:8.4f} "
                  f"{res['ssp'] / res['mean']:8.3f}", flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, smaller synthetic data (smoke run)")
    parser.add_argument("--crossover", action="store_true",
                        help="only the method-crossover table behind method='auto'")
    parser.add_argument("--weak", action="store_true",
                        help="only the weak-budget table behind method='auto' choosing 'mean'")
    parser.add_argument("--seeds", type=int, default=None,
                        help="seeds per cell of the crossover (default 20) or weak (default 10) table")
    args = parser.parse_args(argv)
    quick = args.quick
    if args.weak:
        rows = weak(2 if quick else (args.seeds or 10), quick)
        _common.write_csv("ols_weak.csv", ["dataset", "method", "epsilon", "mse", "fit_s"], rows)
        return
    if args.crossover:
        rows = crossover(2 if quick else (args.seeds or 20), quick)
        _common.write_csv("ols_crossover.csv", ["dataset", "method", "epsilon", "mse", "fit_s"], rows)
        return
    reps = 1 if quick else REPS
    rows = []
    for name, Xtr, ytr, Xte, yte, dn, lb, scale in _datasets(20_000 if quick else 100_000):
        t0 = time.perf_counter()
        lr = LinearRegression().fit(Xtr, ytr)
        t_lr = time.perf_counter() - t0
        mse_lr = float(np.mean((lr.predict(Xte) * scale + (175 if scale != 1 else 0) - yte) ** 2))
        print(f"\n{name}: n_train={len(ytr)}, d={Xtr.shape[1]}; LinearRegression test MSE {mse_lr:.4g} "
              f"({t_lr * 1e3:.1f} ms)")
        print(f"{'method':8s} " + " ".join(f"eps={e:<10g}" for e in EPSILONS) + "  fit time (eps=1)")
        rows.append(dict(dataset=name, method="LinearRegression", epsilon="", mse=mse_lr, fit_s=t_lr))
        for m in METHODS:
            cells, t_eps1 = [], None
            for eps in EPSILONS:
                mses, times = [], []
                for rep in range(reps):
                    reg = PrivateOLS(method=m, epsilon=eps, data_norm=dn, label_bound=lb, random_state=rep)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", PrivacyGuaranteeWarning)
                        t0 = time.perf_counter()
                        reg.fit(Xtr, ytr)
                        times.append(time.perf_counter() - t0)
                    pred = reg.predict(Xte) * scale + (175 if scale != 1 else 0)
                    mses.append(float(np.mean((pred - yte) ** 2)))
                mse = float(np.mean(mses))
                # the first fit of "ls"/"als" includes the (cached) sigma calibration
                t = float(np.median(times))
                if eps == 1.0:
                    t_eps1 = t
                cells.append(mse)
                rows.append(dict(dataset=name, method=m, epsilon=eps, mse=mse, fit_s=t))
            print(f"{m:8s} " + " ".join(f"{c:<14.4g}" for c in cells) + f"  {t_eps1 * 1e3:.1f} ms")

    # sketch cost vs one matrix product of the same size
    print("\nsketch cost: gaussian_sketch(Z, r) vs one pre-drawn (r x n) @ (n x d) product (best of 3)")
    print(f"{'n':>7s} {'d':>4s} {'r':>5s} {'product':>10s} {'gram':>10s} {'ratio':>6s} {'explicit':>10s} {'ratio':>6s}")
    rng = np.random.default_rng(0)

    def best(f):
        ts = []
        for _ in range(3):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        return min(ts)

    sizes = ((100_000, 21, 300), (100_000, 21, 1000), (100_000, 101, 1000))
    for n, d, r in sizes[:1] if quick else sizes:
        Z = rng.standard_normal((n, d))
        G = rng.standard_normal((r, n))
        t_mm = best(lambda: G @ Z)
        t_gram = best(lambda: gaussian_sketch(Z, r, 1.0, random_state=0, algorithm="gram"))
        t_exp = best(lambda: gaussian_sketch(Z, r, 1.0, random_state=0, algorithm="explicit"))
        print(f"{n:7d} {d:4d} {r:5d} {t_mm * 1e3:8.1f}ms {t_gram * 1e3:8.1f}ms {t_gram / t_mm:6.2f} "
              f"{t_exp * 1e3:8.1f}ms {t_exp / t_mm:6.1f}")
        for alg, t in (("gram", t_gram), ("explicit", t_exp)):
            rows.append(dict(dataset=f"sketch n={n} d={d} r={r}", method=f"{alg}/product", epsilon="",
                             mse=t / t_mm, fit_s=t))

    _common.write_csv("ols.csv", ["dataset", "method", "epsilon", "mse", "fit_s"], rows)

if __name__ == "__main__":
    main()
