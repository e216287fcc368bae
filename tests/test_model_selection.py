"""Privacy budget across fits: GridSearchCV with ledgers, PrivateGridSearchCV."""

import math
from numbers import Real

import numpy as np
import pytest
from joblib import parallel_backend
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, _fit_context
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import validate_data

from skdp import BudgetExceededError, BudgetLedger, PrivacyBudget, SQLiteLedger
from skdp._validation import clip_rows, public_shape
from skdp.base import PrivateEstimatorMixin
from skdp.mechanisms import Query, calibrate
from skdp.model_selection import PrivateGridSearchCV, random_stopping_runs, search_cost
from skdp.mechanisms._grid import GRID_UTILITY_LOSS

#: calibrations on the grid move by at most the documented loss (skdp.mechanisms._grid)
GRID_RTOL = 2 * GRID_UTILITY_LOSS


# ----------------------------------------------------------------------
# small private estimators that exercise PrivateEstimatorMixin
# ----------------------------------------------------------------------
class DPMeanClassifier(PrivateEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Binary classifier ``sign(<x, w> - bias)``, ``w`` = noisy mean of ``s_i x_i``.

    Rows clipped to ``data_norm = R``; ``s_i = +-1`` from the label. Under
    replace-one one term ``s_i x_i / n`` changes: l2 sensitivity ``2R/n``,
    l1 sensitivity ``2R sqrt(d)/n`` (||v||_1 <= sqrt(d) ||v||_2).
    """

    _parameter_constraints = {
        **PrivateEstimatorMixin._privacy_parameter_constraints,
        "bias": [Interval(Real, None, None, closed="neither")],
    }

    def __init__(self, epsilon=1.0, delta=0.0, data_norm=1.0, bias=0.0, random_state=None,
                 accountant=None):
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.bias = bias
        self.random_state = random_state
        self.accountant = accountant

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        budget, rng = self._start_fit(*public_shape(X))
        X, y = validate_data(self, X, y)
        self.classes_ = np.unique(y)
        if len(self.classes_) != 2:
            raise ValueError("binary only")
        n, d = X.shape
        s = np.where(y == self.classes_[1], 1.0, -1.0)
        Xc = clip_rows(X, self.data_norm)
        q = Query(shape=(d,), l2_sensitivity=2 * self.data_norm / n,
                  l1_sensitivity=2 * self.data_norm * math.sqrt(d) / n)
        self.noise_ = calibrate(q, budget.epsilon, budget.delta)
        self.coef_ = self.noise_.privatize((s[:, None] * Xc).mean(axis=0), rng)
        return self

    def decision_function(self, X):
        X = validate_data(self, X, reset=False)
        return X @ self.coef_ - self.bias

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]


class _CountingClassifier(DPMeanClassifier):
    fits = 0

    def fit(self, X, y):
        type(self).fits += 1
        return super().fit(X, y)


class DPMeanCentering(PrivateEstimatorMixin, TransformerMixin, BaseEstimator):
    """Subtracts a noisy mean (rows clipped to R; replace-one l2 sensitivity 2R/n)."""

    _parameter_constraints = {**PrivateEstimatorMixin._privacy_parameter_constraints}

    def __init__(self, epsilon=1.0, delta=0.0, data_norm=1.0, random_state=None, accountant=None):
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.random_state = random_state
        self.accountant = accountant

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        budget, rng = self._start_fit(*public_shape(X))
        X = validate_data(self, X)
        n, d = X.shape
        q = Query(shape=(d,), l2_sensitivity=2 * self.data_norm / n,
                  l1_sensitivity=2 * self.data_norm * math.sqrt(d) / n)
        self.mean_ = calibrate(q, budget.epsilon, budget.delta).privatize(
            clip_rows(X, self.data_norm).mean(axis=0), rng)
        return self

    def transform(self, X):
        X = validate_data(self, X, reset=False)
        return X - self.mean_


def _data(n=600, d=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = rng.normal(size=(n, d)) * 0.15
    X[:, 0] += np.where(y == 1, 0.3, -0.3) + 0.2  # best bias is ~ 0.2 * coef
    return X, y


GRID = {"bias": [-0.5, 0.0, 0.02, 0.5]}


# ----------------------------------------------------------------------
# GridSearchCV + ledgers
# ----------------------------------------------------------------------
def test_gridsearch_sqlite_ledger_processes_records_every_fit(tmp_path):
    X, y = _data()
    ledger = SQLiteLedger(tmp_path / "gs.sqlite", epsilon=100.0, delta=0.0)
    est = DPMeanClassifier(epsilon=0.5, accountant=ledger, random_state=0)
    gs = GridSearchCV(est, GRID, cv=3, n_jobs=2, error_score="raise").fit(X, y)
    records = ledger.spends
    assert len(records) == len(GRID["bias"]) * 3 + 1  # candidates x folds + refit
    assert all(r.who == "DPMeanClassifier" and r.epsilon == 0.5 for r in records)
    assert len({r.pid for r in records}) >= 2  # spent from worker processes
    assert ledger.spent == PrivacyBudget(0.5 * 13, 0.0)
    assert gs.best_estimator_.accountant is ledger


def test_gridsearch_budget_ledger_threading_backend():
    X, y = _data()
    ledger = BudgetLedger(100.0)
    est = DPMeanClassifier(epsilon=0.25, accountant=ledger, random_state=0)
    with parallel_backend("threading"):
        GridSearchCV(est, GRID, cv=3, n_jobs=2, error_score="raise").fit(X, y)
    assert len(ledger.spends) == 13
    assert ledger.spent.epsilon == pytest.approx(0.25 * 13, rel=1e-12)


def test_gridsearch_budget_ledger_process_backend_fails_loudly():
    X, y = _data()
    ledger = BudgetLedger(100.0)
    est = DPMeanClassifier(epsilon=0.25, accountant=ledger, random_state=0)
    with pytest.raises(RuntimeError, match="cannot be shared between processes"):
        GridSearchCV(est, GRID, cv=3, n_jobs=2, error_score="raise").fit(X, y)
    assert ledger.spends == []  # nothing was silently spent elsewhere


def test_gridsearch_stops_when_budget_runs_out():
    X, y = _data()
    ledger = BudgetLedger(2.0)
    est = DPMeanClassifier(epsilon=0.5, accountant=ledger, random_state=0)
    with pytest.raises(BudgetExceededError):
        GridSearchCV(est, GRID, cv=3, error_score="raise").fit(X, y)
    assert len(ledger.spends) == 4
    assert ledger.spent.epsilon <= 2.0


class _Poison:
    """Data whose values raise if anything reads them.

    Their structure (number of rows and columns) is public under the
    replace-one relation and may be read before the charge: errors that it
    decides (too few rows, n_components > n_features) are raised first.
    """

    def __init__(self, shape=(40, 3)):
        self.shape = shape

    def __array__(self, *args, **kwargs):
        raise AssertionError("the data were touched")

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, item):
        raise AssertionError("the data were touched")


def test_budget_error_before_data_is_touched():
    ledger = BudgetLedger(1.0)
    ledger.spend(PrivacyBudget(0.9))
    est = DPMeanClassifier(epsilon=0.5, accountant=ledger)
    with pytest.raises(BudgetExceededError):
        est.fit(_Poison(), _Poison((40,)))
    # and with ordinary bad data (NaN, wrong shapes): the budget error wins
    with pytest.raises(BudgetExceededError):
        est.fit(np.full((3, 2), np.nan), [0, 1])
    search = PrivateGridSearchCV(DPMeanClassifier(), GRID, epsilon=0.5, accountant=ledger)
    with pytest.raises(BudgetExceededError):
        search.fit(_Poison(), _Poison((40,)))
    assert len(ledger.spends) == 1


def test_pipeline_ledger_sums_private_steps():
    X, y = _data()
    ledger = BudgetLedger(10.0)
    pipe = make_pipeline(
        FunctionTransformer(lambda Z: Z / 2.0),  # public, data-independent
        DPMeanCentering(epsilon=0.3, accountant=ledger, random_state=1),
        DPMeanClassifier(epsilon=0.7, accountant=ledger, random_state=2),
    ).fit(X, y)
    assert [r.who for r in ledger.spends] == ["DPMeanCentering", "DPMeanClassifier"]
    assert ledger.spent.epsilon == pytest.approx(1.0, rel=1e-12)
    assert pipe.score(X, y) > 0.8


# ----------------------------------------------------------------------
# PrivateGridSearchCV
# ----------------------------------------------------------------------
def test_random_stopping_runs_is_geometric():
    rng = np.random.default_rng(0)
    gamma = 0.2
    k = np.array([random_stopping_runs(gamma, rng) for _ in range(40_000)])
    assert k.min() == 1
    # P(K = 1) = gamma, E[K] = 1/gamma (closed forms of the geometric law)
    assert abs(np.mean(k == 1) - gamma) < 4 * math.sqrt(gamma * (1 - gamma) / k.size)
    sd = math.sqrt((1 - gamma) / gamma**2 / k.size)
    assert abs(k.mean() - 1 / gamma) < 4 * sd


def test_private_grid_search_random_stopping():
    X, y = _data(n=2000)
    ledger = BudgetLedger(5.0)
    eps = 3.0
    search = PrivateGridSearchCV(DPMeanClassifier(), GRID, epsilon=eps, validation_fraction=0.25,
                                 accountant=ledger, random_state=0).fit(X, y)
    # one spend of the total, charged by the search itself (runs carry no accountant)
    assert [(r.who, r.epsilon, r.delta) for r in ledger.spends] == [("PrivateGridSearchCV", eps, 0.0)]
    assert search.privacy_spent_ == PrivacyBudget(eps, 0.0)
    # Liu-Talwar Thm 3.4: 3 eps_run = eps
    assert search.run_budget_ == PrivacyBudget(eps / 3, 0.0)
    # Laplace score noise: scale = (1/n_val) / eps_run, recomputed here
    n_val = round(0.25 * 2000)
    assert search.score_noise_.mechanism == "laplace"
    assert search.score_noise_.params["scale"] == pytest.approx(1 / (n_val * eps / 3), rel=GRID_RTOL)
    assert search.best_estimator_.epsilon == pytest.approx(eps / 3)
    assert search.best_estimator_.accountant is None
    assert search.best_params_ in [{"bias": 0.0}, {"bias": 0.02}]
    assert search.score(X, y) > 0.85  # bias 0.0: 0.874, bias 0.02: 0.926 on these data
    assert search.predict(X).shape == (2000,)
    assert not hasattr(search, "cv_results_")  # would reveal the number of runs
    # nothing on the fitted search reveals the number of runs either
    assert not [k for k in vars(search) if "run" in k.lower() and k != "run_budget_"]
    # default gamma = 1/n_candidates: run count is geometric, with mean 4 (counted by the fits)
    runs = []
    for s in range(30):
        _CountingClassifier.fits = 0
        PrivateGridSearchCV(_CountingClassifier(), GRID, epsilon=eps, random_state=s).fit(
            X[:200], y[:200])
        runs.append(_CountingClassifier.fits)
    assert min(runs) >= 1 and 1.5 < np.mean(runs) < 8


def test_private_grid_search_exhaustive_and_refit():
    X, y = _data(n=2000)
    eps, delta = 2.0, 1e-6
    search = PrivateGridSearchCV(DPMeanClassifier(), GRID, epsilon=eps, delta=delta,
                                 strategy="exhaustive", refit=True, refit_fraction=0.5,
                                 random_state=0).fit(X, y)
    m = len(GRID["bias"])
    # selection: eps/2 split over m runs (basic composition); refit: eps/2
    assert search.run_budget_.epsilon == pytest.approx(eps / 2 / m, rel=1e-12)
    assert search.run_budget_.delta == pytest.approx(delta / 2 / m, rel=1e-12)
    assert search.best_estimator_.epsilon == pytest.approx(eps / 2)
    assert search.best_estimator_.delta == pytest.approx(delta / 2)
    assert search.privacy_spent_ == PrivacyBudget(eps, delta)
    res = search.cv_results_
    assert len(res["params"]) == m and res["noisy_score"].shape == (m,)
    assert res["params"][int(np.argmin(res["rank_noisy_score"]))] == search.best_params_
    assert search.best_score_ == res["noisy_score"].max()
    assert list(res["param_bias"]) == GRID["bias"]


def test_private_grid_search_pipeline_splits_run_budget():
    X, y = _data(n=1000)
    pipe = make_pipeline(DPMeanCentering(), DPMeanClassifier())
    grid = {"dpmeanclassifier__bias": [0.0, 0.2]}
    search = PrivateGridSearchCV(pipe, grid, epsilon=3.0, strategy="exhaustive",
                                 random_state=0).fit(X, y)
    best = search.best_estimator_
    # two private steps share the run budget eps/m = 1.5: 0.75 each
    assert best.named_steps["dpmeancentering"].epsilon == pytest.approx(0.75)
    assert best.named_steps["dpmeanclassifier"].epsilon == pytest.approx(0.75)


def test_private_grid_search_custom_scoring_sensitivity():
    X, y = _data(n=400)

    def neg_margin_loss(est, Xv, yv):
        return -np.maximum(0, 1 - np.where(yv == 1, 1, -1) * est.decision_function(Xv))

    search = PrivateGridSearchCV(DPMeanClassifier(), GRID, epsilon=1.5, scoring=neg_margin_loss,
                                 score_bounds=(-2.0, 0.0), random_state=0).fit(X, y)
    # mean of scores in [-2, 0] over n_val rows: sensitivity 2/n_val
    assert search.score_noise_.params["scale"] == pytest.approx(2 / 100 / 0.5, rel=GRID_RTOL)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(param_grid={"epsilon": [1.0]}), "privacy parameters"),
        (dict(param_grid={"bias": [0.0]}, delta=1e-6), "refit=True"),
        (dict(param_grid={"bias": [0.0]}, scoring=lambda e, X, y: y), "score_bounds"),
        (dict(param_grid={"bias": []}), "empty"),
    ],
)
def test_private_grid_search_bad_inputs(kwargs, match):
    X, y = _data(n=100)
    kwargs = {"epsilon": 1.0, **kwargs}
    with pytest.raises(ValueError, match=match):
        PrivateGridSearchCV(DPMeanClassifier(), **kwargs).fit(X, y)


def test_private_grid_search_rejects_non_private_estimator():
    from sklearn.linear_model import LogisticRegression

    X, y = _data(n=100)
    with pytest.raises(ValueError, match="not a private estimator"):
        PrivateGridSearchCV(LogisticRegression(), {"C": [1.0]}, epsilon=1.0).fit(X, y)


# ----------------------------------------------------------------------
# the real estimators (skipped until they exist)
# ----------------------------------------------------------------------
def _real(module, name):
    mod = pytest.importorskip(module)
    if not hasattr(mod, name):
        pytest.skip(f"{module}.{name} not available")
    return getattr(mod, name)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gridsearch_private_logistic_regression_sqlite_n_jobs_2(tmp_path):
    PrivateLogisticRegression = _real("skdp.linear_model", "PrivateLogisticRegression")
    X, y = _data(n=600)
    ledger = SQLiteLedger(tmp_path / "lr.sqlite", epsilon=20.0, delta=0.0)
    est = PrivateLogisticRegression(epsilon=0.5, delta=0.0, data_norm=1.0, classes=[0, 1],
                                    accountant=ledger, random_state=0)
    gs = GridSearchCV(est, {"C": [0.1, 1.0, 10.0]}, cv=2, n_jobs=2, error_score="raise")
    gs.fit(X, y)
    records = ledger.spends
    assert len(records) == 3 * 2 + 1
    assert {r.who for r in records} == {"PrivateLogisticRegression"}
    assert ledger.spent.epsilon == pytest.approx(0.5 * 7, rel=1e-12)
    search = PrivateGridSearchCV(PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]),
                                 {"C": [0.1, 1.0]}, epsilon=1.5, accountant=ledger, random_state=0).fit(X, y)
    assert search.best_estimator_.epsilon == pytest.approx(0.5)
    assert search.best_estimator_.delta == 0.0
    assert ledger.spent.epsilon == pytest.approx(0.5 * 7 + 1.5, rel=1e-12)
    assert search.score(X, y) > 0.7


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_pipeline_pca_logistic_ledger_sums_both_steps():
    PrivatePCA = _real("skdp.decomposition", "PrivatePCA")
    PrivateLogisticRegression = _real("skdp.linear_model", "PrivateLogisticRegression")
    X, y = _data(n=600)
    ledger = BudgetLedger(10.0, 1e-4)
    pipe = make_pipeline(
        FunctionTransformer(lambda Z: Z / 2.0),  # public scaling, no data dependence
        PrivatePCA(n_components=2, epsilon=0.4, delta=1e-6, data_norm=1.0, accountant=ledger,
                   random_state=0),
        PrivateLogisticRegression(epsilon=0.6, delta=0.0, data_norm=1.0, classes=[0, 1],
                                  accountant=ledger, random_state=0),
    ).fit(X, y)
    assert [r.who for r in ledger.spends] == ["PrivatePCA", "PrivateLogisticRegression"]
    assert ledger.spent.epsilon == pytest.approx(1.0, rel=1e-12)
    assert ledger.spent.delta == pytest.approx(1e-6, rel=1e-12)
    assert pipe.predict(X).shape == (600,)


def test_search_cost_prices_a_gridsearch_before_it_runs_and_matches_the_ledger():
    X, y = _data(n=300)
    ledger = BudgetLedger(100.0, 1e-3)
    pipe = make_pipeline(
        DPMeanCentering(epsilon=0.25, delta=1e-6, accountant=ledger),
        DPMeanClassifier(epsilon=0.5, accountant=ledger),
    )
    gs = GridSearchCV(pipe, {"dpmeanclassifier__bias": [0.0, 0.1, 0.2],
                             "dpmeanclassifier__epsilon": [0.5, 1.0, 0.5]},
                      cv=3, error_score="raise")
    cost = search_cost(gs, X, y)
    # 9 candidates x 3 folds, then a refit of the most expensive candidate (1.25, 1e-6)
    eps_fits = sum((0.25 + e) * 3 for e in [0.5, 1.0, 0.5] * 3)
    assert cost.epsilon == pytest.approx(eps_fits + 1.25)
    assert cost.delta == pytest.approx(1e-6 * (27 + 1))
    gs.fit(X, y)
    assert ledger.spent.epsilon <= cost.epsilon * (1 + 1e-12)
    assert ledger.spent.delta == pytest.approx(cost.delta)
    # a search that does not fit is refused before it starts
    small = BudgetLedger(1.0)
    assert not small.remaining.covers(cost)
    assert search_cost(PrivateGridSearchCV(DPMeanClassifier(), GRID, epsilon=2.0), X, y) == \
        PrivacyBudget(2.0, 0.0)
