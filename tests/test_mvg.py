"""Matrix-variate Gaussian mechanism (seed 001) against independent oracles.

Oracles: ../shared/research/seed001_mvg.md (harmonic-number table of section
1, derived constants of section 5.7, planning table of section 6.1), the
closed-form classical Gaussian scale, high-precision (decimal) roots, and
Monte Carlo moments of the sampled noise.
"""

from decimal import Decimal, localcontext

import numpy as np
import pytest
from scipy.stats import multivariate_normal, norm

from skdp.audit import audit_spec
from skdp.mechanisms import Query, calibrate, select
from skdp.mechanisms.matrix import (
    MatrixVariateGaussian,
    binary_allocation,
    harmonic_number,
    max_pnr_allocation,
    max_pnr_precisions,
    mvg_b_max,
    mvg_budget,
    mvg_phi_max,
    mvg_zeta,
    sample_mvg,
)


# --------------------------------------------------------------------------
# constants (research note tables)
# --------------------------------------------------------------------------
@pytest.mark.parametrize("r, hr, hh", [(4, 2.083333, 2.784457), (6, 2.450000, 3.639919),
                                       (21, 3.645359, 7.813473)])
def test_harmonic_table(r, hr, hh):
    assert harmonic_number(r) == pytest.approx(hr, abs=1e-6)
    assert harmonic_number(r, 0.5) == pytest.approx(hh, abs=1e-6)


# (m, n, gamma, s2, delta, zeta, alpha, beta, phi_max, P, per-entry std) from note section 5.7
EXP_I = (6, 248, np.sqrt(1488), 2 * np.sqrt(6), 1 / 248,
         1680.2, 9988, 250500, 7.98e-6, 1.64e-23, 7.8e5)
EXP_III = (21, 2126, np.sqrt(21 * 2126), np.sqrt(21), 1 / 2126,
           45831, 5.19e5, 2.23e7, 8.99e-8, 3.07e-32, 1.6e8)


@pytest.mark.parametrize("row", [EXP_I, EXP_III], ids=["exp1", "exp3"])
def test_unimodal_constants_section_5_7(row):
    m, n, gamma, s2, delta, zeta, alpha, beta, phi, P, std = row
    b = mvg_budget(1.0, delta, m, n, gamma, s2)
    assert mvg_zeta(delta, m, n) == pytest.approx(zeta, rel=1e-4)
    # the note prints 3-4 significant digits
    assert b["alpha"] == pytest.approx(alpha, rel=3e-3)
    assert b["beta"] == pytest.approx(beta, rel=3e-3)
    assert b["phi_max"] == pytest.approx(phi, rel=3e-3)
    assert b["phi_max"] ** 4 / n == pytest.approx(P, rel=5e-3)  # unimodal budget
    assert b["beta_dominated"]
    # mechanism (non-symmetric query -> Theorem 2, Psi = I_n, equal allocation)
    q = Query(shape=(m, n), l2_sensitivity=s2, sup_norm=gamma)
    spec = calibrate(q, 1.0, delta, mechanism="mvg")
    lam = spec.params["sigma_eigenvalues"]
    np.testing.assert_allclose(spec.params["psi_eigenvalues"], 1.0)
    np.testing.assert_allclose(lam, 1 / np.sqrt(P / m), rtol=5e-3)  # Algorithm 1: 1/sqrt(theta_i P)
    per_entry_std = np.sqrt(spec.expected_squared_error / (m * n))
    assert per_entry_std == pytest.approx(std, rel=0.03)


def test_exp1_classic_gaussian_comparison():
    m, n, gamma, s2, delta = EXP_I[:5]
    classic = s2 * np.sqrt(2 * np.log(1.25 / delta)) / 1.0  # note: 16.6
    assert classic == pytest.approx(16.6, abs=0.05)
    q = Query(shape=(m, n), l2_sensitivity=s2, sup_norm=gamma)
    spec = calibrate(q, 1.0, delta, mechanism="mvg")
    assert np.sqrt(spec.expected_squared_error / (m * n)) / classic > 4e4


