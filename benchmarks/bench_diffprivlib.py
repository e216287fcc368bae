"""skdp against IBM's diffprivlib (and non-private scikit-learn), same process.

Three tasks, each at the same epsilon and the same public bounds for both
libraries; utility and fit time vs epsilon:

* **logistic regression** -- accuracy. ``skdp.linear_model.PrivateLogisticRegression``
  (objective perturbation) vs ``diffprivlib.models.LogisticRegression``.
* **PCA** -- captured variance ``trace(V^T C V) / (top-k eigenvalues of C)``
  on the true covariance ``C``. ``skdp.decomposition.PrivatePCA`` vs
  ``diffprivlib.models.PCA``.
* **linear regression** -- test MSE. ``skdp.linear_model.PrivateOLS`` vs
  ``diffprivlib.models.LinearRegression``.

What is (and is not) like with like
-----------------------------------
* diffprivlib's three models are **pure epsilon-DP** (delta = 0). skdp's PCA
  and OLS releases are Gaussian and need ``delta > 0``; they run at
  ``delta = 1e-5``, so they get a strictly weaker guarantee than diffprivlib at
  the same epsilon. Only logistic regression is compared at exactly equal
  ``(epsilon, delta = 0)``: skdp's objective route with ``delta = 0`` is
  Chaudhuri et al. (2011) Alg. 2 with Gamma-norm noise, the algorithm
  diffprivlib implements; skdp with ``delta = 1e-5`` (approximate minima
  perturbation, Gaussian noise) is listed as a separate row.
* Both libraries use replace-one neighbours (diffprivlib's sensitivities
  ``(upper - lower)/n`` and ``2 data_norm`` are replace-one quantities).
* Logistic regression: rows scaled to unit norm, ``data_norm = 1`` for both,
  the same ``C = 0.1`` for both (a priori, no tuning), ``fit_intercept=False``
  for both. Reason for no intercept: diffprivlib 0.6.6 augments the data norm
  to ``R = sqrt(data_norm^2 + 1)`` and then uses ``c * R / alpha`` (``c = 1/4``,
  ``alpha = 1/C``) in the Jacobian term ``2 log(1 + ...)``, whereas the
  smoothness of the loss in ``w`` is ``c R^2`` (skdp's ``_erm`` derivation);
  with ``R = 1`` (no intercept) the two agree, with the intercept diffprivlib
  would spend less of its budget on that term than the derivation requires.
  skdp's solver stops at a public gradient tolerance and adds a second small
  noise for the solver error (1% of epsilon); diffprivlib treats the L-BFGS
  output as the exact minimiser (``max_iter=1000`` for both here).
* PCA: rows scaled to unit norm; ``data_norm = 1`` for both; diffprivlib's
  mean needs per-feature bounds: ``(-1, 1)``, the box implied by the unit
  ball. ``centered=False`` for both: skdp estimates the mean from its one
  release of the augmented second moment; diffprivlib spends epsilon/2 on a
  Laplace mean and epsilon/2 on the eigenvectors (Amin et al. 2019,
  iterative Bingham sampling), and clips the *centred* rows to ``data_norm``.
  skdp uses ``mechanism="auto"``.
* Linear regression: one public assumption per data set, each library gets
  its own form of it. diabetes (as in ``bench_ols.py``): ``||x|| <= 0.35``
  -> skdp ``data_norm = 0.35``, diffprivlib ``bounds_X = (-0.35, 0.35)`` per
  feature; labels mapped to ``[-1, 1]`` (public range [0, 350]) -> skdp
  ``label_bound = 1``, diffprivlib ``bounds_y = (-1, 1)``. synthetic: ``x``
  uniform in ``[-1, 1]^d / sqrt(d)`` (that box for diffprivlib, its corner
  norm ``data_norm = 1`` for skdp), ``y = x w + 0.1 N(0, 1)`` clipped to
  ``[-2, 2]``. skdp uses ``method="auto"`` (AdaSSP), diffprivlib the
  functional mechanism (Laplace noise on each of the ``~d^2/2`` polynomial
  coefficients). Both fit an intercept. Note: diffprivlib 0.6.6 spends
  ``epsilon/(d+1)`` on the ``d`` feature means, another ``epsilon/(d+1)`` on
  the label mean and ``epsilon d/(d+1)`` on the coefficients, i.e.
  ``epsilon (d+2)/(d+1)`` in total under basic composition (our reading of
  ``_preprocess_data``/``fit``; reported, not corrected here).

Utility: mean over seeds (3; ``--quick``: 1). Fit time: median over the
seeds; ``x_sklearn`` = ratio to the non-private scikit-learn estimator on
the same data (median of 3 fits).

Compatibility: diffprivlib 0.6.6 imports private scikit-learn names removed
in 1.9 (``sklearn.tree._tree.DOUBLE``) and passes ``multi_class`` to
``LogisticRegression`` (removed in 1.8); it works with scikit-learn 1.6/1.7.
Where it cannot be imported or used, this script prints ``SKIP: ...`` and
exits 0. See ``benchmarks/README.md`` for a throw-away venv recipe.

Writes ``benchmarks/results/diffprivlib.csv`` with columns ``task, dataset,
library, method, epsilon, delta, metric, value, value_std, n_repeats, fit_s,
x_sklearn``.

Run: ``python3 benchmarks/bench_diffprivlib.py [--quick]``.
"""

