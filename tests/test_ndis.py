"""NDIS core: exact Gaussian hockey-stick divergence and its closed forms.

Oracles: shared/research/seed003_ndis.md (sections 2.4, 4.3, 7.8, 10), the
analytic Gaussian closed form (skdp.mechanisms.gaussian.gaussian_delta), the
paper's Monte-Carlo estimator, and mpmath evaluations written in this file.
"""

import math

import mpmath
import numpy as np
import pytest
from scipy.stats import chi2

from skdp.mechanisms.gaussian import gaussian_delta
from skdp.mechanisms.ndis import (
    als_F,
    gaussian_sketch,
    generalized_chi2_cdf,
    ls_noise_multiplier,
    ndis_coefficients,
    ndis_delta,
    ndis_delta_mc,
    rp_delta,
    rp_delta_reverse,
    rp_noise_multiplier,
    rp_replace_delta,
)
from skdp.leverage import rp_leverage_threshold


# --- closed-form RP oracles -------------------------------------------------
@pytest.mark.parametrize("eps, lev, r, expected", [(1, 0.1, 1, 1.2911e-06), (0.5, 0.02, 10, 1.3357e-10)])
def test_rp_delta_oracles(eps, lev, r, expected):
    assert rp_delta(eps, lev, r) == pytest.approx(expected, rel=5e-5)


def test_rp_forward_dominates_reverse():
    for r in (1, 2, 5, 20, 100):
        for lev in (0.01, 0.1, 0.3, 0.7, 0.95):
            for eps in (0.0, 0.3, 1.0, 3.0):
                assert rp_delta_reverse(eps, lev, r) <= rp_delta(eps, lev, r) + 1e-15


def test_rp_delta_matches_ndis_on_projection_pair():
    # the paper's Corollary 2: vec(GD) ~ N(0, I_r kron D^T D); D' = D minus row 0
    rng = np.random.default_rng(1)
    D = rng.standard_normal((6, 2))
    Dp = D[1:]
    lev = D[0] @ np.linalg.solve(D.T @ D, D[0])
    r = 3
    S1, S2 = np.kron(np.eye(r), D.T @ D), np.kron(np.eye(r), Dp.T @ Dp)
    z = np.zeros(2 * r)
    for eps in (0.0, 0.5, 1.0):
        exact = ndis_delta(z, S1, z, S2, eps, order="forward")
        assert rp_delta(eps, lev, r) == pytest.approx(exact, abs=1e-9)
        rev = ndis_delta(z, S1, z, S2, eps, order="reverse")
        assert rp_delta_reverse(eps, lev, r) == pytest.approx(rev, abs=1e-9)
    mc = ndis_delta_mc(z, S1, z, S2, 0.5, n_samples=400_000, order="forward", random_state=0)
    assert mc == pytest.approx(rp_delta(0.5, lev, r), abs=3e-3)


# --- general exact evaluation vs Monte Carlo and the Gaussian closed form ----
def test_equal_covariance_is_analytic_gaussian():
    rng = np.random.default_rng(2)
    A = rng.standard_normal((3, 3))
    S = A @ A.T + np.eye(3)
    mu1, mu2 = rng.standard_normal(3), rng.standard_normal(3)
    maha = np.sqrt((mu1 - mu2) @ np.linalg.solve(S, mu1 - mu2))
    for eps in (0.1, 1.0, 2.0):
        assert ndis_delta(mu1, S, mu2, S, eps) == pytest.approx(gaussian_delta(maha, eps), abs=1e-9)


def test_analytic_gaussian_sigma_oracle_through_ndis():
    # sigma/Delta(1, 1e-5) = 3.7306 (note 2.4a): the 1-D pair at that sigma has delta ~ 1e-5
    d = ndis_delta([0.0], [[3.7306**2]], [1.0], [[3.7306**2]], 1.0)
    assert d == pytest.approx(1e-5, rel=1e-3)


