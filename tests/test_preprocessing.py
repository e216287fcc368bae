"""skdp.preprocessing: PrivateStandardScaler and the public-bound helpers."""

import contextlib
import math
import warnings

import numpy as np
import pytest
from scipy import sparse
from scipy.optimize import brentq
from scipy.stats import norm
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp import BudgetExceededError, BudgetLedger, PrivacyLeakWarning, PrivateLogisticRegression
from skdp.audit import audit_estimator
from skdp.mechanisms._base import NoiseSpec
from skdp.preprocessing import PrivateStandardScaler, data_norm_from_bounds, scale_by_bounds
from skdp.preprocessing._scaler import _normalised_moments, moment_sensitivities, moment_weight


# ---------------------------------------------------------------------------
# independent oracles (written here, not imported from skdp)
# ---------------------------------------------------------------------------
def _per_feature_change(u, up, s):
    """Change of one feature's block (u, s u^2) when u is replaced by u'."""
    return np.stack([up - u, s * (up**2 - u**2)], axis=-1)


def _brute_sup(s, grid=801):
    """sup over the square [-1/2, 1/2]^2 of the l1 norm and squared l2 norm of the change."""
    g = np.linspace(-0.5, 0.5, grid)
    u, up = np.meshgrid(g, g)
    ch = _per_feature_change(u, up, s)
    return np.abs(ch).sum(-1).max(), (ch**2).sum(-1).max()


def _criterion(s, kind):
    l1, l2sq = _brute_sup(s, grid=401)
    lsq = l1**2 if kind == "laplace" else l2sq
    return lsq * (1 + 16 / s**2)


def _gaussian_sigma(epsilon, delta, l2):
    """Balle & Wang (2018), Theorem 8: smallest sigma with delta(eps) <= delta, by brentq."""
    def excess(mu):
        return norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2) - delta
    mu0 = brentq(excess, 1e-6, 50.0, xtol=1e-14, rtol=1e-14)
    return l2 / mu0


# ---------------------------------------------------------------------------
# scikit-learn API
# ---------------------------------------------------------------------------
@parametrize_with_checks([
    PrivateStandardScaler(),
    PrivateStandardScaler(with_mean=False, delta=1e-5),
    PrivateStandardScaler(with_std=False, bounds=(-5.0, 5.0)),
])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)


def _table(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(20, 70, n), rng.normal(50, 10, n), rng.exponential(2.0, n)])
    bounds = ([18.0, 0.0, 0.0], [90.0, 100.0, 20.0])
    return X, bounds


# ---------------------------------------------------------------------------
# the derivation: sensitivities, the optimal split, the noise scale
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("s", [0.5, 1.0, 2.0, moment_weight(0.0), moment_weight(1e-5), 6.0])
def test_per_feature_sensitivity_is_the_sup_over_the_box(s):
    l1_brute, l2sq_brute = _brute_sup(s)
    l1, l2 = moment_sensitivities(1, 1, s)
    assert l1_brute <= l1 * (1 + 1e-12)
    assert l2sq_brute <= l2**2 * (1 + 1e-12)
    assert l1_brute == pytest.approx(l1, rel=1e-4)  # attained (up to the grid)
    assert l2sq_brute == pytest.approx(l2**2, rel=1e-4)


@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_sensitivity_of_the_computed_statistic_never_exceeds_the_formula(delta):
    """Random + corner search over neighbouring datasets in a box with unequal widths."""
    rng = np.random.default_rng(1)
    n, d = 7, 3
    lower, upper = np.array([-1.0, 0.0, 10.0]), np.array([3.0, 0.5, 30.0])
    width = upper - lower
    s = moment_weight(delta)
    l1, l2 = moment_sensitivities(n, d, s)

    def stat(X):
        s1, s2 = _normalised_moments(X, lower, width, second=True)
        return np.concatenate([s1 / n, s * s2 / n])

    # per-feature maximisers of the derivation (t* for l1; t = 1 and the tangency for l2)
    t_l1 = (1 + s) / (2 * s)
    t_gold = (math.sqrt(5) - 1) / 2
    u_pairs = [(-0.5, 0.5), (0.5 - t_l1, 0.5), (0.5 - t_gold, 0.5), (0.0, 0.5), (-0.5, -0.5)]
    corners = [lower + width * (0.5 + np.array([p[0]] * d)) for p in u_pairs]
    corners_p = [lower + width * (0.5 + np.array([p[1]] * d)) for p in u_pairs]
    best1 = best2 = 0.0
    for trial in range(3000):
        X = rng.uniform(lower - width, upper + width, size=(n, d))  # clipping is part of the statistic
        Xp = X.copy()
        if trial < len(u_pairs):
            X[0], Xp[0] = corners[trial], corners_p[trial]
        elif trial % 2:
            X[0] = np.where(rng.random(d) < 0.5, lower, upper)  # corners of the box
            Xp[0] = np.where(rng.random(d) < 0.5, lower, upper)
        else:
            Xp[0] = rng.uniform(lower - width, upper + width)
        diff = stat(X) - stat(Xp)
        best1, best2 = max(best1, np.abs(diff).sum()), max(best2, np.linalg.norm(diff))
    assert best1 <= l1 * (1 + 1e-9) and best2 <= l2 * (1 + 1e-9)
    attained = best1 / l1 if delta == 0 else best2 / l2
    assert attained == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize("kind, delta", [("laplace", 0.0), ("gaussian", 1e-5)])
