"""What the benchmark scripts share: the checkout's skdp on ``sys.path`` and the results folder.

Importing this module puts the repository root first on ``sys.path`` (so a
script runs against the checkout even where skdp is not installed).
``RESULTS`` is ``benchmarks/results`` unless the environment variable
``SKDP_BENCH_RESULTS`` names another folder (the tests use a temporary one).
"""

import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

RESULTS = os.environ.get("SKDP_BENCH_RESULTS") or os.path.join(HERE, "results")


def best_time(fn, repeat):
    """Seconds of the fastest of ``repeat`` calls of ``fn`` after one warm-up call."""
    import time

    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def write_csv(name, header, rows):
    """Write ``rows`` (dicts keyed by ``header``, or sequences) to ``RESULTS/name``; return the path."""
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, name)
    with open(path, "w", newline="") as f:
        if rows and isinstance(rows[0], dict):
            w = csv.DictWriter(f, fieldnames=header)
            w.writeheader()
            w.writerows(rows)
        else:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)
    return path


def parse_seeds(doc, quick, default):
    """The number of seeds a benchmark script runs: ``--seeds N``, or ``quick`` with
    ``--quick`` (a smoke run), else ``default``."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{quick} seeds (smoke run)")
    parser.add_argument("--seeds", type=int, default=None,
                        help=f"number of seeds (default {default})")
    args = parser.parse_args()
    return args.seeds or (quick if args.quick else default)


def unit_rows(X):
    """Rows scaled to Euclidean norm 1 (public, row-wise: ``data_norm = 1``)."""
    import numpy as np

    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)


def classification_tables(quick=False):
    """The two binary tables of the selection and peer benchmarks, unit rows, 75/25 split.

    Synthetic ``make_classification`` (4000 x 10 with ``quick``, else 20000 x 20) and
    scikit-learn's breast cancer (standardised on the training split, non-private
    preprocessing). Yields ``(name, X_train, X_test, y_train, y_test)``.
    """
    from sklearn.datasets import load_breast_cancer, make_classification
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    n, d, k = (4000, 10, 5) if quick else (20000, 20, 10)
    X, y = make_classification(n_samples=n, n_features=d, n_informative=k, random_state=0)
    Xtr, Xte, ytr, yte = train_test_split(unit_rows(X), y, test_size=0.25, random_state=0)
    yield f"synthetic {n}x{d}", Xtr, Xte, ytr, yte
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
    sc = StandardScaler().fit(Xtr)
    yield "breast_cancer 569x30", unit_rows(sc.transform(Xtr)), unit_rows(sc.transform(Xte)), ytr, yte