def test_exp2_equimodal_theorems_2_and_3():
    # 4x4 covariance, s2 = 8e4/10176, gamma = 4e4, delta = 1/10176 (note section 5.7)
    r, gamma, s2, delta = 4, 4e4, 8e4 / 10176, 1 / 10176
    b = mvg_budget(1.0, delta, r, r, gamma, s2, symmetric=True)
    assert b["zeta"] == pytest.approx(58.76, abs=0.01)
    assert b["alpha"] == pytest.approx(7.79e9, rel=1e-3)
    assert b["omega"] == pytest.approx(2.62e6, rel=1e-3)
    assert b["beta"] == pytest.approx(3849, rel=1e-3)
    assert b["phi_max"] == pytest.approx(1.58e-5, rel=2e-3)
    assert b["thm2"] == pytest.approx(2.49e-10, rel=3e-3)  # equi-modal P = phi^2
    assert b["thm3"] == pytest.approx(4.07e-4, rel=2e-3)
    assert b["thm3"] ** 2 == pytest.approx(1.66e-7, rel=3e-3)
    # per-entry std of isotropic equi-modal noise: sqrt(r)/F
    assert np.sqrt(r) / b["phi_max"] == pytest.approx(1.27e5, rel=3e-3)
    assert np.sqrt(r) / b["thm3"] == pytest.approx(4.9e3, rel=5e-3)
    # the Query carries the upper-triangle l2 sensitivity; s2 = sqrt(2) * that
    q = Query(shape=(r, r), l2_sensitivity=s2 / np.sqrt(2), sup_norm=gamma, symmetric=True)
    spec = calibrate(q, 1.0, delta, mechanism="mvg")
    assert spec.params["s2"] == pytest.approx(s2)
    assert spec.params["theorem"] == 3  # Theorem 4: s2 <= gamma
    np.testing.assert_allclose(spec.params["sigma_eigenvalues"], np.sqrt(r) / 4.07e-4, rtol=3e-3)


@pytest.mark.parametrize("d, n, thm3_std, thm2_std", [(5, 10**3, 1.9, 4.77),
                                                      (5, 10**4, 0.209, 3.81),
                                                      (5, 10**5, 0.0327, 3.72),
                                                      (10, 10**4, 1.13, 6.89),
                                                      (50, 10**4, 129, 132)])
def test_planning_table_section_6_1(d, n, thm3_std, thm2_std):
    # covariance X^T X / n, ||x|| <= 1: s2 = 2/n, gamma = 1, eps = 1, delta = 1e-5
    s2, gamma = 2.0 / n, 1.0
    b = mvg_b_max(1.0, 1e-5, d, gamma, s2)
    phi = mvg_phi_max(1.0, 1e-5, d, d, gamma, s2)
    tol = 0.02 if thm3_std < 1 else 0.03
    assert np.sqrt(d) / b == pytest.approx(thm3_std, rel=tol)
    assert np.sqrt(d) / phi == pytest.approx(thm2_std, rel=0.02)


def test_theorem_2_chosen_when_alpha_below_omega():
    # Theorem 4: Theorem 3 is better iff (H_r + H_{r,1/2}) gamma >= 2 H_r s2;
    # r = 2 and s2 = 2 gamma violate it
    r, gamma = 2, 1.0
    hr, hh = harmonic_number(2), harmonic_number(2, 0.5)
    assert (hr + hh) * gamma < 2 * hr * (2 * gamma)
    q = Query(shape=(r, r), l2_sensitivity=2.0 / np.sqrt(2), sup_norm=gamma, symmetric=True)
    spec = calibrate(q, 1.0, 0.05, mechanism="mvg")
    assert spec.params["theorem"] == 2
    assert spec.params["phi_max"] > spec.params["b_max"]


