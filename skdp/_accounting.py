r"""Privacy accounting of the Poisson-subsampled Gaussian mechanism (DP-SGD).

skdp delegates the numerical accounting to Google's ``dp-accounting`` package
(its privacy-loss-distribution (PLD) accountant, Doroshenko, Ghazi, Kamath,
Kumar & Manurangsi 2022), so that composition and the conversion to
``(epsilon, delta)`` are not re-implemented here. This module states which
pair of distributions is handed to it and why that pair covers skdp's
neighbouring relation.

Neighbouring relation and the dominating pair
---------------------------------------------
skdp's relation is **replace-one** (n public): ``D`` and ``D'`` differ in one
record, ``x`` in ``D`` and ``x'`` in ``D'``. One step of DP-SGD includes every
record independently with probability ``q`` and releases
``S + N(0, sigma^2 I)``, ``S`` the sum of the included clipped per-example
gradients, each of norm at most ``C`` (the clipping norm). Write ``S_rest`` for
the sum over the ``n - 1`` common records and ``a``, ``b`` for the clipped
gradients of ``x`` and ``x'`` (``||a||, ||b|| <= C``). Given the past outputs
(adaptivity: the model at this step is public) the step's output is

    M(D)  ~ E_{S_rest}[ (1 - q) N(S_rest, sigma^2 I) + q N(S_rest + a, sigma^2 I) ],
    M(D') ~ E_{S_rest}[ (1 - q) N(S_rest, sigma^2 I) + q N(S_rest + b, sigma^2 I) ],

both mixtures over the *same* law of ``S_rest``. The hockey-stick divergence
``H_alpha(P || Q) = int (dP - alpha dQ)_+`` is jointly convex, so
``H_alpha(M(D) || M(D'))`` is at most its supremum over a fixed ``S_rest``,
and by translation and rotation invariance that is the pair

    A = (1 - q) N(0, sigma^2 I) + q N(a, sigma^2 I),
    B = (1 - q) N(0, sigma^2 I) + q N(b, sigma^2 I),      ||a||, ||b|| <= C.

The antipodal choice ``a = -b``, ``||a|| = C`` gives the one-dimensional pair

    P = (1 - q) N(0, sigma^2) + q N(-C, sigma^2),
    Q = (1 - q) N(0, sigma^2) + q N(+C, sigma^2),

which is exactly ``dp_accounting``'s ``REPLACE`` adjacency for an additive
Gaussian of standard deviation ``sigma`` and ``sensitivity = C``
(``privacy_loss_mechanism.AdditiveNoisePrivacyLoss``: ``mu_upper(x) =
q mu(x + s) + (1 - q) mu(x)``, ``mu_lower(x) = q mu(x - s) + (1 - q) mu(x)``).
So the accountant's ``sensitivity`` is the **per-record radius** ``C``, not the
replace-one sensitivity ``2 C`` of the sum, and the noise multiplier handed to
``GaussianDpEvent`` is ``z = sigma / C``. With ``q = 1`` the pair is
``N(-C) vs N(C)``: a Gaussian with l2 sensitivity ``2 C``, the full-batch
replace-one sensitivity, as it should be.

That ``(P, Q)`` dominates every ``(A, B)`` over the two balls (``H_alpha(A||B)
<= H_alpha(P||Q)`` for all ``alpha >= 1``) is the premise of the accountant's
replace-one mode; we check it numerically over the domain (the tests maximise
``H_alpha(A || B)`` over the planar configurations ``(a, b)``, including
unequal norms, by quadrature and find it attained at ``a = -b``, ``||a|| =
C``). For ``alpha < 1``, ``H_alpha(A||B) = 1 - alpha + alpha H_{1/alpha}(B||A)``
and ``(B, A)`` is in the same class while ``(P, Q)`` is symmetric under
``x -> -x``, so the bound holds for every ``alpha >= 0``. ``(P, Q)`` is then a
dominating pair of every step (Zhu, Dong & Wang 2022, Def. 7), and the
adaptive composition of ``T`` steps is dominated by ``(P^T, Q^T)`` (ibid.,
Thm. 10), whose privacy loss distribution the PLD accountant composes. The
accountant's *pessimistic* discretisation returns an upper bound on the
epsilon of ``(P^T, Q^T)`` at the requested delta.

The previous analysis (Renyi accountant under add/remove at
``(epsilon/2, delta/(1+e^(epsilon/2)))`` plus group privacy) is valid but
1.1-1.4x more noise for the same guarantee; ``benchmarks/bench_dpsgd_accounting.py``
prints both.

The algorithm divides the noisy sum by the public constant ``q n``
(post-processing).

References
----------
.. [1] V. Doroshenko, B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi. "Connect
   the dots: tighter discrete approximations of privacy loss distributions".
   PETS 2022.
.. [2] Y. Zhu, J. Dong, Y.-X. Wang. "Optimal accounting of differential privacy
   via characteristic function". AISTATS 2022.
.. [3] M. Abadi et al. "Deep learning with differential privacy". CCS 2016.
"""

