"""Tests of PrivatePCA: noise-scale oracles, sensitivity, audits, API."""

import dataclasses
import warnings
from types import MappingProxyType

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from _numeric import numeric_max
from _sklearn_expected import sample_weight_failures

from skdp import BudgetExceededError, PrivacyGuaranteeWarning, PrivacyLeakWarning
from skdp.decomposition import PrivatePCA
from skdp.decomposition._pca import _clipped_gram, _gram_query
from skdp.mechanisms import available_mechanisms, calibrate
from skdp.mechanisms._grid import GRID_UTILITY_LOSS

#: calibrations on the grid move by at most the documented loss (skdp.mechanisms._grid)
GRID_RTOL = 2 * GRID_UTILITY_LOSS


# ---------------------------------------------------------------------------
# independent oracles
# ---------------------------------------------------------------------------
def _bw_mu0(eps, delta):
    """Balle & Wang (2018) Thm 8, re-solved here with brentq (independent of skdp)."""
    f = lambda mu: norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * norm.cdf(-mu / 2 - eps / mu) - delta
    return brentq(f, 1e-6, 100.0, xtol=1e-14, rtol=1e-14)


def _triu_change(x, xp, c):
    z, zp = np.r_[x, c], np.r_[xp, c]
    D = np.outer(z, z) - np.outer(zp, zp)
    return D[np.triu_indices(len(z))]


def _worst_pair(R, c):
    """Rows of norm R in the (e1, e2) plane at cosine u* = -c^2/(2R^2), |diag D| = |D|_F."""
    u = -(c**2) / (2 * R**2)
    theta = np.arccos(u)
    a = np.pi / 4 - theta / 2  # sin(2a + theta) = 1
    x = R * np.array([np.cos(a), np.sin(a)])
    xp = R * np.array([np.cos(a + theta), np.sin(a + theta)])
    return x, xp


def _data(n=2000, d=4, seed=0, R=1.0, shift=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.linspace(1.0, 0.2, d) + shift
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True) / R)
    return X


# ---------------------------------------------------------------------------
# scikit-learn API
# ---------------------------------------------------------------------------


@parametrize_with_checks([PrivatePCA(), PrivatePCA(n_components=1, centered=True, whiten=True)],
                         expected_failed_checks=sample_weight_failures)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)


# ---------------------------------------------------------------------------
# sensitivity derivation
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("c", [0.0, 1 / np.sqrt(2), 1.0])
def test_l2_sensitivity_is_the_exact_sup(c):
    R, n, d = 1.0, 7, 3
    q = _gram_query(n, d, R, c)
    assert q.l2_sensitivity == pytest.approx(np.sqrt(2) * (R**2 + c**2 / 2) / n, rel=1e-14)
    # attained by the constructed pair ...
    x, xp = _worst_pair(R, c)
    x, xp = np.r_[x, 0.0], np.r_[xp, 0.0]
    attained = np.linalg.norm(_triu_change(x, xp, c))  # c = 0: the extra row is all zero
    assert attained / n == pytest.approx(q.l2_sensitivity, rel=1e-12)
    # ... and never exceeded by random pairs in the ball (incl. interior points)
    rng = np.random.default_rng(1)
    U = rng.normal(size=(20000, 2, d))
    U /= np.linalg.norm(U, axis=2, keepdims=True)
    U *= R * rng.uniform(0.5, 1.0, size=(20000, 2, 1)) ** 0.2
    worst = max(np.linalg.norm(_triu_change(a, b, c)) for a, b in U)
    assert worst / n <= q.l2_sensitivity * (1 + 1e-12)
    # the per-entry profile bounds every coordinate change
    prof = q.sensitivity_profile
    for a, b in U[:2000]:
        z, zp = (np.r_[a, c], np.r_[b, c]) if c > 0 else (a, b)
        assert np.all(np.abs(np.outer(z, z) - np.outer(zp, zp)) / n <= prof + 1e-15)
    # Frobenius bound of the statistic
    assert q.sup_norm == pytest.approx(R**2 + c**2)


