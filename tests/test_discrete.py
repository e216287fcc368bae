"""Integer noise samplers (Canonne, Kamath & Steinke 2020) and the grid they release on.

* chi-square goodness of fit of every sampler against its exact pmf, over
  the whole support (bins with expected count >= 5, both tails pooled into
  one bin each), and a power check (a sampler with a wrong scale fails the
  same test);
* huge scales (2^30, 2^40): moments, int64, no overflow, fine-grained
  integers (the low bits are uniform);
* the Bernoulli(exp(-gamma)) samplers (frequencies; the 7! threshold trick
  checked exhaustively) and their guards;
* the randomness used (only ``rng.integers``, plus ``rng.random`` for the
  Gaussian acceptance), determinism and shapes;
* the numbers behind ``DISCRETE_GAUSSIAN_SAMPLER_TV``: the float acceptance
  probability against 50-digit arithmetic, the acceptance rate and
  ``E[gamma] < 1``, and the granularity of ``rng.random``;
* ``rounded_gaussian_tv_bound`` against the exact total variation;
* the grid releases of the Gaussian and Laplace mechanisms.

Every test is seeded: the outcomes are deterministic.
"""

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from skdp.mechanisms import Query, calibrate
from skdp.mechanisms import _discrete as D
from skdp.mechanisms._grid import GRID_UTILITY_LOSS, grid_step, release_on_grid, snap

N = 200_000
U = 2.0**-53


# ---------------------------------------------------------------------------
# chi-square helpers
# ---------------------------------------------------------------------------
def _pool_and_test(observed, expected):
    """Chi-square p-value; bins below 5 expected are merged into their inner neighbour."""
    observed = list(np.asarray(observed, dtype=float))
    expected = list(np.asarray(expected, dtype=float))
    for side in (0, -1):  # the two tail bins: merge inwards while too small
        while len(expected) > 2 and expected[side] < 5:
            e, o = expected.pop(side), observed.pop(side)
            expected[side] += e
            observed[side] += o
    expected = np.array(expected)
    observed = np.array(observed)
    assert expected.min() >= 5
    expected *= observed.sum() / expected.sum()  # rounding of the pmf sums only
    return stats.chisquare(observed, expected).pvalue


def _chi2_pvalue(draws, pmf, scale):
    """Chi-square of integer draws against ``pmf`` over the whole support.

    Central bins: the integers with expected count >= 5 (an interval for these
    symmetric unimodal laws); the two tails pooled into one bin each (merged
    into the outermost central bin if still below 5).
    """
    n = draws.size
    span = int(80 * scale) + 100  # the mass beyond is below e^-80
    ks = np.arange(-span, span + 1)
    p = pmf(ks)
    assert abs(math.fsum(p) - 1.0) < 1e-9
    central = np.flatnonzero(n * p >= 5)
    i0, i1 = central[0], central[-1]
    assert central.size == i1 - i0 + 1  # an interval
    lo, hi = int(ks[i0]), int(ks[i1])
    expected = np.concatenate([[math.fsum(p[:i0])], p[i0:i1 + 1], [math.fsum(p[i1 + 1:])]]) * n
    inside = draws[(draws >= lo) & (draws <= hi)] - lo
    observed = np.concatenate([[np.sum(draws < lo)], np.bincount(inside, minlength=hi - lo + 1),
                               [np.sum(draws > hi)]])
    return _pool_and_test(observed, expected)


def _binned_pvalue(draws, cdf, edges):
    """Chi-square over the bins ``(-inf, e0], (e0, e1], ..., (e_last, inf)`` given P(Y <= k)."""
    c = np.array([0.0] + [cdf(e) for e in edges] + [1.0])
    expected = np.diff(c) * draws.size
    observed = np.bincount(np.searchsorted(edges, draws, side="left"), minlength=len(edges) + 1)
    return _pool_and_test(observed, expected)


# ---------------------------------------------------------------------------
# goodness of fit
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("t, seed", [(1, 101), (3, 102), (1000, 103)])
def test_discrete_laplace_matches_its_pmf(t, seed):
    draws = D.sample_discrete_laplace(t, N, np.random.default_rng(seed))
    assert draws.dtype == np.int64 and draws.shape == (N,)
    p = _chi2_pvalue(draws, lambda k: D.discrete_laplace_pmf(k, t), t)
    assert p > 1e-4, p


