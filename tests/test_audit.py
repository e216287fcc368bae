"""Statistical privacy audit (skdp.audit) against independent oracles.

Oracles: closed forms of the Clopper-Pearson bound at k = 0 and k = n, the
binomial-tail characterisation of the Clopper-Pearson bound (scipy.stats.binom),
and the exact delta of a Gaussian pair (Balle & Wang 2018, Theorem 8),
recomputed here with scipy.stats.norm for the under-noised mechanisms.
"""

import dataclasses
import re

import numpy as np
import pytest
from scipy.stats import binom, norm

from skdp.audit import AuditResult, audit_samples, audit_spec, clopper_pearson
from skdp.mechanisms import Query, calibrate
from skdp.mechanisms.gaussian import analytic_gaussian_sigma, gaussian_delta


def _true_gaussian_delta(mu, eps):
    """Balle & Wang (2018), Theorem 8, written out independently."""
    return norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * norm.cdf(-mu / 2 - eps / mu)


# ---------------------------------------------------------------------------
# Clopper-Pearson
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("n, a", [(10, 0.05), (1000, 0.01), (123, 0.2)])
def test_clopper_pearson_closed_forms(n, a):
    # k = 0: upper bound solves (1 - p)^n = a; k = n: lower bound solves p^n = a.
    assert clopper_pearson(0, n, a, "upper") == pytest.approx(1 - a ** (1 / n), rel=1e-10)
    assert clopper_pearson(n, n, a, "lower") == pytest.approx(a ** (1 / n), rel=1e-10)
    assert clopper_pearson(0, n, a, "lower") == 0.0
    assert clopper_pearson(n, n, a, "upper") == 1.0


@pytest.mark.parametrize("k, n, a", [(1, 10, 0.05), (37, 100, 0.025), (4000, 10000, 1e-3)])
def test_clopper_pearson_binomial_tails(k, n, a):
    # The lower bound p_L solves P[Bin(n, p_L) >= k] = a, the upper bound
    # p_U solves P[Bin(n, p_U) <= k] = a.
    lo = clopper_pearson(k, n, a, "lower")
    hi = clopper_pearson(k, n, a, "upper")
    assert binom.sf(k - 1, n, lo) == pytest.approx(a, rel=1e-7)
    assert binom.cdf(k, n, hi) == pytest.approx(a, rel=1e-7)
    assert lo < k / n < hi


def test_clopper_pearson_vectorised_and_errors():
    k = np.array([0, 5, 10])
    lo = clopper_pearson(k, 10, 0.05, "lower")
    hi = clopper_pearson(k, 10, 0.05, "upper")
    assert lo.shape == hi.shape == (3,)
    assert np.all(lo <= k / 10) and np.all(hi >= k / 10)
    with pytest.raises(ValueError):
        clopper_pearson(11, 10, 0.05, "lower")
    with pytest.raises(ValueError):
        clopper_pearson(1, 10, 0.0, "lower")
    with pytest.raises(ValueError):
        clopper_pearson(1, 10, 0.05, "both")


# ---------------------------------------------------------------------------
# Correct mechanisms pass (and the exact one is audited tightly)
# ---------------------------------------------------------------------------
def _worst_pair(shape, l2):
    v0 = np.zeros(shape)
    v1 = np.zeros(shape)
    v1.flat[0] = l2
    return v0, v1


@pytest.mark.parametrize("eps, delta, min_fraction", [(1.0, 0.05, 0.6), (0.5, 0.01, 0.2)])
def test_analytic_gaussian_passes_and_is_tight(eps, delta, min_fraction):
    q = Query(shape=(3,), l2_sensitivity=2.0)
    spec = calibrate(q, eps, delta, mechanism="analytic_gaussian")
    v0, v1 = _worst_pair((3,), 2.0)
    res = audit_spec(spec, v0, v1, n_samples=100_000, random_state=1)
    assert isinstance(res, AuditResult)
    assert res.passed and res.delta_lower_bound <= delta
    # The analytic Gaussian is exact: its true delta equals the claim, so a
    # good audit certifies a large part of it (resolution ~ 1/sqrt(n)).
    assert res.delta_lower_bound >= min_fraction * delta
    assert res.claimed_delta == res.delta == delta and res.epsilon == eps
    assert res.n_samples == 100_000


