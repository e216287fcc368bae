"""Private linear models."""

from ._huber_svm import PrivateHuberSVM
from ._logistic import PrivateLogisticRegression
from ._ols import PrivateOLS

__all__ = ["PrivateLogisticRegression", "PrivateHuberSVM", "PrivateOLS"]
