"""mechanism="auto": least-error verified mechanism, never an unverified one.

Oracles: seed 002 section 6.4 (Laplace-vs-Gaussian condition, recomputed here
in closed form with an independent mu0 from scipy's brentq), section 8.1
(Fig. 1(a) Gaussian gains and Fig. 4 crossovers).
"""

import warnings

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from skdp.exceptions import PrivacyGuaranteeWarning
from skdp.mechanisms._grid import GRID_UTILITY_LOSS
from skdp.mechanisms import Mechanism, Query, calibrate, candidates, get_mechanism, select
from skdp.mechanisms._base import _REGISTRY, register


def _mu0(eps, delta):
    """Independent analytic-Gaussian mu0 (Balle & Wang 2018, Thm 8) via brentq."""
    def phi(m):
        return norm.sf(eps / m - m / 2) - np.exp(eps + norm.logsf(eps / m + m / 2))

    return brentq(lambda m: phi(m) - delta, 1e-9, 100, xtol=1e-15, rtol=1e-14)


def _db(x):
    return 10 * np.log10(x)


class _DummyUnverified(Mechanism):
    name = "zz_dummy_unverified"
    verified = False
    pure = True
    failure = "test dummy, measured nothing."

    def _check_applicable(self, query, epsilon, delta):
        return None

    def _calibrate(self, query, epsilon, delta):
        return {}, 1e-300

    def _sample(self, spec, rng):
        return np.zeros(spec.query.shape)


@pytest.fixture
def dummy_unverified():
    mech = register(_DummyUnverified())
    try:
        yield mech
    finally:
        _REGISTRY.pop(mech.name, None)


QUERIES = [
    Query(shape=(3,), l2_sensitivity=1.0),
    Query(shape=(1,), l1_sensitivity=0.1),
    Query(shape=(50,), sensitivity_profile=np.exp(-np.arange(50.0))),
    Query(shape=(4, 4), l2_sensitivity=2.0, symmetric=True),
]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("eps, delta", [(1.0, 0.0), (0.5, 1e-6), (2.0, 1e-3)])
def test_auto_never_returns_unverified(dummy_unverified, query, eps, delta):
    assert "zz_dummy_unverified" in _REGISTRY
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyGuaranteeWarning)  # the dummy is never calibrated
        spec = calibrate(query, eps, delta)
        names = [s.mechanism for s in candidates(query, eps, delta)]
    assert spec.verified and get_mechanism(spec.mechanism).verified
    assert spec.mechanism != "zz_dummy_unverified"
    assert "zz_dummy_unverified" not in names
    # asked for by name, it calibrates but warns
    with pytest.warns(PrivacyGuaranteeWarning, match="NOT verified"):
        s = calibrate(query, eps, delta, mechanism="zz_dummy_unverified")
    assert not s.verified


def test_dummy_removed_after_fixture():
    assert "zz_dummy_unverified" not in _REGISTRY


@pytest.mark.parametrize("query", QUERIES)
def test_delta_zero_picks_pure_mechanism(query):
    spec = calibrate(query, 1.0, 0.0)
    assert get_mechanism(spec.mechanism).pure
    assert spec.mechanism in {"laplace", "inid_laplace", "gamma_norm"}
    for s in candidates(query, 1.0, 0.0):
        assert get_mechanism(s.mechanism).pure


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("eps, delta", [(1.0, 0.0), (0.5, 1e-6), (0.9, 1e-9), (3.0, 1e-2)])
def test_auto_has_minimal_expected_error(query, eps, delta):
    spec = calibrate(query, eps, delta)
    cands = candidates(query, eps, delta)
    # pure DP on a query without a profile leaves one floating-point-safe candidate (Laplace)
    assert len(cands) >= (1 if delta == 0 else 2)
    errs = {s.mechanism: s.expected_squared_error for s in cands}
    assert spec.expected_squared_error == min(errs.values())
    # recompute every candidate by name: auto's answer is the argmin of the by-name errors
    by_name = {n: calibrate(query, eps, delta, mechanism=n).expected_squared_error for n in errs}
    assert spec.mechanism == min(sorted(by_name), key=by_name.get)
    if delta > 0:
        assert {"analytic_gaussian", "laplace"} <= set(errs)
    # only floating-point-safe mechanisms (on the grid) are candidates
    assert not {"gamma_norm", "mvg"} & set(errs)