def test_general_pair_exact_vs_monte_carlo():
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    S1, S2 = A @ A.T + 0.5 * np.eye(3), B @ B.T + 0.5 * np.eye(3)
    mu1, mu2 = rng.standard_normal(3), rng.standard_normal(3)
    for eps in (0.5, 1.5):
        for order in ("forward", "reverse"):
            exact = ndis_delta(mu1, S1, mu2, S2, eps, order=order)
            mc = ndis_delta_mc(mu1, S1, mu2, S2, eps, order=order, n_samples=400_000, random_state=4)
            # Hoeffding, gamma = 1e-6: sqrt(ln(2e6) / 8e5) = 4.3e-3
            assert abs(exact - mc) < 4.3e-3
            assert 0.0 < exact < 1.0


def test_coefficients_eigenvalues_below_one():
    rng = np.random.default_rng(5)
    A, B = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    a, b, c = ndis_coefficients(np.zeros(4), A @ A.T + np.eye(4), np.ones(4), B @ B.T + np.eye(4), 1.0)
    assert np.all(a < 1)


def test_ndis_bad_input():
    with pytest.raises(ValueError):
        ndis_delta([0, 0], np.eye(2), [0, 0], np.eye(3), 1.0)
    with pytest.raises(ValueError):
        ndis_delta([0.0], [[-1.0]], [0.0], [[1.0]], 1.0)
    with pytest.raises(ValueError):
        ndis_delta([np.nan], [[1.0]], [0.0], [[1.0]], 1.0)


# --- calibration oracles -----------------------------------------------------
@pytest.mark.parametrize(
    "n, r, ratio", [(2809, 300, 6.1855), (327346, 1200, 10.1792), (515345, 3000, 12.8216)]
)
def test_rp_sigma_oracles_paper(n, r, ratio):
    assert rp_noise_multiplier(1.0, 1.0 / n, r, neighbours="add_remove") == pytest.approx(ratio, abs=1e-4)


def test_rp_sigma_tight_variant_oracle():
    # note 4.3: Cancer tight variant 6.1041
    assert rp_noise_multiplier(1.0, 1 / 2809, 300, neighbours="add_remove", bound="tight") == pytest.approx(
        6.1041, abs=1e-4
    )


def _mp_rp_delta(eps, lev, r):
    # independent: delta = [Gamma(r/2, t0/2) - e^eps Gamma(r/2, rho t0/2)] / Gamma(r/2) (note 8.2)
    mpmath.mp.dps = 60
    eps, lev = mpmath.mpf(eps), mpmath.mpf(lev)
    rho = 1 / (1 - lev)
    t0 = 2 * (eps + mpmath.mpf(r) / 2 * mpmath.log(rho)) / (rho - 1)
    a = mpmath.mpf(r) / 2
    return mpmath.gammainc(a, t0 / 2, regularized=True) - mpmath.exp(eps) * mpmath.gammainc(
        a, rho * t0 / 2, regularized=True
    )


def test_large_r_overflow_regime_matches_mpmath():
    eps, n, r = 1.0, 515345, 3000
    delta = 1.0 / n
    lbar = rp_leverage_threshold(eps, delta, r)
    # independent high-precision check that lbar is the (safe) threshold
    assert _mp_rp_delta(eps, lbar, r) <= delta
    assert _mp_rp_delta(eps, lbar * (1 + 1e-6), r) > delta
    sigma_ratio = 1 / np.sqrt(lbar)
    assert np.isfinite(sigma_ratio)
    # the authors' formula: exp(eps - r/2 ln(1-l)) (1-l)^{r/2} -> inf * 0 = NaN, read as "private"
    def buggy(lev):
        with np.errstate(all="ignore"):
            T = (2 * eps - r * np.log(1 - lev)) / lev
            return chi2.sf((1 - lev) * T, r) - np.exp(eps - r / 2 * np.log(1 - lev)) * (1 - lev) ** (r / 2) * chi2.sf(T, r)
    assert np.isnan(buggy(0.5))
    lo, hi = 1e-8, 1 - 1e-8
    for _ in range(100):
        mid = (lo + hi) / 2
        if buggy(mid) > delta:  # NaN > delta is False
            hi = mid
        else:
            lo = mid
    buggy_ratio = 1 / np.sqrt(lo)
    assert buggy_ratio == pytest.approx(1.0, abs=1e-3)
    assert sigma_ratio / buggy_ratio == pytest.approx(12.82, abs=0.01)
    # and rp_delta itself stays finite there
    assert rp_delta(eps, 0.9, r) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("n, r, d, ratio", [(2809, 300, 12, 7.1488), (327346, 1200, 2, 11.8039),
                                            (515345, 3000, 91, 15.0551)])
