"""PrivateOLS: calibration against independent derivations, accuracy, API and bad input."""

import warnings

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp import PrivacyGuaranteeWarning, PrivacyLeakWarning
from skdp.linear_model._ols import PrivateOLS
from skdp.mechanisms.gaussian import analytic_gaussian_sigma
from skdp.mechanisms.ndis import rp_replace_delta


@parametrize_with_checks(
    [PrivateOLS(method="adassp"), PrivateOLS(method="ssp"), PrivateOLS(method="sketch", sketch_size=30)]
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)


def _data(n=20000, d=3, seed=0, noise=0.05):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / np.sqrt(d)
    w = np.linspace(1.0, -1.0, d)
    y = X @ w + 0.3 + noise * rng.standard_normal(n)
    return X, np.clip(y, -2, 2), w


@pytest.mark.parametrize("method", ["adassp", "ssp", "sketch"])
def test_accuracy_large_n(method):
    X, y, w = _data()
    reg = PrivateOLS(method=method, epsilon=2.0, data_norm=1.0, label_bound=2.0, random_state=0).fit(X, y)
    assert np.linalg.norm(reg.coef_ - w) < 0.25
    assert abs(reg.intercept_ - 0.3) < 0.1
    assert reg.score(X, y) > 0.8


def test_ssp_sensitivity_and_spec():
    # independent: Delta_2 = sqrt(2) R^2 with R^2 = 2 data_norm^2 + B^2 (intercept column = data_norm)
    X, y, _ = _data(n=1000)
    reg = PrivateOLS(method="ssp", epsilon=1.0, delta=1e-6, data_norm=1.5, label_bound=2.0, random_state=0).fit(X, y)
    R2 = 2 * 1.5**2 + 2.0**2
    assert reg.noise_spec_.query.l2_bound == pytest.approx(np.sqrt(2) * R2)
    assert reg.noise_spec_.query.shape == (5, 5)
    if reg.noise_spec_.mechanism == "analytic_gaussian":
        assert reg.noise_spec_.params["sigma"] == pytest.approx(analytic_gaussian_sigma(1.0, 1e-6) * np.sqrt(2) * R2)


def test_ssp_sensitivity_is_attained_and_not_exceeded():
    # worst pair z = R e1, z' = R e2: ||upper triangle of zz^T - z'z'^T|| = sqrt(2) R^2; random pairs below
    rng = np.random.default_rng(1)
    R = 1.7
    for _ in range(200):
        z, zp = rng.standard_normal(4), rng.standard_normal(4)
        z *= R / np.linalg.norm(z) * rng.uniform(0, 1) ** 0.1
        zp *= R / np.linalg.norm(zp) * rng.uniform(0, 1) ** 0.1
        D = np.outer(z, z) - np.outer(zp, zp)
        assert np.linalg.norm(D[np.triu_indices(4)]) <= np.sqrt(2) * R**2 + 1e-12
    e1, e2 = R * np.eye(4)[0], R * np.eye(4)[1]
    D = np.outer(e1, e1) - np.outer(e2, e2)
    assert np.linalg.norm(D[np.triu_indices(4)]) == pytest.approx(np.sqrt(2) * R**2)


def test_adassp_budget_split():
    X, y, _ = _data(n=2000)
    reg = PrivateOLS(method="adassp", epsilon=1.5, delta=3e-6, data_norm=1.0, label_bound=2.0,
                     fit_intercept=False, random_state=0).fit(X, y)
    specs = reg.noise_spec_
    assert len(specs) == 3
    assert all(s.epsilon == pytest.approx(0.5) and s.delta == pytest.approx(1e-6) for s in specs)
    assert specs[0].query.l2_bound == pytest.approx(1.0)  # lambda_min: Lx^2
    assert specs[1].query.l2_bound == pytest.approx(np.sqrt(2))  # Gram: sqrt(2) Lx^2
    assert specs[2].query.l2_bound == pytest.approx(2 * 1.0 * 2.0)  # X^T y: 2 Lx B
    assert reg.ridge_ >= 0
    assert reg.privacy_spent_.epsilon == 1.5 and reg.privacy_spent_.delta == 3e-6


def test_sketch_sigma_is_replace_one_calibration():
    X, y, _ = _data(n=3000)
    reg = PrivateOLS(method="sketch", epsilon=1.0, delta=1e-5, data_norm=1.0, label_bound=1.0,
                     sketch_size=40, random_state=0).fit(X, np.clip(y, -1, 1))
    R2 = 2 * 1.0 + 1.0
    L = R2 / reg.sigma_**2
    assert rp_replace_delta(1.0, L, 40) <= 1e-5
    assert rp_replace_delta(1.0, L * 1.001, 40) > 1e-5


