"""PrivateLogisticRegression: scikit-learn API, bad input, budget and behaviour."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.utils.estimator_checks import parametrize_with_checks

from _sklearn_expected import classifier_failures

from skdp.linear_model import PrivateLogisticRegression


@parametrize_with_checks([PrivateLogisticRegression(random_state=0)],
                         expected_failed_checks=classifier_failures)
@pytest.mark.filterwarnings("ignore::skdp.PrivacyLeakWarning")
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _unit_rows(n=3000, d=10, classes=2, seed=0):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=5, n_classes=classes,
                               random_state=seed)
    return X / np.linalg.norm(X, axis=1, keepdims=True), y


@pytest.mark.parametrize("params, match", [
    (dict(epsilon=0.0), "epsilon"),
    (dict(epsilon=-1.0), "epsilon"),
    (dict(delta=1.0), "delta"),
    (dict(C=-1.0), "C"),
    (dict(C=0.0), "C"),
    (dict(data_norm=-1.0), "data_norm"),
    (dict(perturbation="bogus"), "perturbation"),
    (dict(mechanism="nope"), "nope"),
    (dict(tol=0.0), "tol"),
])
def test_bad_parameters(params, match):
    X, y = _unit_rows(n=50)
    with pytest.raises(ValueError, match=match):
        PrivateLogisticRegression(**{**dict(data_norm=1.0), **params}).fit(X, y)


def test_bad_data():
    X, y = _unit_rows(n=50)
    clf = PrivateLogisticRegression(data_norm=1.0)
    with pytest.raises(ValueError, match="class"):
        clf.fit(X, np.zeros(50))
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(Xn, y)
    with pytest.raises(ValueError, match="sample_weight"):
        clf.fit(X, y, sample_weight=np.full(50, 1.5))
    with pytest.raises(ValueError):
        clf.fit(X, y[:-1])


def test_gaussian_objective_needs_delta():
    X, y = _unit_rows(n=50)
    with pytest.raises(ValueError, match="delta"):
        PrivateLogisticRegression(delta=0.0, mechanism="analytic_gaussian",
                                  data_norm=1.0).fit(X, y)


@pytest.mark.parametrize("pert", ["output", "objective", "gradient"])
def test_routes_learn_and_proba(pert):
    X, y = _unit_rows()
    clf = PrivateLogisticRegression(epsilon=2.0, perturbation=pert, data_norm=1.0, C=0.05,
                                    max_iter=100 if pert == "gradient" else 1000,
                                    random_state=0).fit(X, y)
    assert clf.score(X, y) > 0.75
    P = clf.predict_proba(X)
    assert P.shape == (len(X), 2)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.classes_[P.argmax(axis=1)], clf.predict(X))
    assert clf.privacy_spent_.epsilon == 2.0 and clf.privacy_spent_.delta == 1e-5


def test_multiclass_shapes():
    X, y = _unit_rows(classes=3)
    clf = PrivateLogisticRegression(epsilon=2.0, data_norm=1.0, C=0.05, random_state=0).fit(X, y)
    assert clf.coef_.shape == (3, X.shape[1]) and clf.intercept_.shape == (3,)
    assert clf.decision_function(X).shape == (len(X), 3)
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)
    assert clf.score(X, y) > 0.5


def test_random_state_reproducible_and_noise_varies():
    X, y = _unit_rows(n=500)
    a = PrivateLogisticRegression(data_norm=1.0, C=0.1, random_state=1).fit(X, y).coef_
    b = PrivateLogisticRegression(data_norm=1.0, C=0.1, random_state=1).fit(X, y).coef_
    c = PrivateLogisticRegression(data_norm=1.0, C=0.1, random_state=2).fit(X, y).coef_
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_accountant_is_charged_before_data():
    from skdp import BudgetExceededError, PrivacyBudget

    class Ledger:
        def __init__(self, limit):
            self.limit, self.spent = limit, 0.0

        def spend(self, budget, source, description):
            if self.spent + budget.epsilon > self.limit:
                raise BudgetExceededError("over")
            self.spent += budget.epsilon

    X, y = _unit_rows(n=100)
    led = Ledger(1.5)
    clf = PrivateLogisticRegression(epsilon=1.0, data_norm=1.0, accountant=led, random_state=0)
    clf.fit(X, y)
    assert led.spent == 1.0 and clf.privacy_spent_ == PrivacyBudget(1.0, 1e-5)
    with pytest.raises(BudgetExceededError):
        clf.fit(X, np.zeros(100))  # refused before the (bad) data is looked at
    assert led.spent == 1.0


def test_an_explicit_C_lowered_by_the_objective_route_warns():
    # review 15: C = 1, 10, 100 all became C_ = 0.314 at n = 1000 without a word
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (1000, 3))
    y = (X[:, 0] > 0).astype(int)
    kw = dict(data_norm=1.0, classes=[0, 1], perturbation="objective", random_state=0)
    with pytest.warns(UserWarning, match="above what objective perturbation allows"):
        est = PrivateLogisticRegression(C=100.0, **kw).fit(X, y)
    assert est.C_ < 100.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        PrivateLogisticRegression(C=0.01, **kw).fit(X, y)