def test_the_moment_weight_minimises_the_criterion(kind, delta):
    grid = np.linspace(0.5, 12.0, 461)
    values = np.array([_criterion(s, kind) for s in grid])
    s_num = grid[values.argmin()]
    assert moment_weight(delta) == pytest.approx(s_num, abs=0.05)
    best = _criterion(moment_weight(delta), kind)
    assert best <= values.min() * (1 + 1e-3)
    # the closed forms of the module docstring, and the gain over the best budget split
    if kind == "laplace":
        assert best == pytest.approx(4.824, rel=1e-3)
        assert best < 8.0  # two Laplace releases at epsilon/2 each
    else:
        assert best == pytest.approx(40 * math.sqrt(5) - 87, rel=1e-3)
        assert best < 4.0  # two Gaussian releases sharing mu^2 equally


@pytest.mark.parametrize("with_std", [True, False])
def test_laplace_scale_matches_the_closed_form(with_std):
    X, bounds = _table(n=500)
    eps = 0.7
    sc = PrivateStandardScaler(epsilon=eps, bounds=bounds, with_std=with_std, random_state=0).fit(X)
    n, d = X.shape
    if with_std:
        s = float(np.max(np.real(np.roots([1, -1, 0, -32]))))
        l1 = d * (1 + s) ** 2 / (4 * s) / n
    else:
        l1 = d / n
    spec = sc.noise_spec_
    assert spec.mechanism == "laplace" and spec.delta == 0.0
    assert spec.params["scale"] == pytest.approx(l1 / eps, rel=1e-5)
    assert spec.params["scale"] >= l1 / eps


@pytest.mark.parametrize("with_std", [True, False])
def test_gaussian_sigma_matches_the_closed_form(with_std):
    X, bounds = _table(n=500)
    eps, delta = 0.5, 1e-6
    sc = PrivateStandardScaler(epsilon=eps, delta=delta, bounds=bounds, with_std=with_std,
                               random_state=0).fit(X)
    n, d = X.shape
    l2 = math.sqrt(d) / n  # l2(s*) = 1 at the Gaussian optimum (tangency), and for the mean alone
    spec = sc.noise_spec_
    assert spec.mechanism == "analytic_gaussian"
    assert spec.params["sigma"] == pytest.approx(_gaussian_sigma(eps, delta, l2), rel=1e-4)


def test_empirical_noise_of_the_mean_matches_sigma():
    rng = np.random.default_rng(3)
    n = 200
    X = rng.uniform(4.0, 6.0, size=(n, 1))  # far from the bounds: clamping never acts
    bounds = (0.0, 10.0)
    eps, delta = 1.0, 1e-5
    errs = []
    for seed in range(400):
        sc = PrivateStandardScaler(epsilon=eps, delta=delta, bounds=bounds, with_std=False,
                                   random_state=seed).fit(X)
        errs.append(sc.mean_[0] - X.mean())
    sigma = 10.0 * _gaussian_sigma(eps, delta, 1.0 / n)
    assert np.std(errs) == pytest.approx(sigma, rel=0.15)
    assert abs(np.mean(errs)) < 4 * sigma / np.sqrt(len(errs))


