"""Privacy budget across fits: GridSearchCV with ledgers, PrivateGridSearchCV."""

import math
import warnings
from numbers import Real

import numpy as np
import pytest
from joblib import parallel_backend
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, _fit_context, clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, Normalizer
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import validate_data

from skdp import (BudgetExceededError, BudgetLedger, PrivacyBudget, PrivateLogisticRegression,
                  SQLiteLedger)
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
    """Counts the charged fits (a search's dry runs stop at the charge: not counted)."""

    fits = 0

    def _start_fit(self, *args, **kwargs):
        out = super()._start_fit(*args, **kwargs)
        type(self).fits += 1
        return out


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
    # stopping probability 0.01 (about 100 runs): the good grid points are tried whatever the
    # seed but with probability about 1%, so the check of the selection below does not rest on
    # the seed's run count (the default, 1/4, tries only bad points in about 19% of seeds)
    search = PrivateGridSearchCV(DPMeanClassifier(), GRID, epsilon=eps, validation_fraction=0.25,
                                 strategy="random_stopping", stopping_probability=0.01,
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
        PrivateGridSearchCV(_CountingClassifier(), GRID, epsilon=eps, strategy="random_stopping",
                            random_state=s).fit(X[:200], y[:200])
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
    # mean of scores in [-2, 0] over n_val rows: sensitivity 2/n_val; eps_run = 1.5 / (2 + 0.5)
    assert search.score_noise_.params["scale"] == pytest.approx(2 / 100 / 0.6, rel=GRID_RTOL)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(param_grid={"epsilon": [1.0]}), "privacy parameters"),
        (dict(param_grid={"bias": [0.0]}, delta=1e-6), "refit=True"),
        (dict(param_grid={"bias": [0.0]}, scoring=lambda e, X, y: y), "score_bounds"),
        # beyond the public range the calibration raised an errno OverflowError (1e200) or a
        # grid error about a sensitivity the user never named (1e-300)
        (dict(param_grid={"bias": [0.0]}, scoring=lambda e, X, y: y, score_bounds=(0, 1e200)),
         "score_bounds must lie within"),
        (dict(param_grid={"bias": [0.0]}, scoring=lambda e, X, y: y, score_bounds=(0, 1e-300)),
         "at least .* wide"),
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
    assert search.best_estimator_.epsilon == pytest.approx(1.5 / 2.5)  # default: eta = 0.5
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


# ----------------------------------------------------------------------
# Papernot & Steinke (2022): truncated negative binomial number of runs
# ----------------------------------------------------------------------
def _tnb_pmf(eta, gamma, k):
    """P(K = k) of D_{eta, gamma}, from scipy's negative binomial / log-series laws."""
    from scipy import stats

    k = np.asarray(k)
    if eta == 0:
        return stats.logser(1 - gamma).pmf(k)
    return stats.nbinom(eta, gamma).pmf(k) / (1 - gamma**eta)


@pytest.mark.parametrize("eta, gamma", [(0.0, 0.2), (0.01, 0.3), (0.5, 0.3), (1.0, 0.25), (2.0, 0.4),
                                        (2.5, 0.35), (2.5, 0.97), (0.5, 0.999)])
def test_negative_binomial_runs_law_and_mean(eta, gamma):
    from scipy import stats

    from skdp.model_selection import (negative_binomial_runs, truncated_negative_binomial_gamma,
                                      truncated_negative_binomial_mean)

    rng = np.random.default_rng(1)
    draws = np.array([negative_binomial_runs(eta, gamma, rng) for _ in range(30_000)])
    assert draws.min() >= 1
    for k in range(1, 6):  # frequencies against scipy's pmf, 4.5 standard errors
        p = _tnb_pmf(eta, gamma, k)
        assert abs(np.mean(draws == k) - p) < 4.5 * math.sqrt(p * (1 - p) / draws.size), k
    # E[K]: scipy's mean of the untruncated law over P(K >= 1) (K = 0 adds nothing)
    oracle = (stats.logser(1 - gamma).mean() if eta == 0
              else stats.nbinom(eta, gamma).mean() / (1 - gamma**eta))
    assert truncated_negative_binomial_mean(eta, gamma) == pytest.approx(oracle, rel=1e-12)
    ks = np.arange(1, 5000)
    sd = math.sqrt(np.sum(_tnb_pmf(eta, gamma, ks) * (ks - oracle) ** 2))
    assert abs(draws.mean() - oracle) < 4.5 * sd / math.sqrt(draws.size)
    # the default gamma inverts the mean
    assert truncated_negative_binomial_mean(eta, truncated_negative_binomial_gamma(eta, oracle)) \
        == pytest.approx(oracle, rel=1e-9)
    assert truncated_negative_binomial_gamma(eta, 1.0) == 1.0
    assert negative_binomial_runs(eta, 1.0, rng) == 1
    if eta == 1.0:  # geometric: gamma = 1 / mean
        assert truncated_negative_binomial_gamma(1.0, 4.0) == pytest.approx(0.25, rel=1e-10)


@pytest.mark.slow
def test_negative_binomial_search_budget_and_expected_runs():
    X, y = _data(n=2000)
    ledger = BudgetLedger(5.0)
    eps, eta = 2.0, 0.5
    search = PrivateGridSearchCV(DPMeanClassifier(), GRID, epsilon=eps, strategy="negative_binomial",
                                 eta=eta, accountant=ledger, random_state=0)
    assert search_cost(search, X, y) == PrivacyBudget(eps, 0.0)
    search.fit(X, y)
    # one spend of the total, charged by the search before the runs
    assert [(r.who, r.epsilon, r.delta) for r in ledger.spends] == [("PrivateGridSearchCV", eps, 0.0)]
    assert search.privacy_spent_ == PrivacyBudget(eps, 0.0)
    # Papernot & Steinke Thm 2 (pure limit): (2 + eta) eps_run = eps
    assert search.run_budget_ == PrivacyBudget(eps / 2.5, 0.0)
    assert search.best_estimator_.epsilon == pytest.approx(eps / 2.5)
    n_val = round(0.25 * 2000)
    assert search.score_noise_.params["scale"] == pytest.approx(2.5 / (n_val * eps), rel=GRID_RTOL)
    assert search.stopping_law_["eta"] == eta
    assert search.stopping_law_["mean"] == pytest.approx(len(GRID["bias"]), rel=1e-9)
    assert not hasattr(search, "cv_results_")
    assert not [k for k in vars(search) if "run" in k.lower() and k != "run_budget_"]
    assert search.best_params_["bias"] in GRID["bias"] and np.isfinite(search.best_score_)
    # the number of fits has the law's mean E[K] = n_candidates = 4 (counted)
    gamma = search.stopping_law_["gamma"]
    ks = np.arange(1, 5000)
    sd = math.sqrt(np.sum(_tnb_pmf(eta, gamma, ks) * (ks - 4.0) ** 2))
    assert np.sum(_tnb_pmf(eta, gamma, ks) * ks) == pytest.approx(4.0, rel=1e-9)  # scipy's mean
    runs = []
    for s in range(400):
        _CountingClassifier.fits = 0
        PrivateGridSearchCV(_CountingClassifier(), GRID, epsilon=eps, strategy="negative_binomial",
                            eta=eta, random_state=s).fit(X[:80], y[:80])
        runs.append(_CountingClassifier.fits)
    assert min(runs) >= 1
    assert abs(np.mean(runs) - 4.0) < 4.5 * sd / math.sqrt(len(runs))


def test_negative_binomial_eta_one_is_random_stopping():
    X, y = _data(n=400)
    kw = dict(epsilon=3.0, random_state=0)
    nb = PrivateGridSearchCV(DPMeanClassifier(), GRID, strategy="negative_binomial", eta=1.0, **kw)
    rs = PrivateGridSearchCV(DPMeanClassifier(), GRID, strategy="random_stopping", **kw)
    nb.fit(X, y), rs.fit(X, y)
    assert nb.run_budget_ == rs.run_budget_ == PrivacyBudget(1.0, 0.0)
    assert nb.stopping_law_["gamma"] == pytest.approx(rs.stopping_law_["gamma"]) == 0.25


def test_negative_binomial_budget_refused_before_data_and_delta_rules():
    ledger = BudgetLedger(1.0)
    search = PrivateGridSearchCV(DPMeanClassifier(), GRID, epsilon=1.5, accountant=ledger)
    assert search.strategy == "negative_binomial" and search.eta == 0.5  # the defaults
    with pytest.raises(BudgetExceededError):
        search.fit(_Poison(), _Poison((40,)))
    assert ledger.spends == [] and not hasattr(search, "privacy_spent_")
    X, y = _data(n=400)
    with pytest.raises(ValueError, match="refit=True"):  # pure runs: delta only for a refit
        PrivateGridSearchCV(DPMeanClassifier(), GRID, epsilon=1.0, delta=1e-6,
                            strategy="negative_binomial", accountant=ledger).fit(X, y)
    assert ledger.spends == []
    with pytest.raises(ValueError, match="eta"):
        PrivateGridSearchCV(DPMeanClassifier(), GRID, epsilon=1.0, strategy="negative_binomial",
                            eta=-0.5).fit(X, y)
    search = PrivateGridSearchCV(DPMeanClassifier(), GRID, epsilon=2.0, delta=1e-6,
                                 strategy="negative_binomial", eta=0.0, refit=True,
                                 random_state=0).fit(X, y)
    assert search.run_budget_ == PrivacyBudget(0.5, 0.0)  # (2 + 0) eps_run = eps / 2
    assert search.best_estimator_.epsilon == pytest.approx(1.0)
    assert search.best_estimator_.delta == pytest.approx(1e-6)


@pytest.mark.parametrize("eta", [0.0, 0.5, 1.0, 3.0])
def test_negative_binomial_calibration_against_dp_accounting(eta):
    """dp_accounting's implementation of Papernot & Steinke Thm 2 gives (2 + eta) eps_run.

    The run is any pure eps_run-DP mechanism: its RDP is at most eps_run at
    every order. dp_accounting's repeat-and-select bound (private helper of
    its RDP accountant, written from the same theorem by its authors) at
    order 1e9 is the pure-DP limit.
    """
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    from skdp.model_selection import selection_run_budget

    eps_total, mean = 1.2, 4.0
    run = selection_run_budget("negative_binomial", eps_total, 0.0, 4, eta=eta)
    orders = np.array([1.5, 2.0, 8.0, 64.0, 1e3, 1e5, 1e7, 1e9])
    out = rdp._compute_rdp_repeat_and_select(orders, np.full(orders.size, run.epsilon), mean, eta)
    assert out[-1] <= eps_total * (1 + 1e-6)
    assert out[-1] >= eps_total * (1 - 1e-6)  # the calibration uses the whole budget
    # claiming half the budget is refused by the same bound
    out2 = rdp._compute_rdp_repeat_and_select(orders, np.full(orders.size, 2 * run.epsilon), mean,
                                              eta)
    assert out2.min() > eps_total


