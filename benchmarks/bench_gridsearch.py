"""Selected-model accuracy of ``PrivateGridSearchCV`` per strategy at the same total epsilon.

Strategies: Liu & Talwar (2019) random stopping (each run at epsilon / 3),
Papernot & Steinke (2022) truncated negative binomial number of runs with
``eta = 0`` and ``eta = 0.5`` (each run at epsilon / (2 + eta)), and the
exhaustive search (each run at epsilon / n_candidates, all noisy scores
released). The randomised strategies use their default law: on average as
many runs as grid points (``E[K] = 6``).

Estimator: ``PrivateLogisticRegression(data_norm=1, classes=[0, 1])`` with
pure runs (delta = 0), grid: the output and objective routes, each with
``C`` in {"auto", 0.0001, 0.001} (6 candidates; a grid of larger C's would
collapse: the objective route lowers any C above what it allows at the
run's epsilon to that limit, so such candidates are one model);
validation fraction 0.25 of the training part, no refit (the selected run's
model is released). Data: ``make_classification`` (20000 x 20, 10
informative; ``--quick``: 4000 x 10) and scikit-learn's breast cancer
(standardised with the training mean/std, non-private preprocessing); rows
scaled to unit norm.

Prints, per data set, the mean test accuracy of the selected model (and
its standard error over ``n_repeats`` seeds: 60, ``--quick``: 4) per
epsilon, and writes ``benchmarks/results/gridsearch.csv`` with columns
``dataset, strategy, eta, epsilon, run_epsilon, accuracy, accuracy_se,
n_repeats``.

Run: ``python3 benchmarks/bench_gridsearch.py [--quick]``.
"""

import argparse
import warnings

import numpy as np

import _common  # noqa: E402  (puts the checkout's skdp on sys.path)

from skdp.linear_model import PrivateLogisticRegression  # noqa: E402
from skdp.model_selection import PrivateGridSearchCV  # noqa: E402

EPSILONS = (0.3, 1.0, 3.0)
GRID = {"perturbation": ["output", "objective"], "C": ["auto", 0.0001, 0.001]}
N_GRID = 6
STRATEGIES = (("random_stopping", 1.0), ("negative_binomial", 0.0),
              ("negative_binomial", 0.5), ("exhaustive", None))
FIELDS = ["dataset", "strategy", "eta", "epsilon", "run_epsilon", "accuracy", "accuracy_se",
          "n_repeats"]


datasets = _common.classification_tables


def _label(strategy, eta):
    return f"{strategy} (eta={eta:g})" if strategy == "negative_binomial" else strategy


def run(quick=False):
    """Return the table rows (dicts with the keys ``FIELDS``)."""
    n_repeats = 4 if quick else 60
    rows = []
    for name, Xtr, Xte, ytr, yte in datasets(quick):
        for strategy, eta in STRATEGIES:
            for eps in EPSILONS:
                accs, run_eps = [], None
                for r in range(n_repeats):
                    search = PrivateGridSearchCV(
                        PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]), GRID,
                        epsilon=eps, strategy=strategy, eta=0.0 if eta is None else eta,
                        random_state=r)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        search.fit(Xtr, ytr)
                    accs.append(search.score(Xte, yte))
                    run_eps = search.run_budget_.epsilon
                rows.append(dict(dataset=name, strategy=strategy, eta="" if eta is None else eta,
                                 epsilon=eps, run_epsilon=run_eps, accuracy=float(np.mean(accs)),
                                 accuracy_se=float(np.std(accs, ddof=1) / np.sqrt(n_repeats))
                                 if n_repeats > 1 else 0.0,
                                 n_repeats=n_repeats))
    return rows


def print_tables(rows):
    for name in dict.fromkeys(r["dataset"] for r in rows):
        sub = [r for r in rows if r["dataset"] == name]
        print(f"\n## {name}: test accuracy of the selected model, mean +- s.e. over "
              f"{sub[0]['n_repeats']} seeds ({N_GRID} grid points, delta = 0)")
        print("| strategy | epsilon per run | " + " | ".join(f"eps={e}" for e in EPSILONS) + " |")
        print("|---|---|" + "---|" * len(EPSILONS))
        for strategy, eta in STRATEGIES:
            cells = {r["epsilon"]: r for r in sub if r["strategy"] == strategy
                     and r["eta"] == ("" if eta is None else eta)}
            share = "eps/6" if strategy == "exhaustive" else f"eps/{3 if eta == 1 else 2 + eta:g}"
            print(f"| {_label(strategy, eta)} | {share} | "
                  + " | ".join(f"{cells[e]['accuracy']:.4f} +- {cells[e]['accuracy_se']:.4f}"
                               for e in EPSILONS) + " |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small data, 4 seeds")
    args = parser.parse_args(argv)
    rows = run(args.quick)
    print_tables(rows)
    print("\nwrote", _common.write_csv("gridsearch.csv", FIELDS, rows))


if __name__ == "__main__":
    main()
