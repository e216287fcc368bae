"""Warnings and errors raised by skdp."""

import os
import sys
import warnings

import joblib
import sklearn

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


# skdp's own directory, scikit-learn's and joblib's (a Pipeline fits its steps through
# joblib.Memory): the frames a warning skips to reach the user's line
_LIBRARY_DIRS = tuple(os.path.dirname(os.path.abspath(path)) + os.sep
                      for path in (__file__, sklearn.__file__, joblib.__file__))


def warn_at_caller(message, category):
    """``warnings.warn`` pointing at the user's line: the first frame outside skdp,
    scikit-learn and joblib (whose fit wrappers, pipelines and searches call ours).

    A fixed ``stacklevel`` pointed into scikit-learn's ``_fit_context`` wrapper or into
    skdp itself, depending on the route that warned, so that warnings of every fit seemed
    to come from the same library line (and Python's default filter showed each once per
    process, whichever line of the user's program fitted).
    """
    frame, level = sys._getframe(1), 2  # stacklevel 2: the caller of this function
    while frame is not None and frame.f_code.co_filename.startswith(_LIBRARY_DIRS):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