def test_ls_sigma_oracles(n, r, d, ratio):
    assert ls_noise_multiplier(1.0, 1 / n, r, d) == pytest.approx(ratio, abs=2e-4)


def test_als_F_matches_ndis_on_asymptotic_gaussians():
    # canonical form (note 5.3): N(0, I_d) vs N(mu e1, diag(tau1^2, tau^2, ...))
    lev, res, r, d = 0.0913, 0.527, 5, 2
    tau1 = (1 - lev - res) / (1 - lev) ** 2
    tau = (1 - lev - res) / (1 - lev)
    mu = np.sqrt(r * lev * res) / (1 - lev)
    m2 = np.zeros(d)
    m2[0] = mu
    S2 = np.diag([tau1] + [tau] * (d - 1))
    for eps in (0.5, 1.0):
        exact = ndis_delta(np.zeros(d), np.eye(d), m2, S2, eps)
        assert als_F(eps, lev, res, r, d) == pytest.approx(exact, abs=1e-8)
    # note 10.3 (inputs rounded to 3-4 digits there, so 5e-4)
    assert als_F(0.5, lev, res, r, d) == pytest.approx(0.28342, abs=5e-4)


def test_lowdim_pair_against_2d_integration():
    # oracle: brute-force 2-D integral of (p1 - e^0.5 p2)_+ over [-12, 12]^2 for the canonical
    # ALS pair below, computed once with scipy.integrate.dblquad (epsabs 1e-10, independent of
    # skdp): 0.28318586489351055
    lev, res, r = 0.0913, 0.527, 5
    S2 = np.diag([(1 - lev - res) / (1 - lev) ** 2, (1 - lev - res) / (1 - lev)])
    mu = np.sqrt(r * lev * res) / (1 - lev)
    z = np.zeros(2)
    assert ndis_delta(z, np.eye(2), [mu, 0.0], S2, 0.5, order="forward") == pytest.approx(
        0.28318586489351055, abs=1e-8
    )


def test_generalized_chi2_cdf_central_oracle():
    # 1/2 a chi2_3 + c with a < 0: P[Q <= 0] = chi2_3.sf(2c/|a|)
    a = np.full(3, -0.3856)
    for c in (0.5, 1.5, 3.0):
        assert generalized_chi2_cdf(0.0, a, np.zeros(3), c) == pytest.approx(chi2.sf(2 * c / 0.3856, 3), abs=1e-10)


# --- replace-one random projection (derived in skdp) -------------------------
def _replace_pair(L, r):
    S1 = np.kron(np.eye(r), np.diag([1 + L, 1.0]))
    S2 = np.kron(np.eye(r), np.diag([1.0, 1 + L]))
    return np.zeros(2 * r), S1, S2


@pytest.mark.parametrize("r, L, eps", [(1, 1.0, 0.5), (2, 0.5, 0.3), (3, 0.3, 0.2), (4, 0.8, 1.0)])
def test_rp_replace_delta_matches_exact_ndis(r, L, eps):
    z, S1, S2 = _replace_pair(L, r)
    tol = 1e-7
    assert rp_replace_delta(eps, L, r) == pytest.approx(ndis_delta(z, S1, z, S2, eps), abs=tol)


