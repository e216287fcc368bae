"""
A fully private pipeline on a mixed-type table
==============================================

A table with numeric and categorical columns, and every step that reads the
training rows private:

* categorical columns: :class:`~sklearn.preprocessing.OneHotEncoder` with the
  **public** list of categories (``categories=[...]``: the encoder then
  learns nothing from the data, so it costs no budget);
* numeric columns: :class:`~skdp.preprocessing.PrivateStandardScaler` with
  **public** ranges (from the data dictionary, not from the data);
* :class:`~sklearn.preprocessing.Normalizer`: a row-wise operation (no
  statistic of the data) that makes every row of norm 1, so ``data_norm=1``
  is a public bound;
* :class:`~skdp.PrivateLogisticRegression` with the public ``classes``.

All private steps charge one :class:`~skdp.BudgetLedger`; the total it
reports is the sum of the steps' budgets (basic composition).

The table is generated reproducibly (an income-like classification task:
age, hours per week, years of education, a skewed capital amount, and three
categorical columns). The figure compares test accuracy against total
epsilon with the non-private pipeline (``StandardScaler`` fitted on the
data, ``LogisticRegression``) and with :class:`~sklearn.dummy.DummyClassifier`
(majority class). The scaler gets 20 % of the total epsilon, the classifier
the rest (the scaler's statistics are averages over all rows; the
classifier is the harder release).

The script prints the ledger of one fit at total epsilon = 1 and the
accuracy table, and saves ``private_pipeline.png`` in the directory named by
the environment variable ``SKDP_EXAMPLES_OUT`` (default: the current
directory). ``SKDP_EXAMPLES_QUICK=1`` uses 2 seeds instead of 5 and a
smaller table.
"""

# %%
# Setup
# -----
import math
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.dummy import DummyClassifier  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import Normalizer, OneHotEncoder, StandardScaler  # noqa: E402

from skdp import BudgetLedger, PrivateLogisticRegression  # noqa: E402
from skdp.preprocessing import PrivateStandardScaler  # noqa: E402

OUT = Path(os.environ.get("SKDP_EXAMPLES_OUT", "."))
QUICK = os.environ.get("SKDP_EXAMPLES_QUICK", "") not in ("", "0")
SEEDS = range(2 if QUICK else 5)
N_TRAIN = 10_000 if QUICK else 30_000
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)
DELTA = 1e-6  # of the classifier; the scaler is pure epsilon-DP (delta = 0)
SCALER_SHARE = 0.2

# %%
# The public schema: categories and ranges come from the data dictionary
# ----------------------------------------------------------------------
CATEGORIES = {
    "workclass": ["private", "self-employed", "government", "other"],
    "marital": ["married", "never-married", "divorced", "widowed"],
    "occupation": ["manual", "clerical", "sales", "professional", "service", "farming"],
}
RANGES = {  # (lower, upper) of every numeric column
    "age": (17.0, 90.0),
    "hours": (1.0, 99.0),
    "education_years": (1.0, 20.0),
    "capital": (0.0, 100_000.0),
}
NUMERIC = list(RANGES)
CATEGORICAL = list(CATEGORIES)


