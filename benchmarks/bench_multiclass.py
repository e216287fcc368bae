"""Ten-class accuracy of the private linear classifiers on scikit-learn's digits.

All 1 797 digits, ten classes, a stratified 70/30 split per seed (1 257
training rows). Pixels lie in [0, 16] by construction, so ``(x - 8) / 64``
(public constants) gives rows of norm at most 1: ``data_norm=1`` and
``classes=range(10)`` are public. Every private estimator keeps its defaults
(``C="auto"``, ``delta=1e-5``) except the bounds, the route and ``epsilon``.

Baselines in the same table: non-private ``LogisticRegression()`` and
``LinearSVC()`` on the same rows, and the majority class of the training
split. Accuracy: mean and standard deviation over ``--seeds`` splits (40;
``--quick``: 4); seed ``s`` fixes the split and the noise of its private fits
(seeds make a benchmark reproducible; a release is fitted with
``random_state=None``).

Writes ``benchmarks/results/multiclass.csv`` (``model, route, epsilon,
accuracy, accuracy_std, n_seeds``). Run: ``python3 benchmarks/bench_multiclass.py
[--quick] [--seeds N]``. Quoted in ``doc/estimators/logistic_regression.rst``.
"""

import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.svm import LinearSVC

import _common  # noqa: E402  (puts the checkout's skdp on sys.path)

from skdp.linear_model import PrivateHuberSVM, PrivateLogisticRegression  # noqa: E402

EPSILONS = (1.0, 5.0)
DELTA = 1e-5
FIELDS = ["model", "route", "epsilon", "accuracy", "accuracy_std", "n_seeds"]


def splits(n_seeds):
    X, y = load_digits(return_X_y=True)
    X = (X - 8.0) / 64.0  # public pixel range [0, 16]: ||x|| <= 1
    for seed in range(n_seeds):
        yield seed, train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)


def run(n_seeds):
    private = [("PrivateLogisticRegression", PrivateLogisticRegression, route)
               for route in ("objective", "output")]
    private += [("PrivateHuberSVM", PrivateHuberSVM, route) for route in ("objective", "output")]
    scores = {}
    for seed, (Xtr, Xte, ytr, yte) in splits(n_seeds):
        counts = np.bincount(ytr, minlength=10)
        scores.setdefault(("majority class", "", ""), []).append(
            float(np.mean(yte == np.argmax(counts))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for name, model in (("LogisticRegression", LogisticRegression(max_iter=2000)),
                                ("LinearSVC", LinearSVC())):
                scores.setdefault((name, "non-private", ""), []).append(
                    model.fit(Xtr, ytr).score(Xte, yte))
        for eps in EPSILONS:
            for name, cls, route in private:
                est = cls(epsilon=eps, delta=DELTA, data_norm=1.0, classes=list(range(10)),
                          perturbation=route, random_state=seed)
                scores.setdefault((name, route, eps), []).append(est.fit(Xtr, ytr).score(Xte, yte))
    rows = []
    for (name, route, eps), acc in scores.items():
        rows.append(dict(model=name, route=route, epsilon=eps, accuracy=float(np.mean(acc)),
                         accuracy_std=float(np.std(acc)), n_seeds=len(acc)))
    return rows


def main():
    n_seeds = _common.parse_seeds(__doc__, quick=4, default=40)
    rows = run(n_seeds)
    print(f"digits, ten classes, 1 257 training rows, {n_seeds} seeds, delta = {DELTA:g}")
    print(f"{'model':<28}{'route':<13}{'epsilon':>8}{'accuracy':>10}{'std':>8}")
    for r in rows:
        print(f"{r['model']:<28}{r['route']:<13}{str(r['epsilon']):>8}"
              f"{r['accuracy']:>10.3f}{r['accuracy_std']:>8.3f}")
    path = _common.write_csv("multiclass.csv", FIELDS, rows)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