# --------------------------------------------------------------------------
# numerics
# --------------------------------------------------------------------------
def _mp_root(eps, a, b):
    # printed root (-b + sqrt(b^2 + 8 a eps)) / (2 a) in 60-digit decimal arithmetic
    with localcontext() as ctx:
        ctx.prec = 60
        a, b, eps = Decimal(a), Decimal(b), Decimal(eps)
        return float((-b + (b * b + 8 * a * eps).sqrt()) / (2 * a))


@pytest.mark.parametrize("row", [EXP_I, EXP_III], ids=["exp1", "exp3"])
def test_stable_root_matches_high_precision(row):
    m, n, gamma, s2, delta = row[:5]
    b = mvg_budget(1.0, delta, m, n, gamma, s2)
    exact = _mp_root(1.0, b["alpha"], b["beta"])
    assert b["phi_max"] == pytest.approx(exact, rel=1e-12)
    naive = (-b["beta"] + np.sqrt(b["beta"] ** 2 + 8 * b["alpha"])) / (2 * b["alpha"])
    assert abs(naive / exact - 1) > 1e-12  # the printed form loses digits here


def test_stable_and_naive_root_agree_where_naive_is_stable():
    # beta^2 ~ 8 alpha eps: no cancellation
    eps, delta, m, n, gamma, s2 = 2.0, 0.3, 1, 1, 10.0, 1e-3
    b = mvg_budget(eps, delta, m, n, gamma, s2)
    assert not b["beta_dominated"]
    naive = (-b["beta"] + np.sqrt(b["beta"] ** 2 + 8 * b["alpha"] * eps)) / (2 * b["alpha"])
    assert b["phi_max"] == pytest.approx(naive, rel=1e-13)
    assert b["phi_max"] == pytest.approx(_mp_root(eps, b["alpha"], b["beta"]), rel=1e-13)


# --------------------------------------------------------------------------
# sampling and expected error
# --------------------------------------------------------------------------
def _random_orthonormal(k, seed):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((k, k)))
    return q


def test_sampling_row_and_column_covariance():
    m, n = 3, 2
    W, V = _random_orthonormal(m, 1), _random_orthonormal(n, 2)
    lam, mu = np.array([4.0, 1.0, 0.25]), np.array([2.0, 0.5])
    S, P = W @ np.diag(lam) @ W.T, V @ np.diag(mu) @ V.T
    rng = np.random.default_rng(0)
    Z = np.stack([sample_mvg(rng, lam, mu, W, V) for _ in range(40000)])
    # E[Z Z^T] = Sigma tr(Psi), E[Z^T Z] = Psi tr(Sigma)
    Zt = Z.transpose(0, 2, 1)
    np.testing.assert_allclose(np.mean(Z @ Zt, axis=0), S * np.trace(P), atol=0.12)
    np.testing.assert_allclose(np.mean(Zt @ Z, axis=0), P * np.trace(S), atol=0.12)
    # full entry covariance: vec (column-major) has covariance Psi kron Sigma
    vec = Z.transpose(0, 2, 1).reshape(len(Z), -1)
    np.testing.assert_allclose(np.cov(vec.T), np.kron(P, S), atol=0.1)


def test_spec_sampling_and_expected_error_directional():
    m, n = 3, 4
    W = _random_orthonormal(m, 3)
    theta = binary_allocation(m, [0], 0.7)
    mech = MatrixVariateGaussian(directions=W, allocation=theta)
    q = Query(shape=(m, n), l2_sensitivity=1.0, sup_norm=2.0)
    spec = mech.calibrate(q, 1.0, 0.1)
    assert spec.mechanism == "mvg"
    phi = mvg_phi_max(1.0, 0.1, m, n, 2.0, 1.0)
    # Algorithm 1: Psi = I_n, lambda_i = 1/sqrt(theta_i phi^4 / n)
    np.testing.assert_allclose(spec.params["psi_eigenvalues"], 1.0)
    np.testing.assert_allclose(spec.params["sigma_eigenvalues"], 1 / np.sqrt(theta * phi**4 / n))
    S = W @ np.diag(spec.params["sigma_eigenvalues"]) @ W.T
    rng = np.random.default_rng(5)
    Z = np.stack([spec.sample(rng) for _ in range(20000)])
    emp = np.mean(Z @ Z.transpose(0, 2, 1), axis=0) / n
    np.testing.assert_allclose(emp / np.trace(S), S / np.trace(S), atol=0.03)
    assert spec.expected_squared_error == pytest.approx(np.trace(S) * n)
    emp_err = np.mean(np.sum(Z**2, axis=(1, 2)))
    assert emp_err == pytest.approx(spec.expected_squared_error, rel=0.03)