def test_rp_replace_worst_case_over_random_pairs():
    # any v, v' with |v|, |v'| <= l and any D0: never above the closed form at L = l^2/sigma^2
    rng = np.random.default_rng(6)
    r, eps, sigma, l = 2, 0.3, 1.0, 1.0
    L = l**2 / sigma**2
    bound = rp_replace_delta(eps, L, r)
    for _ in range(6):
        D0 = rng.standard_normal((rng.integers(0, 3), 2)) * 0.5
        v, vp = rng.standard_normal(2), rng.standard_normal(2)
        v *= rng.uniform(0.5, 1) * l / np.linalg.norm(v)
        vp *= rng.uniform(0.5, 1) * l / np.linalg.norm(vp)
        M0 = D0.T @ D0 + sigma**2 * np.eye(2)
        S1 = np.kron(np.eye(r), M0 + np.outer(v, v))
        S2 = np.kron(np.eye(r), M0 + np.outer(vp, vp))
        z = np.zeros(2 * r)
        assert ndis_delta(z, S1, z, S2, eps) <= bound + 1e-7


def test_rp_replace_is_monotone_and_above_add_remove():
    vals = [rp_replace_delta(1.0, L, 50) for L in (0.01, 0.03, 0.1, 0.3)]
    assert np.all(np.diff(vals) > 0)
    # replace-one costs more noise than add/remove (paper) at the same budget
    assert rp_noise_multiplier(1.0, 1e-5, 100) > rp_noise_multiplier(1.0, 1e-5, 100, neighbours="add_remove")


def test_rp_replace_multiplier_is_safe_and_tight():
    eps, delta, r = 1.0, 1e-5, 100
    s = rp_noise_multiplier(eps, delta, r)
    assert rp_replace_delta(eps, 1 / s**2, r) <= delta
    assert rp_replace_delta(eps, 1 / s**2 * (1 + 1e-4), r) > delta


@pytest.mark.parametrize("algorithm", ["gram", "explicit"])
def test_gaussian_sketch_moments_and_shape(algorithm):
    rng = np.random.default_rng(7)
    X = rng.standard_normal((50, 3))
    S = gaussian_sketch(X, 20000, sigma=2.0, random_state=0, chunk_size=7, algorithm=algorithm)
    assert S.shape == (20000, 3)
    np.testing.assert_allclose(S.T @ S / 20000, X.T @ X + 4.0 * np.eye(3), rtol=0.05, atol=2.0)


@pytest.mark.parametrize("sigma", [0.0, 0.7])
def test_gaussian_sketch_samplers_have_the_same_distribution(sigma):
    """Rows of G [X; sigma I] are i.i.d. N(0, X^T X + sigma^2 I), whichever sampler.

    Closed form: every fixed projection ``S u`` of a sketch row is
    ``N(0, u^T M u)``; a Kolmogorov-Smirnov test of the standardised
    projections against N(0, 1) for both samplers, including a singular
    ``M`` (sigma = 0, rank-1 X), and the two samplers against each other.
    """
    from scipy import stats

    rng = np.random.default_rng(11)
    X = np.outer(rng.standard_normal(40), [1.0, -2.0, 0.5]) if sigma == 0 else rng.standard_normal((40, 3))
    M = X.T @ X + sigma**2 * np.eye(3)
    u = np.array([0.3, 1.0, -0.4])
    proj = {}
    for alg in ("gram", "explicit"):
        S = gaussian_sketch(X, 20000, sigma, random_state=5, chunk_size=9, algorithm=alg)
        proj[alg] = S @ u / np.sqrt(u @ M @ u)
        assert stats.kstest(proj[alg], "norm").pvalue > 1e-3
    assert stats.ks_2samp(proj["gram"], proj["explicit"]).pvalue > 1e-3
    if sigma == 0:  # the singular case stays in the row space of X
        S = gaussian_sketch(X, 50, 0.0, random_state=1)
        w = np.cross([1.0, -2.0, 0.5], [0.0, 0.0, 1.0])
        np.testing.assert_allclose(S @ w, 0.0, atol=1e-8 * np.abs(S).max())


def test_gaussian_sketch_rejects_unknown_algorithm():
    with pytest.raises(ValueError, match="algorithm"):
        gaussian_sketch(np.eye(2), 3, algorithm="fast")

# --- the grid sketch (floating-point-safe release of Z F) ---------------------------
def _grid_case(n=400, d=6, r=30, eps=1.0, delta=1e-6, seed=0):
    from skdp.mechanisms.ndis import _cached_rp_noise_multiplier, grid_sketch_plan

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) + 3.0  # correlated columns, rows at the norm bound
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    sigma = _cached_rp_noise_multiplier(eps, delta * 0.99, r)
    return X, grid_sketch_plan(n, d, r, 1.0, sigma, eps)


