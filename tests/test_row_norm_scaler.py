"""PrivateRowNormScaler: exact permute-and-flip, its DP bound, and the transformer."""

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import sparse, stats
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp import BudgetLedger, PrivacyLeakWarning
from skdp.preprocessing import PrivateRowNormScaler
from skdp.preprocessing._norm import norm_candidates, permute_and_flip


def _pf_exact(u, eps):
    """P(output = j) of permute-and-flip by enumerating every order (independent oracle)."""
    u = np.asarray(u, dtype=float)
    q = np.exp(eps * (u - u.max()) / 2.0)
    m = len(u)
    out = np.zeros(m)
    for perm in itertools.permutations(range(m)):
        reach = 1.0
        for j in perm:
            out[j] += reach * q[j]
            reach *= 1.0 - q[j]
    return out / math.factorial(m)


def test_sampler_matches_exact_distribution():
    u = np.array([-3, 0, -1, -2, -5])
    eps = 1.3
    eps_used = math.floor(eps * 2**20) / 2**20
    p = _pf_exact(u, eps_used)
    rng = np.random.default_rng(1)
    draws = np.array([permute_and_flip(u, eps, rng) for _ in range(20000)])
    counts = np.bincount(draws, minlength=len(u))
    assert stats.chisquare(counts, p * counts.sum()).pvalue > 1e-3


def _worst_ratio(eps_mech, eps_claim, rng, m=4, trials=400):
    worst = 0.0
    for _ in range(trials):
        u = rng.integers(-4, 1, size=m)
        u2 = u + rng.integers(-1, 2, size=m)  # |u - u'| <= 1 per candidate: any neighbour pair
        p, p2 = _pf_exact(u, eps_mech), _pf_exact(u2, eps_mech)
        worst = max(worst, float(np.max(np.log(p / p2))))
    return worst / eps_claim


def test_permute_and_flip_is_epsilon_dp_and_power():
    """Over random neighbouring utility vectors, max log-ratio <= eps; at 2 eps it exceeds eps."""
    rng = np.random.default_rng(0)
    assert _worst_ratio(1.0, 1.0, rng) <= 1.0 + 1e-9
    assert _worst_ratio(2.0, 1.0, np.random.default_rng(0)) > 1.2  # the under-noised variant fails


def test_norm_is_a_public_candidate_near_the_quantile():
    rng = np.random.default_rng(0)
    X = rng.normal(scale=5.0, size=(20000, 4))
    norms = np.linalg.norm(X, axis=1)
    cand = norm_candidates(0.01, 1000.0, 2 ** (1 / 16))
    for seed in range(5):
        t = PrivateRowNormScaler(quantile=0.9, epsilon=0.1, norm_range=(0.01, 1000.0),
                                 random_state=seed).fit(X)
        assert t.norm_ in cand
        assert abs((norms <= t.norm_).mean() - 0.9) < 0.03
        Z = t.transform(X)
        assert np.linalg.norm(Z, axis=1).max() <= 1.0 + 1e-12
        assert t.privacy_spent_.epsilon == 0.1 and t.privacy_spent_.delta == 0.0


def test_ledger_charged_before_data_and_errors_before_charge():
    X = np.random.default_rng(0).normal(size=(100, 3))
    ledger = BudgetLedger(1.0, 0.0)
    with pytest.raises(ValueError, match="norm_range"):
        PrivateRowNormScaler(norm_range=(2.0, 1.0), accountant=ledger).fit(X)
    assert ledger.spent.epsilon == 0.0
    PrivateRowNormScaler(epsilon=0.25, norm_range=(0.1, 10.0), accountant=ledger).fit(X)
    assert ledger.spent.epsilon == pytest.approx(0.25)
    small = BudgetLedger(0.1, 0.0)
    with pytest.raises(Exception):
        PrivateRowNormScaler(epsilon=0.25, norm_range=(0.1, 10.0), accountant=small).fit(X)
    assert small.spent.epsilon == 0.0