def _laplace_minus_gauss(a, K, eps, mu0):
    """log of seed 002 section 6.4 ratio: 2||lam^(2/3)||_1^3/eps^2 over ||lam||_1^2/mu0^2."""
    lam = np.exp(-a * np.arange(K) / K)
    return np.log(2 * np.sum(lam ** (2 / 3)) ** 3 / eps**2) - np.log(np.sum(lam) ** 2 / mu0**2)


def test_inid_laplace_beats_gaussian_in_high_dimension():
    """Seed 002 section 6.4 at delta=1e-6: disparate profile -> pure Laplace wins."""
    K, eps, delta = 2000, 1.0, 1e-6
    mu0 = _mu0(eps, delta)
    lam = np.exp(-np.arange(K) / 2.0)
    q = Query(shape=(K,), sensitivity_profile=lam)
    lap = 2 * np.sum(lam ** (2 / 3)) ** 3 / eps**2
    gau_inid = np.sum(lam) ** 2 / mu0**2
    gau_iid = K * np.sum(lam**2) / mu0**2
    assert lap < gau_inid < gau_iid
    spec = calibrate(q, eps, delta)
    assert spec.mechanism == "inid_laplace"
    assert spec.expected_squared_error == pytest.approx(lap, rel=2 * GRID_UTILITY_LOSS)
    assert calibrate(q, eps, delta, mechanism="analytic_gaussian").expected_squared_error == \
        pytest.approx(gau_iid, rel=2 * GRID_UTILITY_LOSS)


@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_auto_agrees_with_closed_form_boundary(eps):
    """Profile lambda_i = exp(-a i / K): find the boundary a* of the section 6.4 condition in
    closed form, and check auto picks Gaussian just below it and Laplace just above."""
    K, delta = 400, 1e-6
    mu0 = _mu0(eps, delta)
    a_star = brentq(_laplace_minus_gauss, 1e-3, 200.0, args=(K, eps, mu0), xtol=1e-12)
    for a, expect_laplace in [(a_star * 0.97, False), (a_star * 1.03, True)]:
        lam = np.exp(-a * np.arange(K) / K)
        assert (_laplace_minus_gauss(a, K, eps, mu0) < 0) == expect_laplace
        spec = calibrate(Query(shape=(K,), sensitivity_profile=lam), eps, delta)
        if expect_laplace:
            assert spec.mechanism == "inid_laplace"
        else:
            assert spec.mechanism == "inid_gaussian"
            assert spec.expected_squared_error == pytest.approx(np.sum(lam) ** 2 / mu0**2,
                                                                rel=1e-6)


@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
@pytest.mark.parametrize(
    "profile, gain_db",
    [("linear", 1.145), ("quadratic", 2.442), ("exponential", 9.658), ("onehot", 13.01)],
)
def test_fig1a_gaussian_gain(profile, gain_db, eps):
    """Seed 002 section 8.1, Fig. 1(a): K=20, ||lambda||_2=1, delta=1e-6, Delta_2 = ||lambda||_2."""
    K = 20
    i = np.arange(1, K + 1, dtype=float)
    lam = {"linear": i, "quadratic": i**2, "exponential": np.exp(i - K),
           "onehot": (i == K).astype(float)}[profile]
    lam = lam / np.linalg.norm(lam)
    q = Query(shape=(K,), sensitivity_profile=lam)
    iid = calibrate(q, eps, 1e-6, mechanism="analytic_gaussian").expected_squared_error
    inid = calibrate(q, eps, 1e-6, mechanism="inid_gaussian").expected_squared_error
    assert _db(iid / inid) == pytest.approx(gain_db, abs=5e-4 if profile != "onehot" else 5e-3)