def test_grid_sketch_factor_error_is_below_the_public_bound():
    """Exact integer arithmetic: ||M^{-1/2} (F~^T F~ - M) M^{-1/2}||_F <= a, and a is tiny."""
    from fractions import Fraction

    from skdp.mechanisms.ndis import _cholesky_longdouble, _quantize_rows

    for n, d in ((400, 6), (20000, 12)):
        X, plan = _grid_case(n=n, d=d)
        Xi = _quantize_rows(X, 1.0, plan["m"]).astype(np.int64)
        assert np.all((Xi * Xi).sum(axis=1) <= 4 ** plan["m"])
        Xo = Xi.astype(object)
        M = Xo.T.dot(Xo) + plan["s2"] * np.eye(d, dtype=np.int64).astype(object)  # exact
        F = _cholesky_longdouble(np.array(M, dtype=np.longdouble))
        Fint = np.rint(F / np.longdouble(plan["p_F"])).astype(np.int64).astype(object)
        p = Fraction(plan["p_F"])
        E = Fint.T.dot(Fint)
        E = np.array([[float(E[i, j] * p * p - M[i, j]) for j in range(d)] for i in range(d)])
        w, V = np.linalg.eigh(np.array(M, dtype=float))
        W = V @ np.diag(w ** -0.5) @ V.T
        observed = np.linalg.norm(W @ E @ W)
        assert observed <= plan["a"], (observed, plan["a"])
        assert plan["a"] < 1e-13


def test_grid_sketch_product_is_exact_and_on_the_grid():
    """The release equals fl(V) g q for the exact integer V = Y_Z F~int + Y (Python integers)."""
    from skdp.mechanisms._discrete import sample_discrete_gaussian
    from skdp.mechanisms.ndis import _cholesky_longdouble, _quantize_rows, grid_sketch

    X, plan = _grid_case(n=300, d=5, r=20)
    S = grid_sketch(X, plan, np.random.default_rng(7))
    Xi = _quantize_rows(X, 1.0, plan["m"]).astype(np.int64).astype(object)
    M = Xi.T.dot(Xi) + plan["s2"] * np.eye(5, dtype=np.int64).astype(object)
    F = _cholesky_longdouble(np.array(M, dtype=np.longdouble))
    Fint = np.rint(F / np.longdouble(plan["p_F"])).astype(np.int64).astype(object)
    rng = np.random.default_rng(7)  # replay the draws
    YZ = sample_discrete_gaussian(2.0 ** plan["k"], (20, 5), rng).astype(object)
    assert len(plan["levels"]) == 2  # the noise is 2^j Y1 + Y2
    Y = sum(sample_discrete_gaussian(s, (20, 5), rng).astype(object) * 2**j
            for j, s in plan["levels"])
    V = YZ.dot(Fint) + Y
    unit = np.ldexp(plan["p_F"], -(plan["k"] + plan["m"]))
    expected = np.array([[float(v) for v in row] for row in V]) * unit
    np.testing.assert_array_equal(S, expected)
    # the sketch's Gram matrix estimates X^T X + sigma_eff^2 I
    assert plan["smoothing_variance"] <= 5e-7 * plan["sigma"] ** 2


def test_private_sketch_delta_total_oracle():
    """delta_NDIS (rp_replace_delta, independent of the plan) + reserve <= delta."""
    from skdp.mechanisms.ndis import private_sketch

    for n, d, r, delta in ((50, 5, 300, 1e-5), (400, 6, 30, 1e-6), (2000, 20, 100, 1.0 / 2000**2)):
        X = np.random.default_rng(1).normal(size=(n, d))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        S, info = private_sketch(X, r, 1.0, delta, 1.0, np.random.default_rng(2))
        assert info["float_safe"] and S.shape == (r, d)
        ndis = rp_replace_delta(1.0, (1.0 / info["sigma"]) ** 2, r)
        assert ndis + info["reserve"] <= delta
        assert 0 < info["reserve"] <= 0.01 * delta