def test_gram_chunks_and_clipping():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1001, 5)) * 3
    R, c = 2.0, 2.0 / np.sqrt(2)
    G = _clipped_gram(X, R, c, chunk_elements=37)
    Xc = X * np.minimum(1, R / np.linalg.norm(X, axis=1))[:, None]
    Z = np.c_[Xc, np.full(len(X), c)]
    np.testing.assert_allclose(G, Z.T @ Z / len(X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_clipped_gram(X, R, 0.0, chunk_elements=10), Xc.T @ Xc / len(X),
                               rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------
# noise-scale oracles per mechanism
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("centered, eps, delta", [(True, 1.0, 1e-5), (False, 0.5, 1e-6),
                                                  (False, 2.0, 1e-3)])
def test_analyze_gauss_sigma_oracle(centered, eps, delta):
    X = _data(n=500, d=3, R=2.0)
    pca = PrivatePCA(epsilon=eps, delta=delta, data_norm=2.0, centered=centered,
                     mechanism="analyze_gauss", random_state=0).fit(X)
    R, n = 2.0, 500
    c2 = 0.0 if centered else R**2 / 2
    expected = np.sqrt(2) * (R**2 + c2 / 2) / (n * _bw_mu0(eps, delta))
    spec = pca.noise_spec_
    assert spec.mechanism == "analytic_gaussian"
    assert spec.params["sigma"] == pytest.approx(expected, rel=GRID_RTOL)
    if not centered:  # (5 sqrt 2 / 4) R^2 / (n mu0)
        assert expected == pytest.approx(5 * np.sqrt(2) / 4 * R**2 / (n * _bw_mu0(eps, delta)))
    assert pca.privacy_spent_.epsilon == eps and pca.privacy_spent_.delta == delta


def test_inid_scales_oracle_and_auto_avoids_it():
    eps, delta, R, n, d = 1.0, 1e-5, 1.0, 300, 3
    X = _data(n=n, d=d, R=R)
    pca = PrivatePCA(epsilon=eps, delta=delta, data_norm=R, centered=True,
                     mechanism="inid_gaussian", random_state=0).fit(X)
    mu0 = _bw_mu0(eps, delta)
    iu = np.triu_indices(d)
    lam = np.full(len(iu[0]), R**2 / n)  # |x_i x_j - x'_i x'_j| <= R^2
    w = np.where(iu[0] == iu[1], 1.0, 2.0)  # mirrored entries count twice
    total = np.sum(lam * np.sqrt(w))
    sig2 = lam / np.sqrt(w) * total / mu0**2  # Lagrange optimum (seed 002 Thm 4, weighted)
    scales = np.asarray(pca.noise_spec_.params["scales"])
    np.testing.assert_allclose(scales**2, sig2, rtol=2 * GRID_RTOL)
    # privacy condition at the optimum (seed 002 oracle): sum lam^2 / sigma^2 = mu0^2
    assert np.sum(lam**2 / scales**2) == pytest.approx(mu0**2, rel=2 * GRID_RTOL)
    assert np.sum(lam**2 / scales**2) <= mu0**2
    # the coupled l2 ball makes i.i.d. noise better (seed 002, 9.1): ratio in closed form
    ag = calibrate(_gram_query(n, d, R, 0.0), eps, delta, "analytic_gaussian")
    ratio = pca.noise_spec_.expected_squared_error / ag.expected_squared_error
    assert ratio == pytest.approx(total**2 / (2 * R**4 / n**2 * d**2), rel=2 * GRID_RTOL)
    assert ratio > 1
    auto = PrivatePCA(epsilon=eps, delta=delta, data_norm=R, centered=True, random_state=0).fit(X)
    assert auto.noise_spec_.mechanism != "inid_gaussian"


@pytest.mark.skipif("mvg" not in available_mechanisms(), reason="mvg mechanism not registered")
def test_mvg_calibration_uses_our_query():
    from skdp.mechanisms.matrix import mvg_b_max, mvg_phi_max

    eps, delta, R, n, d = 1.0, 1e-5, 1.0, 10_000, 3
    X = _data(n=n, d=d, R=R, shift=0.3)
    pca = PrivatePCA(epsilon=eps, delta=delta, data_norm=R, mechanism="mvg", random_state=0).fit(X)
    c2 = R**2 / 2
    r = d + 1
    gamma = R**2 + c2
    # Frobenius sensitivity MVG derives: min(sqrt2 * triu bound, ||profile||_F, 2 gamma)
    prof = np.full((r, r), R**2 / n)
    prof[:d, d] = prof[d, :d] = 2 * np.sqrt(c2) * R / n
    prof[d, d] = 0
    s2 = min(np.sqrt(2) * np.sqrt(2) * (R**2 + c2 / 2) / n, np.linalg.norm(prof), 2 * gamma)
    F = max(mvg_phi_max(eps, delta, r, r, gamma, s2), mvg_b_max(eps, delta, r, gamma, s2))
    p = pca.noise_spec_.params
    # the query is that of the statistic as computed in floating point: the exact bounds plus
    # the kernel's rounding bound (relative ~1e-9 here, skdp._stats.gram_rounding_bound)
    assert p["s2"] == pytest.approx(s2, rel=1e-6) and p["s2"] >= s2
    assert p["gamma"] == pytest.approx(gamma, rel=1e-6) and p["gamma"] >= gamma
    np.testing.assert_allclose(p["sigma_eigenvalues"], np.sqrt(r) / F, rtol=1e-6)
    assert np.all(pca.explained_variance_ >= 0)


@pytest.mark.skipif("r1smg" not in available_mechanisms(), reason="r1smg mechanism not registered")
def test_r1smg_warns_and_is_never_auto():
    X = _data(n=200, d=3)
    with pytest.warns(PrivacyGuaranteeWarning):
        PrivatePCA(epsilon=0.1, data_norm=1.0, centered=True, mechanism="r1smg",
                   random_state=0).fit(X)
    auto = PrivatePCA(epsilon=0.1, data_norm=1.0, centered=True, random_state=0).fit(X)
    assert auto.noise_spec_.verified
    with pytest.raises(ValueError, match="r1smg"):  # eps >= 1/M
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyGuaranteeWarning)
            PrivatePCA(epsilon=1.0, data_norm=1.0, mechanism="r1smg").fit(X)


# ---------------------------------------------------------------------------
# end-to-end: the noise actually in the outputs has the oracle scale
# ---------------------------------------------------------------------------
def test_end_to_end_noise_scale():
    eps, delta, R, n, d = 1.0, 1e-5, 1.0, 400, 3
    X = np.random.default_rng(5).normal(size=(n, d)) + 0.1
    X /= np.linalg.norm(X, axis=1, keepdims=True)  # S ~ I/3: noisy eigenvalues stay > 0
    Xc = X * np.minimum(1, R / np.linalg.norm(X, axis=1))[:, None]
    S, m = Xc.T @ Xc / n, Xc.mean(axis=0)
    mu0 = _bw_mu0(eps, delta)
    sig_c = np.sqrt(2) * R**2 / (n * mu0)  # centered=True
    sig_u = 5 * np.sqrt(2) / 4 * R**2 / (n * mu0)  # centered=False, second moment
    rng = np.random.default_rng(0)
    err_c, err_m = [], []
    for _ in range(300):
        seed = int(rng.integers(2**31))
        p = PrivatePCA(epsilon=eps, delta=delta, data_norm=R, centered=True,
                       mechanism="analyze_gauss", random_state=seed).fit(X)
        assert p.explained_variance_.min() > 0  # no clamping: the full model is the release
        C = (p.components_.T * p.explained_variance_) @ p.components_
        err_c.append((C - S)[np.triu_indices(d)])
        q = PrivatePCA(epsilon=eps, delta=delta, data_norm=R, centered=False,
                       mechanism="analyze_gauss", random_state=seed).fit(X)
        err_m.append(q.mean_ - m)
    err_c, err_m = np.array(err_c), np.array(err_m)
    assert np.std(err_c) == pytest.approx(sig_c, rel=0.05)
    # mean noise sigma / c = (5/2) R / (n mu0)
    assert np.std(err_m) == pytest.approx(sig_u / (R / np.sqrt(2)), rel=0.06)
    assert np.abs(np.mean(err_m)) < 4 * sig_u * np.sqrt(2) / R / np.sqrt(err_m.size)


# ---------------------------------------------------------------------------
# audits of the released noisy Gram matrix (worst-case neighbouring pair)
# ---------------------------------------------------------------------------
def _neighbours(c, n=5, R=1.0, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n - 1, 2))
    base /= np.linalg.norm(base, axis=1, keepdims=True) * 2
    x, xp = _worst_pair(R, c)
    return np.vstack([base, x]), np.vstack([base, xp])