def _fig4_profile(name, K):
    i = np.arange(1, K + 1, dtype=float)
    lam = {"uniform": np.ones(K), "linear": i, "quadratic": i**2, "exponential": np.exp(i - K)}[name]
    return lam / np.linalg.norm(lam)


@pytest.mark.parametrize("profile, first_gauss_k", [("uniform", 9), ("linear", 10),
                                                     ("quadratic", 11), ("exponential", None)])
def test_fig4_laplace_vs_gaussian_crossover(profile, first_gauss_k):
    """Seed 002 section 8.1, Fig. 4: inid Gaussian (0.5, 1e-6) vs inid Laplace (0.5), ||lambda||_2=1."""
    for K in range(2, 31):
        q = Query(shape=(K,), sensitivity_profile=_fig4_profile(profile, K))
        g = calibrate(q, 0.5, 1e-6, mechanism="inid_gaussian").expected_squared_error
        lap = calibrate(q, 0.5, 0.0, mechanism="inid_laplace").expected_squared_error
        gauss_better = g < lap
        assert gauss_better == (first_gauss_k is not None and K >= first_gauss_k), K


def test_fig4_exponential_large_k_values():
    """Seed 002 section 8.1: exponential profile at large K: Gaussian 21.48 dB, Laplace 17.78 dB."""
    q = Query(shape=(200,), sensitivity_profile=_fig4_profile("exponential", 200))
    g = calibrate(q, 0.5, 1e-6, mechanism="inid_gaussian").expected_squared_error
    lap = calibrate(q, 0.5, 0.0, mechanism="inid_laplace").expected_squared_error
    assert _db(g) == pytest.approx(21.48, abs=5e-3)
    assert _db(lap) == pytest.approx(17.78, abs=5e-3)
    assert calibrate(q, 0.5, 1e-6).mechanism == "inid_laplace"


def test_gamma_norm_is_never_auto_and_warns_by_name():
    """Pure DP, l2 sensitivity only, K >= 2: gamma_norm has the smaller error K(K+1) s^2
    (Laplace: 2 K^2 s^2), but it adds floating-point noise: "auto" takes Laplace on the grid."""
    from skdp import PrivacyGuaranteeWarning

    for K in (2, 5, 40):
        q = Query(shape=(K,), l2_sensitivity=1.0)
        spec = select(q, 1.0, 0.0)
        assert spec.mechanism == "laplace"
        assert spec.expected_squared_error == pytest.approx(2 * K * K, rel=2 * GRID_UTILITY_LOSS)
        with pytest.warns(PrivacyGuaranteeWarning, match="NOT verified.*floating point"):
            g = calibrate(q, 1.0, 0.0, mechanism="gamma_norm")
        assert not g.verified
        assert g.expected_squared_error == pytest.approx(K * (K + 1))


def test_selection_bad_input():
    q = Query(shape=(3,), l2_sensitivity=1.0)
    for eps, delta in [(0.0, 0.0), (-1.0, 1e-5), (1.0, 1.0), (1.0, -1e-9)]:
        with pytest.raises(ValueError):
            calibrate(q, eps, delta)
    with pytest.raises(ValueError, match="unknown mechanism"):
        calibrate(q, 1.0, 0.0, mechanism="no_such_mechanism")
    with pytest.raises(TypeError):
        select("not a query", 1.0, 0.0)


def _profile_queries():
    from skdp.decomposition._pca import _gram_query

    rng = np.random.default_rng(0)
    return [
        Query(shape=(50,), sensitivity_profile=np.exp(-np.arange(50.0))),
        Query(shape=(2000,), sensitivity_profile=np.exp(-np.arange(2000) / 2.0)),
        Query(shape=(300,), sensitivity_profile=rng.uniform(0, 1, 300) ** 4),
        Query(shape=(40,), sensitivity_profile=np.r_[np.zeros(10), rng.uniform(0, 1, 30)]),
        _gram_query(1000, 3, 1.0, 1 / np.sqrt(2)),
        _gram_query(1000, 60, 1.0, 1 / np.sqrt(2)),
        _gram_query(5000, 30, 2.0, 0.0, weighted=True),
    ]