def test_default_delta_and_auto():
    X, y, _ = _data(n=1000)
    reg = PrivateOLS(data_norm=1.0, label_bound=2.0, random_state=0).fit(X, y)
    assert reg.delta_ == pytest.approx(1e-6)
    assert reg.method_ == "adassp"


@pytest.mark.parametrize("method", ["ls", "als"])
def test_unverified_methods_warn(method):
    X, y, w = _data(n=20000, d=3)
    with pytest.warns(PrivacyGuaranteeWarning):
        reg = PrivateOLS(method=method, epsilon=1.0, delta=1e-5, data_norm=1.0, label_bound=2.0,
                         sketch_size=300, random_state=0).fit(X, y)
    assert np.all(np.isfinite(reg.coef_))
    assert reg.sigma_ > 0


def test_relative_dp_warns_and_can_drop_noise():
    X, y, _ = _data(n=20000, d=2)
    with pytest.warns(PrivacyGuaranteeWarning, match="NOT differential privacy"):
        reg = PrivateOLS(method="sketch", relative_dp=True, epsilon=1.0, delta=1e-5, data_norm=1.0,
                         label_bound=2.0, sketch_size=50, random_state=0).fit(X, y)
    assert reg.sigma_ == 0.0  # small leverages everywhere: the data-dependent branch adds no noise
    with pytest.raises(ValueError, match="relative_dp"):
        PrivateOLS(method="ssp", relative_dp=True, data_norm=1.0, label_bound=2.0).fit(X, y)


@pytest.mark.parametrize(
    "params, X, y, msg",
    [
        (dict(method="sketch", sketch_size=2), np.ones((10, 2)), np.zeros(10), "sketch_size"),
        (dict(epsilon=0.0), np.ones((10, 2)), np.zeros(10), "epsilon"),
        (dict(epsilon=-2.0), np.ones((10, 2)), np.zeros(10), "epsilon"),
        (dict(delta=0.0), np.ones((10, 2)), np.zeros(10), "delta"),
        (dict(), np.array([[np.nan, 1.0]] * 3), np.zeros(3), "NaN"),
        (dict(), np.ones((10, 2)), np.array([np.nan] + [0.0] * 9), "NaN"),
        (dict(), np.ones((10, 2)), np.zeros(9), "inconsistent"),
    ],
)
def test_bad_input(params, X, y, msg):
    base = dict(data_norm=1.0, label_bound=1.0)
    base.update(params)
    with pytest.raises(ValueError, match=msg):
        PrivateOLS(**base).fit(X, y)


@pytest.mark.parametrize("method", ["adassp", "ssp", "sketch"])
def test_labels_beyond_the_bound_are_clipped_not_reported(method):
    # |y| > label_bound is clipped like rows beyond data_norm: the fit equals the fit on
    # the clipped labels (same seed) and nothing is raised or printed
    X, y, _ = _data(n=400)
    y_big = y.copy()
    y_big[:5] = 1234.5678
    params = dict(method=method, data_norm=1.0, label_bound=1.0, delta=1e-5, random_state=3)
    a = PrivateOLS(**params).fit(X, y_big)
    b = PrivateOLS(**params).fit(X, np.clip(y_big, -1.0, 1.0))
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.label_bound_ == 1.0


def test_features_are_clipped_and_bounds_inferred_with_warning():
    X, y, _ = _data(n=500)
    with pytest.warns(PrivacyLeakWarning):
        reg = PrivateOLS(random_state=0).fit(5 * X, y)
    assert reg.data_norm is None and reg.label_bound is None
    assert reg.data_norm_ == pytest.approx(np.linalg.norm(5 * X, axis=1).max())
    assert reg.label_bound_ == pytest.approx(np.abs(y).max())


def test_sketch_is_released_on_the_grid_with_its_reserve():
    import warnings as _w

    from skdp.mechanisms.ndis import rp_replace_delta

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(2000, 3)) / 2
    y = X @ [1.0, -1.0, 0.5]
    with _w.catch_warnings():
        _w.simplefilter("error")
        reg = PrivateOLS(method="sketch", epsilon=1.0, delta=1e-6, data_norm=1.0, label_bound=2.0,
                         random_state=0).fit(X, y)
    assert reg.float_safe_ and 0.0 < reg.delta_reserve_ <= 1e-8
    R = np.sqrt(2.0 * 1.0 + 4.0)  # augmented row bound with intercept
    assert rp_replace_delta(1.0, (R / reg.sigma_) ** 2, reg.sketch_size_) + reg.delta_reserve_ <= 1e-6