def test_private_sketch_falls_back_where_the_reserve_is_too_large():
    from skdp.mechanisms.ndis import _cached_rp_noise_multiplier, grid_sketch_plan

    # n = 10^6 at delta = 1/n^2: the factorization bound alone is about delta
    sigma = _cached_rp_noise_multiplier(1.0, 0.99e-12, 300)
    plan = grid_sketch_plan(10**6, 20, 300, 1.0, sigma, 1.0)
    assert plan is None or plan["reserve"] > 0.01e-12


def test_smoothing_lemma_numerically():
    """D_{hZ,1} + N(0, s^2) has density phi_{sqrt(1+s^2)} (1 +- (eps1 + eps3)) (Poisson summation)."""
    from scipy.stats import norm as _norm

    from skdp.mechanisms.ndis import _theta_bound

    h, s = 0.25, 0.12  # s^2 / h^2 small enough for a visible deviation
    z = h * np.arange(-200, 201)
    p = np.exp(-z**2 / 2)
    p /= p.sum()
    x = np.linspace(-4, 4, 801)
    dens = (p[None, :] * _norm.pdf(x[:, None] - z[None, :], scale=s)).sum(axis=1)
    ratio = dens / _norm.pdf(x, scale=np.sqrt(1 + s * s))
    s3 = s * s / (1 + s * s)
    bound = _theta_bound(s3 / h**2) + _theta_bound(1 / h**2)
    assert np.max(np.abs(ratio - 1)) <= bound
    assert np.max(np.abs(ratio - 1)) > bound / 3  # the bound is the right size


def test_kl_inequality_used_for_the_factor():
    x = np.linspace(-0.5, 50, 200001)
    assert np.all(x - np.log1p(x) <= x * x + 1e-15)


def test_decimal_cholesky_grid_matches_an_independent_60_digit_factor():
    """round(F / p_F) of the 40-digit decimal factor equals mpmath's 60-digit one."""
    mpmath = pytest.importorskip("mpmath")
    from skdp.mechanisms.ndis import _cholesky_decimal_grid

    rng = np.random.default_rng(3)
    for d, p_F in ((4, 2.0**-10), (12, 2.0**-20), (30, 2.0**3)):
        A = rng.integers(-(2**20), 2**20, size=(3 * d, d))
        M = A.T @ A + np.eye(d, dtype=np.int64) * 2**30
        mpmath.mp.dps = 60
        L = mpmath.cholesky(mpmath.matrix(M.tolist()))  # lower, M = L L^T
        ref = np.array([[int(mpmath.nint(L[i, j] / p_F)) if i >= j else 0 for j in range(d)]
                        for i in range(d)], dtype=np.int64).T
        np.testing.assert_array_equal(_cholesky_decimal_grid(M, p_F), ref)


def test_private_sketch_uses_the_decimal_factor_where_long_double_is_too_coarse():
    """n = 5e5, delta = 1/n^2: long double's reserve exceeds delta/100, 40 digits do not."""
    from skdp.mechanisms.ndis import (SKETCH_RESERVE_SHARE, _cached_rp_noise_multiplier,
                                      grid_sketch_plan, private_sketch)

    n, d, r, eps = 500_000, 3, 2000, 1.0
    delta = 1.0 / n**2
    sigma = _cached_rp_noise_multiplier(eps, delta * (1 - SKETCH_RESERVE_SHARE), r)
    ld = grid_sketch_plan(n, d, r, 1.0, sigma, eps)
    dec = grid_sketch_plan(n, d, r, 1.0, sigma, eps, cholesky="decimal")
    assert ld["reserve"] > SKETCH_RESERVE_SHARE * delta >= dec["reserve"]
    X = np.random.default_rng(0).standard_normal((n, d)) / 3.0
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    S, info = private_sketch(X, r, eps, delta, 1.0, np.random.default_rng(1))
    assert info["float_safe"] and info["plan"]["cholesky"] == "decimal"
    assert info["delta_ndis"] + info["reserve"] <= delta
    # the release is on the plan's grid: integer multiples of one power of two
    g = 2.0 ** (-(dec["k"] + dec["m"]) + int(np.log2(dec["p_F"])))
    assert np.all(np.mod(S / g, 1.0) == 0.0)
    # and it is a sketch of the data: S^T S / r estimates X^T X + sigma^2 I
    G = X.T @ X + dec["sigma_eff"] ** 2 * np.eye(d)
    sd = np.sqrt((np.outer(np.diag(G), np.diag(G)) + G**2) / r)  # Wishart entry sd
    assert np.all(np.abs(S.T @ S / r - G) <= 4.5 * sd)