def test_sparse_float32_and_inferred_range():
    rng = np.random.default_rng(0)
    X = sparse.random(500, 30, density=0.1, format="csr", random_state=0, dtype=np.float32)
    a = PrivateRowNormScaler(norm_range=(0.01, 100.0), random_state=3).fit(X)
    b = PrivateRowNormScaler(norm_range=(0.01, 100.0), random_state=3).fit(X.toarray())
    assert a.norm_ == b.norm_
    Z = a.transform(X)
    assert sparse.issparse(Z) and Z.dtype == np.float32
    np.testing.assert_allclose(Z.toarray(), a.transform(X.toarray()), rtol=1e-6)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        t = PrivateRowNormScaler(random_state=0).fit(rng.normal(size=(50, 2)))
    assert any(issubclass(r.category, PrivacyLeakWarning) for r in rec)
    assert t.norm_range is None and len(t.norm_range_) == 2


@parametrize_with_checks([PrivateRowNormScaler(norm_range=(1e-3, 1e3), random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("kwargs, match", [
    (dict(grid_ratio=1 + 1e-12, norm_range=(1e-3, 1e3)), r"13814282460217 candidates; at most 1048576"),
    (dict(grid_ratio=1 + 1e-6, norm_range=(1e-3, 1e3)), "candidates; at most 1048576"),
    (dict(grid_ratio=2.0, norm_range=(1e-300, 1e300)), "overflow float64|must lie within"),
    (dict(grid_ratio=2.0, norm_range=(1.0, 1.7e308)), "overflow float64|must lie within"),
])
def test_grid_settings_refused_before_the_charge(kwargs, match):
    """The grid size is decided by public settings: computed and refused before the charge
    (it used to be allocated after it: MemoryError with epsilon spent)."""
    X = np.random.default_rng(0).normal(size=(100, 3))
    ledger = BudgetLedger(10.0, 0.0)
    est = PrivateRowNormScaler(epsilon=0.1, accountant=ledger, random_state=0, **kwargs)
    with pytest.raises(ValueError, match=match):
        est.fit(X)
    assert ledger.spends == [] and ledger.spent.epsilon == 0.0
    assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("__")]


def test_inferred_grid_too_large_names_no_value():
    """With norm_range inferred from the data, a grid that is too large is refused without
    quoting the inferred range."""
    X = np.array([[1.234567e-3, 0.0], [0.0, 987.654321]] * 10)
    with pytest.warns(PrivacyLeakWarning):
        with pytest.raises(ValueError, match="inferred from the data .* more than 2\\^20") as err:
            PrivateRowNormScaler(grid_ratio=1 + 1e-9, random_state=0).fit(X)
    assert "1.23" not in str(err.value) and "987" not in str(err.value)


def test_huge_epsilon_is_clamped_and_still_selects_the_optimum():
    """epsilon above 2^42 made p = floor(epsilon 2^20) exceed 2^62, every gap was capped to 0
    and the choice was uniform (half the releases below the optimum set); epsilon = 1e13
    overflowed int64 after the charge. The selection now uses min(epsilon, 2^40); the
    requested epsilon is charged and reported (conservative)."""
    from skdp.preprocessing._norm import MAX_SELECTION_EPSILON

    X = np.ones((1000, 1))  # every candidate >= 1 is optimal, every one below is 950 rows off
    for eps in (5e12, 1e13, 1e300):
        ledger = BudgetLedger(1e308, 0.0)
        picks = [PrivateRowNormScaler(epsilon=eps, norm_range=(0.01, 100.0), random_state=s,
                                      accountant=ledger).fit(X) for s in range(60)]
        assert all(t.norm_ >= 1.0 for t in picks)
        assert all(t.privacy_spent_.epsilon == eps for t in picks)
        assert ledger.spent.epsilon == pytest.approx(60 * eps)
    # a gap of one row is accepted with probability exp(-2^39) at the cap: the maximiser wins
    u = np.array([-1, 0, -1, -2, -1000])
    for seed in range(20):
        assert permute_and_flip(u, 1e20, np.random.default_rng(seed)) == 1
        assert (permute_and_flip(u, 1e20, np.random.default_rng(seed))
                == permute_and_flip(u, MAX_SELECTION_EPSILON, np.random.default_rng(seed)))