# ---------------------------------------------------------------------------
# behaviour
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_accurate_at_large_n(delta):
    X, bounds = _table(n=50000)
    sc = PrivateStandardScaler(epsilon=1.0, delta=delta, bounds=bounds, random_state=0).fit(X)
    ref = StandardScaler().fit(X)
    np.testing.assert_allclose(sc.mean_, ref.mean_, rtol=0.01)
    np.testing.assert_allclose(sc.var_, ref.var_, rtol=0.05)
    assert sc.transform(X).std(axis=0) == pytest.approx(np.ones(3), rel=0.03)


def test_variance_is_clamped_and_scale_never_zero():
    X = np.full((3, 2), 0.5)
    for seed in range(30):
        sc = PrivateStandardScaler(epsilon=0.01, bounds=(0.0, 1.0), random_state=seed).fit(X)
        assert np.all(sc.var_ >= 0) and np.all(sc.var_ <= 0.25)
        assert np.all(sc.scale_ > 0)
        assert np.all((sc.mean_ >= 0) & (sc.mean_ <= 1))
        np.testing.assert_array_equal(sc.scale_[sc.var_ == 0], 1.0)


def test_values_outside_the_bounds_are_clipped():
    X = np.array([[1e6], [0.0], [0.0], [0.0]])
    sc = PrivateStandardScaler(epsilon=1e6, bounds=(0.0, 1.0), random_state=0).fit(X)
    assert sc.mean_[0] == pytest.approx(0.25, abs=1e-3)  # the outlier counts as 1
    assert sc.var_[0] == pytest.approx(0.1875, abs=1e-3)


def test_constant_feature_of_width_zero_is_not_released():
    X, _ = _table(n=200)
    X[:, 1] = 5.0
    sc = PrivateStandardScaler(epsilon=1.0, bounds=([18, 5, 0], [90, 5, 20]), random_state=0).fit(X)
    assert sc.mean_[1] == 5.0 and sc.var_[1] == 0.0 and sc.scale_[1] == 1.0
    assert sc.noise_spec_.query.shape == (4,)  # two features x (mean, second moment)


def test_inferred_bounds_warn_and_are_stored_not_in_the_parameter():
    X, _ = _table(n=300)
    sc = PrivateStandardScaler(random_state=0)
    with pytest.warns(PrivacyLeakWarning, match="bounds"):
        sc.fit(X)
    assert sc.bounds is None
    np.testing.assert_array_equal(sc.bounds_[0], X.min(axis=0))
    np.testing.assert_array_equal(sc.bounds_[1], X.max(axis=0))


@pytest.mark.parametrize("bounds, match", [
    ((0.0,), "pair"),
    ((1.0, 0.0), "lower"),
    (([0, 0], [1, 1]), "shape"),
    ((0.0, np.inf), "finite"),
    ("bogus", "bounds"),
])
def test_bad_bounds_raise_before_the_charge(bounds, match):
    X, _ = _table(n=50)
    ledger = BudgetLedger(10.0)
    with pytest.raises((ValueError, TypeError), match=match):
        PrivateStandardScaler(bounds=bounds, accountant=ledger).fit(X)
    assert ledger.spends == []


@pytest.mark.parametrize("params, match", [
    (dict(epsilon=0.0), "epsilon"), (dict(delta=1.0), "delta"), (dict(with_mean="yes"), "with_mean"),
])
def test_bad_parameters(params, match):
    X, bounds = _table(n=50)
    with pytest.raises(ValueError, match=match):
        PrivateStandardScaler(bounds=bounds, **params).fit(X)


def test_failed_fit_leaves_nothing_fitted_and_budget_checked_first():
    X, bounds = _table(n=50)
    sc = PrivateStandardScaler(bounds=bounds, random_state=0).fit(X)
    Xbad = X.copy()
    Xbad[0, 0] = np.nan
    with pytest.raises(ValueError):
        sc.fit(Xbad)
    assert not hasattr(sc, "mean_") and not hasattr(sc, "privacy_spent_")
    ledger = BudgetLedger(0.5)
    with pytest.raises(BudgetExceededError):
        PrivateStandardScaler(epsilon=1.0, bounds=bounds, accountant=ledger).fit(X)
    assert ledger.spends == []