@pytest.mark.parametrize("centered", [True, False])
def test_audit_analyze_gauss_worst_pair(centered):
    audit = pytest.importorskip("skdp.audit")
    eps, delta, R, n = 1.0, 0.05, 1.0, 5
    c = 0.0 if centered else R / np.sqrt(2)
    X, Xp = _neighbours(c, n=n, R=R)
    q = _gram_query(n, 2, R, c)
    spec = calibrate(q, eps, delta, "analytic_gaussian")
    v, vp = _clipped_gram(X, R, c), _clipped_gram(Xp, R, c)
    tri = np.triu_indices(v.shape[0])
    assert np.linalg.norm((v - vp)[tri]) == pytest.approx(q.l2_sensitivity, rel=1e-9)
    res = audit.audit_spec(spec, v, vp, n_samples=30_000, random_state=1)
    assert res.passed, res
    # tightness: the pair attains the sensitivity, so the audit sees most of delta
    assert res.delta_lower_bound > 0.4 * delta, res
    # power: the same noise with half the scale must be caught
    weak = dataclasses.replace(spec, params=MappingProxyType({**spec.params,
                                                              "sigma": spec.params["sigma"] / 2}))
    res_weak = audit.audit_spec(weak, v, vp, n_samples=30_000, random_state=1)
    assert not res_weak.passed, res_weak