import argparse
import signal
import sys
import time
import warnings

import numpy as np
import sklearn
from sklearn.datasets import load_diabetes, load_digits
from sklearn.decomposition import PCA
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import train_test_split

import _common  # noqa: E402  (puts the checkout's skdp on sys.path)

from skdp.decomposition import PrivatePCA  # noqa: E402
from skdp.linear_model import PrivateLogisticRegression, PrivateOLS  # noqa: E402

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)
DELTA = 1e-5
C = 0.1
FIELDS = ["task", "dataset", "library", "method", "epsilon", "delta", "metric", "value", "value_std",
          "n_repeats", "fit_s", "x_sklearn", "note"]


def diffprivlib_status():
    """Return ``(diffprivlib module or None, reason)``; probes the models used here."""
    try:
        import diffprivlib
        from diffprivlib.models import LinearRegression as DLR
        from diffprivlib.models import LogisticRegression as DLogR
        from diffprivlib.models import PCA as DPCA

        DLogR(epsilon=1.0, data_norm=1.0)
        DPCA(n_components=1, epsilon=1.0, data_norm=1.0, bounds=(-1, 1))
        DLR(epsilon=1.0, bounds_X=(-1, 1), bounds_y=(-1, 1))
    except Exception as e:  # ImportError on sklearn 1.9, TypeError (multi_class) on 1.8
        return None, f"{type(e).__name__}: {e}"
    return diffprivlib, "ok"


_unit = _common.unit_rows


class FitTimeout(Exception):
    """A fit ran past its time limit."""


def _on_alarm(signum, frame):
    raise FitTimeout


def _fit_timed(make, fit_args, seeds, limit_s=None):
    """Fit ``make(seed)`` on a copy of the data for every seed.

    Returns (fitted models, median fit time). ``limit_s``: wall-clock limit
    per fit (SIGALRM, main thread on POSIX only); raises FitTimeout past it.
    """
    use_alarm = limit_s is not None and hasattr(signal, "setitimer")
    models, times = [], []
    for seed in seeds:
        est = make(seed)
        args = [a.copy() for a in fit_args]  # diffprivlib's PCA centres X in place
        old = signal.signal(signal.SIGALRM, _on_alarm) if use_alarm else None
        try:
            if use_alarm:
                signal.setitimer(signal.ITIMER_REAL, limit_s)
            t0 = time.perf_counter()
            est.fit(*args)
            times.append(time.perf_counter() - t0)
        finally:
            if use_alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)
        models.append(est)
    return models, float(np.median(times))


def _row(task, dataset, library, method, eps, delta, metric, values, t, t_ref, note=""):
    if values is None:  # not run / timed out
        value = value_std = fit_s = x_sklearn = ""
    else:
        value, value_std, fit_s, x_sklearn = float(np.mean(values)), float(np.std(values)), t, t / t_ref
    return dict(task=task, dataset=dataset, library=library, method=method, epsilon=eps, delta=delta,
                metric=metric, value=value, value_std=value_std, n_repeats=0 if values is None else len(values),
                fit_s=fit_s, x_sklearn=x_sklearn, note=note)


# ---------------------------------------------------------------- logistic regression
logistic_data = _common.classification_tables  # non-private preprocessing, as in bench_classifiers.py