def test_budget_charged_once_and_nothing_for_an_empty_release():
    X, bounds = _table(n=50)
    ledger = BudgetLedger(5.0, 1e-4)
    sc = PrivateStandardScaler(epsilon=0.3, delta=1e-6, bounds=bounds, accountant=ledger).fit(X)
    assert sc.privacy_spent_.as_tuple() == (0.3, 1e-6)
    assert len(ledger.spends) == 1 and ledger.spends[0].who == "PrivateStandardScaler"
    off = PrivateStandardScaler(with_mean=False, with_std=False, bounds=bounds, accountant=ledger).fit(X)
    assert off.mean_ is None and off.scale_ is None and off.noise_spec_ is None
    assert off.privacy_spent_.epsilon == 0.0 and len(ledger.spends) == 1
    np.testing.assert_array_equal(off.transform(X), X)


def test_inverse_transform_round_trip_and_feature_names():
    X, bounds = _table(n=200)
    sc = PrivateStandardScaler(bounds=bounds, random_state=0).fit(X)
    np.testing.assert_allclose(sc.inverse_transform(sc.transform(X)), X, rtol=1e-12)
    np.testing.assert_array_equal(sc.get_feature_names_out(), ["x0", "x1", "x2"])


def test_pandas_and_set_output():
    pd = pytest.importorskip("pandas")
    X, bounds = _table(n=200)
    df = pd.DataFrame(X, columns=["age", "score", "wait"])
    sc = PrivateStandardScaler(bounds=bounds, random_state=0).set_output(transform="pandas")
    out = sc.fit(df).transform(df)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["age", "score", "wait"]
    np.testing.assert_array_equal(sc.feature_names_in_, ["age", "score", "wait"])
    np.testing.assert_allclose(out.to_numpy(), (X - sc.mean_) / sc.scale_)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_input_with_mean_false_matches_dense_without_densifying(fmt):
    rng = np.random.default_rng(0)
    dense = sparse.random(300, 6, density=0.2, random_state=1, format="csr").toarray() * 10 - 2 * (
        rng.random((300, 6)) < 0.05)
    Xs = sparse.csr_matrix(dense).asformat(fmt)
    bounds = ([-1.0] * 6, [8.0] * 6)  # clips -2 and values above 8; 0 is inside
    kw = dict(epsilon=1.0, bounds=bounds, with_mean=False, random_state=0)
    a = PrivateStandardScaler(**kw).fit(Xs)
    b = PrivateStandardScaler(**kw).fit(dense)
    np.testing.assert_allclose(a.var_, b.var_, rtol=1e-12)
    out = a.transform(Xs)
    assert sparse.issparse(out)
    # transform clips to the public bounds too (review 16), stored values only
    np.testing.assert_allclose(out.toarray(), np.clip(dense, -1.0, 8.0) / a.scale_)
    assert sparse.issparse(a.inverse_transform(out))
    # implicit zeros are clipped like values when 0 lies outside the bounds
    shifted = ([1.0] * 6, [8.0] * 6)
    c = PrivateStandardScaler(**{**kw, "bounds": shifted}).fit(Xs)
    e = PrivateStandardScaler(**{**kw, "bounds": shifted}).fit(dense)
    np.testing.assert_allclose(c.var_, e.var_, rtol=1e-12)


def test_sparse_with_mean_raises_before_the_charge():
    ledger = BudgetLedger(1.0)
    Xs = sparse.random(20, 3, density=0.3, format="csr", random_state=0)
    with pytest.raises(ValueError, match="sparse"):
        PrivateStandardScaler(bounds=(0.0, 1.0), accountant=ledger).fit(Xs)
    assert ledger.spends == []


def test_float32_is_preserved():
    X, bounds = _table(n=200)
    X32 = X.astype(np.float32)
    sc = PrivateStandardScaler(bounds=bounds, random_state=0).fit(X32)
    assert sc.transform(X32).dtype == np.float32
    assert sc.inverse_transform(sc.transform(X32)).dtype == np.float32
    ref = PrivateStandardScaler(bounds=bounds, random_state=0).fit(X)
    np.testing.assert_allclose(sc.mean_, ref.mean_, rtol=1e-5)


