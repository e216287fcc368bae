"""How many fits fit in one ledger: basic composition against the privacy filter.

For each estimator route, one fit at (epsilon, delta) = (0.1, 1e-7) is made
with a ledger to read its spend record (its budget and, for Gaussian
releases, the Gaussian-DP curve it passes to the ledger, computed from
public inputs only: every fit of the same configuration records the same).
Then fresh ledgers of (1, 1e-5) and (3, 1e-5), one under
``composition="basic"`` and one under ``composition="filter"``, accept that
spend until they refuse. For PrivatePCA the count is also checked with real
fits (``--quick`` skips that check).

Prints a markdown table; writes ``benchmarks/results/filter.csv``.

Run: ``python3 benchmarks/bench_filter.py [--quick]``.
"""

import argparse
import logging
import warnings

import numpy as np

import _common  # noqa: E402  (puts the checkout's skdp on sys.path)

import skdp  # noqa: E402
from skdp import BudgetLedger, PrivacyBudget  # noqa: E402

FIT = (0.1, 1e-7)
LEDGERS = ((1.0, 1e-5), (3.0, 1e-5))
CAP = 20000
FIELDS = ["route", "mu", "ledger", "basic", "filter", "ratio"]


def _data(n=400, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y_reg = np.clip(X @ np.ones(d) / 3, -1, 1)
    return X, y_reg, (y_reg > 0).astype(int)


def _routes():
    eps, delta = FIT
    common = dict(epsilon=eps, delta=delta, data_norm=1.0)
    clf = dict(common, classes=[0, 1])
    return [
        ("PrivatePCA (analytic Gaussian)", skdp.PrivatePCA(n_components=2, mechanism="analyze_gauss",
                                                           **common), "X"),
        ("PrivateOLS ssp", skdp.PrivateOLS(method="ssp", label_bound=1.0, **common), "reg"),
        ("PrivateOLS adassp", skdp.PrivateOLS(method="adassp", label_bound=1.0, **common), "reg"),
        ("LogisticRegression output", skdp.PrivateLogisticRegression(perturbation="output", **clf),
         "clf"),
        ("LogisticRegression output (analytic Gaussian)",
         skdp.PrivateLogisticRegression(perturbation="output", mechanism="analytic_gaussian", **clf),
         "clf"),
        ("LogisticRegression DP-GD (full batch)",
         skdp.PrivateLogisticRegression(perturbation="gradient", max_iter=20, **clf), "clf"),
        ("LogisticRegression objective (AMP)",
         skdp.PrivateLogisticRegression(perturbation="objective", **clf), "clf"),
        ("LogisticRegression DP-SGD",
         skdp.PrivateLogisticRegression(perturbation="gradient", batch_size=64, max_iter=20, **clf),
         "clf"),
    ]


def _record(est, kind, X, y_reg, y_clf):
    ledger = BudgetLedger(10.0, 1e-3)
    est.set_params(accountant=ledger)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "X":
            est.fit(X)
        else:
            est.fit(X, y_reg if kind == "reg" else y_clf)
    (rec,) = ledger.spends
    return rec


def _count(total, composition, rec):
    ledger = BudgetLedger(*total, composition=composition)
    for k in range(CAP):
        try:
            ledger.spend(PrivacyBudget(rec.epsilon, rec.delta), curve=rec.curve)
        except skdp.BudgetExceededError:
            return k
    return CAP


def _count_real_fits(total, X):
    ledger = BudgetLedger(*total)
    est = skdp.PrivatePCA(n_components=2, mechanism="analyze_gauss", epsilon=FIT[0], delta=FIT[1],
                          data_norm=1.0, accountant=ledger)
    for k in range(CAP):
        try:
            est.fit(X)
        except skdp.BudgetExceededError:
            return k
    return CAP


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    logging.getLogger("absl").setLevel(logging.ERROR)  # dp_accounting's convergence notes
    X, y_reg, y_clf = _data()
    rows = []
    print(f"fits at (epsilon, delta) = {FIT} each\n")
    print("| route | mu | ledger | basic | filter | filter / basic |")
    print("|---|---|---|---|---|---|")
    for name, est, kind in _routes():
        rec = _record(est, kind, X, y_reg, y_clf)
        for total in LEDGERS:
            b, f = _count(total, "basic", rec), _count(total, "filter", rec)
            mu = "-" if rec.mu is None else f"{rec.mu:.4f}"
            row = {"route": name, "mu": mu, "ledger": f"{total}", "basic": b, "filter": f,
                   "ratio": f"{f / b:.1f}"}
            rows.append(row)
            print(f"| {name} | {mu} | {total} | {b} | {f} | {f / b:.1f}x |")
    if not args.quick:
        real = _count_real_fits(LEDGERS[0], X)
        print(f"\nPrivatePCA, real fits in {LEDGERS[0]} under the filter: {real}")
        rows.append({"route": "PrivatePCA real fits", "mu": "-", "ledger": f"{LEDGERS[0]}",
                     "basic": "", "filter": real, "ratio": ""})
    path = _common.write_csv("filter.csv", FIELDS, rows)
    print(f"\nwrote {path}")
    return rows


if __name__ == "__main__":
    main()