@pytest.mark.parametrize("sigma, seed", [(0.5, 201), (1.0, 202), (3.7, 203), (50.0, 204)])
def test_discrete_gaussian_matches_its_pmf(sigma, seed):
    draws = D.sample_discrete_gaussian(sigma, N, np.random.default_rng(seed))
    assert draws.dtype == np.int64 and draws.shape == (N,)
    p = _chi2_pvalue(draws, lambda k: D.discrete_gaussian_pmf(k, sigma), sigma)
    assert p > 1e-4, p


def test_chi_square_has_power_against_a_wrong_scale():
    rng = np.random.default_rng(301)
    wrong = D.sample_discrete_gaussian(3.7 * 1.05, N, rng)
    assert _chi2_pvalue(wrong, lambda k: D.discrete_gaussian_pmf(k, 3.7), 3.7) < 1e-6
    wrong = D.sample_discrete_laplace(3 + 1, N, rng)
    assert _chi2_pvalue(wrong, lambda k: D.discrete_laplace_pmf(k, 3), 3) < 1e-6
    # and the correct samplers pass with the same generator
    assert _chi2_pvalue(D.sample_discrete_gaussian(3.7, N, rng),
                        lambda k: D.discrete_gaussian_pmf(k, 3.7), 3.7) > 1e-4


# ---------------------------------------------------------------------------
# huge scales
# ---------------------------------------------------------------------------
def _norm_cdf_rounded(sigma):
    # P(Y <= k) for the rounded Gaussian; within 2 * 2e-14 of N_Z for sigma >= 2^20
    return lambda k: float(stats.norm.cdf((k + 0.5) / sigma))


def _laplace_cdf(t):
    q = math.exp(-1.0 / t)

    def cdf(k):  # P(Y >= a) = q^a / (1 + q) for a >= 1
        k = int(k)
        return math.exp(k / t) / (1 + q) if k < 0 else 1.0 - math.exp(-(k + 1) / t) / (1 + q)

    return cdf


@pytest.mark.parametrize("scale", [2.0**20, 2.0**30])
def test_huge_scales_have_the_right_law_and_are_fine_grained(scale):
    n = 100_000
    rng = np.random.default_rng(401)
    # discrete Gaussian
    g = D.sample_discrete_gaussian(scale, n, rng)
    assert g.dtype == np.int64
    assert abs(g.mean()) < 5 * scale / math.sqrt(n)
    assert abs(g.var() / scale**2 - 1) < 5 * math.sqrt(2 / n)
    edges = [int(math.floor(scale * z)) for z in np.linspace(-3, 3, 41)]
    assert _binned_pvalue(g, _norm_cdf_rounded(scale), edges) > 1e-4
    assert stats.chisquare(np.bincount(g % 256, minlength=256)).pvalue > 1e-4  # low bits uniform
    # discrete Laplace
    t = int(scale)
    lap = D.sample_discrete_laplace(t, n, rng)
    assert lap.dtype == np.int64
    var = 2 * math.exp(-1 / t) / math.expm1(-1 / t) ** 2
    assert abs(lap.mean()) < 5 * math.sqrt(var / n)
    assert abs(lap.var() / var - 1) < 5 * math.sqrt(5 / n)  # Laplace kurtosis 6
    edges = [int(math.floor(t * z)) for z in np.linspace(-6, 6, 41)]
    assert _binned_pvalue(lap, _laplace_cdf(t), edges) > 1e-4
    assert stats.chisquare(np.bincount(lap % 256, minlength=256)).pvalue > 1e-4


def test_largest_scales_do_not_overflow():
    rng = np.random.default_rng(402)
    g = D.sample_discrete_gaussian(2.0**40, 20_000, rng)
    lap = D.sample_discrete_laplace(2**40, 20_000, rng)
    for x, s in ((g, 2.0**40), (lap, math.sqrt(2) * 2.0**40)):
        assert x.dtype == np.int64
        assert np.abs(x).max() < 20 * s < 2**53
        assert abs(x.std() / s - 1) < 0.05
        assert len(np.unique(x % 1024)) > 900  # exact integers, not a coarse grid
    assert D.sample_discrete_laplace(2**41, 10, rng).dtype == np.int64


# ---------------------------------------------------------------------------
# Bernoulli(exp(-gamma))
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("num, den", [(0, 5), (1, 3), (2, 3), (3, 3), (7, 1000),
                                      (2**40 - 1, 2**40), (2**55, 2**55)])
def test_bernoulli_exp_frequencies(num, den):
    n = 200_000
    rng = np.random.default_rng(501 + num % 97)
    draws = D.bernoulli_exp_neg_fraction(np.full(n, num), den, rng)
    assert draws.dtype == bool and draws.shape == (n,)
    p = math.exp(-num / den)
    assert abs(draws.mean() - p) <= 5 * math.sqrt(p * (1 - p) / n)


def test_bernoulli_exp_with_array_denominators():
    rng = np.random.default_rng(502)
    num = np.array([[0, 1, 5, 9], [2, 2, 7, 10]])
    den = np.array([[1, 4, 6, 10], [2, 7, 11, 10]])
    n = 50_000
    freq = D.bernoulli_exp_neg_fraction(np.tile(num, (n, 1, 1)), den, rng).mean(axis=0)
    p = np.exp(-num / den)
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-12)
    # broadcasting a scalar numerator against denominators
    assert D.bernoulli_exp_neg_fraction(3, np.array([3, 4, 5]), rng).shape == (3,)


def test_bernoulli_exp_neg_one_frequency():
    n = 400_000
    draws = D.bernoulli_exp_neg_one(n, np.random.default_rng(503))
    p = math.exp(-1)
    assert draws.dtype == bool
    assert abs(draws.mean() - p) <= 5 * math.sqrt(p * (1 - p) / n)


class _Stub:
    """A 'generator' that returns every W in {0, ..., 7! - 1} once, then A = 0."""

    def integers(self, low, high, size=None, dtype=np.int64):
        if high == D._FACT:
            return np.arange(D._FACT, dtype=dtype)
        return np.ones(size, dtype=dtype)  # A = 0 in the continuation rounds (K = 8)


def test_threshold_trick_gives_the_law_of_algorithm_1_exactly():
    # K = min{k : W >= 7!/k!} for every W: P(K > k) = 1/k! exactly, and the output is K odd
    out = D._bern_exp_neg_one(D._FACT, _Stub())
    for w in range(D._FACT):
        k = next((k for k in range(1, 8) if w >= D._FACT // math.factorial(k)), 8)
        assert out[w] == (k % 2 == 1)
    for k in range(1, 8):  # the counts: exactly 7!/k! values of W have K > k
        assert sum(1 for w in range(D._FACT) if w < D._FACT // math.factorial(k)) \
            == D._FACT // math.factorial(k)
    # P(True) = sum_{k odd <= 7} P(K = k) + 0 * P(K = 8): 1854/5040, the series of e^-1 to 1/7!
    assert int(out.sum()) == sum((-1) ** j * D._FACT // math.factorial(j) for j in range(8))


def test_bernoulli_guards():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError):
        D.bernoulli_exp_neg_fraction(np.array([4]), 3, rng)  # num/den > 1
    with pytest.raises(ValueError):
        D.bernoulli_exp_neg_fraction(np.array([-1]), 3, rng)
    with pytest.raises(ValueError):
        D.bernoulli_exp_neg_fraction(np.array([0]), 0, rng)
    with pytest.raises(TypeError):
        D.bernoulli_exp_neg_fraction(np.array([0.5]), 3, rng)
    with pytest.raises(OverflowError):  # den itself above 2^62
        D.bernoulli_exp_neg_fraction(np.array([1]), 2**62 + 1, rng)
    with pytest.raises(OverflowError):  # num = den: every run reaches K = 2, den * 2 > 2^62
        D.bernoulli_exp_neg_fraction(np.array([2**61 + 1]), 2**61 + 1, rng)
    with pytest.raises(OverflowError):
        D.bernoulli_exp_neg_fraction(np.array([2**61 + 1]), np.array([2**61 + 1]), rng)
    # den * K = 2^62 exactly is allowed
    assert D.bernoulli_exp_neg_fraction(np.array([0, 2**61]), 2**61, rng).shape == (2,)


# ---------------------------------------------------------------------------
# randomness, determinism, shapes, arguments
# ---------------------------------------------------------------------------
class _Recorder:
    """Forwards ``integers`` and ``random`` to a Generator and records the calls."""

    def __init__(self, seed):
        self._rng = np.random.default_rng(seed)
        self.calls = set()

    def integers(self, *args, **kwargs):
        self.calls.add("integers")
        return self._rng.integers(*args, **kwargs)

    def random(self, *args, **kwargs):
        self.calls.add("random")
        return self._rng.random(*args, **kwargs)


def test_only_integers_are_used():
    r = _Recorder(1)
    D.sample_discrete_laplace(7, 1000, r)
    D.bernoulli_exp_neg_fraction(np.arange(10), 10, r)
    D.bernoulli_exp_neg_one(100, r)
    assert r.calls == {"integers"}
    r = _Recorder(2)
    D.sample_discrete_gaussian(7.5, 1000, r)
    assert r.calls == {"integers"}


def test_shapes_and_determinism():
    for f, s in ((D.sample_discrete_gaussian, 5.0), (D.sample_discrete_laplace, 5)):
        a = f(s, (3, 4), np.random.default_rng(9))
        b = f(s, (3, 4), np.random.default_rng(9))
        assert a.shape == (3, 4) and a.dtype == np.int64 and np.array_equal(a, b)
        assert not np.array_equal(f(s, 1000, np.random.default_rng(9)),
                                  f(s, 1000, np.random.default_rng(10)))
        assert f(s, 0, np.random.default_rng(0)).shape == (0,)
        assert f(s, (0, 3), np.random.default_rng(0)).shape == (0, 3)
        assert f(s, np.int64(7), np.random.default_rng(0)).shape == (7,)
        one = f(s, None, np.random.default_rng(0))
        assert np.ndim(one) == 0 and isinstance(one, np.integer)
    # a batch is the same law in blocks: more than one block
    big = D.sample_discrete_gaussian(2.0, 3 * D._BLOCK + 5, np.random.default_rng(3))
    assert big.shape == (3 * D._BLOCK + 5,) and abs(big.var() / 4.0 - 1) < 0.02
    assert D.bernoulli_exp_neg_one((2, 3), np.random.default_rng(0)).shape == (2, 3)


def test_argument_checks():
    rng = np.random.default_rng(0)
    for bad in (0, -3, 2**41 + 1):
        with pytest.raises(ValueError):
            D.sample_discrete_laplace(bad, 3, rng)
    for bad in (1.5, "3", True):
        with pytest.raises(TypeError):
            D.sample_discrete_laplace(bad, 3, rng)
    assert D.sample_discrete_laplace(4.0, 3, rng).dtype == np.int64  # an integral float
    for bad in (-1.0, 0.0, float("nan"), float("inf"), 2.0**40 * 1.01, 2.0**-101):
        with pytest.raises(ValueError):
            D.sample_discrete_gaussian(bad, 3, rng)
    with pytest.raises(ValueError):
        D.sample_discrete_gaussian(1.0, -1, rng)
    assert np.all(D.sample_discrete_gaussian(2.0**-100, 1000, rng) == 0)


# ---------------------------------------------------------------------------
# the sampler's total variation: the numbers behind DISCRETE_GAUSSIAN_SAMPLER_TV
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("sigma", [2.0**-100, 0.3, 1.0, 3.7, 1000.3, 2.0**20 + 0.3,
                                   2.0**35 + 0.77, 2.0**40])
def test_float_acceptance_probability_within_the_assumed_relative_error(sigma):
    # |a_hat / a - 1| <= (6.5 gamma + 9.5) 2^-53 for gamma <= 700 (module docstring, step 2),
    # a against 50-digit arithmetic from the exact rationals (a double is a rational)
    t = math.floor(sigma) + 1
    c = Fraction(sigma) ** 2 / t
    ys = set(np.round(np.linspace(0, 45 * sigma + 40, 300)).astype(np.int64).tolist())
    ys |= set(range(max(int(c) - 20, 0), int(c) + 20))  # cancellation in |y| - sigma^2/t
    ys = np.array(sorted(ys), dtype=np.int64)
    a_hat = D._acceptance_probability(ys, sigma, t)
    s2 = Fraction(sigma) ** 2
    worst = 0.0
    with localcontext() as ctx:
        ctx.prec = 50
        for y, ah in zip(ys.tolist(), a_hat.tolist()):
            g = (abs(y) - s2 / t) ** 2 / (2 * s2)
            gd = Decimal(g.numerator) / Decimal(g.denominator)
            a = (-gd).exp()
            if gd > 700:  # step 2: both below 1e-304
                assert a < Decimal("1e-304") and ah < 1e-304
                continue
            rel = abs(Decimal(ah) / a - 1)
            bound = (Decimal(6.5) * gd + Decimal(9.5)) * Decimal(U)
            assert rel <= bound, (y, float(gd), float(rel / Decimal(U)))
            worst = max(worst, float(rel / bound))
    # not vacuous (at sigma = 2^-100 only y = 0 has gamma <= 700, and a = 1 to 50 digits)
    assert worst > 0 or sigma < 1e-20


def test_acceptance_rate_and_expected_gamma():
    # step 3: E[gamma(Y)] < 1 under N_Z(0, sigma^2); step 4: A >= 0.28 (>= 0.5415 for sigma >= 1);
    # the closed form of A against direct summation
    sigmas = np.concatenate([np.linspace(0.01, 1, 60, endpoint=False), np.linspace(1, 12, 221),
                             [0.999999, 1.999999, 20.0, 50.5, 99.99, 100.01, 1000.0]])
    lowest = 1.0
    for sigma in sigmas.tolist():
        t = math.floor(sigma) + 1
        half = int(60 * sigma) + 60
        ys = np.arange(-half, half + 1)
        acc = np.exp(-((np.abs(ys) - sigma**2 / t) ** 2) / (2 * sigma**2))
        direct = math.fsum(D.discrete_laplace_pmf(ys, t) * acc)
        closed = D._gaussian_acceptance_rate(sigma, t)
        assert abs(closed / direct - 1) < 1e-12
        assert closed >= (0.5415 if sigma >= 1 else 0.28)
        lowest = min(lowest, closed)
        e_gamma = math.fsum(D.discrete_gaussian_pmf(ys, sigma) * (np.abs(ys) - sigma**2 / t) ** 2
                            / (2 * sigma**2))
        assert e_gamma < 1.0
    assert 0.44 < lowest < 0.45  # the minimum over sigma < 1 (about sigma = 0.32)


def test_numpy_exp_is_within_4_ulp():
    # the assumption of step 2 (checked on the platform that runs the tests)
    rng = np.random.default_rng(601)
    g = np.concatenate([rng.uniform(0, 1, 2000), rng.uniform(0, 40, 2000),
                        rng.uniform(0, 700, 2000), [0.0, 2.0**-60, 1e-10, 0.5, 1.0, 700.0]])
    e = np.exp(-g)
    worst = 0.0
    with localcontext() as ctx:
        ctx.prec = 40
        for gi, ei in zip(g.tolist(), e.tolist()):
            exact = (-Decimal(gi)).exp()
            worst = max(worst, float(abs(Decimal(ei) - exact)) / math.ulp(float(exact)))
    assert worst <= 4.0, worst


def test_float_margin_covers_the_derivation():
    # the fast decision's margin r = 1e-12 a_hat + 2^-50 exceeds |a - a_hat| (module docstring)
    assert D._FLOAT_ACCEPTANCE_RTOL < 5.1e-13 < 1e-12
    assert D.DISCRETE_GAUSSIAN_SAMPLER_TV >= 2e-55 / 0.28


def test_exact_acceptance_branch_has_the_right_probability():
    # the rare high-precision branch, forced: frequencies match exp(-gamma)
    rng = np.random.default_rng(11)
    sigma, t = 2.5, 3
    for y in (0, 2, 5):
        p = math.exp(-((abs(y) - sigma**2 / t) ** 2) / (2 * sigma**2))
        acc = np.mean([D._accept_exact(y, sigma, t, int(rng.integers(0, 2**53)), rng)
                       for _ in range(3000)])
        assert abs(acc - p) < 5 * math.sqrt(p * (1 - p) / 3000) + 1e-9


def test_fast_decisions_are_the_exact_ones():
    # proposals whose first 53 bits decide: the decision agrees with 60-digit arithmetic
    rng = np.random.default_rng(12)
    sigma = 7.3
    t = math.floor(sigma) + 1
    y = D.sample_discrete_laplace(t, 4000, rng)
    seed_state = rng.bit_generator.state
    fast = D._accept_gaussian(y, sigma, t, rng)
    rng.bit_generator.state = seed_state
    k = rng.integers(0, 2**53, size=y.size)
    a = D._acceptance_probability(y, sigma, t)
    with localcontext() as ctx:
        ctx.prec = 50
        s2 = Fraction(sigma) ** 2
        for yi, ki, fi in zip(y.tolist(), k.tolist(), fast.tolist()):
            g = (abs(yi) - s2 / t) ** 2 / (2 * s2)
            exact_a = (-(Decimal(g.numerator) / Decimal(g.denominator))).exp()
            lo = Decimal(ki) / Decimal(2) ** 53
            if lo + Decimal(2) ** -53 <= exact_a:
                assert fi
            elif lo >= exact_a:
                assert not fi
    assert a.shape == y.shape


# ---------------------------------------------------------------------------
# pmfs and the rounded Gaussian
# ---------------------------------------------------------------------------
def test_pmfs_are_normalised():
    for t in (1, 3, 1000, 2.5):
        k = np.arange(-int(80 * t) - 50, int(80 * t) + 51)
        assert math.fsum(D.discrete_laplace_pmf(k, t)) == pytest.approx(1.0, abs=1e-12)
    for sigma in (0.1, 0.5, 3.7, 50.0, 150.0):
        k = np.arange(-int(45 * sigma) - 20, int(45 * sigma) + 21)
        assert math.fsum(D.discrete_gaussian_pmf(k, sigma)) == pytest.approx(1.0, abs=1e-12)
    # the direct sum (sigma <= 100) and the Poisson form (beyond) agree at the switch
    direct, poisson = D.discrete_gaussian_pmf(0, 100.0), D.discrete_gaussian_pmf(0, 100.0 + 1e-9)
    assert direct == pytest.approx(poisson, rel=1e-12)
    with pytest.raises(ValueError):
        D.discrete_gaussian_pmf(0, 0.0)
    with pytest.raises(ValueError):
        D.discrete_laplace_pmf(0, -1.0)


def _exact_rounded_tv(sigma):
    half = int(40 * sigma) + 5
    ks = np.arange(-half, half + 1)
    lo, hi = (ks - 0.5) / sigma, (ks + 0.5) / sigma
    # P(round(N(0, sigma^2)) = k), with survival functions on the right (no cancellation near 1)
    rounded = np.where(ks >= 0, stats.norm.sf(lo) - stats.norm.sf(hi),
                       stats.norm.cdf(hi) - stats.norm.cdf(lo))
    return 0.5 * math.fsum(np.abs(rounded - D.discrete_gaussian_pmf(ks, sigma)))


@pytest.mark.parametrize("sigma", [1.0, 2.0, 5.0, 20.0, 100.0])
def test_rounded_gaussian_tv_bound_holds_and_is_not_loose(sigma):
    tv = _exact_rounded_tv(sigma)
    bound = D.rounded_gaussian_tv_bound(sigma)
    assert tv <= bound
    assert bound <= 5 * tv
    assert bound < 0.052 / sigma**2


def test_rounded_gaussian_tv_bound_domain():
    with pytest.raises(ValueError):
        D.rounded_gaussian_tv_bound(0.5)
    with pytest.raises(ValueError):
        D.rounded_gaussian_tv_bound(float("nan"))
    assert D.rounded_gaussian_tv_bound(2.0**20) == pytest.approx(0.0202 / 2.0**40, rel=0.01)


# --- the grid ------------------------------------------------------------------------
def test_grid_rule_is_a_power_of_two_within_the_loss():
    for sens, k in [(1.0, 1), (3.3, 100), (1e-6, 10_000)]:
        g = grid_step(sens, math.sqrt(k))
        assert math.frexp(g)[0] == 0.5  # a power of two
        assert g * math.sqrt(k) <= GRID_UTILITY_LOSS / 2.5 * sens < 2 * g * math.sqrt(k)


def test_release_is_a_function_of_the_integer_only():
    g = 2.0**-20
    m = snap(np.array([0.1, -3.2, 1e6 + 1 / 3]), g)
    assert np.all(m == np.round(m))
    y = np.array([5, -7, 2**40])
    out = release_on_grid(m, y, g)
    assert np.all(out / g == m + y)  # exact: the released doubles are grid points


@pytest.mark.parametrize("mech", ["analytic_gaussian", "gaussian", "laplace"])
def test_mechanisms_release_on_the_grid_and_calibrate_for_the_rounded_sensitivity(mech):
    q = Query(shape=(50,), l2_sensitivity=1.0)
    spec = calibrate(q, 0.5, 1e-6, mechanism=mech)
    g = spec.params["grid"]
    out = spec.privatize(np.linspace(-1, 1, 50) / 3.0, np.random.default_rng(0))
    assert np.all(out / g == np.round(out / g))
    from skdp import PrivacyGuaranteeWarning

    with pytest.warns(PrivacyGuaranteeWarning, match="floating-point"):
        cont = calibrate(q, 0.5, 1e-6, mechanism=mech + "_continuous")
    # more noise than the real-valued calibration, by less than the documented loss
    ratio = spec.expected_squared_error / cont.expected_squared_error
    assert 1.0 <= ratio <= 1.0 + GRID_UTILITY_LOSS


def test_continuous_variants_are_unverified_and_never_auto():
    from skdp.mechanisms import available_mechanisms

    names = set(available_mechanisms()) - set(available_mechanisms(verified_only=True))
    assert {"analytic_gaussian_continuous", "gaussian_continuous", "inid_gaussian_continuous",
            "laplace_continuous", "inid_laplace_continuous"} <= names
    spec = calibrate(Query(shape=(5,), l2_sensitivity=1.0), 1.0, 1e-5)
    assert not spec.mechanism.endswith("_continuous")


def test_grids_refine_where_e_eps_makes_the_sampler_reserve_large():
    """At large epsilon the factor 1 + e^eps makes the reserve of the discrete sampler's
    total-variation error exceed delta / 10 on the grid rule's grid (every Gaussian release
    failed at epsilon 20, delta 1e-5). refine_for_reserve halves the grids until the reserve
    is at most RESERVE_SHARE * delta; it changes nothing at moderate epsilon."""
    from skdp.mechanisms._grid import RESERVE_SHARE, discrete_gaussian_tv_reserve, refine_for_reserve

    delta = 1e-5
    for eps in (0.1, 1.0, 8.0):  # the rule's grids qualify: nothing changes
        spec = calibrate(Query(shape=(50,), l2_sensitivity=1.0), eps, delta,
                         mechanism="analytic_gaussian")
        assert spec.params["grid"] == grid_step(1.0, np.sqrt(50))
    for eps in (20.0, 30.0):
        g0 = grid_step(1.0, np.sqrt(50))
        spec = calibrate(Query(shape=(50,), l2_sensitivity=1.0), eps, delta,
                         mechanism="analytic_gaussian")
        g = spec.params["grid"]
        assert g < g0 and math.log2(g0 / g) == int(math.log2(g0 / g))  # a power-of-two refinement
        s = spec.params["sigma"] / g
        assert s <= 2.0**40  # the samplers' range
        reserve = discrete_gaussian_tv_reserve(eps, delta, np.full(50, s))
        assert reserve <= RESERVE_SHARE * delta and spec.params["tv_reserve"] <= RESERVE_SHARE * delta
        # the coarser grid (one halving less) would not have qualified: the finest needed
        assert discrete_gaussian_tv_reserve(eps, 1.0, np.full(50, s / 2)) > RESERVE_SHARE * delta
        # per coordinate: only the coordinates below the needed scale are refined
        f = refine_for_reserve(eps, delta, [2.0**20, 2.0**38], counts=[25, 25])
        assert f[1] == 1.0 and f[0] < 1.0
    with pytest.raises(ValueError, match="epsilon up to about"):  # beyond the samplers' range
        calibrate(Query(shape=(50,), l2_sensitivity=1.0), 60.0, delta, mechanism="analytic_gaussian")


@pytest.mark.parametrize("eps", [20.0, 30.0])
def test_estimators_fit_at_large_epsilon(eps):
    """Every Gaussian route of the estimators fits at epsilon 20 and 30 (delta 1e-5)."""
    import warnings

    from skdp.decomposition import PrivatePCA
    from skdp.linear_model import PrivateLogisticRegression, PrivateOLS
    from skdp.preprocessing import PrivateStandardScaler

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 6))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    yb = (X[:, 0] > 0).astype(int)
    yr = np.clip(X[:, 0], -1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for route in ("objective", "output", "gradient"):
            PrivateLogisticRegression(epsilon=eps, data_norm=1.0, classes=[0, 1],
                                      perturbation=route, random_state=0).fit(X, yb)
        for method in ("ssp", "adassp"):
            PrivateOLS(epsilon=eps, data_norm=1.0, label_bound=1.0, method=method,
                       random_state=0).fit(X, yr)
        PrivatePCA(n_components=2, epsilon=eps, data_norm=1.0, random_state=0).fit(X)
        PrivateStandardScaler(epsilon=eps, delta=1e-5, bounds=(-1, 1), random_state=0).fit(X)