def _exact_selection_loss(eta, gamma, eps, L=10):
    """Max privacy loss of best-of-K selection, computed exactly for a toy.

    Two candidates, drawn uniformly per run; candidate j's score is
    ``clip(mu_j + Z, 0, L)`` with Z two-sided geometric, ``P(Z = z) ∝
    e^(-eps |z|)``: an exactly eps-DP run when every ``mu_j`` moves by at
    most 1 (clipping is post-processing). The output is the best run (score,
    then a uniform tie-break, which is what the first-of-ties rule of the
    search has the law of). Its law, summing over the number of runs:
    ``P(out = (j, s)) = sum_k P(K = k) (F(s)^k - F(s-1)^k) q(j, s) / q(s)``.
    Returns the max |log ratio| over all outputs and all neighbouring
    score vectors ``mu, mu'`` in {0..L}^2 with ``|mu - mu'|_inf <= 1``.
    """
    import itertools

    a = math.exp(-eps)
    c = (1 - a) / (1 + a)
    s = np.arange(L + 1)
    ks = np.arange(1, 6_000)  # P(K >= 6000) < 1e-20 for gamma = 0.01
    pk = _tnb_pmf(eta, gamma, ks)
    assert pk.sum() > 1 - 1e-12

    def score_pmf(mu):
        p = c * a ** np.abs(s - mu)
        p[0], p[L] = c * a**mu / (1 - a), c * a ** (L - mu) / (1 - a)
        return p

    def out_law(mu):
        q = 0.5 * np.array([score_pmf(m) for m in mu])  # (candidate, score)
        marg = q.sum(axis=0)
        F = np.cumsum(marg)
        Fm = np.concatenate([[0.0], F[:-1]])
        pmax = (pk[None, :] * (F[:, None] ** ks[None, :] - Fm[:, None] ** ks[None, :])).sum(axis=1)
        return pmax[None, :] * q / marg[None, :]

    laws = {mu: np.log(out_law(mu)) for mu in itertools.product(range(L + 1), repeat=2)}
    worst = 0.0
    for (m0, m1), logp in laws.items():
        for d0, d1 in itertools.product((-1, 0, 1), repeat=2):
            other = laws.get((m0 + d0, m1 + d1))
            if other is not None:
                worst = max(worst, float(np.max(np.abs(logp - other))))
    return worst


@pytest.mark.parametrize("eta", [0.0, 0.5, 1.0])
def test_negative_binomial_selection_exact_privacy_loss(eta):
    eps_run = 0.5
    loss = _exact_selection_loss(eta, 0.01, eps_run)
    # the claimed (2 + eta) eps_run holds exactly on the toy ...
    assert loss <= (2 + eta) * eps_run * (1 + 1e-9)
    # ... and is nearly attained: half of it (a calibration claiming half) fails
    assert loss > (2 + eta) * eps_run / 2
    assert loss > 0.9 * (2 + eta) * eps_run


def test_sparse_input_selects_like_dense():
    """CSR input goes through the search (indexable, sparse fits and predictions)."""
    import scipy.sparse as sp

    from skdp import PrivateOLS

    rng = np.random.default_rng(0)
    X = sp.random(3000, 40, density=0.05, format="csr", random_state=0)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = (sp.diags(1.0 / np.maximum(norms, 1.0)) @ X).tocsr()
    y = np.clip(X @ rng.standard_normal(40) / 3.0, -1.0, 1.0)

    def neg_sq(est, Xv, yv):
        return -(est.predict(Xv) - yv) ** 2

    def search(data):
        return PrivateGridSearchCV(
            PrivateOLS(data_norm=1.0, label_bound=1.0, delta=0.0), {"fit_intercept": [True, False]},
            epsilon=1.0, delta=0.0, scoring=neg_sq, score_bounds=(-4.0, 0.0), refit=True,
            random_state=0).fit(data, y)

    sparse_fit, dense_fit = search(X), search(X.toarray())
    assert sparse_fit.best_params_ == dense_fit.best_params_
    pred = sparse_fit.predict(X[:5])
    assert pred.shape == (5,)
    np.testing.assert_allclose(pred, dense_fit.predict(X[:5].toarray()), rtol=1e-4, atol=1e-4)


def test_search_splits_row_indexed_fit_params_and_checks_them_before_the_charge():
    """sample_weight (length n) reaches each run restricted to its training rows and the refit
    whole; a wrong length is a public error raised before anything is charged."""
    import skdp
    from skdp.linear_model import PrivateLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)) / 3
    y = (X[:, 0] > 0).astype(int)
    led = skdp.BudgetLedger(10.0, 1e-3)
    est = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1])
    search = PrivateGridSearchCV(est, {"C": [0.1, 1.0]}, epsilon=1.0, accountant=led,
                                 random_state=0)
    with pytest.raises(ValueError, match="one entry per row"):
        search.fit(X, y, sample_weight=np.ones(399))
    assert led.spent.epsilon == 0 and not hasattr(search, "best_estimator_")
    search.fit(X, y, sample_weight=np.linspace(0.5, 1.0, 400))
    assert led.spent.epsilon == pytest.approx(1.0)
    assert search.best_estimator_.coef_.shape == (1, 3)


def test_search_refuses_an_inferred_norm_range():
    """PrivateRowNormScaler's norm_range=None (inferred from the data) is refused like the
    other bounds, before the charge."""
    import skdp
    from sklearn.pipeline import make_pipeline

    from skdp.linear_model import PrivateLogisticRegression
    from skdp.preprocessing import PrivateRowNormScaler

    X, y = _data(n=200)
    led = skdp.BudgetLedger(10.0, 1e-3)
    pipe = make_pipeline(PrivateRowNormScaler(epsilon=0.1),
                         PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]))
    search = PrivateGridSearchCV(pipe, {"privatelogisticregression__C": [1.0]}, epsilon=1.0,
                                 accountant=led, random_state=0)
    with pytest.raises(ValueError, match="norm_range"):
        search.fit(X, y)
    assert led.spent.epsilon == 0


def test_search_structural_errors_come_before_the_charge():
    """A 1-D X or a y of the wrong length is public: refused before the search charges."""
    import skdp
    from skdp.linear_model import PrivateLogisticRegression

    X, y = _data(n=200)
    led = skdp.BudgetLedger(10.0, 1e-3)
    search = PrivateGridSearchCV(PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]),
                                 {"C": [1.0]}, epsilon=1.0, accountant=led, random_state=0)
    for Xb, yb, match in ((X[:, 0], y, "2D"), (X, y[:-1], "inconsistent numbers of samples")):
        with pytest.raises(ValueError, match=match):
            search.fit(Xb, yb)
    assert len(led.spends) == 0 and not hasattr(search, "best_estimator_")


@pytest.mark.parametrize("kind", ["int", "generator", "random_state"])
def test_search_clones_on_one_ledger_never_share_noise(kind):
    """clone deep-copies a Generator / RandomState seed: the search's root sequence mixes the
    ledger's serial into every kind of seed, so two clones on one ledger differ (split, runs,
    score noise and refit)."""
    from sklearn.base import clone

    import skdp
    from skdp.linear_model import PrivateLogisticRegression

    X, y = _data(n=400)
    seed = {"int": 3, "generator": np.random.default_rng(3),
            "random_state": np.random.RandomState(3)}[kind]
    led = skdp.BudgetLedger(20.0, 1e-2)
    base = PrivateGridSearchCV(PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]),
                               {"C": [0.1, 1.0]}, epsilon=1.0, accountant=led, random_state=seed)
    a, b = clone(base).fit(X, y), clone(base).fit(X, y)
    assert not np.array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)
    assert a.best_score_ != b.best_score_


# ----------------------------------------------------------------------
# which steps are private: skdp estimators, reached through compositions that fit each once
# ----------------------------------------------------------------------
def _wrappers():
    from sklearn.ensemble import BaggingClassifier
    from sklearn.multiclass import OneVsRestClassifier

    return [
        ("ovr", lambda: OneVsRestClassifier(DPMeanClassifier())),
        ("bagging", lambda: BaggingClassifier(DPMeanClassifier(), n_estimators=3)),
        ("ovr in a pipeline", lambda: make_pipeline(
            FunctionTransformer(), OneVsRestClassifier(DPMeanClassifier()))),
    ]


@pytest.mark.parametrize("name, make", _wrappers(), ids=[w[0] for w in _wrappers()])
def test_search_refuses_a_private_estimator_inside_another_wrapper_before_the_charge(name, make):
    """OneVsRestClassifier fits its estimator once per class on the same rows: a search that
    gave it one share of the budget spent n_classes shares. Refused before anything is charged
    or read; search_cost and fit_cost refuse it too."""
    from skdp.model_selection import fit_cost

    ledger = BudgetLedger(10.0)
    search = PrivateGridSearchCV(make(), {}, epsilon=1.0, accountant=ledger)
    with pytest.raises(TypeError, match="several times"):
        search.fit(_Poison(), _Poison((40,)))
    assert ledger.spends == [] and not hasattr(search, "privacy_spent_")
    X, y = _data(n=60)
    with pytest.raises(TypeError, match="several times"):
        search_cost(GridSearchCV(make(), {}, cv=2), X, y)
    with pytest.raises(TypeError, match="several times"):
        fit_cost(make(), 60)


def test_non_private_parameters_named_epsilon_are_not_budgets():
    """SVR's epsilon (the width of its insensitive tube) is neither priced nor overwritten."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_union
    from sklearn.svm import SVR

    from skdp.model_selection import fit_cost
    from skdp.model_selection._search import _with_budget

    pipe = make_pipeline(DPMeanCentering(epsilon=0.3, delta=1e-6), SVR(epsilon=0.1))
    assert fit_cost(pipe, 100) == PrivacyBudget(0.3, 1e-6)
    run = _with_budget(pipe, 1.0, 1e-5)
    assert run.named_steps["svr"].epsilon == 0.1
    assert run.named_steps["dpmeancentering"].epsilon == 1.0
    assert run.named_steps["dpmeancentering"].delta == 1e-5
    # private steps inside a column transformer (and its remainder) and a feature union count
    ct = ColumnTransformer([("a", DPMeanCentering(epsilon=0.2), [0])],
                           remainder=DPMeanCentering(epsilon=0.3))
    both = make_pipeline(make_union(ct, DPMeanCentering(epsilon=0.5)), DPMeanClassifier())
    assert fit_cost(both, 100).epsilon == pytest.approx(0.2 + 0.3 + 0.5 + 1.0)
    shared = _with_budget(both, 2.0, 0.0)
    eps = [v for k, v in shared.get_params(deep=True).items() if k.endswith("__epsilon")]
    assert eps == [0.5] * 4


# ----------------------------------------------------------------------
# non-private steps must fit nothing from the data
# ----------------------------------------------------------------------
def _learning_steps():
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import MinMaxScaler, StandardScaler

    return [
        ("standard scaler", lambda: make_pipeline(StandardScaler(), DPMeanClassifier()), {},
         "StandardScaler"),
        ("min-max in a column transformer", lambda: make_pipeline(
            ColumnTransformer([("m", MinMaxScaler(), [0])], remainder="passthrough"),
            DPMeanClassifier()), {}, "MinMaxScaler"),
        ("non-private final step", lambda: make_pipeline(DPMeanCentering(), LogisticRegression()),
         {}, "LogisticRegression"),
        ("inverse check", lambda: make_pipeline(FunctionTransformer(np.log1p, np.expm1),
                                                DPMeanClassifier()), {}, "check_inverse"),
        ("put in by the grid", lambda: make_pipeline(FunctionTransformer(), DPMeanClassifier()),
         {"functiontransformer": ["passthrough", StandardScaler()]}, "StandardScaler"),
    ]


@pytest.mark.parametrize("name, make, grid, match", _learning_steps(),
                         ids=[c[0] for c in _learning_steps()])
def test_search_refuses_non_private_steps_that_learn_before_the_charge(name, make, grid, match):
    """A StandardScaler fitted inside a run keeps the private training rows' mean and scale
    (released with the model), and through them every record moves every transformed row,
    which the private step's sensitivity analysis does not allow for."""
    ledger = BudgetLedger(10.0)
    search = PrivateGridSearchCV(make(), grid, epsilon=1.0, strategy="exhaustive",
                                 accountant=ledger)
    with pytest.raises(TypeError, match=match) as info:
        search.fit(_Poison(), _Poison((40,)))
    assert "skdp.preprocessing" in str(info.value) and "FrozenEstimator" in str(info.value)
    assert ledger.spends == [] and not hasattr(search, "privacy_spent_")


def test_search_accepts_steps_that_fit_nothing():
    from sklearn.frozen import FrozenEstimator
    from sklearn.preprocessing import Normalizer, StandardScaler

    X, y = _data(n=400)
    public = np.random.default_rng(9).normal(size=(50, 3))
    ledger = BudgetLedger(10.0)
    pipe = make_pipeline(
        FrozenEstimator(StandardScaler().fit(public)),  # fitted on public data, then frozen
        FunctionTransformer(np.tanh, np.arctanh, check_inverse=False),
        "passthrough", Normalizer(), DPMeanClassifier())
    search = PrivateGridSearchCV(pipe, {"dpmeanclassifier__bias": [0.0, 0.1]}, epsilon=1.0,
                                 strategy="exhaustive", accountant=ledger, random_state=0)
    search.fit(X, y)
    assert ledger.spent.epsilon == pytest.approx(1.0)
    assert search.best_estimator_.steps[0][1].estimator.mean_ is not None