def test_symmetric_noise_is_symmetrized_and_error_matches():
    d = 3
    q = Query(shape=(d, d), l2_sensitivity=0.5, sup_norm=1.0, symmetric=True)
    spec = calibrate(q, 1.0, 0.05, mechanism="mvg")
    Z = np.stack([spec.sample(i) for i in range(20000)])
    assert np.allclose(Z, Z.transpose(0, 2, 1))
    lam = spec.params["sigma_eigenvalues"][0]  # isotropic Sigma = Psi = lam I
    # E||(Z + Z^T)/2||^2 = lam^2 (d^2 + d) / 2
    assert spec.expected_squared_error == pytest.approx(lam**2 * d * (d + 1) / 2)
    emp_err = np.mean(np.sum(Z**2, axis=(1, 2)))
    assert emp_err == pytest.approx(spec.expected_squared_error, rel=0.03)


def test_dp_condition_met_with_equality():
    q = Query(shape=(4, 6), l2_sensitivity=1.0, sup_norm=3.0)
    w = np.array([1.0, 2.0, 3.0, 4.0])
    mech = MatrixVariateGaussian(allocation=w, psi_allocation=np.arange(1, 7.0))
    spec = mech.calibrate(q, 0.5, 0.01)
    lhs = (np.linalg.norm(1 / spec.params["sigma_eigenvalues"])
           * np.linalg.norm(1 / spec.params["psi_eigenvalues"]))
    assert lhs == pytest.approx(mvg_phi_max(0.5, 0.01, 4, 6, 3.0, 1.0) ** 2, rel=1e-12)
    # Theorem 3 (symmetric, Psi = Sigma): ||Sigma^{-1}||_F = b_max
    qs = Query(shape=(4, 4), l2_sensitivity=0.1, sup_norm=3.0, symmetric=True)
    spec = MatrixVariateGaussian(allocation=w).calibrate(qs, 0.5, 0.01)
    assert spec.params["theorem"] == 3
    assert np.linalg.norm(1 / spec.params["sigma_eigenvalues"]) == pytest.approx(
        mvg_b_max(0.5, 0.01, 4, 3.0, np.sqrt(2) * 0.1), rel=1e-12)


def test_isotropic_minimizes_expected_error():
    q = Query(shape=(4, 5), l2_sensitivity=1.0, sup_norm=3.0)
    iso = calibrate(q, 1.0, 0.01, mechanism="mvg").expected_squared_error
    phi = mvg_phi_max(1.0, 0.01, 4, 5, 3.0, 1.0)
    assert iso == pytest.approx((4 * 5) ** 1.5 / phi**2)  # closed form (m n)^{3/2} / phi^2
    rng = np.random.default_rng(0)
    for _ in range(20):
        mech = MatrixVariateGaussian(allocation=rng.uniform(0.1, 1, 4),
                                     psi_allocation=rng.uniform(0.1, 1, 5))
        assert mech.calibrate(q, 1.0, 0.01).expected_squared_error >= iso * (1 - 1e-12)