@pytest.mark.parametrize("name", ["inid_gaussian", "inid_laplace"])
@pytest.mark.parametrize("eps, delta", [(0.1, 1e-6), (1.0, 1e-5), (5.0, 1e-3)])
def test_lower_bounds_of_the_non_identical_mechanisms(name, eps, delta):
    # the closed forms of Muthukrishnan & Kalyani 2023 (Theorems 4 and 5) against the
    # error the calibration reports (rounded profile, integer scales, reserve)
    mech = get_mechanism(name)
    for q in _profile_queries():
        bound = mech.mse_lower_bound(q, eps, delta)
        mse = mech.calibrate(q, eps, delta).expected_squared_error
        assert bound <= mse * (1 + 1e-12)
        lam = q.released_profile()
        w = q.squared_error_weights()
        if name == "inid_laplace":  # below the optimum for the unrounded profile
            optimum = 2 * np.sum(lam ** (2 / 3) * w ** (1 / 3)) ** 3 / eps**2
            assert bound <= optimum * (1 + 1e-12)
            assert optimum <= mse * (1 + 1e-12)
            flat = np.ptp(lam[lam > 0]) == 0 or q.symmetric
            assert bound >= (0.25 if flat else 0.0) * mse  # tight for Gram profiles
        else:
            independent = np.sum(lam * np.sqrt(w)) ** 2 / _mu0(eps, delta) ** 2
            assert bound == pytest.approx(independent, rel=1e-9)
            assert bound >= 0.5 * mse


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-6), (1.0, 1e-5), (5.0, 1e-3), (1.0, 0.0)])
def test_selection_with_bounds_is_the_argmin_of_every_calibration(eps, delta, monkeypatch):
    calls = []
    for name in ("inid_gaussian", "inid_laplace"):
        mech = get_mechanism(name)
        real = mech._calibrate
        monkeypatch.setattr(mech, "_calibrate",
                            lambda q, e, d, _r=real, _n=name: calls.append(_n) or _r(q, e, d))
    skipped = 0
    for q in _profile_queries():
        calls.clear()
        spec = select(q, eps, delta)
        during = list(calls)
        every = candidates(q, eps, delta)
        best = min(every, key=lambda s: (s.expected_squared_error, s.mechanism))
        assert spec.mechanism == best.mechanism
        assert spec.expected_squared_error == best.expected_squared_error
        skipped += sum(s.mechanism not in during for s in every
                       if s.mechanism in ("inid_gaussian", "inid_laplace"))
    assert skipped > 0  # the bounds did spare calibrations


@pytest.mark.parametrize("profile, eps, delta", [
    ([5e102, 1.0], 1.0, 0.0), ([4.6e102, 1e101], 1.0, 0.0), ([1e110, 1e100], 1.0, 1e-6),
    ([2e152] * 100, 30.0, 0.4), ([4.2e-162, 3.3e-162], 0.34, 0.0), ([1e-170] * 3, 1.0, 0.0),
])
def test_selection_near_the_float64_limit(profile, eps, delta):
    # review 35, F1: a bound that overflowed skipped the best mechanism or raised; review 36,
    # F2: a bound above a calibrated error that underflowed to 0 skipped a tie
    q = Query(shape=(len(profile),), sensitivity_profile=np.array(profile))
    spec = select(q, eps, delta)
    every = candidates(q, eps, delta)
    best = min(every, key=lambda s: (s.expected_squared_error, s.mechanism))
    assert (spec.mechanism, spec.expected_squared_error) == (best.mechanism,
                                                             best.expected_squared_error)


def test_bounds_give_up_outside_the_normal_range():
    q = Query(shape=(2,), sensitivity_profile=np.array([1.0, 0.5]))
    assert get_mechanism("inid_laplace").mse_lower_bound(q, 1e-163, 0.0) is None
    assert get_mechanism("inid_laplace").mse_lower_bound(q, 1.0, 0.0) > 0