def test_a_step_put_in_by_the_grid_gets_the_run_budget():
    """A grid point that replaces a step with a private estimator: the new step is a private
    step of the run, with its share of the run budget and no ledger of its own; the ledger it
    carried is the search's, charged once with the total (it had been bypassed: review 23)."""
    X, y = _data(n=400)
    own = BudgetLedger(100.0)
    pipe = make_pipeline(DPMeanCentering(), DPMeanClassifier())
    grid = {"dpmeancentering": [DPMeanCentering(epsilon=5.0, accountant=own)]}
    search = PrivateGridSearchCV(pipe, grid, epsilon=1.0, strategy="exhaustive",
                                 random_state=0).fit(X, y)
    step = search.best_estimator_.named_steps["dpmeancentering"]
    assert step.epsilon == pytest.approx(0.5) and step.privacy_spent_.epsilon == pytest.approx(0.5)
    assert step.accountant is None
    assert len(own.spends) == 1 and own.spent.epsilon == pytest.approx(1.0)


# ----------------------------------------------------------------------
# search_cost of randomized searches and of delta=None under other splitters
# ----------------------------------------------------------------------
def _ols(ledger, **kw):
    from skdp import PrivateOLS

    return PrivateOLS(**{"method": "ssp", "epsilon": 1.0, "delta": 1e-6, "data_norm": 1.0,
                         "label_bound": 2.0, "accountant": ledger, **kw})


def _reg_data(n=200):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(n, 2)) / 2
    return X, X @ [1.0, -1.0]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_search_cost_of_a_randomized_search_is_what_it_spends():
    """An int random_state: search_cost draws the search's own candidates (a distribution over
    epsilon priced exactly). None or a RandomState: refused when the candidates' costs differ
    (the RandomState is not advanced), exact when every candidate costs the same."""
    from scipy.stats import loguniform, uniform
    from sklearn.model_selection import RandomizedSearchCV

    X, y = _reg_data()

    def search(rs, dists, ledger=None):
        return RandomizedSearchCV(_ols(ledger), dists, n_iter=3, cv=2, error_score="raise",
                                  random_state=rs, refit=False)  # the refit's winner is data

    for rs, dists in [(7, {"epsilon": uniform(0.1, 5.0)}),
                      (None, {"fit_intercept": [True, False], "epsilon": [1.0]}),
                      (np.random.RandomState(0), {"data_norm": loguniform(0.5, 2.0)})]:
        ledger = BudgetLedger(1e6, 0.5, composition="basic")
        price = search_cost(search(rs, dists), X, y)
        search(rs, dists, ledger).fit(X, y)
        assert price.epsilon == pytest.approx(ledger.spent_basic.epsilon, rel=1e-12), rs
        assert price.delta == pytest.approx(ledger.spent_basic.delta, rel=1e-12), rs
    for rs in (None, np.random.RandomState(0)):
        for dists in ({"epsilon": uniform(0.1, 5.0)}, {"epsilon": [0.5, 1.0]}):
            state = rs.get_state()[1].copy() if rs is not None else None
            with pytest.raises(ValueError, match="int random_state"):
                search_cost(search(rs, dists), X, y)
            if rs is not None:  # the user's generator is left where it was
                np.testing.assert_array_equal(rs.get_state()[1], state)


@pytest.mark.parametrize("cv_name", ["timeseries", "shuffle", "stratified", "explicit",
                                     "repeated_stratified"])
def test_search_cost_with_delta_none_covers_every_splitter(cv_name):
    """delta=None is 1 / n_train^2 per fit: priced from the smallest training set of the
    actual splits (TimeSeriesSplit and ShuffleSplit(train_size) train on far fewer rows than
    k-fold), never below what the search spends."""
    from sklearn.model_selection import (RepeatedStratifiedKFold, ShuffleSplit, StratifiedKFold,
                                         TimeSeriesSplit)

    X, y = _reg_data()
    cv = {"timeseries": TimeSeriesSplit(5),
          "shuffle": ShuffleSplit(2, train_size=0.1, random_state=np.random.RandomState(0)),
          "stratified": StratifiedKFold(3),
          "explicit": [(np.arange(30), np.arange(30, 200)), (np.arange(50, 200), np.arange(50))],
          "repeated_stratified": RepeatedStratifiedKFold(n_splits=3, n_repeats=2, random_state=0),
          }[cv_name]
    yy = (y > 0).astype(int) if "stratified" in cv_name else y
    ledger = BudgetLedger(1e6, 0.5, composition="basic")
    price = search_cost(GridSearchCV(_ols(None, delta=None), {"fit_intercept": [True]}, cv=cv),
                        X, yy)
    GridSearchCV(_ols(ledger, delta=None), {"fit_intercept": [True]}, cv=cv,
                 error_score="raise").fit(X, yy)
    spent = ledger.spent_basic
    assert price.epsilon == pytest.approx(spent.epsilon)
    assert spent.delta <= price.delta * (1 + 1e-12)
    if cv_name == "shuffle":  # training sets of one size: exact
        assert price.delta == pytest.approx(spent.delta, rel=1e-12)


def test_stratified_folds_have_k_fold_sizes_whatever_the_labels():
    """search_cost prices StratifiedKFold as KFold without reading y: the fold sizes agree."""
    from sklearn.model_selection import KFold, StratifiedKFold

    rng = np.random.default_rng(0)
    for n, k in [(101, 3), (250, 7), (64, 5)]:
        for p in (0.5, 0.1):
            y = (rng.random(n) < p).astype(int)
            y[:k] = 1
            y[k:2 * k] = 0
            strat = sorted(len(tr) for tr, _ in StratifiedKFold(k, shuffle=True,
                                                                random_state=1).split(y, y))
            plain = sorted(len(tr) for tr, _ in KFold(k).split(y))
            assert strat == plain


def test_search_cost_refuses_delta_none_with_group_splits():
    from sklearn.model_selection import GroupKFold

    X, y = _reg_data()
    gs = GridSearchCV(_ols(None, delta=None), {"fit_intercept": [True]}, cv=GroupKFold(2))
    with pytest.raises(ValueError, match="explicit delta"):
        search_cost(gs, X, y, groups=np.arange(200) % 5)
    # an explicit delta needs no training size: priced
    gs.set_params(estimator__delta=1e-6)
    assert search_cost(gs, X, y, groups=np.arange(200) % 5).delta == pytest.approx(3e-6)


def test_search_run_errors_carry_no_value_and_y_structure_comes_first():
    """An allowed stateless step validates the private rows with scikit-learn's messages, which
    quote a bad cell: the search re-raises them without values. A y with two columns for a
    single-output estimator is refused before the charge."""
    from sklearn.preprocessing import Normalizer

    from skdp import PrivateLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)).astype(object)
    X[5, 1] = "SSN 123-45-6789"
    y = (rng.normal(size=400) > 0).astype(int)
    est = make_pipeline(Normalizer(), PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]))
    search = PrivateGridSearchCV(est, {"privatelogisticregression__C": [0.1, 1.0]}, epsilon=1.0,
                                 random_state=0)
    with pytest.raises(ValueError) as exc:
        search.fit(X, y)
    assert "SSN" not in str(exc.value) and exc.value.__context__ is None
    assert exc.value.__cause__ is None
    ledger = BudgetLedger(10.0, 1e-3)
    search = PrivateGridSearchCV(PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]),
                                 {"C": [0.1, 1.0]}, epsilon=1.0, accountant=ledger, random_state=0)
    with pytest.raises(ValueError, match="1d array"):
        search.fit(rng.normal(size=(400, 3)), np.c_[y, y])
    assert ledger.spends == []


def test_search_validation_scoring_carries_no_value():
    """Scoring the validation rows re-validates them in an allowed stateless step, whose
    message may quote a cell: re-raised without values (the fit's errors already were)."""
    from skdp import PrivateLogisticRegression

    calls = []

    def func(A):  # a row-wise step that, on the validation rows, fails quoting a "cell"
        calls.append(len(A))
        if len(calls) > 1:
            raise ValueError("could not convert string to float: 'SECRET-4711'")
        return A

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)) / 3
    y = (X[:, 0] > 0).astype(int)
    est = make_pipeline(FunctionTransformer(func),
                        PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]))
    search = PrivateGridSearchCV(est, {}, epsilon=1.0, strategy="exhaustive", random_state=0)
    with pytest.raises(ValueError) as exc:
        search.fit(X, y)
    assert len(calls) == 2  # the failure came from scoring the validation rows
    assert "SECRET" not in str(exc.value) and exc.value.__context__ is None


def test_search_checks_a_pipelines_target_structure_before_the_charge():
    """A Pipeline's own tags do not say that its final step needs one target column: the
    search reads the final step's, so a two-column or missing y is refused before the charge."""
    from skdp import PrivateOLS

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) / 3
    y = X[:, 0]
    est = make_pipeline(FunctionTransformer(), PrivateOLS(data_norm=1.0, label_bound=1.0))
    for bad_y, match in ((np.c_[y, y], "1d array"), (None, "requires y")):
        ledger = BudgetLedger(10.0, 1e-3)
        search = PrivateGridSearchCV(est, {}, epsilon=1.0, delta=1e-6, strategy="exhaustive",
                                     accountant=ledger, random_state=0,
                                     scoring=lambda m, Xv, yv: -(m.predict(Xv) - yv) ** 2,
                                     score_bounds=(-4.0, 0.0))
        with pytest.raises(ValueError, match=match):
            search.fit(X, bad_y)
        assert ledger.spends == []


class _SeedRecorder(DPMeanClassifier):
    """Records the ``random_state`` each charged fit is given (the search sets it for the fit;
    the search's dry runs stop at the charge and are not recorded)."""

    seen = []

    def _start_fit(self, *args, **kwargs):
        out = super()._start_fit(*args, **kwargs)
        type(self).seen.append(self.random_state)
        return out


@pytest.mark.parametrize("strategy", ["exhaustive", "negative_binomial"])
def test_search_gives_runs_and_refit_full_entropy_generators(strategy):
    """A 31-bit int seed per run (the former hand-over) lets an attacker try every seed against
    a published model and recover its noise, and from it a record; each private step now gets
    a Generator built on its own child of the search's 128-bit root sequence, and keeps no seed
    after the fit."""
    X, y = _data(n=400)
    _SeedRecorder.seen = []
    search = PrivateGridSearchCV(_SeedRecorder(), GRID, epsilon=1.0, strategy=strategy,
                                 refit=True).fit(X, y)
    seen = _SeedRecorder.seen
    assert len(seen) >= 2  # runs and the refit
    assert all(isinstance(s, np.random.Generator) for s in seen)
    keys = [s.bit_generator.seed_seq for s in seen]
    # children of one root whose entropy is the OS's 128 bits, each its own spawn key
    assert len({k.spawn_key for k in keys}) == len(keys)
    assert all(isinstance(k.entropy, int) and k.entropy.bit_length() > 64 for k in keys)
    assert search.best_estimator_.random_state is None


def test_random_state_instance_hands_on_more_than_32_bits():
    """A RandomState seed gave the fit default_rng(one 32-bit draw): 2^32 trial fits recover an
    OS-seeded RandomState's noise. It now contributes four 63-bit words (seed_entropy)."""
    from skdp._validation import check_generator

    rs = np.random.RandomState(7)
    twin = np.random.RandomState(7)
    entropy = check_generator(rs).bit_generator.seed_seq.entropy
    assert isinstance(entropy, list) and len(entropy) == 4
    assert entropy == [int(v) for v in twin.randint(0, 2**63, size=4, dtype=np.int64)]
    # still reproducible from the same RandomState seed
    a = check_generator(np.random.RandomState(7)).integers(0, 2**62, size=3)
    b = check_generator(np.random.RandomState(7)).integers(0, 2**62, size=3)
    np.testing.assert_array_equal(a, b)