def test_classic_gaussian_passes():
    q = Query(shape=(2,), l2_sensitivity=1.0)
    spec = calibrate(q, 0.5, 0.05, mechanism="gaussian")
    v0, v1 = _worst_pair((2,), 1.0)
    res = audit_spec(spec, v0, v1, n_samples=60_000, random_state=2)
    assert res.passed
    # Classic noise is larger than needed: true delta at eps=0.5 is below the claim.
    mu = 1.0 / spec.params["sigma"]
    assert res.delta_lower_bound <= _true_gaussian_delta(mu, 0.5) < 0.05


def test_inid_gaussian_passes_at_profile_corner():
    lam = np.array([1.0, 0.5, 0.25, 0.1])
    q = Query(shape=(4,), sensitivity_profile=lam)
    spec = calibrate(q, 1.0, 0.05, mechanism="inid_gaussian")
    res = audit_spec(spec, np.zeros(4), lam, n_samples=100_000, random_state=3)
    assert res.passed
    # At the corner d = lambda the separation is exactly mu0, so the true delta
    # equals the claim; the whitened half-space must see most of it.
    assert res.delta_lower_bound >= 0.6 * 0.05
    assert "whitened" in res.event


def test_symmetric_matrix_query_runs():
    q = Query(shape=(3, 3), l2_sensitivity=1.0, symmetric=True)
    spec = calibrate(q, 1.0, 0.05, mechanism="analytic_gaussian")
    v1 = np.zeros((3, 3))
    v1[0, 1] = v1[1, 0] = 1.0 / np.sqrt(2)  # Frobenius norm 1, upper triangle norm 0.707
    res = audit_spec(spec, np.zeros((3, 3)), v1, n_samples=20_000, random_state=4)
    assert res.passed


# ---------------------------------------------------------------------------
# Power and validity against the exact delta of an under-noised Gaussian
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("eps, delta, dim", [(1.0, 0.05, 1), (0.5, 0.01, 5)])
def test_under_noised_gaussian_fails_with_accurate_bound(eps, delta, dim):
    sigma = analytic_gaussian_sigma(eps, delta, 1.0) / 2  # deliberately half
    true_delta = gaussian_delta(1.0 / sigma, eps)
    assert true_delta == pytest.approx(_true_gaussian_delta(1.0 / sigma, eps), rel=1e-9)
    rng = np.random.default_rng(10)
    v0, v1 = _worst_pair((dim,), 1.0)
    Y0 = v0 + sigma * rng.standard_normal((100_000, dim))
    Y1 = v1 + sigma * rng.standard_normal((100_000, dim))
    res = audit_samples(Y0, Y1, eps, delta, centers=(v0, v1))
    assert not res.passed
    assert res.delta_lower_bound <= true_delta  # validity
    assert res.delta_lower_bound >= 0.5 * true_delta  # power
    # the point estimate of the chosen event is close to the optimum
    assert res.delta_hat == pytest.approx(true_delta, abs=0.02)


def test_direction_is_symmetric():
    sigma = 0.5
    rng = np.random.default_rng(11)
    Y0 = sigma * rng.standard_normal((50_000, 2))
    Y1 = np.array([1.0, 0.0]) + sigma * rng.standard_normal((50_000, 2))
    a = audit_samples(Y0, Y1, 1.0, 0.01)
    b = audit_samples(Y1, Y0, 1.0, 0.01)
    true_delta = _true_gaussian_delta(1 / sigma, 1.0)
    for r in (a, b):
        assert 0.5 * true_delta <= r.delta_lower_bound <= true_delta