# ---------------------------------------------------------------------------
# utility sanity and post-processing
# ---------------------------------------------------------------------------
def test_recovers_principal_axes_with_large_n():
    X = _data(n=50_000, d=5, R=3.0, shift=0.5)
    pca = PrivatePCA(n_components=2, epsilon=1.0, data_norm=3.0, random_state=0).fit(X)
    ref = PCA(n_components=2).fit(X)
    cos = np.abs(np.sum(pca.components_ * ref.components_, axis=1))
    assert np.all(cos > 0.99)
    np.testing.assert_allclose(pca.mean_, ref.mean_, atol=0.01)
    np.testing.assert_allclose(pca.explained_variance_, ref.explained_variance_, rtol=0.05)
    np.testing.assert_allclose(np.linalg.norm(pca.components_, axis=1), 1.0)


def test_attributes_transform_inverse_and_whiten():
    X = _data(n=3000, d=4, R=2.0, shift=0.3)
    pca = PrivatePCA(epsilon=1.0, data_norm=2.0, random_state=0).fit(X)
    V = pca.components_
    np.testing.assert_allclose(V @ V.T, np.eye(4), atol=1e-10)
    assert pca.n_components_ == 4 and pca.noise_variance_ == 0.0
    assert np.all(np.diff(pca.explained_variance_) <= 0)
    assert pca.explained_variance_ratio_.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(pca.singular_values_**2, pca.explained_variance_ * (len(X) - 1))
    np.testing.assert_allclose(pca.inverse_transform(pca.transform(X)), X, atol=1e-10)
    np.testing.assert_allclose(pca.fit_transform(X), pca.transform(X))
    w = clone(pca).set_params(whiten=True, n_components=2).fit(X)
    np.testing.assert_allclose(w.transform(X),
                               (X - w.mean_) @ w.components_.T / np.sqrt(w.explained_variance_))
    np.testing.assert_allclose(w.inverse_transform(w.transform(X)),
                               (X - w.mean_) @ w.components_.T @ w.components_ + w.mean_)
    k2 = clone(pca).set_params(n_components=2).fit(X)
    assert k2.noise_variance_ == pytest.approx(np.mean(pca.explained_variance_[2:]))
    cov = k2.get_covariance()
    assert cov.shape == (4, 4) and np.allclose(cov, cov.T)


def test_centered_true_uses_no_mean():
    X = _data(n=1000, d=3)
    pca = PrivatePCA(data_norm=1.0, centered=True, random_state=0).fit(X)
    np.testing.assert_array_equal(pca.mean_, np.zeros(3))
    assert pca.noise_spec_.query.shape == (3, 3)
    assert PrivatePCA(data_norm=1.0, random_state=0).fit(X).noise_spec_.query.shape == (4, 4)


def test_float_n_components_and_clamping():
    X = _data(n=20_000, d=6, R=1.0)
    pca = PrivatePCA(n_components=0.8, data_norm=1.0, random_state=0).fit(X)
    full = PrivatePCA(data_norm=1.0, random_state=0).fit(X)
    cum = np.cumsum(full.explained_variance_ratio_)
    assert pca.n_components_ == np.searchsorted(cum, 0.8, side="right") + 1
    # tiny epsilon: noise dominates, negative eigenvalues are clamped to 0
    noisy = PrivatePCA(epsilon=1e-3, data_norm=1.0, random_state=0).fit(X[:50])
    assert np.all(noisy.explained_variance_ >= 0)
    assert np.any(noisy.explained_variance_ == 0)
    assert np.all(np.isfinite(noisy.explained_variance_ratio_))