class _WarnsEachFit(DPMeanClassifier):
    def fit(self, X, y):  # warns after its charge (a warning before it is public: the search
        import warnings  # shows those once, for every candidate)

        out = super().fit(X, y)
        warnings.warn(f"a warning of the grid point bias={self.bias}", UserWarning)
        return out


@pytest.mark.parametrize("strategy", ["random_stopping", "negative_binomial", "exhaustive"])
def test_search_withholds_run_warnings(strategy):
    """One warning per run would count the secret number of runs K (and which appear would tell
    which grid points ran), and an allowed non-private step may warn on private values (review
    16: OneHotEncoder with drop meeting an unknown category): the runs' and the refit's
    warnings are withheld in every strategy."""
    import warnings

    X, y = _data(n=400)
    for seed in range(3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            PrivateGridSearchCV(_WarnsEachFit(), GRID, epsilon=1.0, strategy=strategy,
                                refit=True, random_state=seed).fit(X, y)
        assert not [w for w in caught if "a warning of the grid point" in str(w.message)]


def test_one_hot_encoder_warning_on_unknown_categories_is_withheld():
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"a": rng.uniform(-0.5, 0.5, n), "c": rng.choice(["x", "y"], n)})
    y = (df["a"] > 0).astype(int).to_numpy()
    shown = []
    for value in ("x", "unknown"):  # D, and a neighbour with a category outside the list
        d = df.copy()
        d.loc[0, "c"] = value
        pre = ColumnTransformer([("cat", OneHotEncoder(categories=[["x", "y"]], drop="first",
                                                       handle_unknown="ignore",
                                                       sparse_output=False), ["c"]),
                                 ("num", "passthrough", ["a"])], sparse_threshold=0)
        pipe = Pipeline([("pre", pre), ("clf", PrivateLogisticRegression(
            data_norm=np.sqrt(1.25), classes=[0, 1]))])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            PrivateGridSearchCV(pipe, {"clf__C": [0.1, 1.0]}, epsilon=1.0, strategy="exhaustive",
                                refit=True, random_state=0).fit(d, y)
        shown.append(sorted({str(w.message)[:40] for w in caught}))
    assert shown[0] == shown[1]


def _ledger_search(est, grid, **kw):
    ledger = BudgetLedger(10.0, 1e-3)
    mse = lambda e, X, y: -(e.predict(X) - y) ** 2  # noqa: E731
    search = PrivateGridSearchCV(est, grid, epsilon=1.0, delta=1e-4, strategy="exhaustive",
                                 scoring=mse, score_bounds=(-4, 0), accountant=ledger, **kw)
    return search, ledger


def _reg_data_5(n=400):
    rng = np.random.default_rng(0)
    return rng.uniform(-1, 1, (n, 5)) / 3, rng.uniform(-1, 1, n)


def test_search_checks_every_private_step_before_the_charge_with_its_own_message():
    """A private step after the first one of a Pipeline was checked without the feature count,
    and one inside a ColumnTransformer not at all, so their public errors came after the whole
    total was charged, masked as "X failed validation" (review 9, F3)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    from skdp import PrivateOLS
    from skdp.preprocessing import PrivateRowNormScaler, PrivateStandardScaler

    X, y = _reg_data_5()
    cases = [
        (Pipeline([("rn", PrivateRowNormScaler(norm_range=(0.01, 10.0))),
                   ("ols", PrivateOLS(method="sketch", sketch_size=3, data_norm=1.0,
                                      label_bound=1.0))]), "sketch_size=3 must be >="),
        (Pipeline([("ct", ColumnTransformer([("sc", PrivateStandardScaler(
            bounds=([-1] * 3, [1] * 3)), [0, 1])], remainder="passthrough")),
                   ("ols", PrivateOLS(method="ssp", data_norm=3.0, label_bound=1.0))]),
         r"shape \(n_features,\) = \(2,\)"),
    ]
    for est, match in cases:
        search, ledger = _ledger_search(est, {"ols__chunk_size": [100, 200]})
        with pytest.raises(ValueError, match=match):
            search.fit(X, y)
        assert ledger.spends == []


def test_search_run_errors_after_the_charge_keep_their_structure_not_their_values():
    """After the charge a run's error is re-raised without values but keeps the phrase naming
    the input's structure and which input (y here); a step's own message quoting a cell is
    withheld. (Passing private steps' messages through unmasked leaked: an error raised by numpy
    inside a private fit quotes a cell, review 10.)"""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer

    from skdp import PrivateOLS

    X, y = _reg_data_5()
    y = y.copy()
    y[7] = np.nan  # private data: found after the charge
    # refit: the NaN row is read by a fit whichever part of the split it falls in
    search, ledger = _ledger_search(PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0),
                                    {"chunk_size": [100, 200]}, refit=True)
    with pytest.raises(ValueError, match="Input y contains NaN") as err:
        search.fit(X, y)
    assert "withheld" not in str(err.value)
    assert len(ledger.spends) == 1

    def boom(A):
        raise ValueError(f"secret cell {A[0, 0]!r}")

    pipe = Pipeline([("f", FunctionTransformer(boom)),
                     ("ols", PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0))])
    search, _ = _ledger_search(pipe, {"ols__chunk_size": [100, 200]})
    with pytest.raises(ValueError, match="withheld") as err:
        search.fit(X, np.nan_to_num(y))
    assert "secret" not in str(err.value)


def test_search_checks_fit_parameters_before_the_charge():
    """Fit parameters the estimator's fit cannot take are decided by its signature (review 9)."""
    from sklearn.pipeline import Pipeline

    from skdp import PrivateOLS

    X, y = _reg_data_5()
    w = np.ones(len(y))
    pipe = Pipeline([("ols", PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0))])
    for est, kw, exc, match in [
        (pipe, {"sample_weight": w}, ValueError, "does not name a step"),
        (pipe, {"ols__sample_weights": w}, TypeError, "takes no fit parameter 'sample_weights'"),
        (PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0), {"sample_weights": w},
         TypeError, "takes no fit parameter 'sample_weights'"),
    ]:
        grid = {"ols__chunk_size": [100]} if est is pipe else {"chunk_size": [100]}
        search, ledger = _ledger_search(est, grid)
        with pytest.raises(exc, match=match):
            search.fit(X, y, **kw)
        assert ledger.spends == []
    search, ledger = _ledger_search(pipe, {"ols__chunk_size": [100]})
    search.fit(X, y, ols__sample_weight=w)  # the accepted form fits
    assert len(ledger.spends) == 1


def test_search_score_noise_is_calibrated_before_the_charge():
    """The score's Laplace calibration reads public inputs only: an epsilon too small for it is
    refused before anything is charged (review 9, F8)."""
    from skdp import PrivateOLS

    X, y = _reg_data_5()
    ledger = BudgetLedger(10.0, 1e-3)
    mse = lambda e, X, y: -(e.predict(X) - y) ** 2  # noqa: E731
    search = PrivateGridSearchCV(PrivateOLS(method="adassp", data_norm=1.0, label_bound=1.0),
                                 {"chunk_size": [100, 200]}, epsilon=4e-12, delta=2e-4,
                                 strategy="exhaustive", scoring=mse, score_bounds=(-4, 0),
                                 accountant=ledger)
    with pytest.raises(ValueError, match="too small"):
        search.fit(X, y)
    assert ledger.spends == []


def test_search_does_not_demand_a_bound_the_route_never_reads():
    """PrivateOLS(method="mean") reads no feature and needs no data_norm (review 9, F7)."""
    from skdp import PrivateOLS

    X, y = _reg_data_5()
    search, ledger = _ledger_search(PrivateOLS(method="mean", label_bound=1.0),
                                    {"chunk_size": [100, 200]})
    search.fit(X, y)
    assert search.best_estimator_.data_norm_ is None
    search, _ = _ledger_search(PrivateOLS(method="ssp", label_bound=1.0), {"chunk_size": [100]})
    with pytest.raises(ValueError, match="'data_norm' of the estimator is None"):
        search.fit(X, y)


def test_search_runs_each_candidates_precharge_part_before_its_own_charge():
    """What a private fit decides from public inputs before its charge (an epsilon too small for
    the samplers, a sketch without a floating-point-safe release) was decided by the runs after
    the search had charged its total (review 9, F8); the search now runs that part of the fit
    (a dry run stopped at the charge) for every candidate first."""
    from sklearn.pipeline import Pipeline

    from skdp import PrivateOLS, PrivateRandomProjection

    X, y = _reg_data_5()
    search, ledger = _ledger_search(PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0),
                                    {"chunk_size": [100, 200]})
    search.set_params(epsilon=1e-10)
    with pytest.raises(ValueError, match="too small"):
        search.fit(X, y)
    assert ledger.spends == []
    pipe = Pipeline([("ols", PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0))])
    search, ledger = _ledger_search(pipe, {"ols__chunk_size": [100, 200]})
    search.set_params(epsilon=1e-10)
    with pytest.raises(ValueError, match="too small"):
        search.fit(X, y)
    assert ledger.spends == []
    # the sketch's release is decided before the charge: no grid release at d = 300, delta 1e-12
    Xw = np.random.default_rng(1).uniform(-1, 1, (2000, 300)) / 40
    ledger = BudgetLedger(10.0, 1e-3)
    search = PrivateGridSearchCV(PrivateRandomProjection(data_norm=1.0),
                                 {"n_components": [2, 3]}, epsilon=1.0, delta=2e-12,
                                 strategy="exhaustive", scoring=lambda e, X, y: np.zeros(len(X)),
                                 score_bounds=(-1, 0), accountant=ledger)
    with pytest.raises(ValueError, match="no floating-point-safe release of the sketch"):
        search.fit(Xw, np.zeros(2000))
    assert ledger.spends == []
    # a search that can fit still fits, once charged
    search, ledger = _ledger_search(PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0),
                                    {"chunk_size": [100, 200]})
    search.fit(X, y)
    assert len(ledger.spends) == 1


def test_search_over_a_transformer_with_a_per_row_scoring():
    """y=None (a transformer searched with its own per-row score) raised a TypeError after the
    charge: the score's length was checked against len(y)."""
    from skdp import PrivatePCA

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 6)) * [3, 2, 1, 0.2, 0.2, 0.2]
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()

    def recon(est, Xv, yv):
        return -np.sum((Xv - est.inverse_transform(est.transform(Xv))) ** 2, axis=1)

    ledger = BudgetLedger(10.0, 1e-3)
    search = PrivateGridSearchCV(PrivatePCA(data_norm=1.0), {"n_components": [1, 3]},
                                 epsilon=2.0, delta=1e-5, strategy="exhaustive", scoring=recon,
                                 score_bounds=(-4, 0), accountant=ledger, random_state=0)
    search.fit(X)
    assert len(ledger.spends) == 1
    assert search.best_params_ in ({"n_components": 1}, {"n_components": 3})
    assert search.transform(X).shape[0] == 2000


def test_accuracy_scoring_without_predict_or_labels_is_refused_before_the_charge():
    """The default scoring compares predictions with y: a transformer, or no y, failed only in
    the first run, after the total was charged."""
    from skdp import PrivatePCA

    X, y = _data(n=400)
    for est, args in [(PrivatePCA(data_norm=1.0), (X,)), (DPMeanClassifier(), (X, None))]:
        ledger = BudgetLedger(10.0, 1e-3)
        grid = {"n_components": [1, 2]} if isinstance(est, PrivatePCA) else GRID
        with pytest.raises(ValueError, match="scoring='accuracy'|requires y"):
            PrivateGridSearchCV(est, grid, epsilon=1.0, delta=1e-5, strategy="exhaustive",
                                accountant=ledger).fit(*args)
        assert ledger.spends == []