def bench_logistic(dpl, seeds, quick):
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import LogisticRegression as DPLogisticRegression

    rows = []
    for name, Xtr, Xte, ytr, yte in logistic_data(quick):
        skl, t_ref = _fit_timed(lambda s: LogisticRegression(C=C, fit_intercept=False), (Xtr, ytr), range(3))
        rows.append(_row("logistic", name, "sklearn", "LogisticRegression (non-private)", "", "",
                         "accuracy", [skl[0].score(Xte, yte)], t_ref, t_ref))
        for eps in EPSILONS:
            variants = [
                ("skdp", "objective, gamma_norm (Chaudhuri Alg. 2)", 0.0,
                 lambda s: PrivateLogisticRegression(epsilon=eps, delta=0.0, perturbation="objective",
                                                     data_norm=1.0, classes=[0, 1], C=C,
                                                     fit_intercept=False,
                                                     random_state=s)),
                ("skdp", "objective, AMP Gaussian", DELTA,
                 lambda s: PrivateLogisticRegression(epsilon=eps, delta=DELTA, perturbation="objective",
                                                     data_norm=1.0, classes=[0, 1], C=C,
                                                     fit_intercept=False,
                                                     random_state=s)),
                ("diffprivlib", "objective, Vector mechanism (Chaudhuri Alg. 2)", 0.0,
                 lambda s: DPLogisticRegression(epsilon=eps, data_norm=1.0, classes=[0, 1], C=C,
                                                     fit_intercept=False,
                                                max_iter=1000, random_state=s,
                                                accountant=BudgetAccountant())),
            ]
            for lib, method, delta, make in variants:
                models, t = _fit_timed(make, (Xtr, ytr), seeds)
                rows.append(_row("logistic", name, lib, method, eps, delta, "accuracy",
                                 [m.score(Xte, yte) for m in models], t, t_ref))
    return rows


# ---------------------------------------------------------------- PCA
def pca_data(quick):
    yield "digits 1797x64", _unit(load_digits().data.astype(float)), 10
    n, d = (5000, 50) if quick else (50000, 50)
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    X = (rng.normal(size=(n, d)) / np.arange(1, d + 1)) @ Q.T + 0.3 * Q[:, -1]
    X /= np.quantile(np.linalg.norm(X, axis=1), 0.99)  # public rescaling, then clip to the unit ball
    yield f"synthetic {n}x{d}", X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True)), 5


def captured(components, C_true, k):
    V = components.T
    return np.trace(V.T @ C_true @ V) / np.linalg.eigvalsh(C_true)[::-1][:k].sum()


def bench_pca(dpl, seeds, quick):
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import PCA as DPPCA

    limit_s = 5.0 if quick else 30.0
    rows = []
    for name, X, k in pca_data(quick):
        timed_out = {}
        C_true = np.cov(X, rowvar=False)
        skl, t_ref = _fit_timed(lambda s: PCA(n_components=k, svd_solver="full"), (X,), range(3))
        rows.append(_row("pca", name, "sklearn", "PCA (non-private)", "", "", "captured",
                         [captured(skl[0].components_, C_true, k)], t_ref, t_ref))
        for eps in EPSILONS:
            variants = [
                ("skdp", "auto (augmented second moment)", DELTA,
                 lambda s: PrivatePCA(n_components=k, epsilon=eps, delta=DELTA, data_norm=1.0,
                                      centered=False, random_state=s)),
                ("diffprivlib", "Laplace mean + Bingham eigenvectors", 0.0,
                 lambda s: DPPCA(n_components=k, epsilon=eps, data_norm=1.0, bounds=(-1.0, 1.0),
                                 centered=False, random_state=s, accountant=BudgetAccountant())),
            ]
            for lib, method, delta, make in variants:
                # diffprivlib's rejection sampler (Kent et al.'s ACG envelope) slows down sharply
                # as epsilon grows; past the limit at some epsilon, larger ones are not tried
                if lib in timed_out:
                    rows.append(_row("pca", name, lib, method, eps, delta, "captured", None, None, t_ref,
                                     f"not run: a fit timed out (> {limit_s:g} s) at eps={timed_out[lib]}"))
                    continue
                try:
                    models, t = _fit_timed(make, (X,), seeds, limit_s=limit_s)
                except FitTimeout:
                    timed_out[lib] = eps
                    rows.append(_row("pca", name, lib, method, eps, delta, "captured", None, None, t_ref,
                                     f"timed out: one fit took > {limit_s:g} s"))
                    continue
                rows.append(_row("pca", name, lib, method, eps, delta, "captured",
                                 [captured(m.components_, C_true, k) for m in models], t, t_ref))
    return rows


