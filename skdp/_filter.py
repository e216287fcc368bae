r"""A privacy filter: fully adaptive composition of Gaussian and (epsilon, delta) spends.

A ledger with ``composition="filter"`` (the default) accepts a spend when the
rule below says that the *whole interaction* — every fit charged to the
ledger so far, the new one, and any fit that the rule will accept later, each
chosen after seeing the results of the earlier ones — stays within the
ledger's ``(epsilon, delta)``. This is a *privacy filter* in the sense of
Rogers, Roth, Ullman & Vadhan (2016): its guarantee holds under fully
adaptive composition, where both the mechanisms and their privacy parameters
are chosen after seeing earlier outputs. Plain composition of a fixed
sequence of privacy curves (PLD, RDP) is not enough for that.

Spends and their curves
-----------------------
Every spend carries its ``(epsilon_i, delta_i)`` guarantee. A spend whose
release is a Gaussian mechanism also carries a :class:`GaussianCurve`
``(mu_i, tv_i)``: in exact arithmetic the release is a post-processing of a
Gaussian pair at separation ``mu_i`` (it is ``mu_i``-GDP: its trade-off
function is at least ``G_mu(a) = Phi(Phi^-1(1 - a) - mu)``, Dong, Roth & Su
2022), and the implemented sampler is within total variation ``tv_i`` of that
ideal release, for every dataset (the discrete samplers' bound, see
:mod:`skdp.mechanisms._grid`). For the grid Gaussian mechanisms
``mu_i = Delta_rounded / sigma`` and ``tv_i`` is the reserved sampling error
divided by ``1 + e^epsilon_i``.

The rule
--------
The state is three pools: a *basic* pool ``(E, D)`` of epsilon and delta, and
a *Gaussian* pool ``M2`` of squared GDP parameter. A new ledger starts with
``(E, D) = (epsilon, delta)`` and ``M2 = 0``. A spend is charged as follows
(first rule that fits; if none fits it is refused and nothing changes):

1. A spend without a curve: its ``(epsilon_i, delta_i)`` from the basic
   pool; else ``pure_mu(epsilon_i)^2`` from ``M2`` and ``delta_i`` from ``D``.
2. A Gaussian spend: ``mu_i^2`` from ``M2`` and ``(1 + e^epsilon) tv_i`` from
   ``D``; else, when the Gaussian pool is short, *convert* the whole basic
   epsilon ``E`` and a share ``d`` of ``D`` into Gaussian capacity
   ``m^2`` with ``m = conversion_mu(E, d)`` (``d`` is the larger of 99 % of
   what is left of ``D`` and the least that covers the spend) and charge the
   spend from the enlarged pool; else its ``(epsilon_i, delta_i)`` from the
   basic pool.

Every quantity the rule reads is public (the spends' parameters and the
ledger's budget), never a result of a fit.

Why it is valid under full adaptivity
-------------------------------------
Write ``f_{e,d}`` for the trade-off function of ``(e, d)``-DP,
``G_m ⊗ f_{E,D}`` for the trade-off of a pool state (``⊗`` is the
composition of trade-off functions, Dong, Roth & Su 2022, Def. 3.1). Call a
state's *cap* ``R = G_sqrt(M2) ⊗ f_{E, D}``. Claim: from any state, the rest of
the interaction (all the spends the rule will accept from there on, chosen
adaptively) is ``R``-DP in exact arithmetic. By induction on the number of
remaining spends: the next spend ``g`` is chosen from public information
before its output exists, and it moves the state to one whose cap ``R'``
does not depend on the output; by the adaptive composition theorem of f-DP
(Dong, Roth & Su 2022, Thm. 3.2: the second mechanism is ``R'``-DP for every
output of the first) the rest is ``g ⊗ R'``-DP, so it suffices that
``g ⊗ R' >= R`` for every charge:

* Gaussian from ``M2``: ``G_mu ⊗ G_sqrt(M2 - mu^2) = G_sqrt(M2)`` (Dong, Roth &
  Su 2022, Cor. 3.3), equality.
* ``(e_i, d_i)`` from the basic pool: ``f_{e_i,d_i} ⊗ f_{E-e_i, D-d_i} >=
  f_{E,D}`` (basic composition, Dwork & Roth 2014, Thm. 3.16) and ``⊗`` is
  monotone.
* ``(e_i, d_i)`` from ``M2`` and ``D``: any ``(e, d)``-DP mechanism is a
  post-processing of the canonical ``(e, d)`` pair (Kairouz, Oh & Viswanath
  2015, Thm. 2.1), which is "with probability ``d`` reveal the input, else
  randomised response at ``e``", itself a post-processing of the product of
  a ``(0, d)`` pair and an ``(e, 0)`` pair; and ``f_{e,0} >= G_pure_mu(e)``
  with ``pure_mu(e) = 2 Phi^-1(e^e / (1 + e^e))``: ``G_m`` is convex with
  ``G_m(0) = 1``, ``G_m(1) = 0``, and both functions are symmetric with the
  same value at ``a = 1 / (1 + e^e)``, the kink of the piecewise-linear
  ``f_{e,0}``, so ``G_m`` lies below both of its chords. Hence
  ``g >= G_pure_mu(e_i) ⊗ f_{0,d_i}`` and the charge is valid.
* Conversion: ``G_m >= f_{E,d}`` whenever ``delta_G(E; m) <= d`` (the
  ``(epsilon, delta)`` curve of GDP, Dong, Roth & Su 2022, Cor. 2.13; Balle
  & Wang 2018, Thm. 8), so the new cap
  ``G_sqrt(M2) ⊗ G_m ⊗ f_{0, D-d} >= G_sqrt(M2) ⊗ f_{E, d} ⊗ f_{0, D-d} >= R``:
  the converted state is at least as private as the old one, before the
  spend is charged from it.

The initial cap is ``f_{epsilon, delta}``: the whole interaction is
``(epsilon, delta)``-DP in exact arithmetic. The fixed-cap Gaussian filter of
Smith & Thakurta (2022) (accept while ``sum mu_i^2 <= mu^2``) is the special
case of a pool that starts Gaussian.

**Sampling error.** The implemented releases differ from the ideal ones by
at most ``tv_i`` in total variation, conditionally on the past; coupling the
two interactions step by step, they differ by at most ``H = sum tv_i`` on
``D`` and on ``D'``, so ``P[real(D) in S] <= e^epsilon P[real(D') in S] +
delta_ideal + (1 + e^epsilon) H``. The rule charges ``(1 + e^epsilon) tv_i``
of the ledger's epsilon to ``D`` for every Gaussian spend, so the total is
within ``delta``. (Spends charged by their ``(epsilon_i, delta_i)`` already
include their own sampling error in ``delta_i``.) The step that makes this
exact inside the induction: ``delta_ideal`` is the cap of the ideal
interaction, whose pool ``D`` the rule has lowered by every charged
``tvc_i = (1 + e^epsilon) tv_i``, so ``delta_ideal <= delta - sum tvc_i``
and the sum above is at most ``delta``; equivalently, each ``tvc_i`` is a
``(0, tvc_i)`` "reveal" step composed into the cap (basic composition), and
the coupling bound is that step. (An independent review found this step
missing from the argument's text; the checks of fixed sequences against
exact bounds passed before and after.)

Floating point: the pools are updated with correctly rounded sums lowered
by a few ulps (``_pool``) and the Gaussian costs ``mu_i^2`` rounded up
(``_up``), so rounding never leaves a pool above its exact value; the
checks' relative slack ``_RTOL`` then bounds any overspend by ``1e-12`` of
the budget.

What is reported
----------------
``spent`` (filter) is the composed cost of the recorded spends as a fixed
sequence, at the ledger's delta when Gaussian spends are present:
``epsilon_basic + epsilon_G(sqrt(sum mu_i^2); delta - delta_charged)``, or
the basic sum when that has the smaller epsilon (both bound the recorded
sequence). The guarantee under adaptivity is the filter's: the whole
interaction, including every later accepted spend, is within the ledger's
budget.

**When the filter pays, and when it does not.** The first Gaussian spend
that the Gaussian pool cannot cover converts the whole remaining basic
epsilon. That is what makes many Gaussian fits cheap (882 fits at
(0.1, 1e-7) in (3, 1e-5), against 30 under basic composition), but a pure
or approximate-DP fit charged afterwards pays ``pure_mu(epsilon_i)^2`` from
the Gaussian pool, which costs far more epsilon than basic composition
would. Ledgers that mix Gaussian fits with many non-Gaussian ones should use
``composition="basic"``, or one ledger per kind of fit with budgets that add
up to the total (basic composition of the ledgers).

References
----------
J. Dong, A. Roth, W. J. Su. Gaussian differential privacy. JRSS B, 2022.
R. Rogers, A. Roth, J. Ullman, S. Vadhan. Privacy odometers and filters:
pay-as-you-go composition. NeurIPS 2016.
A. Smith, A. Thakurta. Fully adaptive composition for Gaussian differential
privacy. arXiv:2210.17520, 2022.
J. Whitehead, R. Rogers, A. Ramdas. Fully-adaptive composition in
differential privacy. ICML 2023.
P. Kairouz, S. Oh, P. Viswanath. The composition theorem for differential
privacy. ICML 2015.
B. Balle, Y.-X. Wang. Improving the Gaussian mechanism for differential
privacy: analytical calibration and optimal denoising. ICML 2018.
"""

import math
from dataclasses import dataclass, replace

from scipy.special import erf, erfinv, expit, ndtri

from ._validation import scaled_reserve

__all__ = ["GaussianCurve", "combine_curves", "release_curve", "release_charge", "PURE_RELEASE",
           "pure_mu", "conversion_mu", "gdp_epsilon",
           "FilterState", "filter_charge", "filter_replay", "filter_spent"]

#: share of the basic pool's remaining delta a conversion takes at least
CONVERT_DELTA_SHARE = 0.99
# relative slack of every budget check, the filter's and the ledgers' (skdp._ledger imports
# it): it lets ten spends of 0.1 fill a budget of 1.0 despite rounding, and can never
# overspend by more than one part in 10^12 (the same as PrivacyBudget.covers)
_RTOL = 1e-12


@dataclass(frozen=True)
class GaussianCurve:
    """The privacy curve of a Gaussian release: ``mu``-GDP up to sampling error ``tv``.

    Parameters
    ----------
    mu : float
        GDP parameter of the ideal (exact-arithmetic) release, > 0.
    tv : float, default=0.0
        Total variation between the implemented release and the ideal one,
        on every dataset (>= 0).
    """

    mu: float
    tv: float = 0.0

    def __post_init__(self):
        mu, tv = float(self.mu), float(self.tv)
        if not (math.isfinite(mu) and mu > 0):
            raise ValueError(f"a Gaussian curve needs a finite mu > 0, got {self.mu!r}.")
        if not (math.isfinite(tv) and tv >= 0):
            raise ValueError(f"a Gaussian curve needs a finite tv >= 0, got {self.tv!r}.")
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "tv", tv)


def combine_curves(curves):
    """The curve of releases made together: ``mu = sqrt(sum mu_i^2)``, ``tv = sum tv_i``.

    ``G_a ⊗ G_b = G_sqrt(a^2 + b^2)`` (Dong, Roth & Su 2022, Cor. 3.3); the
    sampling errors add up by coupling. Returns ``None`` if any curve is
    ``None`` (a release without a Gaussian curve).
    """
    curves = list(curves)
    if not curves or any(c is None for c in curves):
        return None
    return GaussianCurve(math.sqrt(math.fsum(c.mu**2 for c in curves)),
                         math.fsum(c.tv for c in curves))


def release_curve(specs):
    """The Gaussian curve of a fit that releases ``specs`` (NoiseSpecs), or ``None``.

    Gaussian specs contribute their curve; specs of verified, floating-point
    safe pure mechanisms (the grid Laplace family, exactly epsilon-DP)
    contribute ``pure_mu(epsilon)`` (valid: ``f_{eps,0} >= G_pure_mu(eps)``);
    any other spec makes the fit curve-less. A fit without any Gaussian
    release has no curve (pure fits compose better by basic composition).
    """
    specs = list(specs)
    curves, gaussian = [], False
    for spec in specs:
        c = spec.gaussian_curve()
        if c is not None:
            gaussian = True
        else:
            mech = spec.mechanism_
            m = pure_mu(spec.epsilon)
            if not (mech.pure and mech.verified and mech.float_safe and math.isfinite(m)):
                return None
            c = GaussianCurve(m) if m > 0 else None
            if c is None:
                continue
        curves.append(c)
    return combine_curves(curves) if gaussian else None


class _PureRelease:
    """What :func:`release_charge` returns for a fit whose whole release is pure epsilon-DP."""

    def __repr__(self):
        return "PURE_RELEASE"


#: the fit's release is exactly epsilon-DP: it is charged ``(epsilon, 0)``
PURE_RELEASE = _PureRelease()


def release_charge(specs):
    """What a fit releasing ``specs`` is charged by: :data:`PURE_RELEASE` when every spec is
    a verified, floating-point-safe pure mechanism (the grid Laplace family: exactly
    epsilon-DP whatever the ``delta`` it was given, so the fit spends ``(epsilon, 0)``),
    else :func:`release_curve` (its Gaussian curve or ``None``)."""
    specs = list(specs)
    if specs and all(spec.mechanism_.pure and spec.mechanism_.verified
                     and spec.mechanism_.float_safe for spec in specs):
        return PURE_RELEASE
    return release_curve(specs)


def pure_mu(epsilon):
    """GDP parameter implied by pure ``epsilon``-DP: ``2 Phi^-1(e^eps / (1 + e^eps))``.

    ``f_{eps,0} >= G_mu`` for this ``mu`` (module docstring); rounded up by
    one part in 10^9 (a larger ``mu`` is the safe side).
    """
    epsilon = float(epsilon)
    if epsilon <= 0:
        return 0.0
    if epsilon <= 1.0:
        # Phi^-1(e^eps / (1 + e^eps)) = sqrt(2) erfinv(tanh(eps / 2)): no cancellation near
        # 1/2 (-ndtri(expit(-eps)) loses digits below eps ~ 1e-7, and all of them by 1e-16)
        return float(2.0 * math.sqrt(2.0) * erfinv(math.tanh(epsilon / 2.0))) * (1 + 1e-9)
    return float(-2.0 * ndtri(expit(-epsilon))) * (1 + 1e-9)  # (tanh rounds to 1 above ~37)


def _gaussian_delta(mu, epsilon):
    """delta_G(epsilon; mu) (Balle & Wang 2018, Thm 8; ``2 Phi(mu/2) - 1`` at epsilon = 0)."""
    from .mechanisms.gaussian import gaussian_delta

    return gaussian_delta(mu, epsilon)


def conversion_mu(epsilon, delta):
    """Largest ``m`` with ``G_m >= f_{epsilon, delta}`` (``delta_G(epsilon; m) <= delta``).

    The Gaussian capacity bought by converting ``(epsilon, delta)`` of the
    basic pool; the safe (lower) end of a bisection, so the inequality holds.
    """
    from .mechanisms.gaussian import analytic_gaussian_mu

    epsilon, delta = float(epsilon), float(delta)
    if delta <= 0:
        return 0.0
    if delta >= 1:
        raise ValueError("delta must be < 1.")
    if epsilon > 0:
        # one part in 10^8 below the bisection's root: delta_G is computed to about 1e-9
        # relative at extreme deltas (1e-200), and the conversion must never overshoot
        return analytic_gaussian_mu(epsilon, delta) * (1 - 1e-8)
    # epsilon = 0: delta_G(0; m) = 2 Phi(m/2) - 1 = erf(m / (2 sqrt 2)), inverted with erfinv
    # (ndtri((1 + delta) / 2) loses delta below 1e-16 in the sum)
    m = 2.0 * math.sqrt(2.0) * float(erfinv(delta)) * (1 - 1e-9)
    while m > 0 and float(erf(m / (2.0 * math.sqrt(2.0)))) * (1 + 1e-12) > delta:
        m *= 1 - 1e-6
    return max(m, 0.0)


def gdp_epsilon(mu, delta):
    """Smallest epsilon with ``delta_G(epsilon; mu) <= delta`` (upper end of a bisection)."""
    mu, delta = float(mu), float(delta)
    if mu <= 0:
        return 0.0
    if not 0 < delta < 1:
        return math.inf
    if _gaussian_delta(mu, 0.0) <= delta:
        return 0.0
    lo, hi = 0.0, max(1.0, mu * mu)
    while _gaussian_delta(mu, hi) > delta:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-12 * hi:
        mid = 0.5 * (lo + hi)
        if _gaussian_delta(mu, mid) <= delta:
            hi = mid
        else:
            lo = mid
    # a reported cost: one part in 10^8 above the root, past the ~1e-9 relative error of
    # delta_G at extreme deltas (a larger epsilon is the safe side)
    return hi * (1 + 1e-8)


@dataclass(frozen=True)
class FilterState:
    """The pools of the filter, and what has been charged (module docstring).

    Attributes
    ----------
    eps_pool, delta_pool : float
        The basic pool ``(E, D)``.
    mu2_pool : float
        The Gaussian pool ``M2`` (squared GDP parameter still available).
    eps_charged, delta_charged : float
        Epsilon charged to the basic pool by spends, and delta charged by
        spends (basic, their delta under rule 1, their sampling error).
    mu2_charged : float
        Squared GDP parameter charged by spends (Gaussian ones and the
        ``pure_mu(epsilon_i)^2`` of rule 1).
    """

    eps_pool: float
    delta_pool: float
    mu2_pool: float = 0.0
    eps_charged: float = 0.0
    delta_charged: float = 0.0
    mu2_charged: float = 0.0

    @classmethod
    def start(cls, epsilon, delta):
        return cls(float(epsilon), float(delta))


def _le(a, b):
    return a <= b * (1 + _RTOL) + 1e-300


#: relative rounding allowance of the pools' arithmetic (a few units in the last place)
_ROUND = 4.0 * 2.0**-53


def _up(x):
    """A computed cost (a square) rounded up: at least the exact value."""
    return x * (1 + _ROUND)


def _pool(*terms):
    """A pool's new value ``sum(terms)``, rounded down and floored at 0: the correctly rounded
    sum (``math.fsum``) lowered by a few ulps, so that rounding never leaves a pool larger
    than exact arithmetic would (2^20 spends chosen to round up each subtraction overspent
    a budget of 1 by 3.8e-11, beyond the checks' 1e-12 slack)."""
    x = math.fsum(terms)
    return max(x - _ROUND * abs(x), 0.0)


def filter_charge(state, epsilon_i, delta_i, curve, ledger_epsilon):
    """Charge one spend to ``state``; returns ``(new_state, how)`` or ``(None, None)`` if refused.

    ``how`` is ``"basic"``, ``"gaussian"``, ``"converted"`` (a conversion,
    then a Gaussian charge) or ``"gaussian-pool"`` (rule 1's second branch).
    """
    s = state
    if curve is None:
        new = _from_basic(s, epsilon_i, delta_i)
        if new is not None:
            return new, "basic"
        new = _from_gaussian(s, _up(pure_mu(epsilon_i) ** 2), delta_i)
        return (new, "gaussian-pool") if new is not None else (None, None)

    tvc = scaled_reserve(ledger_epsilon, curve.tv)
    m2 = _up(curve.mu**2)
    new = _from_gaussian(s, m2, tvc)
    if new is not None:
        return new, "gaussian"
    avail = s.delta_pool - tvc
    if avail > 0:
        need = m2 - s.mu2_pool
        d_min = _gaussian_delta(math.sqrt(need), s.eps_pool) if need > 0 else 0.0
        d = min(max(d_min * (1 + 1e-6), CONVERT_DELTA_SHARE * avail), avail)
        m = conversion_mu(s.eps_pool, d)
        m2_new = m * m * (1 - _ROUND)  # capacity: rounded down
        if s.mu2_pool + m2_new >= m2:
            return replace(s, eps_pool=0.0, delta_pool=_pool(s.delta_pool, -d, -tvc),
                           mu2_pool=_pool(s.mu2_pool, m2_new, -m2),
                           mu2_charged=s.mu2_charged + m2,
                           delta_charged=s.delta_charged + tvc), "converted"
    new = _from_basic(s, epsilon_i, delta_i)
    return (new, "basic") if new is not None else (None, None)


def _from_basic(s, epsilon_i, delta_i):
    """``(epsilon_i, delta_i)`` charged to the basic pool, or ``None`` if it does not fit."""
    if not (_le(epsilon_i, s.eps_pool) and _le(delta_i, s.delta_pool)):
        return None
    return replace(s, eps_pool=_pool(s.eps_pool, -epsilon_i),
                   delta_pool=_pool(s.delta_pool, -delta_i),
                   eps_charged=s.eps_charged + epsilon_i,
                   delta_charged=s.delta_charged + delta_i)


def _from_gaussian(s, m2, delta_i):
    """``m2`` from the Gaussian pool and ``delta_i`` from the basic delta, or ``None``."""
    if not (_le(m2, s.mu2_pool) and _le(delta_i, s.delta_pool)):
        return None
    return replace(s, mu2_pool=_pool(s.mu2_pool, -m2),
                   delta_pool=_pool(s.delta_pool, -delta_i),
                   mu2_charged=s.mu2_charged + m2,
                   delta_charged=s.delta_charged + delta_i)


def filter_replay(epsilon, delta, spends):
    """The state after charging ``spends`` (``(epsilon_i, delta_i, curve)``) in order.

    Raises ``RuntimeError`` if a recorded spend does not fit (a ledger whose
    records were not written by this rule).
    """
    state = FilterState.start(epsilon, delta)
    for eps_i, delta_i, curve in spends:
        new, _ = filter_charge(state, eps_i, delta_i, curve, epsilon)
        if new is None:
            raise RuntimeError("the ledger's records exceed its budget under the filter.")
        state = new
    return state


def filter_spent(state, epsilon, delta):
    """``(epsilon, delta)`` reported as spent (module docstring, "What is reported")."""
    if state.mu2_charged <= 0:
        return state.eps_charged, state.delta_charged
    eps_g = gdp_epsilon(math.sqrt(state.mu2_charged), delta - state.delta_charged)
    return float(state.eps_charged + eps_g), float(delta)
