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