def test_pipeline_clone_and_one_ledger():
    X, bounds = _table(n=3000)
    y = (X[:, 0] + X[:, 1] > 95).astype(int)
    ledger = BudgetLedger(3.0, 1e-5)
    pipe = make_pipeline(
        PrivateStandardScaler(epsilon=0.5, bounds=bounds, accountant=ledger, random_state=0),
        PrivateLogisticRegression(epsilon=1.0, delta=1e-6, data_norm=4.0, classes=[0, 1],
                                  accountant=ledger, random_state=0),
    )
    pipe.fit(X, y)
    twin = clone(pipe)
    assert twin.steps[0][1].accountant is ledger
    assert not hasattr(twin.steps[0][1], "mean_")
    twin.fit(X, y)
    steps = [pipe[0], pipe[1], twin[0], twin[1]]
    assert len(ledger.spends) == 4
    assert ledger.total("basic").epsilon == pytest.approx(sum(s.privacy_spent_.epsilon for s in steps))
    assert pipe.score(X, y) > 0.8


# ---------------------------------------------------------------------------
# estimator audit on a worst-case neighbouring pair
# ---------------------------------------------------------------------------
@contextlib.contextmanager
def _under_noised(factor):
    privatize = NoiseSpec.privatize

    def scaled(self, value, random_state=None):
        value = np.asarray(value, dtype=float)
        return value + (np.asarray(privatize(self, value, random_state)) - value) * factor

    NoiseSpec.privatize = scaled
    try:
        yield
    finally:
        NoiseSpec.privatize = privatize


def _audit_pair(delta):
    """Measured on the release itself (1000 fits per side, epsilon = 1): certified lower bound
    on delta 0 for the honest routes; with half the noise 0.135 (Gaussian, claimed delta = 0.05)
    and 0.056 (Laplace, claimed delta = 0).

    One feature in [0, 1], 19 records at the midpoint; record 0 at the per-feature
    maximiser of the route's sensitivity (u -> u' of the derivation)."""
    n = 20
    if delta == 0:
        s = moment_weight(0.0)
        u, up = 0.5 - (1 + s) / (2 * s), 0.5
    else:
        u, up = -0.5, 0.5
    X = np.full((n, 1), 0.5)
    Xp = X.copy()
    X[0, 0], Xp[0, 0] = 0.5 + u, 0.5 + up
    return X, Xp


@contextlib.contextmanager
def _recording():
    """Record what ``NoiseSpec.privatize`` returns: the release itself, before the clamps and
    the variance floor of the post-processing (which can only hide information)."""
    privatize = NoiseSpec.privatize
    last = []

    def recorded(self, value, random_state=None):
        out = privatize(self, value, random_state)
        last[:] = [np.array(out, dtype=float, copy=True)]
        return out

    NoiseSpec.privatize = recorded
    try:
        yield lambda est: last[0]
    finally:
        NoiseSpec.privatize = privatize


@pytest.mark.slow
@pytest.mark.parametrize("delta, factor", [(0.05, 0.5), (0.0, 0.5)])
def test_audit_on_the_worst_case_pair(delta, factor):
    X, Xp = _audit_pair(delta)
    est = PrivateStandardScaler(epsilon=1.0, delta=delta, bounds=(0.0, 1.0))
    with _recording() as release:
        kw = dict(n_fits=1000, release=release, random_state=5)
        honest = audit_estimator(est, X, None, Xp, None, **kw)
    assert honest.passed, (honest.delta_lower_bound, honest.event)
    with _under_noised(factor), _recording() as release:
        kw = dict(n_fits=1000, release=release, random_state=5)
        broken = audit_estimator(est, X, None, Xp, None, **kw)
    assert not broken.passed, (factor, broken.delta_lower_bound, broken.event)


# ---------------------------------------------------------------------------
# public bounds -> data_norm
# ---------------------------------------------------------------------------
def test_data_norm_from_bounds_is_the_sup_and_is_attained():
    lower, upper = np.array([-3.0, 0.0, 2.0]), np.array([1.0, 4.0, 5.0])
    R = data_norm_from_bounds((lower, upper), one_hot_blocks=2)
    assert R == pytest.approx(math.sqrt(9 + 16 + 25 + 2))
    rng = np.random.default_rng(0)
    numeric = rng.uniform(lower, upper, size=(20000, 3))
    numeric[:8] = [[a, b, c] for a in (-3, 1) for b in (0, 4) for c in (2, 5)]  # box corners
    onehot = np.zeros((20000, 7))  # blocks of 3 and 4 categories
    onehot[np.arange(20000), rng.integers(0, 3, 20000)] = 1
    onehot[np.arange(20000), 3 + rng.integers(0, 4, 20000)] = 1
    norms = np.linalg.norm(np.hstack([numeric, onehot]), axis=1)
    assert norms.max() <= R * (1 + 1e-12)
    assert norms.max() == pytest.approx(R, rel=1e-12)  # the corner (-3, 4, 5) attains it


