"""Pure-epsilon mechanisms (laplace, inid_laplace, gamma_norm) against independent oracles.

Oracles: seed 002 (../shared/research/seed002_inid.md) section 8.1 (Fig. 3 dB
values) and 8.2 (Table II), Table I closed forms recomputed here, the
Gamma(K, Delta/eps) norm law of Chaudhuri, Monteleoni & Sarwate (2011, Alg. 1)
via scipy.stats, and a numerical optimiser for the weighted Lagrange solution.
Statistical audits (skdp.audit) at worst-case neighbours, with power checks.
"""

import dataclasses
import warnings
from types import MappingProxyType

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from skdp.audit import audit_spec
from skdp.mechanisms._grid import GRID_UTILITY_LOSS
from skdp.mechanisms import Query, calibrate, get_mechanism
from skdp.mechanisms.laplace import inid_laplace_scales

EPS_GRID = [0.1, 0.5, 1.0, 3.0]


#: calibrations on the grid move by at most the documented loss (skdp.mechanisms._grid)
GRID_RTOL = 2 * GRID_UTILITY_LOSS


def _db(x):
    return 10.0 * np.log10(x)


def _profiles(K):
    """Seed 002 section 8.1 profiles, normalised to ||lambda||_1 = 1."""
    i = np.arange(1, K + 1, dtype=float)
    onehot = np.zeros(K)
    onehot[-1] = 1.0
    raw = {
        "uniform": np.ones(K),
        "linear": i,
        "quadratic": i**2,
        "exponential": np.exp(i - K),
        "onehot": onehot,
    }
    return {k: v / v.sum() for k, v in raw.items()}


# ----------------------------------------------------------------------
# i.i.d. Laplace
# ----------------------------------------------------------------------
@pytest.mark.parametrize("eps", EPS_GRID)
def test_iid_laplace_scale_and_error_closed_form(eps):
    q = Query(shape=(7,), l1_sensitivity=2.5)
    spec = calibrate(q, eps, 0.0, mechanism="laplace")
    assert spec.params["scale"] == pytest.approx(2.5 / eps)
    # seed 002 Table I: 2 K Delta_1^2 / eps^2
    assert spec.expected_squared_error == pytest.approx(2 * 7 * 2.5**2 / eps**2)
    assert spec.delta == 0.0 and spec.verified


def test_iid_laplace_uses_tightest_l1_bound():
    # l1 from a profile (||lambda||_1) and from l2 (sqrt(K) Delta_2): the smaller one.
    q = Query(shape=(4,), l2_sensitivity=1.0, sensitivity_profile=[1.0, 0.1, 0.1, 0.1])
    spec = calibrate(q, 1.0, mechanism="laplace")
    assert spec.params["scale"] == pytest.approx(1.3)
    q = Query(shape=(4,), l2_sensitivity=0.5, sensitivity_profile=[1.0, 1.0, 1.0, 1.0])
    assert calibrate(q, 1.0, mechanism="laplace").params["scale"] == pytest.approx(0.5 * 2)


def test_iid_laplace_symmetric_query():
    d = 4
    q = Query(shape=(d, d), l1_sensitivity=1.0, symmetric=True)
    spec = calibrate(q, 2.0, mechanism="laplace")
    beta = 0.5
    # d diagonal entries + d(d-1) mirrored off-diagonal entries, each variance 2 beta^2
    assert spec.expected_squared_error == pytest.approx(2 * beta**2 * d * d)
    z = spec.sample(0)
    np.testing.assert_array_equal(z, z.T)


def test_iid_laplace_samples_have_laplace_law():
    spec = calibrate(Query(shape=(20000,), l1_sensitivity=3.0), 1.5, mechanism="laplace")
    z = spec.sample(11)
    res = stats.kstest(z, stats.laplace(scale=2.0).cdf)
    assert res.pvalue > 0.01
    np.testing.assert_array_equal(z, spec.sample(11))