def make_table(n, seed):
    """An income-like table: numeric + categorical columns and a binary label."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "age": np.clip(rng.normal(40, 13, n), 17, 90).round(),
        "hours": np.clip(rng.normal(41, 12, n), 1, 99).round(),
        "education_years": np.clip(rng.normal(11, 3, n), 1, 20).round(),
        "capital": np.where(rng.random(n) < 0.1, rng.exponential(8000, n), 0.0).round(),
        "workclass": rng.choice(CATEGORIES["workclass"], n, p=[0.7, 0.1, 0.15, 0.05]),
        "marital": rng.choice(CATEGORIES["marital"], n, p=[0.45, 0.35, 0.15, 0.05]),
        "occupation": rng.choice(CATEGORIES["occupation"], n),
    })
    score = (0.06 * (df["age"] - 40) + 0.07 * (df["hours"] - 40) + 0.35 * (df["education_years"] - 11)
             + 0.0002 * df["capital"] + 1.2 * (df["marital"] == "married")
             + 0.8 * (df["occupation"] == "professional") - 0.7 * (df["occupation"] == "service")
             + 0.4 * (df["workclass"] == "self-employed") - 1.3)
    y = (rng.random(n) < 1 / (1 + np.exp(-score))).astype(int)
    return df, y


def private_pipeline(epsilon, ledger=None, seed=None):
    """Scaler with SCALER_SHARE of epsilon (delta = 0), classifier with the rest."""
    eps_scaler = SCALER_SHARE * epsilon
    lower = [RANGES[c][0] for c in NUMERIC]
    upper = [RANGES[c][1] for c in NUMERIC]
    columns = ColumnTransformer([
        ("categories", OneHotEncoder(categories=[CATEGORIES[c] for c in CATEGORICAL],
                                     handle_unknown="ignore"), CATEGORICAL),
        ("numbers", PrivateStandardScaler(epsilon=eps_scaler, bounds=(lower, upper),
                                          accountant=ledger, random_state=seed), NUMERIC),
    ], sparse_threshold=0.0)
    return Pipeline([
        ("columns", columns),
        ("rows", Normalizer()),  # row-wise: every row has norm 1, so data_norm=1 is public
        ("classifier", PrivateLogisticRegression(epsilon=epsilon - eps_scaler, delta=DELTA,
                                                 data_norm=1.0, classes=[0, 1],
                                                 accountant=ledger, random_state=seed)),
    ])


def non_private_pipeline():
    return Pipeline([
        ("columns", ColumnTransformer([
            ("categories", OneHotEncoder(categories=[CATEGORIES[c] for c in CATEGORICAL]),
             CATEGORICAL),
            ("numbers", StandardScaler(), NUMERIC),
        ])),
        ("classifier", LogisticRegression(max_iter=1000)),
    ])


def steps_spent(pipe):
    """(epsilon, delta) of every private step of a fitted pipeline."""
    scaler = pipe.named_steps["columns"].named_transformers_["numbers"]
    clf = pipe.named_steps["classifier"]
    return {"PrivateStandardScaler": scaler.privacy_spent_,
            "PrivateLogisticRegression": clf.privacy_spent_}


# %%
# One private fit at total epsilon = 1, with its ledger
# -----------------------------------------------------
X_train, y_train = make_table(N_TRAIN, seed=0)
X_test, y_test = make_table(20_000, seed=1)

ledger = BudgetLedger(epsilon=1.0, delta=DELTA)
# seeded for a reproducible printout; real releases use random_state=None (fresh entropy),
# and the spread over seeds is in the table below
pipe = private_pipeline(1.0, ledger=ledger, seed=0).fit(X_train, y_train)
spent = steps_spent(pipe)
for name, budget in spent.items():
    print(f"step {name:26s} epsilon={budget.epsilon:.3g} delta={budget.delta:.3g}")
total = ledger.total("basic")
step_sum = math.fsum(b.epsilon for b in spent.values())
print(f"ledger: {len(ledger.spends)} spends, total epsilon={total.epsilon:.6g} "
      f"delta={total.delta:.3g}; sum of the steps' epsilons={step_sum:.6g}")
assert len(ledger.spends) == 2 and total.epsilon == step_sum
print(f"accuracy at total epsilon=1: {pipe.score(X_test, y_test):.3f}")

# %%
# Accuracy against total epsilon
# ------------------------------
reference = non_private_pipeline().fit(X_train, y_train).score(X_test, y_test)
dummy = DummyClassifier().fit(X_train, y_train).score(X_test, y_test)
print(f"non-private pipeline: {reference:.3f}; DummyClassifier (majority): {dummy:.3f}")
print(f"{'total epsilon':>13s}  {'accuracy':>8s}  {'std':>6s}")
means, stds = [], []
for eps in EPSILONS:
    scores = []
    for seed in SEEDS:
        ledger = BudgetLedger(epsilon=eps, delta=DELTA)
        fitted = private_pipeline(eps, ledger=ledger, seed=seed).fit(X_train, y_train)
        assert math.isclose(ledger.total("basic").epsilon, eps)
        scores.append(fitted.score(X_test, y_test))
    means.append(np.mean(scores))
    stds.append(np.std(scores))
    print(f"{eps:13g}  {means[-1]:8.3f}  {stds[-1]:6.3f}")

# %%
# Figure
# ------
fig, ax = plt.subplots(figsize=(6, 4))
ax.errorbar(EPSILONS, means, yerr=stds, marker="o", capsize=3, label="private pipeline")
ax.axhline(reference, color="k", ls="--", label="non-private pipeline")
ax.axhline(dummy, color="gray", ls=":", label="DummyClassifier (majority)")
ax.set_xscale("log")
ax.set_xticks(EPSILONS)
ax.set_xticklabels([f"{e:g}" for e in EPSILONS])
ax.set_xlabel("total epsilon (scaler + classifier)")
ax.set_ylabel("test accuracy")
ax.set_title(f"Private pipeline, n = {N_TRAIN} (mean and std over {len(SEEDS)} seeds)")
ax.legend(loc="lower right")
fig.tight_layout()
OUT.mkdir(parents=True, exist_ok=True)
fig.savefig(OUT / "private_pipeline.png", dpi=110)
print(f"saved {OUT / 'private_pipeline.png'}")
