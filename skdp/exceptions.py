"""Warnings and errors raised by skdp."""

__all__ = [
    "PrivacyLeakWarning",
    "PrivacyGuaranteeWarning",
    "LargeDeltaWarning",
    "BudgetExceededError",
    "LedgerFileError",
]


class PrivacyLeakWarning(UserWarning):
    """A public bound was inferred from the private data.

    Differential privacy assumes that data bounds (row norms, label ranges)
    are public inputs. When the user omits them, skdp infers them from the
    data so that the estimator still runs, but the inferred value depends on
    the private records and is itself a leak. The inferred value is stored in
    a fitted attribute (for example ``data_norm_``), never in the parameter.
    """


class PrivacyGuaranteeWarning(UserWarning):
    """A mechanism whose privacy guarantee is not established was used.

    Raised for mechanisms with ``verified = False`` (R1SMG, product noise, and
    methods whose guarantee rests on a conjecture). Their outputs must not be
    presented as differentially private.
    """


class LargeDeltaWarning(UserWarning):
    """``delta`` is at least ``1 / n`` for the ``n`` records of a fit.

    (epsilon, delta)-DP with ``delta >= 1/n`` allows a mechanism that
    publishes one whole record with probability ``delta`` per record, that
    is, some record almost surely (Dwork & Roth 2014, sec. 2.3). The fit is
    still (epsilon, delta)-DP as stated; the warning says that the stated
    guarantee is weak. Choose ``delta`` well below ``1/n`` (``1/n^2`` is a
    common choice; PrivateOLS and PrivateRandomProjection default to it).
    """


class BudgetExceededError(ValueError):
    """A fit would spend more privacy budget than the accountant has left.

    Raised before any data is touched; nothing is spent.
    """


class LedgerFileError(RuntimeError):
    """A ledger file is missing, truncated, foreign or was replaced.

    A ledger that cannot prove it is reading its own, intact records refuses
    to spend: it never starts over with a full budget.
    """