def test_same_seed_same_output_and_clipping_of_long_rows():
    X = _data(n=500, d=3, R=1.0)
    X[0] = X[0] / np.linalg.norm(X[0])  # on the boundary
    Xl = X.copy()
    Xl[0] *= 10.0  # clipped back to the same row
    a = PrivatePCA(data_norm=1.0, random_state=3).fit(X)
    b = PrivatePCA(data_norm=1.0, random_state=3).fit(Xl)
    np.testing.assert_allclose(a.components_, b.components_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.mean_, b.mean_, rtol=1e-12, atol=1e-12)


def test_inferred_data_norm_warns_and_is_stored():
    X = _data(n=200, d=3, R=5.0)
    pca = PrivatePCA(random_state=0)
    with pytest.warns(PrivacyLeakWarning):
        pca.fit(X)
    assert pca.data_norm is None
    assert pca.data_norm_ == pytest.approx(np.linalg.norm(X, axis=1).max())


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("params", [
    {"epsilon": 0.0}, {"epsilon": -1.0}, {"epsilon": np.inf}, {"delta": 1.0}, {"delta": -0.1},
    {"data_norm": -1.0}, {"n_components": 0}, {"n_components": 1.5}, {"n_components": -0.5},
    {"mechanism": "laplace_pca"}, {"centered": "yes"},
])
def test_bad_parameters(params):
    X = _data(n=50, d=3)
    with pytest.raises(ValueError):
        PrivatePCA(**{"data_norm": 1.0, **params}).fit(X)


def test_bad_data_and_impossible_combinations():
    X = _data(n=50, d=3)
    with pytest.raises(ValueError, match="n_components"):
        PrivatePCA(n_components=4, data_norm=1.0).fit(X)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError):
        PrivatePCA(data_norm=1.0).fit(Xn)
    Xi = X.copy()
    Xi[1, 1] = np.inf
    with pytest.raises(ValueError):
        PrivatePCA(data_norm=1.0).fit(Xi)
    with pytest.raises(ValueError, match="delta"):  # Gaussian noise needs delta > 0
        PrivatePCA(delta=0.0, data_norm=1.0, mechanism="analyze_gauss").fit(X)
    pca = PrivatePCA(data_norm=1.0, random_state=0).fit(X)
    with pytest.raises(ValueError):
        pca.transform(X[:, :2])
    with pytest.raises(ValueError):
        pca.inverse_transform(np.zeros((2, 5)))


def test_accountant_charged_before_data():
    class Ledger:
        def __init__(self, left):
            self.left, self.calls = left, []

        def spend(self, budget, source, description):
            if budget.epsilon > self.left:
                raise BudgetExceededError("over budget")
            self.left -= budget.epsilon
            self.calls.append((budget.epsilon, budget.delta, source))

    led = Ledger(1.5)
    X = _data(n=50, d=3)
    PrivatePCA(epsilon=1.0, data_norm=1.0, accountant=led, random_state=0).fit(X)
    assert led.calls == [(1.0, 1e-5, "PrivatePCA")]
    bad = X.copy()
    bad[0, 0] = np.nan
    # the ledger refuses before the (invalid) data is looked at
    with pytest.raises(BudgetExceededError):
        PrivatePCA(epsilon=1.0, data_norm=1.0, accountant=led).fit(bad)


# ---------------------------------------------------------------------------
# pandas and pipelines
# ---------------------------------------------------------------------------
def test_pandas_input_and_feature_names():
    pd = pytest.importorskip("pandas")
    X = _data(n=300, d=3)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    pca = PrivatePCA(n_components=2, data_norm=1.0, random_state=0).fit(df)
    assert list(pca.feature_names_in_) == ["a", "b", "c"]
    assert list(pca.get_feature_names_out()) == ["privatepca0", "privatepca1"]
    np.testing.assert_allclose(pca.transform(df), pca.transform(X))
    pca.set_output(transform="pandas")
    out = pca.transform(df)
    assert list(out.columns) == ["privatepca0", "privatepca1"]


def test_pipeline():
    rng = np.random.default_rng(0)
    X = _data(n=2000, d=5, R=3.0)
    y = (X[:, 0] + 0.1 * rng.normal(size=len(X)) > 0).astype(int)
    pipe = make_pipeline(PrivatePCA(n_components=2, data_norm=3.0, random_state=0),
                         LogisticRegression())
    pipe.fit(X, y)
    assert pipe.score(X, y) > 0.9