def test_accuracy_scoring_of_a_regressor_is_refused_before_the_charge():
    """With a regressor every accuracy is about 0: the search selected on the score's noise
    (review 15)."""
    from skdp import PrivateOLS

    X, y = _data(n=400)
    ledger = BudgetLedger(10.0, 1e-3)
    with pytest.raises(ValueError, match="is a regressor"):
        PrivateGridSearchCV(PrivateOLS(data_norm=1.0, label_bound=1.0),
                            {"method": ["ssp", "adassp"]}, epsilon=1.0, delta=1e-5,
                            strategy="exhaustive", accountant=ledger).fit(X, y.astype(float))
    assert ledger.spends == []


class _QuotesACell(DPMeanClassifier):
    """A private estimator whose fit, after its charge, raises an error quoting a cell (as
    numpy's conversion errors do inside a fit)."""

    def fit(self, X, y):
        from skdp.base import private_fit

        @private_fit
        def inner(self, X, y):
            self._start_fit(*public_shape(X))
            raise ValueError(f"could not use the value {float(np.asarray(X)[0, 0])!r}")

        return inner(self, X, y)


def test_search_masks_errors_of_private_fits_after_the_charge():
    """A private fit's error is not value-free merely because it crossed a private fit: errors
    raised by numpy, dask or scikit-learn inside it quote cells. The search re-raises every run's
    error without values (review 10, F1/F2: a tag set by private_fit let them through)."""
    X, y = _data(n=400)
    X[:, 0] = 0.123456789
    with pytest.raises(ValueError) as err:
        PrivateGridSearchCV(_QuotesACell(), GRID, epsilon=1.0, strategy="exhaustive").fit(X, y)
    assert "0.123456" not in str(err.value) and "withheld" in str(err.value)
    assert err.value.__cause__ is None and err.value.__context__ is None


def test_search_scoring_output_conversion_carries_no_value():
    """A scoring callable returning a label by mistake: numpy's conversion error quoted it, a
    validation row's private label (review 10, F13)."""
    X, y = _data(n=400)
    labels = np.where(y == 1, "HIV+", "HIV-")

    def bad(est, Xv, yv):
        return np.where(est.predict(Xv) == yv, "1.0", yv)

    with pytest.raises(ValueError) as err:
        PrivateGridSearchCV(DPMeanClassifier(), GRID, epsilon=1.0, strategy="exhaustive",
                            scoring=bad, score_bounds=(0, 1)).fit(X, labels)
    assert "HIV" not in str(err.value)


def _search_on(est, grid, **kw):
    ledger = BudgetLedger(10.0, 1e-3)
    kw = {"epsilon": 2.0, "delta": 1e-6, "strategy": "exhaustive", "random_state": 0, **kw}
    return PrivateGridSearchCV(est, grid, accountant=ledger, **kw), ledger


def test_search_prechecks_reach_every_private_step(monkeypatch):
    """Review 10: public refusals of private steps that are not the search's input (after a
    Normalizer, after a PCA whose n_components fixes the width, a ColumnTransformer's remainder)
    and a delta-needing step under pure runs came after the charge; a label slice and a
    FeatureUnion crashed the search; fit parameters for a ColumnTransformer passed the check."""
    pd = pytest.importorskip("pandas")
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline
    from sklearn.preprocessing import Normalizer

    from skdp import PrivateLogisticRegression, PrivatePCA, PrivateRandomProjection
    from skdp.preprocessing import PrivateStandardScaler
    import skdp.mechanisms.ndis as ndis

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(-0.5, 0.5, size=(400, 4)), columns=list("abcd"))
    y = (X["a"] > 0).astype(int).to_numpy()
    clf = PrivateLogisticRegression(data_norm=3.0, classes=[0, 1])
    refusals = [
        # a step after a PCA of public output width 2: RP(n_components=3) cannot fit 2 columns
        (Pipeline([("p", PrivatePCA(n_components=2, data_norm=1.0)),
                   ("r", PrivateRandomProjection(n_components=3, data_norm=3.0)),
                   ("c", clf)]), {}, "n_components=3 must be <= n_features=2"),
        # a ColumnTransformer's remainder (2 columns left)
        (Pipeline([("ct", ColumnTransformer([("s", PrivateStandardScaler(bounds=(-1, 1)),
                                              ["a", "b"])],
                                            remainder=PrivatePCA(n_components=3, data_norm=1.0))),
                   ("c", clf)]), {}, "n_components=3 must be at most n_features=2"),
        # pure runs (negative_binomial) and a step that needs delta > 0, not first
        (Pipeline([("n", Normalizer()), ("r", PrivateRandomProjection(n_components=2,
                                                                      data_norm=1.0)),
                   ("c", clf)]), {"strategy": "negative_binomial", "delta": 0.0},
         "needs delta > 0"),
    ]
    for est, kw, match in refusals:
        search, ledger = _search_on(est, {"c__C": [0.5, 1.0]}, **kw)
        with pytest.raises(ValueError, match=match):
            search.fit(X, y)
        assert ledger.spends == [], match
    # what the step decides before its own charge (the sketch's release), after a Normalizer:
    # the dry run on a stand-in of the public width
    with monkeypatch.context() as m:
        m.setattr(ndis, "grid_sketch_plan", lambda *a, **k: None)  # no grid release anywhere
        search, ledger = _search_on(
            Pipeline([("n", Normalizer()), ("r", PrivateRandomProjection(n_components=2,
                                                                         data_norm=1.0)),
                      ("c", clf)]), {"c__C": [0.5, 1.0]})
        with pytest.raises(ValueError, match="no floating-point-safe release"):
            search.fit(X, y)
        assert ledger.spends == []
    # fit parameters for a ColumnTransformer without metadata routing
    ct = Pipeline([("ct", ColumnTransformer([("s", PrivateStandardScaler(bounds=(-1, 1)),
                                              ["a", "b"])])), ("c", clf)])
    search, ledger = _search_on(ct, {"c__C": [1.0]})
    with pytest.raises(ValueError, match="would go to a ColumnTransformer"):
        search.fit(X, y, ct__s__sample_weight=np.ones(400))
    assert ledger.spends == []
    # a label slice and a FeatureUnion: searched, not crashed
    for est in [
        Pipeline([("ct", ColumnTransformer([("s", PrivateStandardScaler(bounds=(-1, 1)),
                                             slice("a", "c"))])), ("c", clf)]),
        Pipeline([("u", FeatureUnion([("s", PrivateStandardScaler(bounds=(-1, 1))),
                                      ("p", PrivatePCA(n_components=2, data_norm=1.0))])),
                  ("c", clf)]),
    ]:
        search, ledger = _search_on(est, {"c__C": [1.0]})
        search.fit(X, y)
        assert len(ledger.spends) == 1


def test_zero_dimensional_sample_weight_is_a_scalar():
    """A 0-d array weight is one setting, checked before the charge like a scalar (review 10)."""
    from skdp import PrivateLogisticRegression

    X, y = _data(n=300)
    ledger = BudgetLedger(10.0, 1e-3)
    est = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], accountant=ledger)
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        est.fit(X, y, sample_weight=np.array(1.5))
    assert ledger.spends == []
    est.fit(X, y, sample_weight=np.array(0.5))
    assert len(ledger.spends) == 1


def test_search_releases_no_generator_in_fitted_column_transformer_members():
    """A ColumnTransformer fits clones of its members; the run's Generator stayed on the fitted
    clones (transformers_), and rewinding it recovered the private statistic (review 11, A)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    from skdp.preprocessing import PrivateStandardScaler

    X, y = _data(n=400)
    pipe = Pipeline([("ct", ColumnTransformer([("s", PrivateStandardScaler(bounds=(-1, 1)),
                                                [0, 1])],
                                              remainder=PrivateStandardScaler(bounds=(-1, 1)))),
                     ("c", DPMeanClassifier())])
    for refit in (False, True):
        search = PrivateGridSearchCV(pipe, {"c__bias": [0.0, 0.1]}, epsilon=1.0,
                                     strategy="exhaustive", refit=refit).fit(X, y)
        from skdp.base import _estimators_in

        seen, todo, ids = [], [search.best_estimator_], set()
        while todo:  # every estimator reachable through parameters and fitted attributes
            obj = todo.pop()
            if id(obj) in ids:
                continue
            ids.add(id(obj))
            seen.append(obj)
            todo.extend(e for v in list(obj.get_params(deep=False).values())
                        + list(vars(obj).values()) for e in _estimators_in(v))
        scalers = [o for o in seen if isinstance(o, PrivateStandardScaler) and hasattr(o, "mean_")]
        assert len(scalers) >= 2  # the fitted member and the fitted remainder
        assert all(o.random_state is None for o in seen if hasattr(o, "random_state"))


class _RecordsDryRunInput(DPMeanClassifier):
    """Records what a fit stopped at its charge was given."""

    given = []

    def _start_fit(self, *args, **kwargs):
        from skdp._ledger import _Capture  # the accountant that stops a dry run at its charge

        if isinstance(self.accountant, _Capture):
            type(self).given.append(self._dry_input)
        return super()._start_fit(*args, **kwargs)

    def fit(self, X, y, sample_weight=None):
        self._dry_input = (X, y, sample_weight)
        return super().fit(X.toarray() if hasattr(X, "toarray") else X, y)

    def decision_function(self, X):
        return super().decision_function(X.toarray() if hasattr(X, "toarray") else X)


def test_search_dry_runs_are_given_no_value_of_the_data():
    """The dry run gave a step the search's real first rows; a step that makes no charge ran to
    the end on them before the search's charge (review 11, B/B2). It gets zeros of the input's
    structure (in no memory), also for y and the weights; a sparse input a sparse stand-in."""
    import scipy.sparse as sparse

    X, y = _data(n=400)
    w = np.full(400, 0.7)
    for Xin in (X, sparse.csr_matrix(X)):
        _RecordsDryRunInput.given = []
        PrivateGridSearchCV(_RecordsDryRunInput(), GRID, epsilon=1.0, strategy="exhaustive",
                            refit=True).fit(Xin, y, sample_weight=w)
        given = _RecordsDryRunInput.given
        assert len(given) == 2 * len(GRID["bias"])  # every candidate, for the runs and the refit
        for Xs, ys, ws in given:
            assert sparse.issparse(Xs) == sparse.issparse(Xin)
            assert (Xs.nnz == 0) if sparse.issparse(Xs) else (Xs.strides == (0, 0) and not Xs.any())
            assert ys.strides == (0,) and not ys.any()
            assert ws.strides == (0,) and np.all(ws == 0.5)
        assert {Xs.shape for Xs, _, _ in given} == {(300, 3), (400, 3)}


def test_search_masks_every_exception_type_of_its_runs():
    """An allowed FunctionTransformer's table lookup raised an IndexError quoting a private value,
    which escaped the search unmasked (only ValueError and TypeError were; review 11, D)."""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer

    X, y = _data(n=400)
    table = np.zeros(100)

    def lookup(A):
        return A + table[np.asarray(A[:, 0] * 1e4, dtype=int) % 100 + 4343]

    pipe = Pipeline([("f", FunctionTransformer(lookup)), ("c", DPMeanClassifier())])
    with pytest.raises(ValueError) as err:
        PrivateGridSearchCV(pipe, {"c__bias": [0.0]}, epsilon=1.0,
                            strategy="exhaustive").fit(X, y)
    assert "IndexError" in str(err.value) and "43" not in str(err.value)


def test_search_column_transformer_columns_checked_and_counted_from_the_structure():
    """Columns a ColumnTransformer selects that the input does not have are refused before the
    charge (review 11, G); repeated or negative positions are counted as the transformer does
    (K: a set undercounted them and refused valid pipelines)."""
    pd = pytest.importorskip("pandas")
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    from skdp import PrivatePCA

    rng = np.random.default_rng(0)
    Xa = rng.uniform(-0.5, 0.5, (400, 4))
    y = (Xa[:, 0] > 0).astype(int)
    Xf = pd.DataFrame(Xa, columns=list("abcd"))
    clf = DPMeanClassifier(data_norm=3.0)
    for Xin, cols in [(Xa, [0, 7]), (Xf, ["a", "z"]), (Xa, ["a", "b"])]:
        pipe = Pipeline([("ct", ColumnTransformer([("p", PrivatePCA(n_components=1,
                                                                   data_norm=1.0), cols)])),
                         ("c", clf)])
        search, ledger = _search_on(pipe, {"c__bias": [0.0]})
        with pytest.raises(ValueError, match="ColumnTransformer selects the columns"):
            search.fit(Xin, y)
        assert ledger.spends == []
    for cols, remainder, k in [([0, 0], "drop", 2), ([-1], PrivatePCA(n_components=3,
                                                                      data_norm=1.0), 1)]:
        pipe = Pipeline([("ct", ColumnTransformer([("p", PrivatePCA(n_components=k,
                                                                   data_norm=1.0), cols)],
                                                  remainder=remainder)), ("c", clf)])
        search, ledger = _search_on(pipe, {"c__bias": [0.0]})
        search.fit(Xa, y)
        assert len(ledger.spends) == 1


def test_search_fits_extensions_without_an_accountant_and_dask_input():
    """The dry run needs the step's accountant parameter (an extension without one is simply not
    dry-run, review 11, I), and is given numpy-structured zeros where the runs get numpy rows (a
    dask input was given to it as is, and PrivateLogisticRegression refused it: J)."""
    da = pytest.importorskip("dask.array")
    from skdp import PrivateLogisticRegression

    class NoAccountant(DPMeanClassifier):
        _parameter_constraints = {k: v for k, v in DPMeanClassifier._parameter_constraints.items()
                                  if k != "accountant"}

        def __init__(self, epsilon=1.0, delta=0.0, data_norm=1.0, bias=0.0, random_state=None):
            super().__init__(epsilon=epsilon, delta=delta, data_norm=data_norm, bias=bias,
                             random_state=random_state)
            del self.accountant

    X, y = _data(n=400)
    PrivateGridSearchCV(NoAccountant(), GRID, epsilon=1.0, strategy="exhaustive").fit(X, y)
    search = PrivateGridSearchCV(PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]),
                                 {"C": [1.0]}, epsilon=1.0, strategy="exhaustive")
    search.fit(da.from_array(X, chunks=(100, 3)), y)
    assert search.best_estimator_.coef_.shape == (1, 3)


def test_randomised_searches_in_threads_keep_their_run_warnings_hidden():
    """The runs' warnings are hidden with the process-wide filters; a second search in another
    thread restored them mid-loop and the runs' warnings, one per run, reached the user (review
    11, E). The searches now hold one lock while they change the filters."""
    import threading
    import warnings

    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer

    X, y = _data(n=300)
    seen = []

    def marked(A):
        warnings.warn("run-marker", UserWarning)
        return A

    stop = threading.Event()

    def other():  # another search
        while not stop.is_set():
            PrivateGridSearchCV(DPMeanClassifier(), {"bias": [0.0]}, epsilon=0.1,
                                strategy="exhaustive").fit(X, y)

    def idiom():  # the everyday idiom of code that is not skdp's (review 12)
        while not stop.is_set():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                np.ones(3).sum()

    pipe = Pipeline([("f", FunctionTransformer(marked)), ("c", DPMeanClassifier())])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=other), threading.Thread(target=idiom)]
        for t in threads:
            t.start()
        try:
            for seed in range(3):
                PrivateGridSearchCV(pipe, {"c__bias": [0.0, 0.1]}, epsilon=1.0,
                                    strategy="random_stopping", stopping_probability=0.1,
                                    random_state=seed).fit(X, y)
        finally:
            stop.set()
            for t in threads:
                t.join()
        seen = [w for w in caught if "run-marker" in str(w.message)]
    assert seen == []


def test_search_refuses_dask_dataframes_before_reading_them_and_leaves_frozen_steps_alone():
    """A dask DataFrame cannot be split by position: the search charged, then failed in the split,
    after computing its partitions for the row count (review 12). A FrozenEstimator is shared
    with the caller by clone: the search cleared its (public) seed on the caller's object."""
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    from sklearn.frozen import FrozenEstimator
    from sklearn.pipeline import Pipeline
    from sklearn.random_projection import GaussianRandomProjection

    X, y = _data(n=400)
    ledger = BudgetLedger(10.0, 1e-3)
    ddf = dd.from_pandas(pd.DataFrame(X, columns=list("abc")), npartitions=4)
    with pytest.raises(TypeError, match="dask DataFrame cannot be split"):
        PrivateGridSearchCV(DPMeanClassifier(), GRID, epsilon=1.0, strategy="exhaustive",
                            accountant=ledger).fit(ddf, y)
    assert ledger.spends == []
    grp = GaussianRandomProjection(n_components=3, random_state=7).fit(X)
    pipe = Pipeline([("f", FrozenEstimator(grp)), ("c", DPMeanClassifier())])
    PrivateGridSearchCV(pipe, {"c__bias": [0.0, 0.1]}, epsilon=1.0,
                        strategy="exhaustive").fit(X, y)
    assert grp.random_state == 7