def test_gaussian_levels_cover_any_scale_with_samplable_draws():
    """Scales up to 2^200 split into draws of at most 2^40 whose variances add up to s^2."""
    from skdp.mechanisms._discrete import _MAX_SIGMA
    from skdp.mechanisms.ndis import _gaussian_levels

    for s in (3.0, 2.0**40, 2.0**41 * 1.3, 2.0**77.5, 2.0**120, 2.0**200):
        levels, eps = _gaussian_levels(s)
        assert all(0 < si <= _MAX_SIGMA for _, si in levels)
        assert levels[-1][0] == 0 and len(levels) == 1 + max(0, math.ceil((math.log2(s) - 40) / 36))
        var = math.fsum(math.ldexp(si, j) ** 2 for j, si in levels)
        assert var == pytest.approx(s * s, rel=1e-12)
        assert eps < 1e-100


def test_grid_sketch_plan_stays_on_the_grid_for_any_n_at_delta_one_over_n_squared():
    from skdp.mechanisms.ndis import (SKETCH_RESERVE_SHARE, _cached_rp_noise_multiplier,
                                      grid_sketch_plan)

    for d, r in ((10, 40), (100, 110)):
        for n in (10**5, 10**6, 10**7, 4 * 10**8):
            delta = 1.0 / n**2
            sigma = _cached_rp_noise_multiplier(1.0, delta * (1 - SKETCH_RESERVE_SHARE), r)
            plan = grid_sketch_plan(n, d, r, 1.0, sigma, 1.0, cholesky="decimal")
            assert plan is not None and plan["reserve"] <= SKETCH_RESERVE_SHARE * delta


def test_float_row_bound_never_proves_a_row_above_the_limit():
    """_rows_proven_within against the exact (Python integer) squared norms of the quantised rows.

    The per-row multiplier is swept across the limit (relative steps of 2^-45 .. 2^-20 around
    the scale that puts the row exactly at ``sqrt(lim)``), with tiny entries, float32 sources
    and integer extra columns: a proven row is never above the limit, and rows well inside it
    are proven.
    """
    from skdp._stats import _dense_norms
    from skdp.mechanisms.ndis import _rows_proven_within

    rng = np.random.default_rng(3)
    m = 20
    lim = float(4**m)
    proven_total = 0
    for p, dtype, n_extra in ((3, np.float64, 0), (50, np.float64, 1), (40, np.float32, 2), (1, np.float64, 0)):
        for _ in range(20):
            X = rng.normal(size=(400, p)).astype(dtype) * 10.0 ** rng.integers(-3, 4)
            if p > 1:
                X[::7, 0] = 1e-300  # underflowing squares
            src = X.astype(np.float64)
            nu = _dense_norms(src)
            Eq = np.trunc(rng.uniform(0, 2.0**m / 4, size=(400, n_extra)))
            room = np.sqrt(np.maximum(lim - (Eq * Eq).sum(axis=1), 0.0))
            rel = 2.0 ** rng.uniform(-45, -20, size=400) * rng.choice([-1.0, 1.0], size=400)
            s = room / nu * (1.0 + rel)
            Y = src * s[:, None]  # the clipping pass's product fl(x s)
            Q = np.trunc(Y).astype(np.int64).astype(object)
            Eo = Eq.astype(np.int64).astype(object)
            exact = np.array([sum(v * v for v in row) + sum(v * v for v in e)
                              for row, e in zip(Q, Eo)], dtype=object)
            ok = _rows_proven_within(nu, s, Eq, lim, p)
            assert all(exact[ok] <= 4**m)
            proven_total += int(ok.sum())
            # well inside the limit (by 2^-30 relative): always proven
            s_in = room / nu * (1.0 - 2.0**-30)
            assert np.all(_rows_proven_within(nu, s_in, Eq, lim, p) | (room == 0))
    assert proven_total > 0
    # out of range norms and non-finite values are left to the exact check
    nu = np.array([2.0**-301, 2.0**401, np.nan, np.inf, 1.0])
    s = np.array([1.0, 2.0**-500, 1.0, 0.0, np.nan])
    assert not _rows_proven_within(nu, s, np.zeros((5, 0)), lim, 4).any()