def test_scale_by_bounds_then_sqrt_d():
    rng = np.random.default_rng(0)
    lower, upper = np.array([0.0, -50.0, 10.0]), np.array([1.0, 50.0, 20.0])
    X = rng.uniform(lower - 5, upper + 5, size=(1000, 3))
    Z = scale_by_bounds(X, (lower, upper))
    assert Z.min() >= -1 and Z.max() <= 1
    assert np.linalg.norm(Z, axis=1).max() <= data_norm_from_bounds((-np.ones(3), np.ones(3)))
    assert data_norm_from_bounds((-np.ones(3), np.ones(3))) == pytest.approx(math.sqrt(3))


@pytest.mark.parametrize("kwargs, match", [
    (dict(bounds=(1.0, 0.0)), "lower"),
    (dict(bounds=None), "norm 0"),
    (dict(bounds=(0.0, 1.0), one_hot_blocks=-1), "one_hot_blocks"),
    (dict(bounds=(0.0, 1.0), scale=0.0), "scale"),
    (dict(bounds=(0.0, np.nan)), "finite"),
    # arrays of different lengths were broadcast silently
    (dict(bounds=([0.0, 0.0], [1.0])), "same length"),
    (dict(bounds=([0.0], [1.0, 2.0])), "same length"),
    # a norm beyond float64 was inf with a RuntimeWarning
    (dict(bounds=([-1.5e308, -1.5e308], [1.5e308, 1.5e308])), "float64 maximum"),
    (dict(bounds=([-1e200], [1e200]), scale=1e200), "float64 maximum"),
])
def test_data_norm_from_bounds_bad_input(kwargs, match):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning on the way
        with pytest.raises(ValueError, match=match):
            data_norm_from_bounds(**kwargs)