def test_search_checks_allowed_non_private_steps_before_the_charge():
    """An allowed non-private step's refusal of the input's structure (FunctionTransformer with
    validate=True given sparse rows; a frozen public model given another width) came after the
    charge, and with such a step in the grid of a randomised search whether the search raised
    depended on K (review 12). A frozen encoder is checked by its width only (zeros would be
    unknown categories)."""
    import scipy.sparse as sparse
    from sklearn.compose import ColumnTransformer
    from sklearn.frozen import FrozenEstimator
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(400, 4))
    y = (X[:, 0] > 0).astype(int)
    cases = [
        (Pipeline([("f", FunctionTransformer(validate=True)), ("c", DPMeanClassifier())]),
         {"c__bias": [0.0]}, sparse.csr_matrix(X), TypeError, "dense data is required"),
        (Pipeline([("f", FrozenEstimator(StandardScaler().fit(rng.normal(size=(50, 5))))),
                   ("c", DPMeanClassifier())]), {"c__bias": [0.0]}, X, ValueError,
         "X has 4 features, but StandardScaler is expecting 5"),
        (Pipeline([("f", "passthrough"), ("c", DPMeanClassifier())]),
         {"f": [FunctionTransformer(validate=True), "passthrough"]}, sparse.csr_matrix(X),
         TypeError, "dense data is required"),
    ]
    for est, grid, Xin, exc, match in cases:
        for strategy in ("exhaustive", "random_stopping"):
            search, ledger = _search_on(est, grid, strategy=strategy, delta=0.0)
            with pytest.raises(exc, match=match):
                search.fit(Xin, y)
            assert ledger.spends == []
    # a frozen public encoder of a categorical column: not run on zeros, fits
    cats = np.array([["a"], ["b"], ["c"]])
    Xc = np.concatenate([X[:, :2].astype(object), rng.choice(["a", "b", "c"], (400, 1))], axis=1)
    pipe = Pipeline([("ct", ColumnTransformer([
        ("oh", FrozenEstimator(OneHotEncoder(sparse_output=False,
                                             handle_unknown="ignore").fit(cats)), [2]),
        ("num", "passthrough", [0, 1])])), ("c", DPMeanClassifier(data_norm=2.0))])
    search, ledger = _search_on(pipe, {"c__bias": [0.0]})
    search.fit(Xc, y)
    assert len(ledger.spends) == 1


@pytest.mark.parametrize("setting", ["memory", "verbose"])
def test_pipeline_memory_and_verbose_are_refused_before_the_charge(setting, tmp_path):
    """review 13: memory cached every run's fitted steps with their generator on disk (the
    noise could be rewound), and verbose printed one line per step per run (counting K)."""
    from sklearn.pipeline import Pipeline

    X, y = _data(n=400)
    kw = {"memory": str(tmp_path)} if setting == "memory" else {"verbose": True}
    pipe = Pipeline([("norm", Normalizer()),
                     ("clf", PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]))], **kw)
    ledger = BudgetLedger(10.0, 1e-3)
    with pytest.raises(TypeError, match=f"{setting} set"):
        PrivateGridSearchCV(pipe, {"clf__C": [0.1, 1.0]}, epsilon=1.0, accountant=ledger,
                            random_state=0).fit(X, y)
    assert ledger.spends == []
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("strategy", ["negative_binomial", "random_stopping", "exhaustive"])
def test_randomised_search_warns_once_about_unverified_mechanisms(strategy):
    """review 13: the randomised strategies withhold the runs' warnings, and with them the
    PrivacyGuaranteeWarning of an unverified mechanism chosen by name."""
    from skdp import PrivacyGuaranteeWarning

    X, y = _data(n=400)
    est = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], perturbation="output",
                                    mechanism="laplace_continuous")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PrivateGridSearchCV(est, {"C": [0.1, 1.0, 10.0]}, epsilon=1.0, strategy=strategy,
                            random_state=0).fit(X, y)
    unverified = [w for w in caught if issubclass(w.category, PrivacyGuaranteeWarning)]
    assert len(unverified) == 1 and "NOT verified" in str(unverified[0].message)
    # a verified setting: no such warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PrivateGridSearchCV(clone(est).set_params(mechanism="auto"), {"C": [0.1, 1.0, 10.0]},
                            epsilon=1.0, strategy=strategy, random_state=0).fit(X, y)
    assert not [w for w in caught if issubclass(w.category, PrivacyGuaranteeWarning)]


def test_search_cost_refuses_halving_searches_and_bootstrap_splits():
    """review 13: a halving search was priced as n_candidates x n_splits (charged 40 fits,
    priced 28), and a bootstrap split's repeated record as one record."""
    from sklearn.experimental import enable_halving_search_cv  # noqa: F401
    from sklearn.model_selection import HalvingGridSearchCV

    from skdp import PrivateOLS

    X, y = _data(n=400)
    est = PrivateLogisticRegression(epsilon=0.1, delta=1e-6, data_norm=1.0, classes=[0, 1])
    with pytest.raises(TypeError, match="HalvingGridSearchCV"):
        search_cost(HalvingGridSearchCV(est, {"C": [0.1, 1.0, 10.0]}, cv=3), X, y)
    boot = [(np.r_[np.arange(1, 300), [0, 0, 0, 0]], np.arange(300, 400))]
    with pytest.raises(ValueError, match="repeats training rows"):
        search_cost(GridSearchCV(est, {"C": [0.1, 1.0]}, cv=boot), X, y)
    ok = [(np.arange(0, 300), np.arange(300, 400))]
    assert search_cost(GridSearchCV(est, {"C": [0.1, 1.0]}, cv=ok), X, y).epsilon == pytest.approx(0.3)

    class BootstrapCV:  # review 16: a splitter object yielding the same bootstrap
        def get_n_splits(self, X=None, y=None, groups=None):
            return 1

        def split(self, X, y=None, groups=None):
            yield from boot

    with pytest.raises(ValueError, match="repeats training rows"):
        search_cost(GridSearchCV(est, {"C": [0.1, 1.0]}, cv=BootstrapCV()), X, y)
    mask = np.zeros(400, bool)  # boolean masks, which GridSearchCV accepts
    mask[:300] = True
    assert search_cost(GridSearchCV(est, {"C": [0.1, 1.0]}, cv=[(mask, ~mask)]),
                       X, y).epsilon == pytest.approx(0.3)
    ols = PrivateOLS(epsilon=0.1, delta=None, data_norm=1.0, label_bound=1.0)
    assert search_cost(GridSearchCV(ols, {"method": ["ssp"]}, cv=[(mask, ~mask)], refit=False),
                       X, y.astype(float)).delta == pytest.approx(1 / 300**2)


def test_width_after_a_function_transformer_is_known_before_the_charge():
    """review 13: after FunctionTransformer(func) the next step's width was unknown, so
    PrivatePCA(n_components=5) on 3 columns raised after the charge, when a run picked it."""
    from skdp import PrivatePCA

    X, _ = _data(n=400)
    pipe = make_pipeline(FunctionTransformer(np.abs), PrivatePCA(data_norm=1.0))
    scoring = dict(scoring=lambda est, X, y: np.zeros(len(X)), score_bounds=(0.0, 1.0))
    for seed in range(4):
        ledger = BudgetLedger(10.0, 1e-3)
        with pytest.raises(ValueError, match="n_components=5"):
            PrivateGridSearchCV(pipe, {"privatepca__n_components": [2, 5]}, epsilon=1.0,
                                delta=1e-5, refit=True, accountant=ledger, random_state=seed,
                                **scoring).fit(X)
        assert ledger.spends == []


