"""
Private linear classifiers: accuracy vs epsilon
===============================================

:class:`~skdp.PrivateLogisticRegression` and :class:`~skdp.PrivateHuberSVM`
against the non-private :class:`~sklearn.linear_model.LogisticRegression`
and :class:`~sklearn.svm.LinearSVC`, for the three privacy routes of the
shared ERM core (output, objective and gradient perturbation) and
``epsilon`` from 0.1 to 10 (``delta = 1e-5``; replace-one neighbours).

Two datasets, both available without download:

* **digits, "0-4 vs 5-9"** (1797 images, 64 pixels): pixels lie in
  ``[0, 16]`` by construction, so ``(x - 8) / 64`` (public constants) gives
  rows of norm at most 1 and ``data_norm=1`` is a *public* bound;
* **synthetic** ``make_classification`` (10000 rows, 20 features): every
  row is scaled to unit norm (a row-wise operation that uses no statistic
  of the other rows), so again ``data_norm=1``.

The hyperparameters are not tuned on these data (tuning on the private data
would itself cost privacy): every route keeps the default ``C="auto"``, a
public rule that sets the regularisation from ``n``, the shape, the bound,
the loss, the route and epsilon (never the data); an explicit ``C`` above
what objective perturbation allows at a given epsilon would be lowered to
that limit, with a warning. The gradient route takes 100 full-batch noisy
steps. These are the settings of ``benchmarks/bench_classifiers.py``. The non-private baselines use the
scikit-learn defaults. The split into training and test rows is fixed; the
private curves show the mean and standard deviation of the test accuracy
over several noise seeds.

The script prints one row per (dataset, model, route, epsilon) and saves
``classifiers_accuracy.png`` in the directory named by the environment
variable ``SKDP_EXAMPLES_OUT`` (default: the current directory). Set
``SKDP_EXAMPLES_QUICK=1`` to use 2 seeds instead of 5.
"""

# %%
# Setup
# -----
import os
import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits, make_classification  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import normalize  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from skdp import PrivateHuberSVM, PrivateLogisticRegression  # noqa: E402

OUT = Path(os.environ.get("SKDP_EXAMPLES_OUT", "."))
OUT.mkdir(parents=True, exist_ok=True)
QUICK = os.environ.get("SKDP_EXAMPLES_QUICK", "") not in ("", "0")
SEEDS = range(2 if QUICK else 5)
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)
DELTA = 1e-5
ROUTES = {
    "output": dict(),
    "objective": dict(),
    "gradient": dict(max_iter=100),
}
MODELS = {
    "PrivateLogisticRegression": (PrivateLogisticRegression, LogisticRegression),
    "PrivateHuberSVM": (PrivateHuberSVM, LinearSVC),
}


# %%
# Data with public row-norm bounds
# --------------------------------
def datasets():
    X, y = load_digits(return_X_y=True)
    X = (X - 8.0) / 64.0  # public pixel range [0, 16] -> ||x|| <= 1
    y = (y >= 5).astype(int)
    yield "digits 0-4/5-9", train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    X, y = make_classification(n_samples=10000, n_features=20, n_informative=10,
                               class_sep=1.5, random_state=0)
    X = normalize(X)  # row-wise: ||x|| = 1
    yield "synthetic 10000x20", train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)


# %%
# Accuracy of every route at every epsilon
# ----------------------------------------
rows, baselines = [], {}
t_start = time.perf_counter()
for ds, (Xtr, Xte, ytr, yte) in datasets():
    for name, (Private, Public) in MODELS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            baselines[ds, name] = Public().fit(Xtr, ytr).score(Xte, yte)
        for route, kw in ROUTES.items():
            for eps in EPSILONS:
                t0 = time.perf_counter()
                acc = [Private(epsilon=eps, delta=DELTA, perturbation=route, data_norm=1.0,
                               classes=np.unique(ytr),  # public: the task's label set
                               random_state=seed, **kw).fit(Xtr, ytr).score(Xte, yte)
                       for seed in SEEDS]
                secs = (time.perf_counter() - t0) / len(SEEDS)
                rows.append((ds, name, route, eps, np.mean(acc), np.std(acc), secs))

head = (f"{'dataset':<19} {'model':<26} {'route':<10} {'epsilon':>7} "
        f"{'mean acc':>9} {'std':>6} {'non-private':>12} {'fit (s)':>8}")
print(head)
print("-" * len(head))
for ds, name, route, eps, mean, std, secs in rows:
    print(f"{ds:<19} {name:<26} {route:<10} {eps:>7g} {mean:>9.3f} {std:>6.3f} "
          f"{baselines[ds, name]:>12.3f} {secs:>8.3f}")
print(f"\n{len(SEEDS)} noise seeds per cell; all private fits are (epsilon, delta={DELTA:g})-DP "
      "for the training rows (replace-one neighbours, data_norm=1 public).")
print(f"total time {time.perf_counter() - t_start:.1f} s")

# %%
# Figure: one panel per dataset and model
# ---------------------------------------
# Dashed: the non-private baseline. Output perturbation pays for a noise
# scale that does not shrink with n; objective perturbation adds noise to
# the objective and gains most at small epsilon.
datasets_seen = list(dict.fromkeys(r[0] for r in rows))
fig, axes = plt.subplots(len(datasets_seen), len(MODELS), figsize=(10, 7.5), sharex=True)
colors = dict(zip(ROUTES, ("tab:orange", "tab:blue", "tab:green")))
for i, ds in enumerate(datasets_seen):
    for j, name in enumerate(MODELS):
        ax = axes[i, j]
        for route in ROUTES:
            pts = np.array([(r[3], r[4], r[5]) for r in rows
                            if r[0] == ds and r[1] == name and r[2] == route])
            ax.errorbar(pts[:, 0], pts[:, 1], yerr=pts[:, 2], marker="o", capsize=3,
                        color=colors[route], label=f"{route} perturbation")
        base = baselines[ds, name]
        public_name = MODELS[name][1].__name__
        ax.axhline(base, color="k", ls="--", lw=1, label=f"{public_name} ({base:.3f})")
        ax.set_xscale("log")
        ax.set_title(f"{ds}: {name}", fontsize=10)
        ax.set_ylabel("test accuracy")
        if i == len(datasets_seen) - 1:
            ax.set_xlabel("epsilon")
        ax.legend(fontsize=8, loc="lower right")
fig.suptitle(f"Private vs non-private linear classifiers (delta={DELTA:g}, "
             f"mean +- std over {len(SEEDS)} seeds)")
fig.tight_layout()
path = OUT / "classifiers_accuracy.png"
fig.savefig(path, dpi=100)
print(f"saved {path}")
