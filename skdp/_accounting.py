"""Privacy accounting of the Poisson-subsampled Gaussian mechanism (DP-SGD).

skdp delegates Renyi-DP accounting to Google's ``dp-accounting`` package
(the field's maintained RDP/PLD accountant), so that the composition and the
RDP-to-(epsilon, delta) conversion are not re-implemented here.

Neighbouring relation
---------------------
The RDP analysis of the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang
2019; ``dp_accounting.rdp.RdpAccountant``) holds for the **add/remove-one**
relation: ``D`` and ``D'`` differ by adding or removing one record, and the
sensitivity of the clipped gradient *sum* is the clipping norm ``C``.

skdp's relation is **replace-one** (n public). A replace-one pair
``D ~ D'`` (record ``x`` replaced by ``x'``) is joined by the add/remove path
``D -> D \\ {x} -> D \\ {x} + {x'} = D'`` of length 2. Group privacy for two
steps (Dwork & Roth 2014, Thm 2.2, (epsilon, delta) form): if the mechanism is
``(eps0, delta0)``-DP under add/remove, then for every event ``S``

    P[M(D) in S] <= e^eps0 P[M(D \\ {x}) in S] + delta0
                 <= e^(2 eps0) P[M(D') in S] + (1 + e^eps0) delta0,

so it is ``(2 eps0, (1 + e^eps0) delta0)``-DP under replace-one. To reach a
replace-one target ``(epsilon, delta)`` we therefore account for the
add/remove target ``eps0 = epsilon / 2``, ``delta0 = delta / (1 + e^(epsilon/2))``
(:func:`replace_one_to_add_remove`). This is conservative: a direct
replace-one analysis of Poisson subsampling (the dominating pair
``(1-q) N(0) + q N(C)`` vs ``(1-q) N(0) + q N(-C)``) would be tighter but is
not offered by the accountant for Poisson sampling. The algorithm normalises
the noisy sum by the public constant ``q n`` (post-processing), so the
add/remove analysis applies with ``n`` a fixed public number.
"""

import functools
import numpy as np

__all__ = [
    "replace_one_to_add_remove",
    "poisson_gaussian_epsilon",
    "poisson_gaussian_noise_multiplier",
]


def _dp_accounting():
    try:
        import dp_accounting  # noqa: F401
    except ImportError as exc:  # pragma: no cover - dependency declared in pyproject
        raise ImportError(
            "DP-SGD accounting needs the 'dp-accounting' package "
            "(python3 -m pip install dp-accounting)."
        ) from exc
    return dp_accounting


def replace_one_to_add_remove(epsilon, delta):
    """Add/remove budget whose group-of-2 guarantee is the replace-one ``(epsilon, delta)``.

    Returns ``(epsilon / 2, delta / (1 + exp(epsilon / 2)))`` (module docstring).
    """
    eps0 = float(epsilon) / 2.0
    return eps0, float(delta) / (1.0 + np.exp(eps0))


def poisson_gaussian_epsilon(noise_multiplier, sampling_rate, steps, delta):
    """Add/remove epsilon of ``steps`` Poisson-subsampled Gaussian steps (RDP accountant).

    Parameters
    ----------
    noise_multiplier : float
        Noise standard deviation divided by the add/remove sensitivity ``C``.
    sampling_rate : float
        Poisson inclusion probability ``q`` in (0, 1].
    steps : int
        Number of composed steps.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    epsilon : float
        From ``dp_accounting.rdp.RdpAccountant`` (default orders).
    """
    dpa = _dp_accounting()
    acc = dpa.rdp.RdpAccountant()
    event = dpa.SelfComposedDpEvent(
        dpa.PoissonSampledDpEvent(float(sampling_rate), dpa.GaussianDpEvent(float(noise_multiplier))),
        int(steps),
    )
    acc.compose(event)
    return float(acc.get_epsilon(float(delta)))


@functools.lru_cache(maxsize=256)
def poisson_gaussian_noise_multiplier(epsilon, delta, sampling_rate, steps, rtol=1e-6):
    """Smallest noise multiplier (up to ``rtol``) whose add/remove epsilon is <= ``epsilon``.

    Cached: the arguments are public settings, and a bisection over the RDP
    accountant costs seconds (every fit of a search or an audit would repeat it).

    Bisection on the accountant's epsilon (decreasing in the multiplier); the
    **upper** (safe) end of the final bracket is returned, so
    ``poisson_gaussian_epsilon(z, ...) <= epsilon`` always holds.
    """
    epsilon, delta = float(epsilon), float(delta)
    if not (epsilon > 0 and 0 < delta < 1):
        raise ValueError("the accountant needs epsilon > 0 and 0 < delta < 1.")

    def eps_of(z):
        return poisson_gaussian_epsilon(z, sampling_rate, steps, delta)

    lo, hi = 0.25, 0.5
    while eps_of(hi) > epsilon:
        lo, hi = hi, hi * 2.0
        if hi > 1e7:
            raise ValueError("no noise multiplier below 1e7 reaches the requested budget.")
    while lo > 1e-3 and eps_of(lo) <= epsilon:
        lo, hi = lo / 2.0, lo
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        if eps_of(mid) <= epsilon:
            hi = mid
        else:
            lo = mid
    return float(hi)