def test_symmetric_sensitivity_conversion_is_safe_and_tight():
    # zero-diagonal symmetric difference: ||D||_F = sqrt(2) ||triu(D)||_2 exactly
    D = np.array([[0.0, 0.3, -0.4], [0.3, 0.0, 0.0], [-0.4, 0.0, 0.0]])
    triu = D[np.triu_indices(3)]
    q = Query(shape=(3, 3), l2_sensitivity=np.linalg.norm(triu), sup_norm=1.0, symmetric=True)
    assert MatrixVariateGaussian.frobenius_sensitivity(q) == pytest.approx(np.linalg.norm(D))
    # a full sensitivity profile gives ||Lambda||_F directly when smaller
    prof = np.full((3, 3), 0.01)
    qp = Query(shape=(3, 3), sensitivity_profile=prof, sup_norm=1.0, symmetric=True)
    assert MatrixVariateGaussian.frobenius_sensitivity(qp) == pytest.approx(0.03)
    # s2 never exceeds 2 gamma
    qg = Query(shape=(2, 3), l2_sensitivity=10.0, sup_norm=1.0)
    assert MatrixVariateGaussian.frobenius_sensitivity(qg) == 2.0


# --------------------------------------------------------------------------
# allocations
# --------------------------------------------------------------------------
def test_binary_allocation():
    th = binary_allocation(6, [0, 5], 0.75)
    np.testing.assert_allclose(th, [0.375, 0.0625, 0.0625, 0.0625, 0.0625, 0.375])
    for bad in [dict(important=[], tau=0.5), dict(important=range(6), tau=0.5),
                dict(important=[7], tau=0.5), dict(important=[0], tau=1.0),
                dict(important=[0], tau=0.0)]:
        with pytest.raises(ValueError):
            binary_allocation(6, **bad)


def test_max_pnr_closed_form_when_all_active():
    lam = np.array([4.0, 2.0, 1.0])
    budget = 10.0
    p = max_pnr_precisions(lam, budget)
    c = (budget + np.sum(1 / lam)) / 3  # Theorem 7 closed form (all terms positive)
    np.testing.assert_allclose(p, c - 1 / lam)
    assert p.sum() == pytest.approx(budget)


def test_max_pnr_water_filling_inactive_directions():
    lam = np.array([10.0, 5.0, 0.01])  # 1/lambda = 0.1, 0.2, 100
    p = max_pnr_precisions(lam, 1.0)
    # KKT by hand: active set {0, 1}, c = (1 + 0.3)/2 = 0.65 < 100
    np.testing.assert_allclose(p, [0.55, 0.45, 0.0])
    theta = max_pnr_allocation(lam, 1.0, floor=0.01)
    assert np.all(theta > 0) and theta.sum() == pytest.approx(1.0)
    assert theta[0] > theta[1] > theta[2]


def test_max_pnr_in_mechanism_meets_budget():
    q = Query(shape=(3, 50), l2_sensitivity=1.0, sup_norm=5.0)
    mech = MatrixVariateGaussian(allocation="max_pnr", kf_eigenvalues=[10.0, 5.0, 0.01])
    spec = mech.calibrate(q, 1.0, 0.01)
    lam = spec.params["sigma_eigenvalues"]
    phi = mvg_phi_max(1.0, 0.01, 3, 50, 5.0, 1.0)
    assert np.linalg.norm(1 / lam) * np.sqrt(50) == pytest.approx(phi**2, rel=1e-12)
    # the budget (~1e-9) is far below 1/lambda_f: water-filling puts it all on the top direction,
    # the others keep only the floor share
    assert lam[0] < lam[1]
    assert lam[1] == pytest.approx(lam[2])


# --------------------------------------------------------------------------
# selection and bad input
# --------------------------------------------------------------------------
@pytest.mark.parametrize("d", [10, 50])
def test_auto_never_picks_mvg_for_covariance(d):
    n = 10**4
    q = Query(shape=(d, d), l2_sensitivity=np.sqrt(2) / n, sup_norm=1.0, symmetric=True)
    mvg = calibrate(q, 1.0, 1e-5, mechanism="mvg")
    gauss = calibrate(q, 1.0, 1e-5, mechanism="analytic_gaussian")
    assert mvg.expected_squared_error / gauss.expected_squared_error > 1e6
    assert select(q, 1.0, 1e-5).mechanism != "mvg"