# ----------------------------------------------------------------------
# i.n.i.d. Laplace: Theorem 5
# ----------------------------------------------------------------------
@pytest.mark.parametrize("eps", EPS_GRID)
def test_inid_laplace_theorem5_scales_identity_and_mse(eps):
    lam = np.array([1.0, 0.5, 0.25, 0.05, 0.0])
    spec = calibrate(Query(shape=(5,), sensitivity_profile=lam), eps, 0.0, mechanism="inid_laplace")
    beta = spec.params["scales"]
    s23 = np.sum(lam ** (2 / 3))
    # Theorem 5 for the rounded profile lambda + g (grid of skdp.mechanisms._grid): within
    # the documented grid loss of the real-valued optimum, never below it
    np.testing.assert_allclose(beta, np.cbrt(lam) * s23 / eps, rtol=GRID_RTOL)
    assert np.all(beta >= np.cbrt(lam) * s23 / eps)
    nz = lam > 0
    # the privacy constraint is active: sum lambda_i / beta_i = eps
    assert np.sum(lam[nz] / beta[nz]) == pytest.approx(eps, rel=GRID_RTOL)
    g = spec.params["grid"]
    assert np.sum((lam[nz] + g[nz]) / beta[nz]) <= eps * (1 + 1e-12)  # the rounded profile
    assert beta[~nz] == 0.0
    # closed-form MSE 2 (sum lambda^(2/3))^3 / eps^2 equals 2 ||beta||^2
    assert spec.expected_squared_error == pytest.approx(2 * s23**3 / eps**2, rel=GRID_RTOL)
    assert spec.expected_squared_error == pytest.approx(2 * np.sum(beta**2), rel=1e-12)
    # a zero-sensitivity coordinate is public: it gets no noise
    assert spec.sample(0)[-1] == 0.0


def test_inid_laplace_never_worse_than_iid():
    rng = np.random.default_rng(0)
    for _ in range(20):
        lam = rng.exponential(size=12) ** 3
        q = Query(shape=(12,), sensitivity_profile=lam)
        inid = calibrate(q, 0.7, mechanism="inid_laplace").expected_squared_error
        iid = calibrate(q, 0.7, mechanism="laplace").expected_squared_error
        assert inid <= iid * (1 + 1e-12)
        # SPR (beta_i = K lambda_i / eps) is no better than i.i.d. (seed 002 section 2.4)
        spr = 2 * np.sum((12 * lam / 0.7) ** 2)
        assert spr >= iid * (1 - 1e-12)


@pytest.mark.parametrize(
    "profile, gain_db",
    [("linear", 0.546), ("quadratic", 1.39), ("exponential", 7.609), ("uniform", 0.0)],
)
@pytest.mark.parametrize("eps", EPS_GRID)
def test_fig3a_reduction_over_iid(profile, gain_db, eps):
    """Seed 002 section 8.1, Fig. 3(a): K=20, ||lambda||_1=1, gain independent of eps."""
    lam = _profiles(20)[profile]
    q = Query(shape=(20,), sensitivity_profile=lam)
    iid = calibrate(q, eps, mechanism="laplace").expected_squared_error
    inid = calibrate(q, eps, mechanism="inid_laplace").expected_squared_error
    decimals = 0.0005 if profile != "quadratic" else 0.005
    assert _db(iid / inid) == pytest.approx(gain_db, abs=decimals)


@pytest.mark.parametrize(
    "profile, mse_db",
    [("uniform", 22.041), ("linear", 21.495), ("quadratic", 20.652), ("exponential", 14.432),
     ("onehot", 9.031)],
)
def test_fig3_absolute_values_eps05(profile, mse_db):
    """Seed 002 section 8.1: absolute Laplace MSEs at eps=0.5, K=20, ||lambda||_1=1."""
    q = Query(shape=(20,), sensitivity_profile=_profiles(20)[profile])
    mech = "laplace" if profile == "uniform" else "inid_laplace"
    assert _db(calibrate(q, 0.5, mechanism=mech).expected_squared_error) == pytest.approx(
        mse_db, abs=5e-4)
    # i.i.d. Laplace with Delta_1 = ||lambda||_1 = 1 is the same for every profile: 22.041 dB
    assert _db(calibrate(q, 0.5, mechanism="laplace").expected_squared_error) == pytest.approx(
        22.041, abs=5e-4)


def test_fig3b_exponential_saturation():
    """Seed 002 section 8.1, Fig. 3(b): exponential MSE saturates at 14.432 dB (paper typo 14.243)."""
    for K in (60, 300):
        q = Query(shape=(K,), sensitivity_profile=_profiles(K)["exponential"])
        mse = calibrate(q, 0.5, mechanism="inid_laplace").expected_squared_error
        assert _db(mse) == pytest.approx(14.432, abs=5e-4)


