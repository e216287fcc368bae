import numpy as np
import pytest

from skdp import PrivacyBudget, compose_advanced
from skdp._validation import check_data_norm, check_epsilon_delta, clip_rows
from skdp.exceptions import PrivacyLeakWarning


@pytest.mark.parametrize("eps", [0, -1, np.nan, np.inf, "a", None])
def test_bad_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon"):
        check_epsilon_delta(eps, 1e-5)


@pytest.mark.parametrize("delta", [-1e-9, 1.0, 2.0, np.nan, None])
def test_bad_delta(delta):
    with pytest.raises(ValueError, match="delta"):
        check_epsilon_delta(1.0, delta)


def test_budget_basic_composition():
    b = PrivacyBudget(0.5, 1e-6) + PrivacyBudget(0.25, 2e-6)
    assert b.epsilon == pytest.approx(0.75)
    assert b.delta == pytest.approx(3e-6)


def test_advanced_composition_closed_form():
    # Dwork & Roth Thm 3.20: eps*sqrt(2k ln(1/d')) + k eps (e^eps - 1)
    eps, k, dp = 0.01, 1000, 1e-6
    expect = eps * np.sqrt(2 * k * np.log(1 / dp)) + k * eps * np.expm1(eps)
    b = compose_advanced(eps, 0.0, k, dp)
    assert b.epsilon == pytest.approx(expect, rel=1e-12)
    assert b.delta == pytest.approx(dp)
    # when advanced is worse, basic is returned
    assert compose_advanced(1.0, 0.0, 2, 1e-6).epsilon == pytest.approx(2.0)


def test_data_norm_inferred_warns_and_clipping():
    X = np.array([[3.0, 4.0], [0.3, 0.4]])
    with pytest.warns(PrivacyLeakWarning):
        assert check_data_norm(X, None) == pytest.approx(5.0)
    Xc = clip_rows(X, 1.0)
    np.testing.assert_allclose(np.linalg.norm(Xc, axis=1), [1.0, 0.5])
    np.testing.assert_allclose(Xc[1], X[1])
    with pytest.raises(ValueError):
        check_data_norm(X, -1.0)


def test_dp_accounting_is_an_extra_named_in_the_error(monkeypatch):
    """dp-accounting (it pins attrs<24) is the optional extra 'dpsgd', named when missing."""
    import sys

    from skdp import _accounting

    monkeypatch.setitem(sys.modules, "dp_accounting", None)  # import raises ImportError
    with pytest.raises(ImportError, match=r"skdp\[dpsgd\]"):
        _accounting.poisson_gaussian_epsilon(1.0, 0.01, 10, 1e-5)
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    from pathlib import Path

    meta = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    assert not any(dep.startswith("dp-accounting") for dep in meta["dependencies"])
    assert any(dep.startswith("dp-accounting") for dep in meta["optional-dependencies"]["dpsgd"])


def test_delta_at_least_one_over_n_warns_before_the_charge():
    # review 15: delta = 0.5 on 1000 rows fitted silently (the docs say delta << 1/n)
    import warnings

    from skdp import BudgetLedger, LargeDeltaWarning, PrivateLogisticRegression

    X = np.random.default_rng(0).uniform(-0.3, 0.3, (1000, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.warns(LargeDeltaWarning, match="at least 1/n"):
        PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], delta=1e-3).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LargeDeltaWarning)
        PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], delta=9e-4).fit(X, y)


def test_warnings_point_at_the_callers_line():
    """Every warning of a fit, a pipeline, a search and for_release names the user's line
    (here: this file), not a line of skdp or of scikit-learn's fit wrappers."""
    import warnings

    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline

    from skdp import for_release
    from skdp.decomposition import PrivatePCA
    from skdp.linear_model import PrivateHuberSVM, PrivateLogisticRegression, PrivateOLS
    from skdp.model_selection import PrivateGridSearchCV
    from skdp.random_projection import PrivateRandomProjection

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(int)
    fits = [
        lambda: PrivateLogisticRegression(C=10.0, perturbation="objective").fit(X, y),
        lambda: PrivateHuberSVM(delta=0.01).fit(X, y),
        lambda: PrivateOLS(method="ls", data_norm=3.0, label_bound=1.0).fit(X, X[:, 0]),
        lambda: PrivateOLS().fit(X, X[:, 0]),
        lambda: PrivatePCA(mechanism="r1smg", epsilon=0.05, data_norm=3.0).fit(X),
        lambda: PrivateRandomProjection(n_components=2).fit(X),
        lambda: make_pipeline(PrivatePCA(n_components=2), PrivateOLS()).fit(X, X[:, 0]),
        lambda: PrivateGridSearchCV(
            PrivateLogisticRegression(data_norm=3.0, classes=[0, 1], perturbation="objective"),
            {"C": [1.0, 1e4]}, epsilon=1.0, delta=0.01, strategy="exhaustive").fit(X, y),
        lambda: for_release(LinearRegression().fit(X, X[:, 0])),
    ]
    for fit in fits:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit()
        assert caught, fit
        for w in caught:
            if issubclass(w.category, (DeprecationWarning, FutureWarning)):
                continue
            assert w.filename == __file__, (w.category.__name__, w.filename, str(w.message)[:80])