def test_pure_dp_laplace_passes_and_undernoised_fails():
    # Laplace with scale b on a shift of 1 is (1/b, 0)-DP, exactly.
    rng = np.random.default_rng(12)
    b = 1.0
    Y0 = rng.laplace(0.0, b, 100_000)
    Y1 = 1.0 + rng.laplace(0.0, b, 100_000)
    assert audit_samples(Y0, Y1, 1.0 / b, 0.0, centers=(0.0, 1.0)).passed
    # Claimed epsilon half the true one: true delta at eps=0.5 is
    # P0(S) - e^0.5 P1(S) maximised at S = {y < 0} ∪ ...: for Laplace the
    # exact value is 1 - e^{(eps-1/b)/2} (hockey-stick of shifted Laplace).
    eps = 0.5
    true_delta = 1 - np.exp((eps - 1 / b) / 2)
    res = audit_samples(Y0, Y1, eps, 0.0, centers=(0.0, 1.0))
    assert not res.passed
    assert 0.5 * true_delta <= res.delta_lower_bound <= true_delta


def test_validity_rate_over_seeds():
    # Exact mechanism audited at its true delta: the bound may exceed the
    # truth with probability at most alpha; count over independent runs.
    eps, delta = 1.0, 0.05
    sigma = analytic_gaussian_sigma(eps, delta, 1.0)
    true_delta = _true_gaussian_delta(1.0 / sigma, eps)
    assert true_delta == pytest.approx(delta, rel=1e-6)
    exceed = 0
    for seed in range(40):
        rng = np.random.default_rng(100 + seed)
        Y0 = sigma * rng.standard_normal(4000)
        Y1 = 1.0 + sigma * rng.standard_normal(4000)
        res = audit_samples(Y0, Y1, eps, delta, centers=(0.0, 1.0), alpha=0.2)
        exceed += res.delta_lower_bound > true_delta
    # Bin(40, 0.2) exceeds 16 with probability < 0.01.
    assert exceed <= 16


# ---------------------------------------------------------------------------
# Spherical singular noise: balls catch what half-spaces miss
# ---------------------------------------------------------------------------
def _spherical(rng, n, M, s):
    z = rng.standard_normal(n)
    v = rng.standard_normal((n, M))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return s * z[:, None] * v


