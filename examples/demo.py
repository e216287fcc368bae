"""Private vs non-private on real data: the skdp headline demonstration.

Three tasks on datasets that ship with scikit-learn (no download):

* digits, "0-4 vs 5-9" classification: ``PrivateLogisticRegression`` and
  ``PrivateHuberSVM`` against ``LogisticRegression`` / ``LinearSVC``;
* digits, 10 principal components: ``PrivatePCA`` against ``PCA``
  (captured variance on the test rows);
* diabetes regression: ``PrivateOLS`` against ``LinearRegression``.

Every private fit is (epsilon, delta)-DP for the **training** rows under the
replace-one neighbouring relation, given public bounds. Preprocessing uses
only row-wise transformations or public constants (no statistic of the
private data), so it costs no budget:

* digits classification: pixels lie in [0, 16] by construction, so
  ``(x - 8) / 64`` (public constants) gives rows of norm <= 1, ``data_norm=1``;
* digits PCA: rows scaled to unit norm (a row-wise operation), ``data_norm=1``;
* diabetes: scikit-learn ships these features already centred and scaled
  with statistics of all 442 rows (a step taken before the data reach this
  script, which the guarantee does not cover); here rows are scaled to unit
  norm (a row-wise operation), ``data_norm=1``,
  and the target mapped from its public range [0, 400] to [-1, 1]
  (``(y - 200) / 200``, ``label_bound=1``) so that rows and labels are on one
  scale; MSE is reported back in the original units (times 200^2), and the
  non-private ``LinearRegression`` is fitted on the same rows.

Each private score is the mean (and standard deviation, the error bars of
the figure) over ``--repeats`` runs (different noise and splits). Next to
the non-private estimator every task shows a trivial baseline that a model
must beat to be useful: ``DummyClassifier`` (majority class),
``DummyRegressor`` (predict the training mean) and, for PCA, the ``k / d``
share of variance that a uniformly random ``k``-dimensional subspace
captures in expectation. Prints a progress line per task, a table, and
saves ``skdp_demo.png``.

Run: ``python3 examples/demo.py`` (about a minute on two cores).
"""

import argparse
import os
import time
import warnings

import numpy as np

import matplotlib
import matplotlib.ticker

if not os.environ.get("DISPLAY"):
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from sklearn.datasets import load_diabetes, load_digits  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.dummy import DummyClassifier, DummyRegressor  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.metrics import mean_squared_error  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import normalize  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from skdp import PrivateHuberSVM, PrivateLogisticRegression, PrivateOLS, PrivatePCA  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0, 5.0)
DELTA = 1e-5


def _captured_variance(components, X):
    """trace(V^T C V) / trace(C) with C the covariance of X."""
    Xc = X - X.mean(axis=0)
    C = Xc.T @ Xc / len(X)
    return float(np.trace(components @ C @ components.T) / np.trace(C))


def _splits(X, y, repeats, stratify=True):
    for seed in range(repeats):
        yield seed, train_test_split(X, y, test_size=0.3, random_state=seed,
                                     stratify=y if stratify else None)


def classification_rows(repeats):
    X, y = load_digits(return_X_y=True)
    X = (X - 8.0) / 64.0  # public pixel range [0, 16]: ||x|| <= 1
    y = (y >= 5).astype(int)
    rows = []
    # the private models keep C="auto": a public rule (n, epsilon, the bounds) sets the
    # regularisation the noise needs; the non-private ones use scikit-learn's C=10
    models = [
        ("PrivateLogisticRegression", lambda e, s: PrivateLogisticRegression(
            epsilon=e, delta=DELTA, data_norm=1.0, classes=[0, 1],
            random_state=s),
         lambda: LogisticRegression(C=10.0)),
        ("PrivateHuberSVM", lambda e, s: PrivateHuberSVM(
            epsilon=e, delta=DELTA, data_norm=1.0, classes=[0, 1],
            random_state=s),
         lambda: LinearSVC(C=10.0)),
    ]
    trivial = np.mean([DummyClassifier().fit(Xtr, ytr).score(Xte, yte)
                       for _, (Xtr, Xte, ytr, yte) in _splits(X, y, repeats)])
    for name, private, public in models:
        base = np.mean([public().fit(Xtr, ytr).score(Xte, yte)
                        for _, (Xtr, Xte, ytr, yte) in _splits(X, y, repeats)])
        for eps in EPSILONS:
            t0 = time.perf_counter()
            scores = [private(eps, s).fit(Xtr, ytr).score(Xte, yte)
                      for s, (Xtr, Xte, ytr, yte) in _splits(X, y, repeats)]
            rows.append(("digits 0-4/5-9", name, "accuracy", eps, np.mean(scores), np.std(scores),
                         base, trivial, (time.perf_counter() - t0) / repeats))
    return rows


