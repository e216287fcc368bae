"""skdp: scikit-learn compatible differentially private estimators.

Every estimator describes its statistic to one shared mechanism core
(:mod:`skdp.mechanisms`), which calibrates and samples all noise.
"""

from ._budget import PrivacyBudget, compose_advanced, compose_basic
from ._ledger import BudgetLedger, SQLiteLedger
from .exceptions import (
    BudgetExceededError,
    LedgerFileError,
    PrivacyGuaranteeWarning,
    LargeDeltaWarning,
    PrivacyLeakWarning,
)
from . import mechanisms  # noqa: F401
from .random_projection import PrivateRandomProjection
from .linear_model import PrivateHuberSVM, PrivateLogisticRegression
from .linear_model import PrivateOLS
from .decomposition import PrivatePCA
from .base import for_release
from . import audit, model_selection, preprocessing  # noqa: F401  (skdp.preprocessing.* etc.)

__version__ = "0.1.0.dev0"

__all__ = [
    "PrivacyBudget",
    "BudgetLedger",
    "SQLiteLedger",
    "compose_basic",
    "compose_advanced",
    "LargeDeltaWarning",
    "PrivacyLeakWarning",
    "PrivacyGuaranteeWarning",
    "BudgetExceededError",
    "LedgerFileError",
    "mechanisms",
    "audit",
    "model_selection",
    "preprocessing",
    "PrivateOLS",
    "PrivatePCA",
    "PrivateRandomProjection",
    "PrivateLogisticRegression",
    "PrivateHuberSVM",
    "for_release",
]