def test_one_hot_encoder_with_public_categories_is_allowed():
    """review 15: the docs' recipe, OneHotEncoder(categories=[...]), learns nothing from the
    data but was refused by the search and flagged by for_release."""
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    from skdp import PrivacyLeakWarning, PrivatePCA, for_release

    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({"a": rng.uniform(-0.5, 0.5, n), "c": rng.choice(["x", "y", "z"], n)})
    y = ((df["a"] > 0) ^ (df["c"] == "z")).astype(int).to_numpy()
    cats = [["x", "y", "z"]]

    def pipe(enc, last=None):
        pre = ColumnTransformer([("cat", enc, ["c"]), ("num", "passthrough", ["a"])])
        last = last or PrivateLogisticRegression(data_norm=np.sqrt(1.25), classes=[0, 1])
        return Pipeline([("pre", pre), ("clf", last)])

    enc = OneHotEncoder(categories=cats, handle_unknown="ignore", sparse_output=False)
    search = PrivateGridSearchCV(pipe(enc), {"clf__C": [0.1, 1.0]}, epsilon=1.0,
                                 random_state=0).fit(df, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        for_release(search)
    # refused: categories learned from the data, infrequent categories, unknown ones raising
    for bad in (OneHotEncoder(handle_unknown="ignore"),
                OneHotEncoder(categories=cats, handle_unknown="ignore", min_frequency=5),
                OneHotEncoder(categories=cats)):
        with pytest.raises(TypeError, match="OneHotEncoder"):
            PrivateGridSearchCV(pipe(bad), {"clf__C": [0.1]}, epsilon=1.0).fit(df, y)
    # its output width is public: a projection wider than 3 + 1 - 1 columns is refused before
    ledger = BudgetLedger(10.0, 1e-3)
    proj = PrivatePCA(data_norm=1.5)
    scoring = dict(scoring=lambda est, X, y: np.zeros(len(X)), score_bounds=(0.0, 1.0))
    with pytest.raises(ValueError, match="n_components=4"):
        PrivateGridSearchCV(pipe(OneHotEncoder(categories=cats, handle_unknown="ignore",
                                               drop="first", sparse_output=False), proj),
                            {"clf__n_components": [2, 4]}, epsilon=1.0, delta=1e-5,
                            strategy="exhaustive", accountant=ledger, **scoring).fit(df)
    # a sparse member under the default sparse_threshold: the output's format (and the next
    # step's calibration) would follow the density of the data (unknown categories count)
    with pytest.raises(ValueError, match="sparse_threshold"):
        PrivateGridSearchCV(pipe(OneHotEncoder(categories=cats, handle_unknown="ignore"), proj),
                            {"clf__n_components": [2]}, epsilon=1.0, delta=1e-5,
                            strategy="exhaustive", accountant=ledger, **scoring).fit(df)
    assert ledger.spends == []


def test_a_pure_run_refusal_names_the_search_strategy():
    """review 15: a candidate needing delta in a randomised search was refused with the inner
    estimator's 'give delta > 0', which the search's next error then contradicted."""
    from skdp import PrivateOLS

    X, y = _data(n=400)
    scoring = dict(scoring=lambda est, X, y: np.zeros(len(X)), score_bounds=(0.0, 1.0))
    with pytest.raises(ValueError, match="runs every candidate with delta=0"):
        PrivateGridSearchCV(PrivateOLS(data_norm=1.0, label_bound=1.0),
                            {"method": ["ssp", "adassp"]}, epsilon=1.0, **scoring).fit(
                                X, y.astype(float))


def test_column_transformer_format_check_and_widths_through_a_feature_union():
    """review 16: a ColumnTransformer inside a FeatureUnion skipped the sparse_threshold check,
    and a FeatureUnion's output width was unknown (a public error came after the charge)."""
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline
    from sklearn.preprocessing import OneHotEncoder

    from skdp import PrivatePCA

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.uniform(0.1, 0.5, 300), "c": rng.choice(["x", "y"], 300)})
    score = dict(scoring=lambda est, X, y: np.zeros(len(X)), score_bounds=(0.0, 1.0))
    ct = ColumnTransformer([("cat", OneHotEncoder(categories=[["x", "y"]],
                                                  handle_unknown="ignore"), ["c"]),
                            ("num", "passthrough", ["a"])])
    ledger = BudgetLedger(10.0, 1e-3)
    with pytest.raises(ValueError, match="sparse_threshold"):
        PrivateGridSearchCV(Pipeline([("u", FeatureUnion([("ct", ct)])),
                                      ("p", PrivatePCA(data_norm=1.5))]),
                            {"p__n_components": [1]}, epsilon=1.0, delta=1e-6,
                            strategy="exhaustive", accountant=ledger, **score).fit(df)
    X = rng.uniform(-0.5, 0.5, (300, 3))
    with pytest.raises(ValueError, match="n_components=7"):
        PrivateGridSearchCV(Pipeline([("u", FeatureUnion([("n", Normalizer()),
                                                          ("m", Normalizer())])),
                                      ("p", PrivatePCA(data_norm=2.0))]),
                            {"p__n_components": [2, 7]}, epsilon=1.0, delta=1e-6,
                            strategy="exhaustive", accountant=ledger, **score).fit(X)
    assert ledger.spends == []


def test_a_callable_column_selector_is_refused_but_make_column_selector_is_allowed():
    """review 16: a callable selector reads the data, and the released model's shape followed
    it (components_ (1, 3) on D, (1, 2) on a neighbour)."""
    import pandas as pd
    from sklearn.compose import ColumnTransformer, make_column_selector
    from sklearn.pipeline import Pipeline

    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.uniform(-0.3, 0.3, (300, 3)), columns=["a", "b", "c"])
    y = (df["a"] > 0).astype(int).to_numpy()
    clf = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1])

    def pipe(cols):
        return Pipeline([("ct", ColumnTransformer([("num", "passthrough", cols)])),
                         ("clf", clf)])

    with pytest.raises(TypeError, match="callable"):
        PrivateGridSearchCV(pipe(lambda X: [c for c in X.columns if X[c].max() > 0.29]),
                            {"clf__C": [0.1]}, epsilon=1.0).fit(df, y)
    PrivateGridSearchCV(pipe(make_column_selector(dtype_include="number")), {"clf__C": [0.1]},
                        epsilon=1.0).fit(df, y)


def test_frozen_output_format_and_encoder_settings_are_checked_before_the_charge():
    """review 16: a frozen KBinsDiscretizer(encode='onehot') outputs CSR, guessed dense, so a
    centring scaler after it raised after the charge; an allowed OneHotEncoder's own refusals
    (unsorted numeric categories, a drop value not listed) came after the charge too."""
    from sklearn.frozen import FrozenEstimator
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import KBinsDiscretizer, OneHotEncoder

    from skdp.preprocessing import PrivateStandardScaler

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 1))
    y = (X[:, 0] > 0).astype(int)
    kb = FrozenEstimator(KBinsDiscretizer(n_bins=3, encode="onehot").fit(
        np.linspace(-1, 1, 30)[:, None]))
    clf = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1])
    ledger = BudgetLedger(10.0, 1e-3)
    with pytest.raises(ValueError, match="Cannot center sparse"):
        PrivateGridSearchCV(Pipeline([("kb", kb), ("sc", PrivateStandardScaler(bounds=(0, 1))),
                                      ("clf", clf)]), {"clf__C": [0.1]}, epsilon=1.0,
                            accountant=ledger).fit(X, y)
    for enc, match in [(OneHotEncoder(categories=[[3.0, 1.0, 2.0]], handle_unknown="ignore"),
                        "Unsorted"),
                       (OneHotEncoder(categories=[[1.0, 2.0]], drop=[4.0],
                                      handle_unknown="ignore"), "supposed to be dropped")]:
        with pytest.raises(ValueError, match=match):
            PrivateGridSearchCV(Pipeline([("enc", enc), ("clf", clf)]), {"clf__C": [0.1]},
                                epsilon=1.0, accountant=ledger).fit(X, y)
    assert ledger.spends == []


def test_lowered_C_warning_is_shown_by_the_search_before_the_charge():
    """review 17: the search withheld the runs' warnings, and with them the objective route's
    'C was lowered' (public: n, epsilon, the shape), so a grid over C compared identical models
    in silence."""
    X, y = _data(n=400)
    est = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], perturbation="objective")
    with pytest.warns(UserWarning, match="above what objective perturbation allows"):
        PrivateGridSearchCV(est, {"C": [1.0, 100.0]}, epsilon=1.0, random_state=0).fit(X, y)



def test_a_frozen_encoder_that_raises_on_unknown_categories_is_refused():
    """review 17: a frozen OneHotEncoder with handle_unknown='error' made the search raise after
    its charge exactly when a record held an unknown category."""
    from sklearn.frozen import FrozenEstimator
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    enc = OneHotEncoder(sparse_output=False).fit(np.array([[0.0], [1.0], [2.0]]))
    pipe = Pipeline([("enc", FrozenEstimator(enc)),
                     ("clf", PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]))])
    X = np.random.default_rng(0).integers(0, 3, (300, 1)).astype(float)
    ledger = BudgetLedger(10.0, 1e-3)
    with pytest.raises(TypeError, match="handle_unknown='ignore'"):
        PrivateGridSearchCV(pipe, {"clf__C": [0.1]}, epsilon=1.0, accountant=ledger).fit(
            X, (X[:, 0] > 0).astype(int))
    assert ledger.spends == []


def test_an_unledgered_search_shares_no_stream_with_a_fit_given_the_same_seed():
    # review 19, f5: the root of an unledgered seeded search was SeedSequence(seed), so its
    # children (spawn keys (0,) .. (4,)) were the streams of fits given the same seed and
    # charged to a ledger at serials 0 .. 4 (the score noise was serial 3's)
    from skdp._validation import fit_generator
    from skdp.model_selection._search import _search_seed_sequence

    class Spend:
        def __init__(self, serial):
            self.serial = serial

    seed = 5
    fits = [fit_generator(seed, Spend(k)).integers(0, 2**63, 4) for k in range(8)]
    fits.append(fit_generator(seed).integers(0, 2**63, 4))  # no ledger
    root = _search_seed_sequence(seed, None)
    searches = [np.random.default_rng(root).integers(0, 2**63, 4)]
    searches += [np.random.default_rng(c).integers(0, 2**63, 4) for c in root.spawn(5)]
    for a in fits:
        for b in searches:
            assert not np.array_equal(a, b)


def test_search_checks_every_rows_labels_and_weights_whatever_the_split():
    # review 18, F7: the runs checked their training rows only and the scores read the
    # validation rows unchecked, so whether a bad label or weight was refused depended on the
    # split's seed, and the refusal blamed X with the estimator's message withheld
    from skdp.linear_model import PrivateLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)) / 3
    y = (X[:, 0] > 0).astype(int)
    y_bad = y.copy()
    y_bad[3] = 7
    w_bad = np.full(400, 0.5)
    w_bad[3] = 2.0
    for seed in range(6):
        for yy, kw, match in ((y_bad, {}, "y contains labels that are not in the declared"),
                              (y, {"sample_weight": w_bad}, "sample_weight must lie in")):
            search = PrivateGridSearchCV(PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]),
                                         {"C": [0.1, 1.0]}, epsilon=2.0, delta=1e-5,
                                         strategy="exhaustive", random_state=seed)
            with pytest.raises(ValueError, match=match):
                search.fit(X, yy, **kw)