def test_bad_inputs():
    q = Query(shape=(3, 4), l2_sensitivity=1.0, sup_norm=2.0)
    for eps, delta in [(0.0, 0.1), (-1.0, 0.1), (1.0, 0.0), (1.0, 1.0), (np.nan, 0.1),
                       (1.0, np.inf)]:
        with pytest.raises(ValueError):
            calibrate(q, eps, delta, mechanism="mvg")
    with pytest.raises(ValueError, match="2-D"):
        calibrate(Query(shape=(5,), l2_sensitivity=1.0, sup_norm=1.0), 1.0, 0.1, mechanism="mvg")
    with pytest.raises(ValueError, match="sup_norm"):
        calibrate(Query(shape=(3, 4), l2_sensitivity=1.0), 1.0, 0.1, mechanism="mvg")
    with pytest.raises(ValueError, match="square"):
        MatrixVariateGaussian(mode="equimodal").calibrate(q, 1.0, 0.1)
    with pytest.raises(ValueError, match="orthonormal"):
        MatrixVariateGaussian(directions=np.ones((3, 3))).calibrate(q, 1.0, 0.1)
    with pytest.raises(ValueError, match="shape"):
        MatrixVariateGaussian(directions=np.eye(4)).calibrate(q, 1.0, 0.1)
    with pytest.raises(ValueError, match="> 0"):
        MatrixVariateGaussian(allocation=[1.0, 0.0, 1.0]).calibrate(q, 1.0, 0.1)
    with pytest.raises(ValueError):
        MatrixVariateGaussian(allocation="max_pnr")
    with pytest.raises(ValueError):
        MatrixVariateGaussian(mode="kron")
    for bad in [dict(delta=0.0), dict(delta=1.0)]:
        with pytest.raises(ValueError):
            mvg_zeta(m=2, n=2, **bad)
    with pytest.raises(ValueError):
        mvg_phi_max(1.0, 0.1, 2, 2, gamma=0.0, s2=1.0)
    with pytest.raises(ValueError):
        harmonic_number(0)
    with pytest.raises(ValueError, match="not all zero"):
        max_pnr_precisions([0.0, 0.0], 1.0)


# --------------------------------------------------------------------------
# exact privacy of the calibrated noise, and statistical audits
# --------------------------------------------------------------------------
def _balle_wang_delta(mu, eps):
    return norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * norm.cdf(-mu / 2 - eps / mu)


@pytest.mark.parametrize("seed", range(6))
def test_calibrated_noise_is_dp_by_exact_gaussian_analysis(seed):
    # MVG noise is Gaussian with covariance Psi kron Sigma; for a shift D the privacy loss is that
    # of a 1-D Gaussian pair at mu = ||K^{-1/2} vec D||, at most s2 / sqrt(min lam * min mu)
    # over ||D||_F <= s2 (Balle & Wang 2018, Thm 8, independent of seed 001).
    rng = np.random.default_rng(seed)
    m, n = rng.integers(1, 6, size=2)
    eps, delta = rng.uniform(0.1, 3), rng.uniform(0.01, 0.3)
    s2, gamma = rng.uniform(0.1, 2), rng.uniform(1, 5)
    mech = MatrixVariateGaussian(directions=_random_orthonormal(m, seed),
                                 allocation=rng.uniform(0.2, 1, m),
                                 psi_allocation=rng.uniform(0.2, 1, n))
    spec = mech.calibrate(Query(shape=(m, n), l2_sensitivity=s2, sup_norm=gamma), eps, delta)
    p = spec.params
    mu = p["s2"] / np.sqrt(p["sigma_eigenvalues"].min() * p["psi_eigenvalues"].min())
    assert _balle_wang_delta(mu, eps) <= delta
    assert 2 * norm.cdf(mu / 2) - 1 <= delta  # even (0, delta)-DP


def _zero_diag_pair(d, l2):
    D = np.zeros((d, d))
    D[0, 1] = D[1, 0] = l2  # ||triu D||_2 = l2, ||D||_F = sqrt(2) l2 = s2
    return D / 2, -D / 2