@pytest.mark.parametrize(
    "eps, iid_mae, inid_mae_l1opt",
    [(0.5, 4.0, 3.4283), (1.0, 2.0, 1.7141), (1.5, 1.3333, 1.1428), (2.0, 1.0, 0.8571),
     (2.5, 0.8, 0.6857), (3.0, 0.6667, 0.5714)],
)
def test_table2_mae(eps, iid_mae, inid_mae_l1opt):
    """Seed 002 section 8.2, Table II: K=2, lambda=[0.85, 0.15], MAE = sum_i beta_i."""
    lam = np.array([0.85, 0.15])
    q = Query(shape=(2,), sensitivity_profile=lam)
    iid = calibrate(q, eps, mechanism="laplace")
    assert 2 * iid.params["scale"] == pytest.approx(iid_mae, abs=5e-5)
    # The table's i.n.i.d. row uses the MAE-optimal (p=1) scales beta_i ~ sqrt(lambda_i).
    beta1 = inid_laplace_scales(lam, eps, p=1)
    assert np.sum(beta1) == pytest.approx(inid_mae_l1opt, abs=5e-5)
    assert np.sum(lam / beta1) == pytest.approx(eps)
    # The mechanism minimises the MSE (p=2); its MAE is larger than the p=1 optimum
    # but still below i.i.d. (closed form: sum lambda^(1/3) * sum lambda^(2/3) / eps).
    spec = calibrate(q, eps, mechanism="inid_laplace")
    mae2 = np.sum(spec.params["scales"])
    assert mae2 == pytest.approx(np.sum(np.cbrt(lam)) * np.sum(lam ** (2 / 3)) / eps, rel=GRID_RTOL)
    assert inid_mae_l1opt - 1e-4 <= mae2 < iid_mae