# ---------------------------------------------------------------------------
# sample weights (weights in [0, 1]), sparse and float32 input
# ---------------------------------------------------------------------------
def _weighted_change(params, c):
    """``n (G - G')`` for rows x, x' in the plane (polar) with weights w, w' (the real domain)."""
    a, ra, b, rb, w, wp = params
    x = ra * np.array([np.cos(a), np.sin(a)])
    xp = rb * np.array([np.cos(b), np.sin(b)])
    z, zp = np.r_[x, c], np.r_[xp, c]
    return w * np.outer(z, z) - wp * np.outer(zp, zp)


def _numeric_max(f, n_starts=300, seed=0):
    """Maximise f over angles, radii in [0, 1] and weights in [0, 1] (L-BFGS-B, random starts)."""
    bounds = [(-np.pi, np.pi), (0, 1), (-np.pi, np.pi), (0, 1), (0, 1), (0, 1)]
    return numeric_max(f, bounds, n_starts, seed)


@pytest.mark.parametrize("c", [0.0, 1 / np.sqrt(2)])
def test_weighted_sensitivity_numeric_max(c):
    """Weights in [0, 1] leave the triangle l2 sensitivity and every profile entry valid;
    the corner (constant without weights) becomes c^2, which the weighted profile covers."""
    n, R = 1, 1.0
    q_w = _gram_query(n, 2, R, c, weighted=True)
    q_u = _gram_query(n, 2, R, c)
    iu = np.triu_indices(3 if c else 2)
    cut = slice(None) if c else slice(0, 2)
    l2 = _numeric_max(lambda p: np.linalg.norm(_weighted_change(p, c)[cut, cut][iu]))
    assert l2 <= q_w.l2_sensitivity * (1 + 1e-9)
    assert l2 == pytest.approx(q_w.l2_sensitivity, rel=1e-6)  # attained at w = w' = 1
    assert q_w.l2_sensitivity == q_u.l2_sensitivity
    size = 3 if c else 2
    for i in range(size):
        for j in range(i, size):
            m = _numeric_max(lambda p: abs(_weighted_change(p, c)[i, j]), n_starts=40)
            assert m <= q_w.sensitivity_profile[i, j] * (1 + 1e-9)
    if c:
        corner = _numeric_max(lambda p: abs(_weighted_change(p, c)[2, 2]), n_starts=20)
        assert corner == pytest.approx(c**2)  # not constant with weights
        assert q_u.sensitivity_profile[2, 2] == 0.0 and q_w.sensitivity_profile[2, 2] == c**2


def test_binary_weights_select_rows():
    X = _data(n=500, d=3, R=2.0) * 1.5
    w = (np.arange(500) % 3 == 0).astype(float)
    c = 1 / np.sqrt(2)
    G = _clipped_gram(X, 1.0, c, sample_weight=w)
    G_sub = _clipped_gram(X[w == 1], 1.0, c) * (w.sum() / len(X))
    np.testing.assert_allclose(G, G_sub, rtol=1e-12, atol=1e-15)


class _Recorder:
    def __init__(self):
        self.calls = 0

    def spend(self, budget, **kwargs):
        self.calls += 1


@pytest.mark.parametrize("bad", [np.full(20, 1.5), np.full(20, -0.1), np.r_[np.ones(19), np.nan],
                                 np.ones(19)])
def test_bad_weights_raise_private_values_after_the_charge(bad):
    """A weight outside [0, 1] is private data: reported (without the value) after the charge,
    like a NaN in X; a wrong length is public and raised before it."""
    acc = _Recorder()
    X = _data(n=20)
    with pytest.raises(ValueError, match=r"sample_weight") as exc:
        PrivatePCA(data_norm=1.0, accountant=acc).fit(X, sample_weight=bad)
    assert acc.calls == (0 if len(bad) != len(X) else 1)
    assert "1.5" not in str(exc.value) and "-0.1" not in str(exc.value)


def test_weighted_mean_is_normalised_by_the_total_weight():
    X = _data(n=20000, d=3, R=1.0, shift=0.3)
    w = np.where(X[:, 0] > 0.3, 1.0, 0.25)
    pca = PrivatePCA(epsilon=5.0, data_norm=1.0, mechanism="analyze_gauss",
                     random_state=0).fit(X, sample_weight=w)
    np.testing.assert_allclose(pca.mean_, np.average(X, axis=0, weights=w), atol=0.01)


