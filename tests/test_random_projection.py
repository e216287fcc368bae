"""PrivateRandomProjection (M_RP, replace-one calibration) and an audit of the sketch mechanism."""

import warnings

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sklearn.utils.estimator_checks import parametrize_with_checks

from _sklearn_expected import sample_weight_failures

from skdp import PrivacyLeakWarning
from skdp.audit import audit_samples
from skdp.mechanisms.ndis import gaussian_sketch, ndis_delta, rp_noise_multiplier, rp_replace_delta
from skdp.random_projection import PrivateRandomProjection


@parametrize_with_checks([PrivateRandomProjection(sketch_size=30, random_state=0)],
                         expected_failed_checks=sample_weight_failures)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)


# --- audit of the sketch mechanism on the worst-case replace-one pair ----------
EPS, DELTA, R, L_NORM = 0.5, 0.05, 2, 1.0
X0 = np.array([[0.0, 0.0], [L_NORM, 0.0]])  # D  = [0; l e1]
X1 = np.array([[0.0, 0.0], [0.0, L_NORM]])  # D' = [0; l e2]


def _sketch_samples(X, sigma, n, seed, algorithm="gram"):
    # the sketch rows are i.i.d. given X: one sketch with n * R rows gives n releases
    S = gaussian_sketch(X, R * n, sigma, random_state=seed, chunk_size=7, algorithm=algorithm)
    return S.reshape(n, R * X.shape[1])


def _log_density(X, sigma):
    C = X.T @ X + sigma**2 * np.eye(2)
    mvn = multivariate_normal(np.zeros(2), C)
    return lambda Y: mvn.logpdf(Y.reshape(-1, 2)).reshape(Y.shape[0], R).sum(axis=1)


def _pair_delta(sigma):
    C0 = np.kron(np.eye(R), X0.T @ X0 + sigma**2 * np.eye(2))
    C1 = np.kron(np.eye(R), X1.T @ X1 + sigma**2 * np.eye(2))
    z = np.zeros(2 * R)
    return ndis_delta(z, C0, z, C1, EPS)


def test_exact_ndis_of_worst_pair_is_at_most_delta():
    sigma = L_NORM * rp_noise_multiplier(EPS, DELTA, R)
    exact = _pair_delta(sigma)
    assert exact <= DELTA
    assert exact == pytest.approx(DELTA, rel=1e-6)  # the calibration is tight at this pair
    assert exact == pytest.approx(rp_replace_delta(EPS, L_NORM**2 / sigma**2, R), abs=1e-9)


@pytest.mark.parametrize("algorithm", ["gram", "explicit"])
def test_audit_rp_sketch_passes_and_has_power(algorithm):
    sigma = L_NORM * rp_noise_multiplier(EPS, DELTA, R)
    n = 200_000
    Y0, Y1 = _sketch_samples(X0, sigma, n, 1, algorithm), _sketch_samples(X1, sigma, n, 2, algorithm)
    res = audit_samples(Y0, Y1, EPS, DELTA, centers=(np.zeros(4), np.zeros(4)),
                        log_density=(_log_density(X0, sigma), _log_density(X1, sigma)))
    assert res.passed, (res.delta_lower_bound, res.event)
    # power: the same mechanism with half the noise violates (eps, delta)
    half = sigma / 2
    assert _pair_delta(half) > 2 * DELTA
    Y0, Y1 = _sketch_samples(X0, half, n, 3, algorithm), _sketch_samples(X1, half, n, 4, algorithm)
    bad = audit_samples(Y0, Y1, EPS, DELTA, centers=(np.zeros(4), np.zeros(4)),
                        log_density=(_log_density(X0, half), _log_density(X1, half)))
    assert not bad.passed


# --- estimator ------------------------------------------------------------------
def test_sigma_is_the_replace_one_calibration():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(500, 3))
    rp = PrivateRandomProjection(sketch_size=50, epsilon=1.0, delta=1e-5, data_norm=2.0, random_state=0).fit(X)
    ratio = rp.sigma_ / 2.0
    assert rp_replace_delta(1.0, 1 / ratio**2, 50) <= 1e-5
    assert rp_replace_delta(1.0, 1 / ratio**2 * 1.001, 50) > 1e-5
    assert rp.sketch_.shape == (50, 3)
    assert rp.components_.shape == (3, 3)
    assert rp.delta_ == 1e-5
    assert rp.privacy_spent_.epsilon == 1.0


def test_default_delta_is_one_over_n_squared():
    X = np.random.default_rng(1).uniform(-1, 1, size=(100, 2))
    rp = PrivateRandomProjection(sketch_size=10, data_norm=2.0, random_state=0).fit(X)
    assert rp.delta_ == pytest.approx(1e-4)


def test_components_recover_dominant_direction():
    rng = np.random.default_rng(2)
    n = 50_000
    X = np.column_stack([rng.normal(0, 1, n), rng.normal(0, 0.05, n), rng.normal(0, 0.05, n)])
    X /= 4.0
    rp = PrivateRandomProjection(n_components=1, sketch_size=300, epsilon=1.0, data_norm=1.0,
                                 random_state=0).fit(X)
    assert abs(rp.components_[0, 0]) > 0.95
    Z = rp.transform(X)
    assert Z.shape == (n, 1)
    assert rp.inverse_transform(Z).shape == (n, 3)


def test_chunking_bounds_memory_and_gives_same_law():
    X = np.random.default_rng(3).uniform(-1, 1, size=(1000, 2))
    a = PrivateRandomProjection(sketch_size=2000, data_norm=2.0, random_state=0, chunk_size=64).fit(X)
    target = X.T @ X + a.sigma_**2 * np.eye(2)
    np.testing.assert_allclose(a.sketch_.T @ a.sketch_, target, rtol=0.1, atol=0.1 * np.trace(target))