import functools
import math

__all__ = [
    "poisson_gaussian_epsilon",
    "poisson_gaussian_noise_multiplier",
]


def _dp_accounting():
    try:
        import dp_accounting  # noqa: F401
    except ImportError as exc:  # pragma: no cover - the optional extra "dpsgd"
        raise ImportError(
            "DP-SGD with Poisson subsampling (perturbation='gradient', batch_size < n) needs "
            "the optional 'dp-accounting' package: python3 -m pip install 'skdp[dpsgd]'."
        ) from exc
    return dp_accounting


def poisson_gaussian_epsilon(noise_multiplier, sampling_rate, steps, delta,
                             discretization=1e-4):
    """Replace-one epsilon of ``steps`` Poisson-subsampled Gaussian steps (PLD accountant).

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation divided by the per-record radius ``C`` (the
        bound on one record's clipped gradient; the replace-one sensitivity of
        the sum is ``2 C``, see the module docstring).
    sampling_rate : float
        Poisson inclusion probability ``q`` in (0, 1].
    steps : int
        Number of composed steps.
    delta : float
        Target delta in (0, 1).
    discretization : float, default=1e-4
        ``value_discretization_interval`` of the PLD (pessimistic rounding:
        a coarser value only makes the epsilon larger).

    Returns
    -------
    epsilon : float
        From ``dp_accounting.pld.PLDAccountant`` with
        ``NeighboringRelation.REPLACE_ONE``.
    """
    dpa = _dp_accounting()
    acc = dpa.pld.PLDAccountant(dpa.NeighboringRelation.REPLACE_ONE,
                                value_discretization_interval=float(discretization))
    event = dpa.SelfComposedDpEvent(
        dpa.PoissonSampledDpEvent(float(sampling_rate), dpa.GaussianDpEvent(float(noise_multiplier))),
        int(steps),
    )
    acc.compose(event)
    return float(acc.get_epsilon(float(delta)))


#: smallest epsilon the Poisson accountant is asked for: its PLD is discretised at
#: epsilon / 500, and one bisection took 19 s at 1e-2, 71 s at 3e-3 and 281 s at 1e-3 on
#: one core (below that it runs for hours or exhausts memory: 131 GiB at 1e-6)
MIN_POISSON_EPSILON = 1e-3


@functools.lru_cache(maxsize=256)
def poisson_gaussian_noise_multiplier(epsilon, delta, sampling_rate, steps, rtol=1e-3):
    """Smallest noise multiplier (up to ``rtol``) whose replace-one epsilon is <= ``epsilon``.

    Cached: the arguments are public settings, and a bisection over the PLD
    accountant costs seconds (every fit of a search or an audit would repeat it).

    Bisection on the accountant's epsilon (decreasing in the multiplier) with
    the PLD discretised at ``min(1e-3, epsilon / 500)``; the **upper** (safe)
    end of the final bracket is returned, so
    ``poisson_gaussian_epsilon(z, ..., discretization=...) <= epsilon`` holds
    for the returned ``z``. Refuses ``epsilon < MIN_POISSON_EPSILON`` (1e-3):
    the discretised PLD's cost grows faster than ``1 / epsilon``.
    """
    epsilon, delta = float(epsilon), float(delta)
    if not (epsilon > 0 and 0 < delta < 1):
        raise ValueError("the accountant needs epsilon > 0 and 0 < delta < 1.")
    if epsilon < MIN_POISSON_EPSILON:
        raise ValueError(
            f"Poisson-subsampled DP-SGD (batch_size < n) is accounted by a privacy loss "
            f"distribution discretised at epsilon / 500, whose cost grows faster than "
            f"1 / epsilon (about 5 minutes at epsilon = 1e-3); epsilon = {epsilon:g} is below "
            f"the supported {MIN_POISSON_EPSILON:g}. Use full-batch gradient descent "
            f"(batch_size=None) or the output or objective route at this epsilon."
        )
    disc = min(1e-3, epsilon / 500.0)

    def eps_of(z):
        return poisson_gaussian_epsilon(z, sampling_rate, steps, delta, disc)

    lo, hi = 0.25, 0.5
    while eps_of(hi) > epsilon:
        lo, hi = hi, hi * 2.0
        if hi > 1e7:
            raise ValueError("no noise multiplier below 1e7 reaches the requested budget.")
    while lo > 1e-3 and eps_of(lo) <= epsilon:
        lo, hi = lo / 2.0, lo
    while hi - lo > rtol * hi:
        mid = math.sqrt(lo * hi)
        if eps_of(mid) <= epsilon:
            hi = mid
        else:
            lo = mid
    return float(hi)