@pytest.mark.parametrize("case", ["unit", "clipped", "weighted", "float32", "labels"])
def test_integer_gram_with_the_float_bound_equals_the_exact_check(case):
    """The Gram of the quantised rows with the float bound equals the one with every row checked
    exactly (Python integers), and the fast path is taken."""
    import skdp.mechanisms.ndis as nd
    from skdp._stats import AugmentedRows

    rng = np.random.default_rng(5)
    n, d, m = 3000, 7, 22  # chunks of 256 rows, flushed to int64 every 512 rows
    X = rng.normal(size=(n, d))
    kw, extra = {}, 0
    if case == "unit":
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    elif case == "weighted":
        kw["sample_weight"] = rng.uniform(size=n)
    elif case == "float32":
        X = X.astype(np.float32)
    elif case == "labels":
        kw.update(y=rng.normal(size=n) * 3, label_bound=1.0)
        extra = 1
    l = 1.0 if extra == 0 else math.sqrt(2.0)
    rows = AugmentedRows(X, 1.0, **kw)
    proven = []
    orig = nd._rows_proven_within

    def spy(*a, **k):
        out = orig(*a, **k)
        proven.append(out)
        return out

    nd._rows_proven_within = spy
    try:
        G = nd._integer_gram(rows, l, m, 500)
    finally:
        nd._rows_proven_within = orig
    assert proven and np.concatenate(proven).mean() > 0.99
    # reference: the same clipping pass, every row checked exactly
    Q = []
    for _, Xpart, E in AugmentedRows(X, 1.0, **kw).chunks(500, post_scale=nd._quantize_factor(l, m)):
        B = np.hstack([Xpart, E]).copy()
        Q.append(nd._quantize_dense(B, None, float(4**m)).astype(np.int64).astype(object))
    Q = np.vstack(Q)
    assert all(sum(v * v for v in row) <= 4**m for row in Q)
    np.testing.assert_array_equal(G.astype(object), Q.T.dot(Q))


def test_quantize_dense_with_the_float_bound_shrinks_the_same_rows():
    """Rows above the limit (not provable) are shrunk exactly as without the bound; the others
    are left as they are: the same array either way."""
    from skdp._stats import _dense_norms
    from skdp.mechanisms.ndis import _quantize_dense

    rng = np.random.default_rng(11)
    p, lim = 30, float(4**16)
    src = rng.normal(size=(600, p))
    nu = _dense_norms(src)
    rel = np.where(rng.uniform(size=600) < 0.3, 2.0**-8, -(2.0**-30))  # 30% of rows above the limit
    s = np.sqrt(lim) / nu * (1.0 + rel)
    B = src * s[:, None]
    fast = _quantize_dense(B.copy(), None, lim, norms=nu, scale=s, p=p)
    slow = _quantize_dense(B.copy(), None, lim)
    np.testing.assert_array_equal(fast, slow)
    Q = fast.astype(np.int64).astype(object)
    sq = np.array([sum(v * v for v in row) for row in Q], dtype=object)
    assert all(sq <= 4**16)
    before = np.trunc(B).astype(np.int64).astype(object)
    above = np.array([sum(v * v for v in row) > 4**16 for row in before])
    assert 100 < above.sum() < 300  # the shrinking loop ran on a part of the chunk
    np.testing.assert_array_equal(fast[~above], np.trunc(B)[~above])