@pytest.mark.parametrize(
    "params, X, msg",
    [
        (dict(sketch_size=2), np.ones((10, 3)), "sketch_size"),
        (dict(n_components=5), np.ones((10, 3)), "n_components"),
        (dict(epsilon=0.0), np.ones((10, 3)), "epsilon"),
        (dict(epsilon=-1.0), np.ones((10, 3)), "epsilon"),
        (dict(delta=0.0), np.ones((10, 3)), "needs delta > 0: its release is a Gaussian sketch"),
        (dict(), np.array([[np.nan, 1.0], [1.0, 1.0]]), "NaN"),
    ],
)
def test_bad_input(params, X, msg):
    with pytest.raises(ValueError, match=msg):
        PrivateRandomProjection(data_norm=1.0, **params).fit(X)


def test_infers_data_norm_with_warning():
    X = np.random.default_rng(4).uniform(-1, 1, size=(50, 2))
    with pytest.warns(PrivacyLeakWarning):
        rp = PrivateRandomProjection(sketch_size=5, random_state=0).fit(X)
    assert rp.data_norm_ == pytest.approx(np.linalg.norm(X, axis=1).max())
    assert rp.data_norm is None


# --- sample weights, sparse and float32 input -----------------------------------
class _Recorder:
    def __init__(self):
        self.calls = 0

    def spend(self, budget, **kwargs):
        self.calls += 1


def test_weights_sparse_float32():
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(3000, 4)) / 2
    X[np.abs(X) < 0.15] = 0.0
    kw = dict(n_components=2, sketch_size=20, data_norm=1.0, delta=1e-5)
    ref = PrivateRandomProjection(random_state=4, **kw).fit(X)
    assert ref.float_safe_
    ones = PrivateRandomProjection(random_state=4, **kw).fit(X, sample_weight=np.ones(len(X)))
    np.testing.assert_array_equal(ones.sketch_, ref.sketch_)
    for Xs in (sp.csr_matrix(X), sp.csc_matrix(X)):
        est = PrivateRandomProjection(random_state=4, **kw).fit(Xs)
        np.testing.assert_allclose(est.sketch_, ref.sketch_, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(est.transform(Xs), ref.transform(X), rtol=1e-6, atol=1e-9)
    X32 = X.astype(np.float32)
    est = PrivateRandomProjection(random_state=4, **kw).fit(X32)
    assert est.transform(X32).dtype == np.float32
    # a weight of 0 removes the record from the sketch's Gram: the weighted rows stay in the ball
    w = (np.arange(len(X)) % 2).astype(float)
    half = PrivateRandomProjection(random_state=4, **kw).fit(X, sample_weight=w)
    assert half.sigma_ == ref.sigma_  # same public calibration
    acc = _Recorder()
    with pytest.raises(ValueError, match="sample_weight"):
        PrivateRandomProjection(accountant=acc, **kw).fit(X, sample_weight=np.full(len(X), 1.01))
    assert acc.calls == 1  # the weights' values are private: checked after the charge
    with pytest.raises(ValueError, match="sample_weight"):
        PrivateRandomProjection(accountant=acc, **kw).fit(X, sample_weight=np.ones(len(X) + 1))
    assert acc.calls == 1  # their length is public: before it


def test_weighted_rows_in_the_grid_gram():
    from skdp._stats import AugmentedRows
    from skdp.mechanisms.ndis import _integer_gram, _quantize_rows

    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 3))
    w = rng.uniform(size=500)
    rows = AugmentedRows(X, 1.0, sample_weight=w)
    norms = np.linalg.norm(X, axis=1)
    Xw = X * (np.minimum(1.0, 1.0 / norms) * np.sqrt(w))[:, None]
    Q = _quantize_rows(Xw, 1.0, 12).astype(np.int64)
    np.testing.assert_array_equal(_integer_gram(rows, 1.0, 12, 64), Q.T @ Q)
    import scipy.sparse as sp

    sparse_rows = AugmentedRows(sp.csr_matrix(X), 1.0, sample_weight=w)
    G_sparse = _integer_gram(sparse_rows, 1.0, 12, 64)
    assert np.abs(G_sparse - Q.T @ Q).max() <= 3 * 2**12  # a quantised entry may differ by one
    assert np.all((Q * Q).sum(axis=1) <= 4**12)


def test_gram_route_of_the_decomposition_matches_the_svd():
    # above _GRAM_SVD_MIN_FEATURES the components come from eigh(S^T S): same leading
    # singular values and (up to sign) vectors as LAPACK's SVD of S, on a sketch-like S
    from skdp import random_projection as rp_module

    rng = np.random.default_rng(3)
    d = rp_module._GRAM_SVD_MIN_FEATURES + 50
    X = rng.standard_normal((4000, d)) * np.linspace(3.0, 0.1, d)
    S = rng.standard_normal((d, d)) @ np.linalg.cholesky(X.T @ X + 25.0 * np.eye(d)).T / np.sqrt(d)
    s, Vt = rp_module._right_singular(S)
    _, s_ref, Vt_ref = np.linalg.svd(S, full_matrices=False)
    assert np.all(np.diff(s) <= 0)
    np.testing.assert_allclose(s[:50], s_ref[:50], rtol=1e-10)
    np.testing.assert_allclose(s, s_ref, rtol=1e-6)
    overlap = np.abs(np.sum(Vt[:20] * Vt_ref[:20], axis=1))
    np.testing.assert_allclose(overlap, 1.0, atol=1e-8)