def test_data_norm_from_bounds_scales_before_squaring():
    """Bounds whose squares overflow (or underflow) but whose norm is representable."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert data_norm_from_bounds(([-1e200], [1e200])) == 1e200
        assert data_norm_from_bounds(([-1e308, 0.0], [1e308, 1e308])) == pytest.approx(
            math.sqrt(2) * 1e308)
        assert data_norm_from_bounds((0.0, 1e-200)) == 1e-200
        assert data_norm_from_bounds(([-1e-200], [1e-200]), one_hot_blocks=1) == 1.0
        assert data_norm_from_bounds(([-1e200], [1e200]), scale=1e-150) == pytest.approx(1e50)


@pytest.mark.parametrize("bounds", [([1.2e308], [1.6e308]), ([-1.6e308], [-1.2e308])])
def test_scaler_bounds_near_the_float64_limit_refused_before_the_charge(bounds):
    """|a| + |b| overflowing made the sensitivity inf: "l2_sensitivity must be finite", after the
    charge (the width b - a alone was checked)."""
    ledger = BudgetLedger(10.0, 0.0)
    est = PrivateStandardScaler(epsilon=1.0, bounds=bounds, accountant=ledger, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"too large to compute with in float64"):
            est.fit(np.full((100, 1), bounds[0][0]))
    assert ledger.spends == [] and ledger.spent.epsilon == 0.0
    assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("__")]


# ----------------------------------------------------------------------
# floating-point computation of the scaler's moments (_moments_rounding)
# ----------------------------------------------------------------------
@pytest.mark.parametrize("sparse_input", [False, True])
def test_scaler_moments_rounding_bound_against_exact_arithmetic(sparse_input):
    from fractions import Fraction

    import scipy.sparse as sps

    from skdp.preprocessing._scaler import _moments_rounding, _normalise, _normalised_moments

    rng = np.random.default_rng(5)
    n, d, s = 3000, 3, 2.5
    lower = np.array([-1.0, 1e6, -0.3])
    upper = np.array([2.0, 1e6 + 1.0, 1e-9])
    X = lower + (upper - lower) * rng.uniform(-0.2, 1.2, size=(n, d))
    if sparse_input:
        X = sps.csr_matrix(X * (rng.uniform(size=X.shape) < 0.5))
    width = upper - lower
    rho, e1, e2 = _moments_rounding(n, d, lower, upper, s, sparse_input)
    s1, s2 = _normalised_moments(X, lower, width, second=True)
    dense = X.toarray() if sparse_input else X
    U = _normalise(dense, lower, width)  # the computed values (zeros normalised the same way)
    assert np.all(np.abs(U) <= rho / 2)
    for j in range(d):
        col = [Fraction(float(v)) for v in U[:, j]]
        m_exact = sum(col) / n
        q_exact = Fraction(s) * sum(v * v for v in col) / n
        assert abs(Fraction(float(s1[j] / n)) - m_exact) <= Fraction(e1)
        assert abs(Fraction(float(s * s2[j] / n)) - q_exact) <= Fraction(e2)
    # the bound is far below the sensitivity (1 / n per mean coordinate) at this size
    assert e1 < 1e-9 / n * 1e3 and rho < 1 + 1e-9


def test_scaler_calibrates_the_computed_moments():
    from skdp.preprocessing._scaler import _moments_query, _moments_rounding

    n, d, s = 10**8, 4, 2.0
    exact = _moments_query(n, d, s)
    computed = _moments_query(n, d, s, _moments_rounding(n, d, np.zeros(d), np.ones(d), s, False))
    assert exact.l2_bound < computed.l2_bound < exact.l2_bound * 1.01
    assert exact.l1_bound < computed.l1_bound < exact.l1_bound * 1.01


def test_scaler_that_releases_nothing_reads_no_value():
    # review 14, F4: with_mean=False, with_std=False charges nothing, and its validation of the
    # values answered "does X hold an inf?" for free (D fitted, its neighbour raised)
    from skdp import BudgetLedger

    X = np.random.default_rng(0).uniform(-1, 1, (50, 3))
    Xp = X.copy()
    Xp[0, 0] = np.inf
    for data in (X, Xp):
        ledger = BudgetLedger(1.0, 0.0)
        sc = PrivateStandardScaler(with_mean=False, with_std=False, bounds=(-1.0, 1.0),
                                   accountant=ledger).fit(data)
        assert ledger.spends == [] and sc.n_features_in_ == 3 and sc.n_samples_seen_ == 50
        assert sc.mean_ is None and sc.scale_ is None



def test_transform_clips_to_the_bounds_so_a_huge_value_stays_finite():
    # review 16: transform turned a finite 1.5e308 into inf, which the next private step of a
    # pipeline refused after its charge
    X = np.random.default_rng(0).uniform(-1, 1, (100, 2))
    sc = PrivateStandardScaler(bounds=(-1.0, 1.0), random_state=0).fit(X)
    Xh = X.copy()
    Xh[0, 0] = 1.5e308
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out = sc.transform(Xh)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out[0, 0], (1.0 - sc.mean_[0]) / sc.scale_[0])


def test_bounds_beyond_the_public_range_are_refused():
    # review 16: bounds=(-1e300, 1e300) released var_ and scale_ as inf
    X = np.random.default_rng(0).uniform(-1, 1, (50, 2))
    with pytest.raises(ValueError, match="too large"):
        PrivateStandardScaler(bounds=(-1e300, 1e300)).fit(X)


def test_bounds_of_width_zero_release_nothing_and_charge_nothing():
    # review 28, F4: every feature a public constant: the fit computed nothing from the data
    # but charged the whole budget (and then checked the values for NaN)
    X = np.random.default_rng(0).normal(size=(40, 3))
    X[2, 1] = np.nan  # never read
    ledger = BudgetLedger(epsilon=10.0, delta=0.5)
    sc = PrivateStandardScaler(bounds=(0.5, 0.5), epsilon=1.0, accountant=ledger).fit(X)
    assert ledger.spends == [] and sc.privacy_spent_.epsilon == 0.0 and sc.noise_spec_ is None
    np.testing.assert_array_equal(sc.mean_, [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(sc.var_, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(sc.scale_, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(sc.transform(np.full((2, 3), 0.5)), np.zeros((2, 3)))


def test_inferred_bounds_warn_before_the_values_are_checked():
    # review 28, F5: with nothing released, a NaN raised before the PrivacyLeakWarning of the
    # inferred bounds, so "does X hold a NaN?" was answered without any warning
    X = np.random.default_rng(0).normal(size=(40, 3))
    X[2, 1] = np.nan
    with pytest.warns(PrivacyLeakWarning, match="bounds"):
        with pytest.raises(ValueError, match="NaN"):
            PrivateStandardScaler(with_mean=False, with_std=False).fit(X)
