"""Differentially private logistic regression."""

import numpy as np
from scipy.special import expit

from ._erm import LogisticLoss, _BasePrivateLinearClassifier

__all__ = ["PrivateLogisticRegression"]


class PrivateLogisticRegression(_BasePrivateLinearClassifier):
    r"""Logistic regression with (epsilon, delta)-differential privacy.

    Minimises ``(1/n) sum_i log(1 + exp(-y_i <w, u_i>)) + (lambda/2) ||w||^2``
    with ``lambda = 1/(n C)`` (scikit-learn's ``C``; the intercept, an
    augmented feature, is penalised and privatised too) and releases the
    result through output, objective or gradient perturbation. Derivations of
    every noise scale (replace-one neighbours, n public) are in
    :mod:`skdp.linear_model._erm`. Constants: the loss of one record is
    ``R``-Lipschitz and ``R^2/4``-smooth in ``w`` with
    ``R = sqrt(data_norm^2 + (intercept_scaling data_norm)^2)`` (``R = data_norm``
    without intercept).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget of one fit (> 0).
    delta : float, default=1e-5
        In [0, 1). ``delta=0`` selects pure mechanisms.
    perturbation : {"output", "objective", "gradient"}, default="objective"
        ``"output"``: noise on the regularised minimiser, l2 sensitivity
        ``2 sqrt(K) R C`` (Chaudhuri et al. 2011, Alg. 1).
        ``"objective"``: Chaudhuri et al. Alg. 2 (``delta=0``, Gamma-norm
        noise) or approximate minima perturbation (Iyengar et al. 2019,
        ``delta>0``, Gaussian noise).
        ``"gradient"``: noisy (sub-sampled) gradient descent with per-example
        clipping; noise from the exact GDP composition (full batch) or the
        ``dp-accounting`` PLD accountant for replace-one (Poisson sampling).
    mechanism : str, default="auto"
        Name of a mechanism of :mod:`skdp.mechanisms`, or ``"auto"``
        (output perturbation: the core's least-error verified mechanism;
        objective: exact discrete Laplace ``b`` for ``delta=0``, AMP with an
        exact discrete Gaussian ``b`` otherwise; gradient: analytic Gaussian
        for ``delta>0``, Laplace with basic composition for ``delta=0``; every
        release on a grid). Unverified mechanisms such as
        ``"product_noise"`` are passed through and warn.
    data_norm : float, default=None
        Public bound on the Euclidean norm of every row of ``X`` (dense float64
        or float32, memmaps included, or ``scipy.sparse`` CSR/CSC: read in
        place, never copied or densified). ``None``
        infers it from the data with a :class:`~skdp.PrivacyLeakWarning`.
    classes : array-like of shape (n_classes,), default=None
        The public set of class labels (at least two). The released model
        (``classes_``, the shape of ``coef_``, the number of one-vs-rest
        problems) depends on it alone: declared classes absent from the
        data are fitted like any other, and labels outside it raise a
        ``ValueError`` that names no label. ``None`` infers the classes from
        the data with a :class:`~skdp.PrivacyLeakWarning`: the set of labels
        present is private (a neighbouring dataset may lack one), so that
        fit is not differentially private.
    C : float or "auto", default="auto"
        Inverse regularisation strength as in scikit-learn. The output
        perturbation sensitivity ``2 sqrt(K) R C`` does not shrink with n:
        private fits need much smaller ``C`` than non-private ones.
        ``"auto"`` chooses it by a public rule from ``n``, the number of
        features and classes, ``R``, the loss, epsilon, delta and the
        mechanism (never from the data) that minimises a bound on the excess
        risk of the noisy release (derivation in
        :mod:`skdp.linear_model._erm`, "Choosing C"); for the objective route
        it also sets the budget share of the Jacobian term. The gradient
        route uses ``C = 1``. The value used is ``C_``.
    fit_intercept : bool, default=True
        Add a constant feature ``intercept_scaling * data_norm``.
    intercept_scaling : float, default=0.5
        Constant feature value relative to ``data_norm`` (public). It trades
        noise (every sensitivity grows with ``R``) against the penalty on the
        intercept (its coefficient is ``intercept / s``). The default 1/2 is
        the minimax choice of the excess-risk bound for intercepts up to 2/3
        of the features' largest margin (:mod:`skdp.linear_model._erm`,
        "Choosing intercept_scaling"); raise it towards 1 for very imbalanced
        classes (large intercepts), lower it for balanced ones.
    max_iter : int or "auto", default="auto"
        Iterations of the solver's fast path (output/objective; ``"auto"``:
        1000): quasi-Newton steps preconditioned by a public row subset's
        Hessian for the logistic loss with at most 400 (dense) or 2000
        (sparse) columns, L-BFGS iterations otherwise), or noisy gradient
        steps (gradient; ``"auto"``: a public rule of ``n``, the shape, the
        loss and the budget, between 20 and 1000, derived
        in :mod:`skdp.linear_model._erm`, "Number of steps"; the value used is
        ``privacy_info_["n_steps"]``).
    tol : float, default=1e-6
        The solver stops at gradient norm ``gamma = tol * R / n`` (at least
        four times its floating-point floor, which exceeds it beyond about a
        million rows); the sensitivities include that error (``2 gamma / lambda``,
        a fraction ``tol / sqrt(K)`` of the output sensitivity).
    batch_size : int, default=None
        Expected Poisson batch size of the gradient route (``None``: full batch).
    clip_norm : float, default=None
        Per-example gradient clipping norm of the gradient route (``None``:
        ``sqrt(K) R``, which per-example gradients never exceed).
    learning_rate : "auto" or float, default="auto"
        Step size of the gradient route (``"auto"``: ``1/(R^2/4 + lambda)``).
    class_weight : dict or None, default=None
        Public weights ``{class: weight in [0, 1]}`` multiplying the loss of
        the records of each class (classes not listed: 1); combined with
        ``sample_weight`` as ``class_weight[y_i] * sample_weight[i]``. Every
        class named must be in ``classes``. ``"balanced"`` is refused: it
        would read the private class counts.
    random_state : int, Generator, RandomState or None, default=None
        Source of the noise. ``None`` (use it for real releases) draws fresh OS
        entropy for every fit. An int seed is for reproducible experiments:
        whoever knows it can regenerate the noise, so keep it secret and do
        not publish it with the model; charged to a ledger, it is mixed with
        the spend's serial number so that two fits on one ledger never share
        noise (see the privacy model).
    accountant : object with ``spend``, default=None
        Optional privacy ledger charged before the data is touched.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        ``classes`` (sorted) when given, else the labels found in the data.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    C_ : float
        The inverse regularisation strength used: ``C``, or the rule's
        choice for ``C="auto"``; on the objective route an explicit ``C``
        above what its Jacobian term allows at this ``n`` and epsilon is
        lowered to it (Iyengar et al. 2019's extra regularisation), so
        larger values of ``C`` give the same model.
    data_norm_ : float
        The row-norm bound used.
    noise_spec_ : NoiseSpec or tuple of NoiseSpec
        The calibrated noise (objective perturbation: objective noise and
        solver-error noise).
    privacy_info_ : dict
        Route details: sensitivities, regularisation actually used, budget split.
    privacy_spent_ : PrivacyBudget
        The (epsilon, delta) this fit spent.

    References
    ----------
    .. [1] K. Chaudhuri, C. Monteleoni, A. D. Sarwate. "Differentially private
       empirical risk minimization". JMLR 12, 2011.
    .. [2] R. Iyengar et al. "Towards practical differentially private convex
       optimization". IEEE S&P 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model import PrivateLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
    >>> y = (X[:, 0] > 0).astype(int)
    >>> clf = PrivateLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1], C=0.05,
    ...                                 random_state=0)
    >>> clf.fit(X, y).score(X, y) > 0.8
    True
    """

    def __init__(self, epsilon=1.0, delta=1e-5, perturbation="objective", mechanism="auto",
                 data_norm=None, classes=None, C="auto", fit_intercept=True, intercept_scaling=0.5,
                 max_iter="auto", tol=1e-6, batch_size=None, clip_norm=None,
                 learning_rate="auto", class_weight=None, random_state=None, accountant=None):
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
        self.random_state = random_state
        self.accountant = accountant

    def _loss(self):
        return LogisticLoss()

    def predict_proba(self, X):
        """Class probabilities (binary: logistic; multiclass: normalised one-vs-rest)."""
        scores = self.decision_function(X)
        prob = expit(scores)
        if prob.ndim == 1:
            return np.column_stack([1.0 - prob, prob])
        return prob / prob.sum(axis=1, keepdims=True)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))