def test_sparse_and_float32_input():
    import scipy.sparse as sp

    X = _data(n=3000, d=5, R=1.0)
    X[np.abs(X) < 0.3] = 0.0
    dense = PrivatePCA(n_components=2, data_norm=1.0, mechanism="analyze_gauss",
                       random_state=3).fit(X)
    for Xs in (sp.csr_matrix(X), sp.csc_matrix(X)):
        est = PrivatePCA(n_components=2, data_norm=1.0, mechanism="analyze_gauss",
                         random_state=3).fit(Xs)
        np.testing.assert_allclose(est.components_, dense.components_, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(est.transform(Xs), dense.transform(X), rtol=1e-9, atol=1e-12)
    Z = dense.transform(X)
    np.testing.assert_allclose(dense.inverse_transform(sp.csr_matrix(Z)), dense.inverse_transform(Z))
    X32 = X.astype(np.float32)
    est = PrivatePCA(n_components=2, data_norm=1.0, random_state=3).fit(X32)
    assert est.transform(X32).dtype == np.float32
    assert est.inverse_transform(est.transform(X32)).dtype == np.float32


def test_fitted_spec_keeps_the_bounds_not_the_profile():
    # issue 14 (wide data): the (d+1)^2 profile is a calibration input; the fitted model keeps
    # the query's bounds only, so it does not grow with d^2 (the release itself is unchanged)
    import pickle

    n, d = 400, 300
    X = _data(n=n, d=d, R=1.0)
    pca = PrivatePCA(n_components=2, data_norm=1.0, random_state=0).fit(X)
    q = pca.noise_spec_.query
    full = pca._calibrate(n, d, 1.0, pca.privacy_spent_).query  # the query it was calibrated for
    assert full.sensitivity_profile is not None
    assert q.sensitivity_profile is None and q.shape == full.shape and q.symmetric
    assert q.l2_bound == full.l2_bound and q.l1_bound == full.l1_bound
    assert len(pickle.dumps(pca)) < 8 * (d + 1) ** 2 / 10  # a tenth of one profile
    again = calibrate(q, pca.noise_spec_.epsilon, pca.noise_spec_.delta, "analytic_gaussian")
    assert again.params["sigma"] == pca.noise_spec_.params["sigma"]


@pytest.mark.parametrize("path", ["lanczos", "tridiagonal"])
@pytest.mark.parametrize("d, k", [(1000, 1), (1200, 7), (1100, 137)])
def test_partial_eigh_matches_divide_and_conquer(d, k, path, monkeypatch):
    # the wide-matrix paths (Lanczos; tridiagonalise once, only k vectors) against evd
    from scipy import linalg
    import skdp.decomposition._pca as pca_module

    if path == "tridiagonal":
        monkeypatch.setattr(pca_module, "_LANCZOS_MIN_D", 10**9)
    calls = []
    real = pca_module._lanczos
    monkeypatch.setattr(pca_module, "_lanczos", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(d + k)
    A = rng.standard_normal((d, d)) * 1e-3
    A = (A + A.T) / 2
    U = np.linalg.qr(rng.standard_normal((d, 12)))[0]
    A += U @ np.diag(np.linspace(0.05, 0.01, 12)) @ U.T
    w0, V0 = linalg.eigh(A, driver="evd")
    w, V = pca_module._eigh(np.asfortranarray(A), k)
    assert len(calls) == (path == "lanczos")
    assert V.shape == (d, k) and w.shape == (k,)
    np.testing.assert_allclose(w, w0[::-1][:k], rtol=0, atol=1e-13)
    np.testing.assert_allclose(V.T @ V, np.eye(k), rtol=0, atol=1e-12)
    np.testing.assert_allclose(A @ V, V * w, rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.abs(np.sum(V * V0[:, ::-1][:, :k], axis=0)), 1.0, atol=1e-10)


def test_lanczos_gives_up_within_its_budget_then_the_direct_solver_runs(monkeypatch):
    # leading eigenvalues inside a noise bulk: ARPACK needs more products than its
    # budget, stops at the budget, and the tridiagonal path returns the same pairs
    from scipy import linalg
    import skdp.decomposition._pca as pca_module

    d, k = 1000, 10
    rng = np.random.default_rng(0)
    A = rng.standard_normal((d, d))
    A = (A + A.T) / 2
    products = []

    class Counting(np.ndarray):
        def __matmul__(self, v):
            products.append(1)
            return np.asarray(self).__matmul__(v)

    assert pca_module._lanczos(A.view(Counting), k) is None
    assert len(products) == pca_module._LANCZOS_MIN_MATVECS + 2 * k  # the budget
    w0, V0 = linalg.eigh(A, driver="evd")
    w, V = pca_module._eigh(np.asfortranarray(A), k)
    np.testing.assert_allclose(w, w0[::-1][:k], rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.abs(np.sum(V * V0[:, ::-1][:, :k], axis=0)), 1.0, atol=1e-8)


@pytest.mark.parametrize("spiked", [False, True])
def test_wide_fit_same_release_with_either_eigensolver(monkeypatch, spiked):
    import skdp.decomposition._pca as pca_module

    rng = np.random.default_rng(5)
    X = rng.standard_normal((300, 1000)) / 40.0
    if spiked:  # a few directions with most of the variance: Lanczos converges
        X = rng.standard_normal((3000, 6)) @ rng.standard_normal((6, 1000)) / 120.0
        X += rng.standard_normal((3000, 1000)) / 400.0
    done = []
    real = pca_module._lanczos
    monkeypatch.setattr(pca_module, "_lanczos", lambda *a: done.append(real(*a)) or done[-1])
    fits = []
    for min_d in (1000, 10**9):  # the partial paths, then divide and conquer
        monkeypatch.setattr(pca_module, "_PARTIAL_EIGH_MIN_D", min_d)
        # (with 3000 rows the spikes stand out of the noise bulk at a large epsilon)
        fits.append(PrivatePCA(n_components=4, epsilon=20.0 if spiked else 1.0, delta=1e-5,
                               data_norm=1.0, random_state=3).fit(X))
    assert len(done) == 1 and (done[0] is not None) == spiked
    a, b = fits
    np.testing.assert_allclose(a.components_, b.components_, atol=1e-9)
    for attr in ("explained_variance_", "explained_variance_ratio_", "singular_values_",
                 "noise_variance_", "mean_"):
        np.testing.assert_allclose(getattr(a, attr), getattr(b, attr), rtol=1e-10, atol=1e-14)


def test_variance_shares_use_the_trace_of_the_released_covariance(monkeypatch):
    # exact semantics, against an independent eigendecomposition of the same
    # post-processed release (captured on its way into the eigensolver)
    import skdp.decomposition._pca as pca_module

    captured = []
    real = pca_module._eigh
    monkeypatch.setattr(pca_module, "_eigh",
                        lambda cov, k=None: captured.append(np.array(cov)) or real(cov, k))
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 30)) * np.linspace(1.0, 0.1, 30) / 4.0
    for n_components in (3, 0.5, None):
        captured.clear()
        pca = PrivatePCA(n_components=n_components, epsilon=0.5, data_norm=1.0,
                         random_state=1).fit(X)
        (cov,) = captured
        mu = np.linalg.eigvalsh(cov)[::-1]
        assert mu[-1] < 0  # the noise made some eigenvalues negative
        k = pca.n_components_
        lam = np.maximum(mu, 0.0)
        np.testing.assert_allclose(pca.explained_variance_, lam[:k], rtol=1e-10, atol=1e-15)
        total = max(np.trace(cov), lam[:k].sum())
        np.testing.assert_allclose(pca.explained_variance_ratio_, lam[:k] / total, rtol=1e-10)
        assert pca.explained_variance_ratio_.sum() <= 1.0 + 1e-12
        expected = max(mu[k:].mean(), 0.0) if k < 30 else 0.0
        assert pca.noise_variance_ == pytest.approx(expected, rel=1e-9, abs=1e-15)
        if isinstance(n_components, float):
            assert k == np.searchsorted(np.cumsum(lam) / np.trace(cov), 0.5, side="right") + 1


def test_variance_shares_are_close_to_non_private_ones():
    # the trace of the noisy covariance estimates the total variance without the
    # positive half of the noise that a sum of clamped eigenvalues would add
    # (measured on this table at epsilon = 5: 0.625 with that sum, 0.800 with the trace)
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(1)
    n, d = 20_000, 200
    X = rng.standard_normal((n, d)) / np.arange(1, d + 1) ** 0.8
    X = X @ np.linalg.qr(rng.standard_normal((d, d)))[0]
    X *= 0.5 / np.sqrt(np.mean(np.sum(X**2, axis=1)))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    ref = PCA().fit(X)
    pca = PrivatePCA(n_components=10, epsilon=5.0, data_norm=1.0, random_state=0).fit(X)
    assert abs(pca.explained_variance_ratio_.sum() - ref.explained_variance_ratio_[:10].sum()) < 0.03
    assert pca.noise_variance_ == pytest.approx(ref.explained_variance_[10:].mean(), rel=0.2)
