"""Shared machinery of the private estimators.

Every private estimator inherits :class:`PrivateEstimatorMixin`, which

* declares the privacy parameters (``epsilon``, ``delta``, ``data_norm``,
  ``random_state``, ``accountant``) in ``_parameter_constraints`` so that
  scikit-learn validates them in ``fit`` (never in ``__init__``);
* charges the fit's budget to the optional accountant *before* any data is
  touched (:meth:`_charge_budget`): a fit that would overspend raises
  :class:`~skdp.BudgetExceededError` and spends nothing;
* sets ``privacy_spent_`` and the tags that differential privacy makes
  necessary (``non_deterministic``: fits are random by design).

Order inside ``fit``: parameters are validated, then the budget is charged,
then the data is validated and used. Input errors raised after the charge
(for instance "only one class present") depend on the private data, so the
charge is kept: this is conservative and never under-counts.
"""

from numbers import Real

from sklearn.utils._param_validation import HasMethods, Interval

from ._budget import PrivacyBudget
from ._validation import check_epsilon_delta

__all__ = ["PrivateEstimatorMixin"]


class PrivateEstimatorMixin:
    """Mixin for skdp estimators: privacy parameters, budget charging, tags."""

    _privacy_parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "data_norm": [None, Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
        "accountant": [None, HasMethods(["spend"])],
    }

    def _privacy_budget(self):
        """The (epsilon, delta) one fit spends (validated)."""
        eps, delta = check_epsilon_delta(self.epsilon, self.delta)
        return PrivacyBudget(eps, delta)

    def _charge_budget(self, budget=None, description="fit"):
        """Check-and-spend ``budget`` on the accountant, then record it.

        Must be called before any private data is touched. Returns the budget
        and stores it in ``privacy_spent_``.
        """
        budget = self._privacy_budget() if budget is None else budget
        accountant = getattr(self, "accountant", None)
        if accountant is not None:
            accountant.spend(budget, source=type(self).__name__, description=description)
        self.privacy_spent_ = budget
        return budget

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags
