"""
Privacy budget across fits: GridSearchCV with a ledger vs PrivateGridSearchCV
=============================================================================

``sklearn.model_selection.GridSearchCV`` runs one fit per candidate and fold,
plus a refit. With a shared ledger as ``accountant`` every fit is charged and
recorded, so the *total* cost of the search is visible. It is large (basic
composition of all fits), and the choice among exact validation scores is not
covered by any guarantee.

``skdp.model_selection.PrivateGridSearchCV`` selects with an end-to-end
guarantee and charges the ledger once, before touching the data. Its default
strategy (Papernot & Steinke 2022: a truncated negative binomial number of
runs, ``eta = 0.5``) costs ``2.5 x`` the budget of one run; Liu & Talwar's
(2019) random stopping costs ``3 x``. Part 3 compares the two at the same
total epsilon (mean test accuracy of the selected model over 20 seeds).

The script prints the total privacy cost next to the chosen parameters and the
test accuracy, with scikit-learn's non-private ``LogisticRegression`` and the
majority class as baselines, and saves a small figure
(``gridsearch_ledger.png`` in ``$SKDP_EXAMPLES_OUT``, default the working
directory, or the path in the environment variable ``SKDP_FIGURE``).
"""

import os
import tempfile
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from joblib import parallel_backend  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV, ParameterGrid, train_test_split  # noqa: E402

from skdp import BudgetLedger, SQLiteLedger  # noqa: E402
from skdp.linear_model import PrivateLogisticRegression  # noqa: E402
from skdp.model_selection import PrivateGridSearchCV  # noqa: E402

rng = 0
X, y = make_classification(n_samples=4000, n_features=5, n_informative=3, random_state=rng)
# Rows are clipped by the estimator to a *public* norm bound (data_norm).
DATA_NORM = 3.0
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=rng)
# Four candidates that differ at every epsilon used here: a C above what objective
# perturbation allows at a run's epsilon is lowered to that limit (with a warning), so a
# grid of large C's would compare identical models; C="auto" picks the regularisation by
# a public rule for each route, and C=0.001 lies below the limit of every run here.
grid = {"perturbation": ["output", "objective"], "C": ["auto", 0.001]}
base_acc = LogisticRegression().fit(X_train, y_train).score(X_test, y_test)
majority = max(np.mean(y_test == c) for c in (0, 1))
print(f"baselines: non-private LogisticRegression {base_acc:.3f}, majority class {majority:.3f}")

# ---------------------------------------------------------------------------
# 1. GridSearchCV, every fit charged to an in-memory ledger (threads share it)
# ---------------------------------------------------------------------------
ledger = BudgetLedger(epsilon=50.0, delta=1e-4)
est = PrivateLogisticRegression(epsilon=1.0, delta=1e-6, data_norm=DATA_NORM, classes=[0, 1],
                                accountant=ledger, random_state=rng)
with warnings.catch_warnings(), parallel_backend("threading"):
    warnings.simplefilter("ignore", ConvergenceWarning)
    gs = GridSearchCV(est, grid, cv=3, n_jobs=2).fit(X_train, y_train)
gs_cost = ledger.spent
gs_adv = ledger.total("advanced", delta_slack=1e-6)
gs_acc = gs.score(X_test, y_test)
print(f"GridSearchCV        : {len(ledger.spends)} fits recorded "
      f"({len(ParameterGrid(grid))} candidates x 3 folds + refit)")
print(f"  chosen {gs.best_params_}, test accuracy {gs_acc:.3f}")
print(f"  total cost (ledger's privacy filter) eps={gs_cost.epsilon:.3g} delta={gs_cost.delta:.3g}; "
      f"sum of the fits (basic) eps={ledger.spent_basic.epsilon:.3g}")
print(f"  total cost (advanced) eps={gs_adv.epsilon:.3g} delta={gs_adv.delta:.3g}"
      "  -- the selection itself is NOT covered")