def test_audit_general_2x2():
    gamma, s2 = 1.0, 1.0
    q = Query(shape=(2, 2), l2_sensitivity=s2, sup_norm=gamma)
    spec = calibrate(q, 1.0, 0.05, mechanism="mvg")
    v0 = np.array([[0.5, 0.0], [0.0, 0.0]])  # ||v0 - v1||_F = s2, both within gamma
    res = audit_spec(spec, v0, -v0, n_samples=200_000, random_state=1)
    assert res.passed
    assert res.delta_lower_bound < 0.01  # MVG is very loose: ~0 against claimed 0.05


def test_audit_symmetric_3x3():
    l2 = 0.5
    q = Query(shape=(3, 3), l2_sensitivity=l2, sup_norm=1.0, symmetric=True)
    spec = calibrate(q, 1.0, 0.05, mechanism="mvg")
    v0, v1 = _zero_diag_pair(3, l2)
    assert np.linalg.norm(v0 - v1) == pytest.approx(spec.params["s2"])
    res = audit_spec(spec, v0, v1, n_samples=200_000, random_state=2)
    assert res.passed
    assert res.delta_lower_bound < 0.01


def test_audit_has_power_on_shrunk_mvg_noise():
    # the same MVG sampler with its covariance shrunk so that the separation is mu = 6 must FAIL
    from types import MappingProxyType

    from skdp.mechanisms import NoiseSpec

    q = Query(shape=(2, 2), l2_sensitivity=1.0, sup_norm=1.0)
    spec = calibrate(q, 1.0, 0.05, mechanism="mvg")
    params = dict(spec.params)
    params["sigma_eigenvalues"] = np.full(2, (1.0 / 6) ** 2)  # per-entry std 1/6, ||D|| = 1
    bad = NoiseSpec("mvg", q, 1.0, 0.05, True, MappingProxyType(params), 0.0)
    v0 = np.array([[0.5, 0.0], [0.0, 0.0]])
    res = audit_spec(bad, v0, -v0, n_samples=100_000, random_state=3)
    assert not res.passed
    assert res.delta_lower_bound > 0.3  # exact: Balle-Wang delta(mu=6, eps=1) = 0.9956


@pytest.mark.parametrize("symmetric, mode",
                         [(False, "general"), (True, "equimodal"), (True, "general")])
def test_log_density_matches_explicit_gaussian(symmetric, mode):
    d = 3
    W = _random_orthonormal(d, 7)
    kw = dict(directions=W, allocation=[1.0, 2.0, 3.0], mode=mode)
    if mode == "general":
        kw.update(psi_directions=_random_orthonormal(d, 8), psi_allocation=[3.0, 1.0, 0.5])
    mech = MatrixVariateGaussian(**kw)
    q = Query(shape=(d, d), l2_sensitivity=1.0, sup_norm=2.0, symmetric=symmetric)
    spec = mech.calibrate(q, 1.0, 0.1)
    p = spec.params
    S = W @ np.diag(p["sigma_eigenvalues"]) @ W.T
    Wp = p["psi_directions"] if p["psi_directions"] is not None else W
    P = Wp @ np.diag(p["psi_eigenvalues"]) @ Wp.T
    K = np.kron(P, S)  # covariance of column-major vec(Z)
    Z = np.stack([spec.sample(i) for i in range(5)])
    if symmetric:  # covariance of the upper triangle of (Z + Z^T)/2, built entry by entry
        A = np.zeros((d * d, d * d))
        for i in range(d):
            for j in range(d):
                A[i + d * j, i + d * j] += 0.5
                A[i + d * j, j + d * i] += 0.5
        iu = np.triu_indices(d)
        rows = iu[0] + d * iu[1]
        C = (A @ K @ A.T)[np.ix_(rows, rows)]
        ref = multivariate_normal(cov=C).logpdf(Z[:, iu[0], iu[1]])
    else:
        ref = multivariate_normal(cov=K).logpdf(Z.transpose(0, 2, 1).reshape(5, -1))
    got = mech._log_density(spec, Z.reshape(5, -1))
    np.testing.assert_allclose(got - got[0], ref - ref[0], rtol=1e-8, atol=1e-8)
