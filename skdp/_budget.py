"""Privacy budgets and their composition.

A :class:`PrivacyBudget` is an (epsilon, delta) pair under the replace-one
neighbouring relation. Budgets compose:

* basic composition (Dwork & Roth 2014, Thm 3.16): k mechanisms that are
  (eps_i, delta_i)-DP are (sum eps_i, sum delta_i)-DP together;
* advanced composition (Dwork, Rothblum & Vadhan 2010; Dwork & Roth 2014,
  Thm 3.20): k mechanisms each (eps, delta)-DP are
  (eps * sqrt(2 k ln(1/delta')) + k eps (e^eps - 1), k delta + delta')-DP
  for any delta' > 0.
"""

import math
from dataclasses import dataclass

import numpy as np

from ._validation import check_epsilon_delta

__all__ = ["PrivacyBudget", "compose_basic", "compose_advanced"]


@dataclass(frozen=True)
class PrivacyBudget:
    """An (epsilon, delta) differential-privacy budget.

    Parameters
    ----------
    epsilon : float
        Must be finite and > 0 (``0`` is allowed only for the empty budget
        returned by :meth:`zero`).
    delta : float, default=0.0
        Must lie in [0, 1).

    Examples
    --------
    >>> from skdp import PrivacyBudget
    >>> PrivacyBudget(0.5, 1e-6) + PrivacyBudget(0.25, 0.0)
    PrivacyBudget(epsilon=0.75, delta=1e-06)
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self):
        eps, delta = check_epsilon_delta(self.epsilon, self.delta, allow_zero_epsilon=True)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", delta)

    @classmethod
    def zero(cls):
        """The budget of a computation that releases nothing."""
        return cls(0.0, 0.0)

    def __add__(self, other):
        if not isinstance(other, PrivacyBudget):
            return NotImplemented
        return compose_basic([self, other])

    def covers(self, other, *, rtol=1e-12):
        """True if ``other`` fits inside this budget (both coordinates)."""
        return (other.epsilon <= self.epsilon * (1 + rtol)) and (
            other.delta <= self.delta * (1 + rtol) + 1e-300
        )

    def as_tuple(self):
        return (self.epsilon, self.delta)


def compose_basic(budgets):
    """Basic (sequential) composition: sum the epsilons and the deltas."""
    budgets = list(budgets)
    eps = math.fsum(b.epsilon for b in budgets)  # exact sums, as the ledgers compute them
    delta = math.fsum(b.delta for b in budgets)
    if delta >= 1:
        raise ValueError(f"Composed delta {delta} is >= 1: the guarantee is void.")
    return PrivacyBudget(eps, delta)


def compose_advanced(epsilon, delta, k, delta_slack):
    """Advanced composition of ``k`` (epsilon, delta)-DP mechanisms.

    Returns the (eps', k*delta + delta_slack) budget of Dwork & Roth (2014),
    Theorem 3.20, with
    ``eps' = eps * sqrt(2 k ln(1/delta_slack)) + k * eps * (e^eps - 1)``,
    or the basic-composition budget when that is smaller.
    """
    epsilon, delta = check_epsilon_delta(epsilon, delta)
    _, delta_slack = check_epsilon_delta(1.0, delta_slack, require_delta=True)
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}.")
    eps_adv = epsilon * np.sqrt(2 * k * np.log(1 / delta_slack)) + k * epsilon * np.expm1(epsilon)
    if eps_adv >= k * epsilon:
        return PrivacyBudget(k * epsilon, k * delta)
    return PrivacyBudget(float(eps_adv), k * delta + delta_slack)