def pca_rows(repeats, k=10):
    X, y = load_digits(return_X_y=True)
    X = normalize(X / 16.0)
    base = np.mean([_captured_variance(PCA(k).fit(Xtr).components_, Xte)
                    for _, (Xtr, Xte, _, _) in _splits(X, y, repeats)])
    rows = []
    for eps in EPSILONS:
        t0 = time.perf_counter()
        scores = [
            _captured_variance(PrivatePCA(k, epsilon=eps, delta=DELTA, data_norm=1.0,
                                          random_state=s).fit(Xtr).components_, Xte)
            for s, (Xtr, Xte, _, _) in _splits(X, y, repeats)]
        # trivial baseline: a uniformly random k-dimensional subspace captures k / d
        rows.append(("digits PCA", "PrivatePCA (k=10)", "captured var.", eps, np.mean(scores),
                     np.std(scores), base, k / X.shape[1], (time.perf_counter() - t0) / repeats))
    return rows


def ols_rows(repeats):
    X, y = load_diabetes(return_X_y=True)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)  # row-wise: data_norm = 1
    y = (y - 200.0) / 200.0  # the public target range [0, 400] mapped to [-1, 1]
    unit = 200.0**2  # MSE back in the target's units

    def mse(yte, pred):
        return unit * mean_squared_error(yte, pred)

    base = np.mean([mse(yte, LinearRegression().fit(Xtr, ytr).predict(Xte))
                    for _, (Xtr, Xte, ytr, yte) in _splits(X, y, repeats, stratify=False)])
    trivial = np.mean([mse(yte, DummyRegressor().fit(Xtr, ytr).predict(Xte))
                       for _, (Xtr, Xte, ytr, yte) in _splits(X, y, repeats, stratify=False)])
    rows = []
    for eps in EPSILONS:
        t0 = time.perf_counter()
        scores = [
            mse(yte, PrivateOLS(epsilon=eps, delta=DELTA, data_norm=1.0, label_bound=1.0,
                                random_state=s).fit(Xtr, ytr).predict(Xte))
            for s, (Xtr, Xte, ytr, yte) in _splits(X, y, repeats, stratify=False)]
        rows.append(("diabetes", "PrivateOLS (auto)", "test MSE", eps, np.mean(scores),
                     np.std(scores), base, trivial, (time.perf_counter() - t0) / repeats))
    return rows


def print_table(rows):
    head = (f"{'dataset':<14} {'estimator':<27} {'metric':<14} {'epsilon':>7} "
            f"{'private':>9} {'+/- std':>8} {'non-private':>12} {'trivial':>9} {'fit (s)':>8}")
    print(head)
    print("-" * len(head))
    for ds, name, metric, eps, score, std, base, trivial, secs in rows:
        f = "{:>%d.1f}" if metric == "test MSE" else "{:>%d.3f}"
        print(f"{ds:<14} {name:<27} {metric:<14} {eps:>7g} " + (f % 9).format(score) + " "
              + (f % 8).format(std) + " " + (f % 12).format(base) + " " + (f % 9).format(trivial)
              + f" {secs:>8.3f}")
    print(f"\nAll private fits: (epsilon, delta={DELTA:g})-DP under replace-one neighbours, "
          "public bounds as stated in the script's docstring. Trivial baselines: "
          "DummyClassifier (majority class), DummyRegressor (training mean), k/d for PCA.")


def plot(rows, path):
    groups = {}
    for ds, name, metric, eps, score, std, base, trivial, _ in rows:
        groups.setdefault((ds, metric), {}).setdefault(name, []).append((eps, score, std, base, trivial))
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 4))
    for ax, ((ds, metric), by_name) in zip(np.atleast_1d(axes), groups.items()):
        for name, pts in by_name.items():
            eps, score, std, base, trivial = map(np.array, zip(*pts))
            line = ax.errorbar(eps, score, yerr=std, marker="o", capsize=3, label=name)[0]
            ax.axhline(base[0], color=line.get_color(), ls="--", lw=1,
                       label=f"non-private ({base[0]:.3g})")
        label = {"accuracy": "DummyClassifier", "test MSE": "DummyRegressor"}.get(
            metric, "random subspace (k/d)")
        ax.axhline(trivial[0], color="gray", ls=":", lw=1.5, label=f"{label} ({trivial[0]:.3g})")
        ax.set_xscale("log")
        ax.set_xticks(EPSILONS)
        ax.set_xticklabels([f"{e:g}" for e in EPSILONS])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("epsilon")
        ax.set_ylabel(metric)
        ax.set_title(ds)
        ax.legend(fontsize=8)
    fig.suptitle(f"skdp: private vs non-private and trivial baselines (delta={DELTA:g}; "
                 "bars: std over repeats)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", default=os.environ.get("SKDP_EXAMPLES_OUT", "."))
    args = parser.parse_args(argv)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=ConvergenceWarning)  # sklearn's chatter only
        tasks = [("digits 0-4/5-9 classification", classification_rows),
                 ("digits PCA", pca_rows), ("diabetes regression", ols_rows)]
        for i, (task, run) in enumerate(tasks, 1):
            t0 = time.perf_counter()
            print(f"[{i}/{len(tasks)}] {task}: {len(EPSILONS)} epsilons x {args.repeats} repeats ...",
                  end=" ", flush=True)
            rows += run(args.repeats)
            print(f"done in {time.perf_counter() - t0:.1f} s", flush=True)
    print_table(rows)
    os.makedirs(args.out, exist_ok=True)
    path = plot(rows, os.path.join(args.out, "skdp_demo.png"))
    print(f"figure saved to {path}")
    return rows


if __name__ == "__main__":
    main()
