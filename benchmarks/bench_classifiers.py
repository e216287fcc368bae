"""Accuracy vs epsilon and fit time of the private linear classifiers.

Datasets: ``make_classification`` (20000 rows, 100 features, 20 informative)
and scikit-learn's bundled breast-cancer data; rows are scaled to unit norm
(``data_norm=1``, a public bound). For breast cancer the features are first
standardised with the training mean/std (non-private preprocessing, as in
most DP benchmarks; state it when quoting the numbers).

Hyperparameters are fixed a priori (no private tuning): output perturbation
``C = 0.01``; objective and gradient ``C = 0.1``; gradient route full-batch
DP-GD with 100 steps. delta = 1e-5 for every route (objective -> AMP).

Baselines: non-private ``LogisticRegression()`` and ``LinearSVC()`` with
default settings. Fit-time ratios: median of 3 fits, private / sklearn
``LogisticRegression`` on the 20000 x 100 data.

Run: ``python benchmarks/bench_classifiers.py``.
"""

import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from skdp.linear_model import PrivateHuberSVM, PrivateLogisticRegression

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)
ROUTES = {"output": dict(C=0.01), "objective": dict(C=0.1), "gradient": dict(C=0.1, max_iter=100)}


def _unit(X):
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)


def datasets():
    X, y = make_classification(n_samples=20000, n_features=100, n_informative=20,
                               random_state=0)
    Xtr, Xte, ytr, yte = train_test_split(_unit(X), y, test_size=0.25, random_state=0)
    yield "synthetic 20000x100", Xtr, Xte, ytr, yte
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
    sc = StandardScaler().fit(Xtr)
    yield "breast_cancer 569x30", _unit(sc.transform(Xtr)), _unit(sc.transform(Xte)), ytr, yte


def _timed(make, X, y, reps=3):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        model = make().fit(X, y)
        times.append(time.perf_counter() - t)
    return model, float(np.median(times))


def main(n_repeats=3):
    warnings.simplefilter("ignore")
    for name, Xtr, Xte, ytr, yte in datasets():
        lr, t_lr = _timed(LogisticRegression, Xtr, ytr)
        svc, t_svc = _timed(LinearSVC, Xtr, ytr)
        print(f"\n## {name}: non-private LogisticRegression {lr.score(Xte, yte):.4f} "
              f"({t_lr * 1e3:.0f} ms), LinearSVC {svc.score(Xte, yte):.4f} ({t_svc * 1e3:.0f} ms)")
        print("| model | route | " + " | ".join(f"eps={e}" for e in EPSILONS) + " | fit time / sklearn LR |")
        print("|---|---|" + "---|" * (len(EPSILONS) + 1))
        for Cls in (PrivateLogisticRegression, PrivateHuberSVM):
            for route, kw in ROUTES.items():
                accs = []
                for eps in EPSILONS:
                    acc = [Cls(epsilon=eps, delta=1e-5, perturbation=route, data_norm=1.0,
                               random_state=r, **kw).fit(Xtr, ytr).score(Xte, yte)
                           for r in range(n_repeats)]
                    accs.append(np.mean(acc))
                _, t = _timed(lambda: Cls(epsilon=1.0, delta=1e-5, perturbation=route,
                                          data_norm=1.0, random_state=0, **kw), Xtr, ytr)
                print(f"| {Cls.__name__} | {route} | " + " | ".join(f"{a:.4f}" for a in accs)
                      + f" | {t / t_lr:.2f} |")


if __name__ == "__main__":
    main()
