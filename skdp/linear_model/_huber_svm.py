"""Differentially private linear SVM with the Huber hinge loss."""

from numbers import Real

from sklearn.utils._param_validation import Interval

from ._erm import HuberLoss, _BasePrivateLinearClassifier

__all__ = ["PrivateHuberSVM"]


class PrivateHuberSVM(_BasePrivateLinearClassifier):
    """Linear SVM with the Huber hinge loss and (epsilon, delta)-differential privacy.

    Minimises ``(1/n) sum_i l_h(y_i <w, u_i>) + (lambda/2) ||w||^2`` with
    ``lambda = 1/(n C)`` and the Huber hinge (Chaudhuri et al. 2011, eq. 7)::

        l_h(z) = 1 - z                                if 1 - z > h,
                 0                                    if 1 - z < -h,
                 (1 - z)^2 / (4h) + (1 - z)/2 + h/4    otherwise,

    which is ``R``-Lipschitz and ``R^2/(2h)``-smooth in ``w`` (``c = 1/(2h)``).
    Routes and derivations as in :class:`PrivateLogisticRegression` and
    :mod:`skdp.linear_model._erm`; smaller ``h`` means a closer hinge but a
    larger smoothness constant, hence more regularisation for objective
    perturbation.

    Parameters
    ----------
    epsilon, delta, perturbation, mechanism, data_norm, classes, C, fit_intercept, \
intercept_scaling, max_iter, tol, batch_size, clip_norm, learning_rate, \
class_weight, random_state, accountant
        As in :class:`PrivateLogisticRegression`.
    h : float, default=0.1
        Huber smoothing width (> 0). The loss is ``1 / (2h)``-smooth, so a
        small ``h`` with a large ``C`` makes the objective ill-conditioned:
        on separable data the solver may need its last, accelerated stage,
        whose step count grows like ``sqrt(R^2 n C / h)`` (measured: 5 s at
        2000 x 5 with ``h = 1e-3``, ``C = 100``; 122 s at 3000 x 20 with
        ``h = 1e-4``, ``C = 1000``; a 500 x 3 fit with ``h = 1e-6``,
        ``C = 1e4`` ran beyond 15 minutes). The privacy guarantee does not
        depend on it (the running time is outside the model, see the
        privacy model); keep ``h >= 1e-2`` for predictable fits.

    Attributes
    ----------
    classes_, coef_, intercept_, C_, data_norm_, noise_spec_, privacy_info_, privacy_spent_
        As in :class:`PrivateLogisticRegression`.

    References
    ----------
    .. [1] K. Chaudhuri, C. Monteleoni, A. D. Sarwate. "Differentially private
       empirical risk minimization". JMLR 12, 2011.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model import PrivateHuberSVM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = PrivateHuberSVM(epsilon=1.0, data_norm=1.0, classes=[0, 1], random_state=0)
    >>> clf.fit(X, y).score(X, y) > 0.8
    True
    """

    _parameter_constraints = {
        **_BasePrivateLinearClassifier._parameter_constraints,
        "h": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, epsilon=1.0, delta=1e-5, perturbation="objective", mechanism="auto",
                 data_norm=None, classes=None, C="auto", fit_intercept=True, intercept_scaling=0.5,
                 max_iter="auto", tol=1e-6, batch_size=None, clip_norm=None,
                 learning_rate="auto", class_weight=None, h=0.1, random_state=None,
                 accountant=None):
        self.epsilon = epsilon
        self.delta = delta
        self.perturbation = perturbation
        self.mechanism = mechanism
        self.data_norm = data_norm
        self.classes = classes
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_iter = max_iter
        self.tol = tol
        self.batch_size = batch_size
        self.clip_norm = clip_norm
        self.learning_rate = learning_rate
        self.class_weight = class_weight
        self.h = h
        self.random_state = random_state
        self.accountant = accountant

    def _loss(self):
        return HuberLoss(self.h)