def test_a_ledger_on_an_estimator_the_grid_puts_in_place_is_charged():
    """Review 23, F1: the runs' accountants are removed (the search charges once), so a ledger
    on an estimator given through param_grid had been bypassed: the search fitted, the ledger
    recorded nothing. It is now the search's ledger, as one on the search's estimator is."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) / 3
    y = (X[:, 0] > 0).astype(int)

    def search(ledger, own=None):
        clf = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], accountant=ledger)
        pipe = make_pipeline(Normalizer(), PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]))
        return PrivateGridSearchCV(pipe, {"privatelogisticregression": [clf]}, epsilon=1.0,
                                   accountant=own, random_state=0)

    tiny = BudgetLedger(0.01, 0.0)
    assert not tiny.accepts(search(tiny), X, y)
    with pytest.raises(BudgetExceededError):
        search(tiny).fit(X, y)
    assert tiny.spends == [] and tiny.spent.epsilon == 0
    big = BudgetLedger(10.0, 0.0)
    assert big.accepts(search(big), X, y)
    fitted = search(big).fit(X, y)
    assert len(big.spends) == 1 and big.spent.epsilon == pytest.approx(1.0)
    assert fitted.privacy_spent_.epsilon == pytest.approx(1.0)
    other = BudgetLedger(10.0, 0.0)
    with pytest.raises(ValueError, match="different accountants"):
        search(tiny, own=other).fit(X, y)
    assert other.spends == [] and tiny.spends == []


def test_accepts_agrees_with_the_search_on_grid_ledgers():
    """Review 24, F3: the dry run rewrote the grid to put its probe in, which missed ledgers in
    list-valued grid entries (a false "different accountants"), hid a real one, turned a set
    into a valid grid, and a search inside a Pipeline was charged "nowhere". accepts now asks
    the search's own rule, and agrees with fit in each case."""
    from sklearn.pipeline import Pipeline

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) / 3
    y = (X[:, 0] > 0).astype(int)

    def lr(ledger=None):
        return PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], accountant=ledger)

    def outcome(make, ledger):
        try:
            answer = ledger.accepts(make(), X, y)
        except (ValueError, TypeError) as exc:
            answer = type(exc)
        try:
            make().fit(X, y)
            fitted = True
        except (ValueError, TypeError) as exc:
            fitted = BudgetExceededError if isinstance(exc, BudgetExceededError) else type(exc)
        return answer, fitted

    L = BudgetLedger(10.0, 0.0)  # a list of steps holding a ledgered step
    assert outcome(lambda: PrivateGridSearchCV(
        make_pipeline(Normalizer(), lr()), {"steps": [[("n", Normalizer()), ("clf", lr(L))]]},
        epsilon=1.0, random_state=0), L) == (True, True)
    assert len(L.spends) == 1
    A, B = BudgetLedger(10.0, 0.0), BudgetLedger(10.0, 0.0)  # two ledgers: both refuse
    assert outcome(lambda: PrivateGridSearchCV(
        make_pipeline(Normalizer(), lr()), {"privatelogisticregression": [lr(B)]}, epsilon=1.0,
        accountant=A, random_state=0), A) == (ValueError, ValueError)
    L = BudgetLedger(10.0, 0.0)  # a set is not a grid, for both
    assert outcome(lambda: PrivateGridSearchCV(lr(), {"C": {1.0, 0.1}}, epsilon=1.0,
                                               accountant=L), L) == (TypeError, TypeError)
    T = BudgetLedger(0.01, 0.0)  # a search inside a Pipeline charges its grid's ledger
    assert outcome(lambda: Pipeline([("n", Normalizer()), ("s", PrivateGridSearchCV(
        make_pipeline(Normalizer(), lr()), {"privatelogisticregression": [lr(T)]}, epsilon=1.0,
        random_state=0))]), T) == (False, BudgetExceededError)
    assert T.spends == []


def test_search_scores_a_column_of_labels_row_by_row():
    # review 28, F1: y of shape (n, 1) (or a one-column DataFrame) against the predictions'
    # vector broadcast to an n_val x n_val matrix, whose mean one record moves by 2 / n_val,
    # twice the score's calibrated sensitivity; the scores must equal those of y as a vector
    import pandas as pd

    rng = np.random.default_rng(0)
    X = np.c_[np.abs(rng.normal(size=400)) * 0.5, rng.normal(size=400) * 0.1]
    X[:20, 0] *= -1
    y = (X[:, 0] > 0).astype(int)

    def score(y_in):
        s = PrivateGridSearchCV(PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]),
                                {"C": [0.5, 1.0]}, epsilon=20.0, strategy="exhaustive",
                                random_state=5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return s.fit(X, y_in).cv_results_["noisy_score"]

    ref = score(y)
    for y_col in (y[:, None], pd.DataFrame({"t": y}), y[:, None].tolist()):
        np.testing.assert_array_equal(score(y_col), ref)


def test_exact_coins_and_their_ties():
    # review 26, F3: the run counts' coins are compared with the rational by their first 62
    # bits, vectorised; a tie is decided exactly by the next digits
    from fractions import Fraction

    from skdp.model_selection._search import _all_coins, _coins

    rng = np.random.default_rng(3)
    for p in (Fraction(1, 3), Fraction(2**70 + 1, 2**72), Fraction(0), Fraction(1)):
        freq = _coins(p, 200_000, rng).mean()
        assert abs(freq - float(p)) <= 4.5 * math.sqrt(float(p * (1 - p)) / 200_000) + 1e-12

    p = Fraction(1, 3)
    top = (p.numerator << 62) // p.denominator  # the remaining digits of 1/3 are 1/3 again
    hits = sum(bool(_coins(p, 1, _Fresh(top, s))[0]) for s in range(3000))
    assert abs(hits / 3000 - 1 / 3) < 4.5 * math.sqrt(2 / 9 / 3000)
    assert _all_coins(lambda lv: (lv, lv), 2, rng)  # ratios 1 and 1
    assert not _all_coins(lambda lv: (1, 1) if lv == 1 else (0, 5), 2, rng)  # then 0


class _Fresh:
    """A generator whose first 62-bit word is ``word``, the rest from seed ``seed``."""

    def __init__(self, word, seed):
        self.word, self.rng = word, np.random.default_rng(seed)

    def integers(self, low, high, size, dtype):
        if self.word is not None:
            out, self.word = np.full(size, self.word, dtype=dtype), None
            return out
        return self.rng.integers(low, high, size=size, dtype=dtype)


def test_negative_binomial_runs_at_a_large_mean():
    # review 26, F3: a draw at E[K] = 5000 took 73 s (the acceptance product's numerator and
    # denominator grew with k); its law at a mean of 1000 against scipy's
    from skdp.model_selection import negative_binomial_runs, truncated_negative_binomial_gamma

    eta = 0.5
    gamma = truncated_negative_binomial_gamma(eta, 1000.0)
    rng = np.random.default_rng(2)
    draws = np.array([negative_binomial_runs(eta, gamma, rng) for _ in range(1500)])
    for k0 in (1, 10, 100, 1000):  # P(K <= k0) against the pmf's sum, 4.5 standard errors
        p = float(np.sum(_tnb_pmf(eta, gamma, np.arange(1, k0 + 1))))
        assert abs(np.mean(draws <= k0) - p) < 4.5 * math.sqrt(p * (1 - p) / draws.size), k0


def test_search_cost_prices_the_refit_by_the_largest_epsilon_and_delta():
    # review 29, F1: the refit was priced by the candidate largest in (epsilon, delta) order,
    # which under-priced the delta when the candidates trade one against the other
    X, y = np.zeros((100, 2)), np.arange(100) % 2
    est = PrivateLogisticRegression(epsilon=0.5, delta=1e-6, data_norm=1.0, classes=[0, 1])
    grid = [{"epsilon": [1.0], "delta": [1e-6]}, {"epsilon": [0.5], "delta": [1e-3]}]
    cost = search_cost(GridSearchCV(est, grid, cv=3), X, y)
    assert cost.epsilon == pytest.approx(3 * 1.0 + 3 * 0.5 + 1.0)  # refit at epsilon 1
    assert cost.delta == pytest.approx(3 * 1e-6 + 3 * 1e-3 + 1e-3)  # or at delta 1e-3


def test_a_scikit_learn_scorer_is_refused_before_the_charge():
    # review 27, F2: make_scorer returns one number for all rows: refused only after the charge
    from sklearn.metrics import make_scorer, mean_squared_error

    from skdp import PrivateOLS

    X = np.random.default_rng(0).normal(size=(200, 3)) / 3
    y = np.clip(X[:, 0], -1, 1)
    ledger = BudgetLedger(10.0, 1e-5)
    search = PrivateGridSearchCV(
        PrivateOLS(data_norm=1.0, label_bound=1.0), {"method": ["ssp", "mean"]}, epsilon=1.0,
        delta=1e-6, strategy="exhaustive", score_bounds=(-4, 0), accountant=ledger,
        scoring=make_scorer(mean_squared_error, greater_is_better=False))
    with pytest.raises(ValueError, match="one score per row"):
        search.fit(X, y)
    # review 30, F2: the passthrough and multimetric scorers and bare metrics too
    from sklearn.metrics import check_scoring, mean_absolute_error

    inner = PrivateOLS(data_norm=1.0, label_bound=1.0)
    import functools

    for scoring in (check_scoring(inner), check_scoring(inner, scoring=["r2", "neg_mean_absolute_error"]),
                    mean_absolute_error, functools.partial(mean_absolute_error)):
        with pytest.raises(ValueError, match="one score per row"):
            search.set_params(scoring=scoring).fit(X, y)
    assert ledger.spends == []
    search.set_params(scoring=lambda est, X, y: -(est.predict(X) - y) ** 2)  # the doc's fix
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert search.fit(X, y).cv_results_["noisy_score"].shape == (2,)
    assert len(ledger.spends) == 1


def test_positive_negative_binomial_and_the_tie_path_of_the_acceptance(monkeypatch):
    # review 31: the conditioned proposal against scipy (m = 2, 5), and a tie at a coin far
    # down the acceptance product decided by the exact remainder (an int64 index wrapped)
    from fractions import Fraction

    from scipy import stats

    from skdp.model_selection import _search

    rng = np.random.default_rng(5)
    for m, p in ((2, 0.5), (5, 0.7), (3, 0.97)):
        draws = np.array([_search._positive_negative_binomial(m, Fraction(p), rng)
                          for _ in range(20_000)])
        assert draws.min() >= 1
        for k in (1, 2, 3):
            q = stats.nbinom(m, p).pmf(k) / (1 - p**m)
            assert abs(np.mean(draws == k) - q) < 4.5 * math.sqrt(q * (1 - q) / draws.size)

    e = Fraction(0.3)  # denominator 2^54: l b + a overflows int64 from l = 512
    a, b, m, k, at = e.numerator, e.denominator, 1, 1100, 1000  # coin l = at + 1 ties
    def ratio(lv):
        return lv * b + a, (lv + m) * b

    tops = [(ratio(i + 1)[0] << 62) // ratio(i + 1)[1] for i in range(k - 1)]

    class Words:  # every coin succeeds (word 0) except coin `at`, which ties with its top
        def integers(self, low, high, size, dtype):
            start = self.seen
            self.seen += size
            return np.array([tops[i] if i == at else 0 for i in range(start, start + size)],
                            dtype=dtype)

    words = Words()
    words.seen = 0
    asked = []
    monkeypatch.setattr(_search, "_bernoulli", lambda q, rng: asked.append(q) or True)
    assert _search._all_coins(ratio, k - 1, words)
    exact = (at + 1 + e) / (at + 1 + m) * 2**62 - tops[at]
    assert asked == [exact] and 0 <= exact < 1


def test_an_absurd_stopping_probability_is_refused_before_the_charge():
    # review 26, F3: stopping_probability=1e-300 was accepted, charged, and never finished
    X, y = _data(n=200)
    ledger = BudgetLedger(5.0)
    for strategy in ("random_stopping", "negative_binomial"):
        search = PrivateGridSearchCV(DPMeanClassifier(), GRID, epsilon=1.0, strategy=strategy,
                                     stopping_probability=1e-300, accountant=ledger)
        with pytest.raises(ValueError, match="would not finish"):
            search.fit(X, y)
    assert ledger.spends == []
