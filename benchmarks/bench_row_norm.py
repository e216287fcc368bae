"""A private ``data_norm``: what ``PrivateRowNormScaler`` releases, and the pipeline after it.

Three tables, quoted in ``doc/bounding_data.rst``:

1. **Coverage.** ``make_classification`` (12 000 x 20, 10 informative,
   ``random_state=0``; a new split per seed) with its columns multiplied by public factors
   ``geomspace(0.5, 20, 20)`` (rows of very different norms), 10 000
   training rows. The scaler releases a 95% quantile of the row norms at
   ``epsilon = 0.1`` and ``0.01`` (``norm_range=(1e-2, 1e4)``); the table
   gives the fraction of the training rows at or below the released bound
   (target 0.95) over ``--seeds`` seeds (20).
2. **The pipeline.** ``PrivateRowNormScaler(epsilon=0.1)`` then
   ``PrivateLogisticRegression(epsilon=0.9, data_norm=1)`` on the same
   tables (test accuracy on the 2 000 other rows), next to
   ``PrivateLogisticRegression(epsilon=1)`` given the *true* 95% quantile of
   the training norms as ``data_norm`` (not DP: that bound is read from the
   data), non-private ``LogisticRegression`` and the majority class.
3. **Small tables.** Rows whose norms are ``96 * exp(0.5 (g - 1.645))``
   for a standard normal ``g`` (95% quantile 96); the median (and largest)
   released bound over the seeds at ``n = 10 000, 2 000, 600``, with
   ``norm_range=(1e-2, 1e4)`` and ``(10, 1000)``, ``epsilon = 0.1``.

Seed ``s`` fixes the split, the table of part 3 and the noise of every private fit
(seeds make a benchmark reproducible; a release is fitted with ``random_state=None``).
Run: ``python3 benchmarks/bench_row_norm.py [--quick] [--seeds N]``; writes
``benchmarks/results/row_norm.csv`` (``table, setting, value, spread, n_seeds``).
"""

import warnings

import numpy as np
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import _common  # noqa: E402  (puts the checkout's skdp on sys.path)

from skdp.linear_model import PrivateLogisticRegression  # noqa: E402
from skdp.preprocessing import PrivateRowNormScaler  # noqa: E402

FIELDS = ["table", "setting", "value", "spread", "n_seeds"]
WIDE = (1e-2, 1e4)


def table(seed):
    X, y = make_classification(n_samples=12000, n_features=20, n_informative=10, random_state=0)
    X = X * np.geomspace(0.5, 20, 20)  # public column factors
    order = np.random.default_rng(seed).permutation(12000)
    tr, te = order[:10000], order[10000:]
    return X[tr], X[te], y[tr], y[te]


def coverage_and_pipeline(n_seeds):
    cover = {0.1: [], 0.01: []}
    acc = {"pipeline (0.1 + 0.9)": [], "true quantile as data_norm (not DP)": [],
           "LogisticRegression (non-private)": [], "majority class": []}
    for seed in range(n_seeds):
        Xtr, Xte, ytr, yte = table(seed)
        norms = np.linalg.norm(Xtr, axis=1)
        for eps in cover:
            q = PrivateRowNormScaler(quantile=0.95, epsilon=eps, norm_range=WIDE,
                                     random_state=seed).fit(Xtr).norm_
            cover[eps].append(float(np.mean(norms <= q)))
        pipe = make_pipeline(
            PrivateRowNormScaler(quantile=0.95, epsilon=0.1, norm_range=WIDE, random_state=seed),
            PrivateLogisticRegression(epsilon=0.9, delta=1e-5, data_norm=1.0, classes=[0, 1],
                                      random_state=seed))
        acc["pipeline (0.1 + 0.9)"].append(pipe.fit(Xtr, ytr).score(Xte, yte))
        oracle = PrivateLogisticRegression(epsilon=1.0, delta=1e-5, classes=[0, 1],
                                           data_norm=float(np.quantile(norms, 0.95)),
                                           random_state=seed)
        acc["true quantile as data_norm (not DP)"].append(oracle.fit(Xtr, ytr).score(Xte, yte))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            acc["LogisticRegression (non-private)"].append(
                LogisticRegression().fit(Xtr, ytr).score(Xte, yte))
        acc["majority class"].append(float(np.mean(yte == np.argmax(np.bincount(ytr)))))
    rows = [dict(table="coverage", setting=f"epsilon={eps}", value=np.mean(v),
                 spread=f"{min(v):.3f}-{max(v):.3f}", n_seeds=n_seeds) for eps, v in cover.items()]
    rows += [dict(table="accuracy", setting=k, value=np.mean(v), spread=f"+-{np.std(v):.3f}",
                  n_seeds=n_seeds) for k, v in acc.items()]
    return rows


def small_tables(n_seeds):
    rows = []
    for norm_range in (WIDE, (10.0, 1000.0)):
        for n in (10000, 2000, 600):
            released = []
            for seed in range(n_seeds):
                rng = np.random.default_rng(seed)
                X = rng.normal(size=(n, 5))
                target = 96.0 * np.exp(0.5 * (rng.standard_normal(n) - 1.6448536269514722))
                X *= (target / np.linalg.norm(X, axis=1))[:, None]
                released.append(PrivateRowNormScaler(quantile=0.95, epsilon=0.1,
                                                     norm_range=norm_range,
                                                     random_state=seed).fit(X).norm_)
            rows.append(dict(table="small n", setting=f"n={n} norm_range={norm_range}",
                             value=float(np.median(released)), spread=f"max {max(released):.0f}",
                             n_seeds=n_seeds))
    return rows


def main():
    n_seeds = _common.parse_seeds(__doc__, quick=3, default=20)
    rows = coverage_and_pipeline(n_seeds) + small_tables(n_seeds)
    print(f"PrivateRowNormScaler, quantile 0.95, {n_seeds} seeds")
    print(f"{'table':<10}{'setting':<42}{'value':>8}  spread")
    for r in rows:
        print(f"{r['table']:<10}{r['setting']:<42}{r['value']:>8.3f}  {r['spread']}")
    path = _common.write_csv("row_norm.csv", FIELDS, rows)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