def test_weighted_symmetric_matches_numerical_optimum():
    """Symmetric query: weights 2 off the diagonal; compare with SLSQP on the same problem."""
    d = 3
    prof = np.array([[1.0, 0.3, 0.1], [0.3, 0.5, 0.05], [0.1, 0.05, 0.2]])
    q = Query(shape=(d, d), sensitivity_profile=prof, symmetric=True)
    eps = 0.8
    spec = calibrate(q, eps, mechanism="inid_laplace")
    iu = np.triu_indices(d)
    lam = prof[iu]
    w = np.where(iu[0] == iu[1], 1.0, 2.0)
    beta = spec.params["scales"]
    assert np.sum(lam / beta) == pytest.approx(eps, rel=GRID_RTOL)
    assert np.sum((lam + spec.params["grid"]) / beta) <= eps * (1 + 1e-12)  # the rounded profile

    def err(b):
        return np.sum(2 * w * b**2)

    cons = {"type": "ineq", "fun": lambda b: eps - np.sum(lam / b)}
    x0 = np.full(lam.size, lam.sum() / eps * 2)
    res = optimize.minimize(err, x0, constraints=[cons], bounds=[(1e-6, None)] * lam.size,
                            method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
    assert res.success
    assert spec.expected_squared_error == pytest.approx(res.fun, rel=1e-5)
    np.testing.assert_allclose(beta, res.x, rtol=1e-3)
    assert spec.expected_squared_error == pytest.approx(err(beta), rel=1e-12)
    # Monte Carlo over the full (mirrored) matrix
    rng = np.random.default_rng(5)
    sq = [np.sum(spec.sample(rng) ** 2) for _ in range(8000)]
    assert np.mean(sq) == pytest.approx(spec.expected_squared_error, rel=0.05)


# ----------------------------------------------------------------------
# Gamma-norm mechanism
# ----------------------------------------------------------------------
@pytest.mark.parametrize("K", [1, 2, 5, 30])
def test_gamma_norm_expected_error_closed_form(K):
    q = Query(shape=(K,), l2_sensitivity=1.7)
    spec = calibrate(q, 0.6, 0.0, mechanism="gamma_norm")
    s = 1.7 / 0.6
    assert spec.params["scale"] == pytest.approx(s)
    assert spec.expected_squared_error == pytest.approx(K * (K + 1) * s**2)
    # E r^2 for r ~ Gamma(K, s), from scipy
    assert spec.expected_squared_error == pytest.approx(stats.gamma(a=K, scale=s).moment(2))


@pytest.mark.parametrize("K", [1, 3, 10])
def test_gamma_norm_sampled_norms_ks(K):
    spec = calibrate(Query(shape=(K,), l2_sensitivity=2.0), 1.0, mechanism="gamma_norm")
    rng = np.random.default_rng(123)
    b = np.array([spec.sample(rng) for _ in range(4000)]).reshape(4000, K)
    r = np.linalg.norm(b, axis=1)
    assert stats.kstest(r, stats.gamma(a=K, scale=2.0).cdf).pvalue > 0.01
    if K > 1:
        u = b / r[:, None]
        # uniform direction: mean 0 and second moment I/K
        assert np.max(np.abs(u.mean(axis=0))) < 4 / np.sqrt(4000)
        np.testing.assert_allclose(u.T @ u / 4000, np.eye(K) / K, atol=0.03)
    else:
        assert abs(np.mean(b > 0) - 0.5) < 0.03


def test_gamma_norm_symmetric_query_error():
    d = 4
    q = Query(shape=(d, d), l2_sensitivity=1.0, symmetric=True)
    spec = calibrate(q, 1.0, mechanism="gamma_norm")
    K = d * (d + 1) // 2
    w_sum = d + 2 * (K - d)  # = d*d
    assert spec.expected_squared_error == pytest.approx((K + 1) * w_sum)
    rng = np.random.default_rng(2)
    zs = [spec.sample(rng) for _ in range(8000)]
    np.testing.assert_array_equal(zs[0], zs[0].T)
    assert np.mean([np.sum(z**2) for z in zs]) == pytest.approx(spec.expected_squared_error,
                                                                rel=0.03)


def test_gamma_norm_is_laplace_in_one_dimension():
    g = calibrate(Query(shape=(), l2_sensitivity=1.0), 0.5, mechanism="gamma_norm")
    lap = calibrate(Query(shape=(), l1_sensitivity=1.0), 0.5, mechanism="laplace")
    assert g.expected_squared_error == pytest.approx(lap.expected_squared_error)
    assert isinstance(g.sample(0), float)


# ----------------------------------------------------------------------
# log densities (used by audits)
# ----------------------------------------------------------------------
def test_log_density_laplace_matches_scipy():
    lam = np.array([0.9, 0.2, 0.4])
    spec = calibrate(Query(shape=(3,), sensitivity_profile=lam), 1.0, mechanism="inid_laplace")
    x = np.random.default_rng(0).normal(size=(10, 3))
    ref = stats.laplace(scale=spec.params["scales"]).logpdf(x).sum(axis=1)
    np.testing.assert_allclose(get_mechanism("inid_laplace").log_density(spec, x), ref)
    spec = calibrate(Query(shape=(3,), l1_sensitivity=1.0), 2.0, mechanism="laplace")
    assert spec.params["scale"] == pytest.approx(0.5, rel=GRID_RTOL)  # Delta_1 / eps on the grid
    ref = stats.laplace(scale=spec.params["scale"]).logpdf(x).sum(axis=1)
    np.testing.assert_allclose(get_mechanism("laplace").log_density(spec, x), ref)


def test_log_density_gamma_norm_normalised():
    mech = get_mechanism("gamma_norm")
    # the density depends on ||b|| only: integrate over shells of area 2 pi r (K=2), 4 pi r^2 (K=3)
    for K, shell in [(2, lambda r: 2 * np.pi * r), (3, lambda r: 4 * np.pi * r**2)]:
        spec = calibrate(Query(shape=(K,), l2_sensitivity=1.0), 2.0, mechanism="gamma_norm")
        e1 = np.eye(K)[0]
        val, _ = integrate.quad(lambda r: shell(r) * np.exp(mech.log_density(spec, r * e1)),
                                0, np.inf, epsabs=1e-11)
        assert val == pytest.approx(1.0, abs=1e-7)
        # isotropy: same value in every direction
        u = np.random.default_rng(K).normal(size=(5, K))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        np.testing.assert_allclose(mech.log_density(spec, 0.7 * u), mech.log_density(spec, 0.7 * e1))
    spec1 = calibrate(Query(shape=(1,), l2_sensitivity=1.0), 2.0, mechanism="gamma_norm")
    x = np.linspace(-3, 3, 7)[:, None]
    np.testing.assert_allclose(mech.log_density(spec1, x), stats.laplace(scale=0.5).logpdf(x[:, 0]),
                               atol=1e-12)


def test_log_density_privacy_loss_bounded():
    """Worst-case log ratios equal eps (the bound of each docstring is attained, never exceeded)."""
    rng = np.random.default_rng(1)
    eps = 0.9
    lam = np.array([1.0, 0.3, 0.1])
    for name, q, d in [
        ("laplace", Query(shape=(3,), l1_sensitivity=1.0), np.array([0.5, -0.3, 0.2])),
        ("inid_laplace", Query(shape=(3,), sensitivity_profile=lam), lam),
        ("gamma_norm", Query(shape=(3,), l2_sensitivity=1.0), np.array([0.6, 0.0, -0.8])),
    ]:
        spec = calibrate(q, eps, mechanism=name)
        mech = get_mechanism(name)
        t = rng.normal(scale=5, size=(5000, 3))
        loss = mech.log_density(spec, t) - mech.log_density(spec, t + d)
        assert np.max(np.abs(loss)) <= eps * (1 + 1e-9)
        # attained at t = -k d (the noise moves along the difference)
        t_star = -3.0 * d[None, :]
        assert (mech.log_density(spec, t_star + d) - mech.log_density(spec, t_star))[0] \
            == pytest.approx(eps, rel=GRID_RTOL)


def test_log_density_shape_mismatch():
    spec = calibrate(Query(shape=(3,), l1_sensitivity=1.0), 1.0, mechanism="laplace")
    with pytest.raises(ValueError, match="query shape"):
        get_mechanism("laplace").log_density(spec, np.zeros((4, 2)))


# ----------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["laplace", "inid_laplace", "gamma_norm"])
def test_delta_zero_is_fine_and_delta_positive_gives_same_noise(name):
    q = Query(shape=(3,), sensitivity_profile=[1.0, 0.5, 0.1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if name == "gamma_norm":  # floating-point noise: unverified, warns by name (never auto)
            warnings.filterwarnings("ignore", "mechanism 'gamma_norm' is NOT verified")
        a = calibrate(q, 1.0, 0.0, mechanism=name)
        b = calibrate(q, 1.0, 1e-5, mechanism=name)
    assert a.expected_squared_error == b.expected_squared_error
    assert a.delta == 0.0 and b.delta == 1e-5
    assert get_mechanism(name).pure
    assert get_mechanism(name).verified == (name != "gamma_norm")


@pytest.mark.parametrize("name", ["laplace", "inid_laplace", "gamma_norm"])
@pytest.mark.parametrize("eps, delta", [(0.0, 0.0), (-1.0, 0.0), (np.nan, 0.0), (np.inf, 0.0),
                                        (1.0, -0.1), (1.0, 1.0), (1.0, np.nan), (1.0, None)])
def test_bad_budget_raises(name, eps, delta):
    q = Query(shape=(3,), sensitivity_profile=[1.0, 0.5, 0.1])
    with pytest.raises(ValueError):
        calibrate(q, eps, delta, mechanism=name)


def test_inid_laplace_needs_profile():
    with pytest.raises(ValueError, match="sensitivity profile"):
        calibrate(Query(shape=(3,), l1_sensitivity=1.0), 1.0, mechanism="inid_laplace")


def test_scales_helper_bad_input():
    with pytest.raises(ValueError):
        inid_laplace_scales([1.0, 2.0], 1.0, weights=[1.0, 0.0])
    with pytest.raises(ValueError):
        inid_laplace_scales([1.0, 2.0], 1.0, weights=[1.0])
    with pytest.raises(ValueError):
        inid_laplace_scales([1.0, 2.0], 1.0, p=0.5)


def test_privatize_shape_checked():
    spec = calibrate(Query(shape=(3,), l2_sensitivity=1.0), 1.0, mechanism="gamma_norm")
    with pytest.raises(ValueError, match="shape"):
        spec.privatize(np.zeros(4))
    out = spec.privatize(np.ones(3), random_state=0)
    np.testing.assert_allclose(out - 1.0, spec.sample(0))


# ----------------------------------------------------------------------
# statistical audits (skdp.audit)
# ----------------------------------------------------------------------
def _halved(spec):
    """The same spec with every noise scale halved (true epsilon doubled)."""
    params = dict(spec.params)
    for key in ("scale", "scales"):
        if key in params:
            params[key] = params[key] / 2.0
    if "t" in params:  # integer scales of the grid mechanisms
        params["t"] = np.maximum(np.asarray(params["t"]) // 2, 1) if np.ndim(params["t"]) else max(
            params["t"] // 2, 1)
    return dataclasses.replace(spec, params=MappingProxyType(params))


_LAM3 = np.array([1.0, 0.3, 0.1])
_AUDIT_CASES = [
    # (id, mechanism, query, value, neighbour, delta)
    ("laplace-1d", "laplace", Query(shape=(1,), l1_sensitivity=1.0), [0.0], [1.0], 0.0),
    ("laplace-3d-one-coord", "laplace", Query(shape=(3,), l1_sensitivity=1.0),
     [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], 0.0),
    ("laplace-3d-spread", "laplace", Query(shape=(3,), l1_sensitivity=1.0),
     [0.0, 0.0, 0.0], [0.5, -0.3, 0.2], 0.0),
    ("inid-corner", "inid_laplace", Query(shape=(3,), sensitivity_profile=_LAM3),
     np.zeros(3), _LAM3, 0.0),
    ("inid-corner-delta", "inid_laplace", Query(shape=(3,), sensitivity_profile=_LAM3),
     np.zeros(3), -_LAM3, 0.01),
    ("gamma-2d", "gamma_norm", Query(shape=(2,), l2_sensitivity=1.0), [0.0, 0.0], [0.6, 0.8], 0.0),
    ("gamma-5d", "gamma_norm", Query(shape=(5,), l2_sensitivity=1.0),
     np.zeros(5), np.array([0.6, 0.0, 0.0, 0.8, 0.0]), 0.0),
    ("gamma-sym-3x3", "gamma_norm", Query(shape=(3, 3), l2_sensitivity=1.0, symmetric=True),
     np.zeros((3, 3)), np.diag([1.0, 0.0, 0.0]), 0.0),
]


@pytest.mark.parametrize("case", _AUDIT_CASES, ids=[c[0] for c in _AUDIT_CASES])
def test_audit_passes_at_worst_case_neighbour(case):
    _, name, q, v0, v1, delta = case
    spec = calibrate(q, 1.0, delta, mechanism=name)
    res = audit_spec(spec, np.asarray(v0, float), np.asarray(v1, float), n_samples=200_000,
                     random_state=0)
    assert res.passed, res.event
    assert res.delta_lower_bound <= delta


@pytest.mark.parametrize("case", [_AUDIT_CASES[i] for i in (2, 3, 5, 6, 7)],
                         ids=[_AUDIT_CASES[i][0] for i in (2, 3, 5, 6, 7)])
def test_audit_power_halved_scale_fails(case):
    """Power: the same noise with half the scale is only 2 eps-DP and must FAIL at eps."""
    _, name, q, v0, v1, delta = case
    spec = _halved(calibrate(q, 1.0, delta, mechanism=name))
    res = audit_spec(spec, np.asarray(v0, float), np.asarray(v1, float), n_samples=100_000,
                     random_state=0)
    assert not res.passed
    assert res.delta_lower_bound > 0.03


def test_batch_sampler_matches_single_draws():
    """The audit draws through _sample_batch; it must have the law of spec.sample."""
    q = Query(shape=(3, 3), sensitivity_profile=np.full((3, 3), 0.5), symmetric=True)
    for name in ("laplace", "inid_laplace", "gamma_norm"):
        spec = calibrate(q, 1.0, mechanism=name)
        batch = spec.mechanism_._sample_batch(spec, np.random.default_rng(0), 3000)
        single = np.array([spec.sample(r) for r in np.random.default_rng(1).spawn(3000)])
        assert batch.shape == (3000, 9)
        single = single.reshape(3000, 9)
        np.testing.assert_array_equal(batch.reshape(3000, 3, 3), batch.reshape(3000, 3, 3)
                                      .transpose(0, 2, 1))
        for j in (0, 1, 4):
            assert stats.ks_2samp(batch[:, j], single[:, j]).pvalue > 0.001


@pytest.mark.parametrize("k, eps", [(1000, 1e-4), (1, 1e-9), (50000, 1e-3)])
def test_tiny_epsilon_keeps_the_exact_sampler_in_range(k, eps):
    # review 6: the utility-loss grid put t = ceil((l1/g + k)/eps) beyond the sampler's 2^41 at
    # small epsilon, and fits raised at sampling time, after the charge. The grid now coarsens
    # (powers of two) until t is in range; the rounding stays inside the privacy condition.
    spec = calibrate(Query(shape=(k,), l1_sensitivity=3.0), eps, 0.0, mechanism="laplace")
    p = spec.params
    assert p["t"] <= 2**41
    assert (3.0 / p["grid"] + k) / p["t"] <= eps  # l1 of the rounded query over t (independent)
    assert p["scale"] == pytest.approx(3.0 / eps, rel=2 * k / 2**39 / eps + 1e-6)
    spec.sample(np.random.default_rng(0))  # the exact sampler accepts it
    with pytest.raises(ValueError, match="too small for the exact Laplace sampler"):
        calibrate(Query(shape=(k,), l1_sensitivity=3.0), k * 2.0**-40, 0.0, mechanism="laplace")