def test_spherical_singular_noise_is_caught_by_balls():
    M, n, eps, delta = 20, 100_000, 1.0, 0.01
    # Scale chosen so that the projection on any direction is wider than the
    # analytic Gaussian (std of <n, u> is s / sqrt(M) = 2 sigma_A).
    s = 2 * np.sqrt(M) * analytic_gaussian_sigma(eps, delta, 1.0)
    rng = np.random.default_rng(20)
    v0, v1 = _worst_pair((M,), 1.0)
    Y0 = v0 + _spherical(rng, n, M, s)
    Y1 = v1 + _spherical(rng, n, M, s)
    half = audit_samples(Y0, Y1, eps, delta, centers=(v0, v1), events="halfspace")
    assert half.passed
    ball = audit_samples(Y0, Y1, eps, delta, centers=(v0, v1), events="ball")
    assert not ball.passed and ball.event.startswith("ball")
    # Oracle for the ball around a sample's own centre: ||n|| = s |z|, so its
    # probability is exactly 2 Phi(r / s) - 1.
    m = re.search(r"\|\|y - v(\d)\|\| <= ([0-9.e+-]+)\}", ball.event)
    assert m is not None, ball.event
    own_first = {"0": "P[M(D) in S] - e^eps", "1": "P[M(D') in S] - e^eps"}[m.group(1)]
    assert own_first in ball.event
    r = float(m.group(2))
    p_exact = 2 * norm.cdf(r / s) - 1
    assert ball.p_hat == pytest.approx(p_exact, abs=4 * np.sqrt(p_exact / (n // 2)))
    assert ball.delta_lower_bound <= p_exact
    full = audit_samples(Y0, Y1, eps, delta, centers=(v0, v1))
    assert not full.passed
    assert full.delta_lower_bound >= ball.delta_lower_bound - 0.01


# ---------------------------------------------------------------------------
# Likelihood-ratio events and input validation
# ---------------------------------------------------------------------------
def test_log_density_events():
    sigma = 0.5
    rng = np.random.default_rng(30)
    Y0 = sigma * rng.standard_normal((40_000, 1))
    Y1 = 1.0 + sigma * rng.standard_normal((40_000, 1))

    def log_density(noise):
        return -0.5 * np.sum(noise**2, axis=1) / sigma**2

    res = audit_samples(Y0, Y1, 1.0, 0.01, centers=(0.0, 1.0), log_density=log_density,
                        events="likelihood")
    true_delta = _true_gaussian_delta(1 / sigma, 1.0)
    assert res.event.startswith("likelihood")
    assert 0.5 * true_delta <= res.delta_lower_bound <= true_delta
    # a pair of output densities works too
    pair = (lambda y: log_density(y), lambda y: log_density(y - 1.0))
    res2 = audit_samples(Y0, Y1, 1.0, 0.01, centers=(0.0, 1.0), log_density=pair,
                         events="likelihood")
    assert res2.delta_lower_bound == pytest.approx(res.delta_lower_bound)


def test_result_is_frozen():
    rng = np.random.default_rng(0)
    res = audit_samples(rng.standard_normal(100), rng.standard_normal(100), 1.0, 0.1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.passed = False


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(epsilon=0.0),
        dict(epsilon=np.inf),
        dict(delta=1.0),
        dict(delta=-0.1),
        dict(alpha=0.0),
        dict(alpha=1.5),
        dict(events="nonsense"),
        dict(centers=(np.zeros(3), np.zeros(2))),
        dict(log_density="not callable"),
        dict(n_thresholds=0),
    ],
)
def test_audit_samples_rejects_bad_input(kwargs):
    rng = np.random.default_rng(0)
    args = dict(Y0=rng.standard_normal((50, 2)), Y1=rng.standard_normal((50, 2)),
                epsilon=1.0, delta=0.1)
    args.update(kwargs)
    with pytest.raises(ValueError):
        audit_samples(**args)


def test_audit_samples_rejects_bad_arrays():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError):
        audit_samples(rng.standard_normal((50, 2)), rng.standard_normal((50, 3)), 1.0, 0.1)
    bad = rng.standard_normal((50, 2))
    bad[3, 1] = np.nan
    with pytest.raises(ValueError):
        audit_samples(bad, rng.standard_normal((50, 2)), 1.0, 0.1)
    with pytest.raises(ValueError):
        audit_samples(np.zeros((2, 2)), np.zeros((2, 2)), 1.0, 0.1)
    # identical centres and only half-space events: nothing to audit
    with pytest.raises(ValueError):
        audit_samples(bad[:, :1] * 0 + 1, bad[:, :1] * 0 + 2, 1.0, 0.1,
                      centers=(0.0, 0.0), events="halfspace")


def test_audit_spec_rejects_bad_input():
    spec = calibrate(Query(shape=(2,), l2_sensitivity=1.0), 1.0, 0.05,
                     mechanism="analytic_gaussian")
    with pytest.raises(ValueError):
        audit_spec(spec, np.zeros(3), np.ones(3))
    with pytest.raises(ValueError):
        audit_spec(spec, np.zeros(2), np.array([np.nan, 0.0]))
    with pytest.raises(ValueError):
        audit_spec(spec, np.zeros(2), np.ones(2), n_samples=3)


# ---------------------------------------------------------------------------
# Slow: larger audits
# ---------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("dim", [1, 10, 100])
def test_analytic_gaussian_full_size_audit(dim):
    spec = calibrate(Query(shape=(dim,), l2_sensitivity=1.0), 1.0, 0.05,
                     mechanism="analytic_gaussian")
    v0, v1 = _worst_pair((dim,), 1.0)
    res = audit_spec(spec, v0, v1, n_samples=200_000, random_state=5)
    assert res.passed
    assert res.delta_lower_bound >= 0.7 * 0.05