# ---------------------------------------------------------------------------
# 2. PrivateGridSearchCV, charged once to a ledger file shared by processes
# ---------------------------------------------------------------------------
path = os.path.join(tempfile.mkdtemp(), "budget.sqlite")
file_ledger = SQLiteLedger(path, epsilon=10.0, delta=1e-4)
pgs = PrivateGridSearchCV(PrivateLogisticRegression(data_norm=DATA_NORM, classes=[0, 1]), grid, epsilon=3.0,
                          accountant=file_ledger, random_state=rng)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    pgs.fit(X_train, y_train)
pgs_acc = pgs.score(X_test, y_test)
print("PrivateGridSearchCV : one spend", [(r.who, r.epsilon, r.delta) for r in file_ledger.spends])
print(f"  chosen {pgs.best_params_} (noisy validation accuracy {pgs.best_score_:.3f}), "
      f"test accuracy {pgs_acc:.3f}")
print(f"  total cost eps={pgs.privacy_spent_.epsilon:.3g} delta={pgs.privacy_spent_.delta:.3g} "
      f"(each run eps={pgs.run_budget_.epsilon:.3g}; Papernot-Steinke, eta=0.5: 2.5 x run)")

# ---------------------------------------------------------------------------
# 3. Liu-Talwar random stopping vs Papernot-Steinke at the same total epsilon
# ---------------------------------------------------------------------------
N_SEEDS = 20
STRATEGIES = {"random_stopping": {}, "negative_binomial": {"eta": 0.5}}
compare = {}
print(f"\nSelected-model test accuracy, mean +- s.e. over {N_SEEDS} seeds "
      f"({len(ParameterGrid(grid))} grid points, on average {len(ParameterGrid(grid))} runs):")
print("| total eps | random_stopping (run eps/3) | negative_binomial eta=0.5 (run eps/2.5) |")
print("|---|---|---|")
for eps in (0.5, 3.0):
    cells = []
    for strategy, kw in STRATEGIES.items():
        accs = []
        for seed in range(N_SEEDS):
            search = PrivateGridSearchCV(
                PrivateLogisticRegression(data_norm=DATA_NORM, classes=[0, 1]), grid, epsilon=eps,
                strategy=strategy, random_state=seed, **kw)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                search.fit(X_train, y_train)
            accs.append(search.score(X_test, y_test))
        compare[strategy, eps] = float(np.mean(accs))
        cells.append(f"{np.mean(accs):.3f} +- {np.std(accs, ddof=1) / np.sqrt(N_SEEDS):.3f}")
    print(f"| {eps:g} | " + " | ".join(cells) + " |")

# ---------------------------------------------------------------------------
# figure
# ---------------------------------------------------------------------------
fig, axes = plt.subplots(1, 3, figsize=(10.5, 3))
names = ["GridSearchCV\n+ ledger", "PrivateGridSearchCV"]
axes[0].bar(names, [gs_cost.epsilon, pgs.privacy_spent_.epsilon], color=["tab:red", "tab:blue"])
axes[0].set_ylabel("total epsilon")
axes[0].set_title("privacy cost of the search")
axes[1].bar(names, [gs_acc, pgs_acc], color=["tab:red", "tab:blue"])
axes[1].set_ylim(0.5, 1.0)
axes[1].set_ylabel("test accuracy")
axes[1].set_title("chosen model")
width = 0.35
for i, (strategy, color) in enumerate([("random_stopping", "tab:gray"),
                                       ("negative_binomial", "tab:blue")]):
    axes[2].bar(np.arange(2) + (i - 0.5) * width, [compare[strategy, 0.5], compare[strategy, 3.0]],
                width, color=color, label=strategy.replace("_", " "))
axes[2].set_xticks([0, 1], ["eps=0.5", "eps=3"])
axes[2].set_ylim(0.5, 1.0)
axes[2].set_title(f"mean over {N_SEEDS} searches")
axes[2].legend(fontsize=7)
fig.tight_layout()
out = os.environ.get("SKDP_FIGURE") or os.path.join(os.environ.get("SKDP_EXAMPLES_OUT", "."),
                                                    "gridsearch_ledger.png")
fig.savefig(out, dpi=100)
print("figure saved to", out)
assert np.isfinite(gs_acc) and np.isfinite(pgs_acc) and all(np.isfinite(list(compare.values())))