# ---------------------------------------------------------------- linear regression
def ols_data(quick):
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    # public bounds: ||x|| <= 0.35, labels in [0, 350] -> (y - 175) / 175 in [-1, 1]
    yield ("diabetes 442x10", Xtr, (ytr - 175) / 175, Xte, yte, 175.0, 175.0,
           0.35, (-0.35, 0.35), 1.0)
    n, d = (5000, 10) if quick else (50000, 10)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(n, d)) / np.sqrt(d)
    w = rng.uniform(-1, 1, size=d)
    y = np.clip(X @ w + 0.1 * rng.standard_normal(n), -2, 2)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)
    b = 1 / np.sqrt(d)
    yield f"synthetic {n}x{d}", Xtr, ytr, Xte, yte, 1.0, 0.0, 1.0, (-b, b), 2.0


def bench_ols(dpl, seeds, quick):
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import LinearRegression as DPLinearRegression

    rows = []
    for name, Xtr, ytr, Xte, yte, scale, shift, data_norm, box, label_bound in ols_data(quick):
        def mse(model):
            return float(np.mean((model.predict(Xte) * scale + shift - yte) ** 2))

        skl, t_ref = _fit_timed(lambda s: LinearRegression(), (Xtr, ytr), range(3))
        rows.append(_row("ols", name, "sklearn", "LinearRegression (non-private)", "", "", "mse",
                         [mse(skl[0])], t_ref, t_ref))
        for eps in EPSILONS:
            variants = [
                ("skdp", "auto (AdaSSP)", DELTA,
                 lambda s: PrivateOLS(epsilon=eps, delta=DELTA, data_norm=data_norm,
                                      label_bound=label_bound, random_state=s)),
                ("diffprivlib", "functional mechanism (Laplace)", 0.0,
                 lambda s: DPLinearRegression(epsilon=eps, bounds_X=box, bounds_y=(-label_bound, label_bound),
                                              random_state=s, accountant=BudgetAccountant())),
            ]
            for lib, method, delta, make in variants:
                models, t = _fit_timed(make, (Xtr, ytr), seeds)
                rows.append(_row("ols", name, lib, method, eps, delta, "mse",
                                 [mse(m) for m in models], t, t_ref))
    return rows


# ---------------------------------------------------------------- output
def _cell(value, fmt=".4g"):
    return "timeout" if value == "" else format(value, fmt)


def print_tables(rows):
    for task in dict.fromkeys(r["task"] for r in rows):
        for dataset in dict.fromkeys(r["dataset"] for r in rows if r["task"] == task):
            sub = [r for r in rows if r["task"] == task and r["dataset"] == dataset]
            print(f"\n## {task}: {dataset} ({sub[0]['metric']}; fit time ratio to sklearn at eps=1)")
            print("| library | method | delta | " + " | ".join(f"eps={e}" for e in EPSILONS) + " | x sklearn |")
            print("|---|---|---|" + "---|" * (len(EPSILONS) + 1))
            for r in sub:
                if r["epsilon"] == "":
                    print(f"| {r['library']} | {r['method']} | - | "
                          + " | ".join(f"{r['value']:.4g}" for _ in EPSILONS) + " | 1.00 |")
            methods = dict.fromkeys((r["library"], r["method"], r["delta"]) for r in sub if r["epsilon"] != "")
            for lib, method, delta in methods:
                cells = {r["epsilon"]: r for r in sub
                         if (r["library"], r["method"], r["delta"]) == (lib, method, delta)}
                print(f"| {lib} | {method} | {delta:g} | "
                      + " | ".join(_cell(cells[e]['value']) for e in EPSILONS)
                      + f" | {_cell(cells[1.0]['x_sklearn'], '.2f')} |")
            for r in sub:
                if r["note"].startswith("timed out"):
                    print(f"{r['library']} at eps={r['epsilon']}: {r['note']}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small data, 1 seed (smoke run)")
    args = parser.parse_args(argv)
    dpl, reason = diffprivlib_status()
    if dpl is None:
        print(f"SKIP: diffprivlib is not usable with scikit-learn {sklearn.__version__} here ({reason}). "
              "diffprivlib 0.6.6 needs scikit-learn < 1.8; see benchmarks/README.md for a venv recipe.")
        return 0
    seeds = range(1) if args.quick else range(3)
    print(f"diffprivlib {dpl.__version__}, scikit-learn {sklearn.__version__}, numpy {np.__version__}; "
          f"mean over {len(seeds)} seed(s); skdp delta={DELTA} where a row says so, diffprivlib delta=0")
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence / bounds warnings of both libraries
        for bench in (bench_logistic, bench_pca, bench_ols):
            rows += bench(dpl, seeds, args.quick)
    print_tables(rows)
    path = _common.write_csv("diffprivlib.csv", FIELDS, rows)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
