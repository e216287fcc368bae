"""Differentially private Gaussian random projection (a sketch over records)."""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import _num_samples, check_is_fitted

from ._budget import PrivacyBudget
from ._dask import validate_fit_data
from ._stats import AugmentedRows, check_unit_sample_weight, check_weight_structure
from ._validation import (call_without_values, check_data_norm, check_epsilon_delta,
                          check_sparse_structure, clip_rows_for_transform, saturate,
                          validate_private_data)
from .exceptions import PrivacyGuaranteeWarning, warn_at_caller
from .base import PrivateEstimatorMixin, fixed_float_state, private_fit
from .mechanisms.ndis import DECIMAL_CHOLESKY_MAX_D, private_sketch, sketch_plan
from .decomposition._pca import _svd_flip_rows

__all__ = ["PrivateRandomProjection"]


#: the floating-point caveat of the Gaussian sketch ``Z F`` when it cannot be released on
#: the grid (see ``check_sketch_plan`` and :func:`skdp.mechanisms.ndis.private_sketch`)
FLOAT_SKETCH_CAVEAT = (
    "the Gaussian sketch Z F is computed and released in floating point: its (epsilon, delta) "
    "guarantee holds in exact arithmetic (Lu et al. 2023, NDIS), but attacks on the low bits "
    "of floating-point noise (Mironov 2012) have been demonstrated on it. The grid release "
    "was not used because its public floating-point error reserve exceeds 1% of delta at this "
    "n, n_features, sketch size and delta (larger delta or smaller n make it available)."
)


def check_sketch_plan(owner, n, d, r, epsilon, delta, data_norm, allow_float):
    """:func:`skdp.mechanisms.ndis.sketch_plan` for public inputs, refusing the floating-point
    release unless ``allow_float`` (then it warns :class:`~skdp.PrivacyGuaranteeWarning`).

    Called before the charge when the bounds are given; the refusal names public values only.
    """
    plan = sketch_plan(int(n), int(d), int(r), float(epsilon), float(delta), float(data_norm))
    if plan[0] is None:
        if not allow_float:
            raise ValueError(
                f"{owner}: no floating-point-safe release of the sketch exists at n={int(n)}, "
                f"{int(d)} sketched columns, sketch_size={int(r)}, delta={float(delta):g}: the "
                "grid release's public floating-point error reserve exceeds 1% of delta (its "
                f"60-digit factor is used up to {DECIMAL_CHOLESKY_MAX_D} columns). Raise delta, "
                "fit on fewer rows or columns, or set allow_float_sketch=True to accept a "
                "floating-point release (DP in exact arithmetic only: attacks on the low bits "
                "of floating-point noise, Mironov 2012, apply; it warns).")
        warn_at_caller(f"{owner}: {FLOAT_SKETCH_CAVEAT}", PrivacyGuaranteeWarning)
    return plan


#: above this many features the sketch's right singular vectors come from the eigenvectors
#: of its d x d Gram matrix (see ``_right_singular``)
_GRAM_SVD_MIN_FEATURES = 1000


def _right_singular(S):
    """Singular values (descending) and right singular vectors ``Vt`` of ``S`` (``r >= d``).

    Up to ``_GRAM_SVD_MIN_FEATURES`` columns: LAPACK's SVD of ``S``. Above, the
    eigendecomposition of ``S^T S`` (one ``r d^2`` product and a symmetric
    ``d x d`` eigenproblem: 2.7x faster than the SVD at ``d = 2000``, whose cost
    is the ``r x d`` bidiagonalisation and left vectors nobody uses). Squaring
    costs accuracy: each eigenvalue of ``S^T S`` carries an absolute error of about
    ``u s_1^2`` (``u = 2^-53``), so ``s_i`` is off by about ``u s_1^2 / s_i``. The
    leading components (what ``n_components`` keeps) are as accurate as the SVD's;
    the trailing singular values of a square sketch (``r = d``) are small and lose
    relative accuracy ``u (s_1 / s_i)^2``. Post-processing of the release either way.
    """
    d = S.shape[1]
    if d <= _GRAM_SVD_MIN_FEATURES:
        _, s, Vt = np.linalg.svd(S, full_matrices=False)
        return s, Vt
    lam, V = np.linalg.eigh(S.T @ S)
    lam, V = lam[::-1], V[:, ::-1]
    return np.sqrt(np.maximum(lam, 0.0)), np.ascontiguousarray(V.T)


class PrivateRandomProjection(PrivateEstimatorMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                              BaseEstimator):
    """Differentially private Gaussian random projection (``M_RP``).

    ``fit(X)`` releases the sketch ``G [X; sigma I_d] / sqrt(r)`` (``G``:
    ``r x (n + d)`` i.i.d. N(0, 1)), an ``r x d`` matrix whose Gram matrix
    estimates ``X^T X + sigma^2 I``. This is a *left* sketch over records
    (Lu et al. 2023, Figure 3): its privacy comes from mixing records. The
    sketch is the DP release; ``components_`` (top right singular vectors of
    the sketch) are post-processing, and ``transform`` projects rows of any
    data onto them (``transform`` outputs are functions of the rows given to
    it and carry no privacy of their own).

    The sketch is drawn without materialising ``G``: its rows are i.i.d.
    ``N(0, X^T X + sigma^2 I)``, so ``Z F / sqrt(r)`` with ``Z`` an
    ``r x d`` standard normal matrix and ``F^T F = X^T X + sigma^2 I`` has
    exactly the distribution of ``G [X; sigma I] / sqrt(r)``; cost
    ``O(n d^2 + r d^2)`` instead of ``O(r n d)``.

    Floating-point safety: the sketch is released on a public grid by
    :func:`skdp.mechanisms.ndis.grid_sketch` (quantised data, exact integer
    Gram matrix, long-double Cholesky factor on a power-of-two grid, exact
    discrete Gaussian normals, exact integer product, isotropic discrete
    Gaussian noise of variance ``2^-21 sigma^2`` on the output grid). Its
    law is within a public total variation of a post-processing of the
    real-arithmetic NDIS sketch; ``(1 + e^eps)`` times that distance
    (``delta_reserve_``) is added to delta, and sigma is calibrated at
    ``0.99 delta``. When the long-double reserve exceeds ``delta / 100``
    (the factorization's error grows with ``n``: roughly ``n > 10^5`` at
    ``d = 100`` and the default ``delta = 1/n^2``), the factor is computed
    with 60 decimal digits and the products in Python integers (reserve
    about ``1e-30`` at any ``n``; used up to ``d = 256``, its cost growing
    like ``d^3``). When no grid plan exists (long double infeasible and
    ``d > 256``) the fit raises ``ValueError`` before the charge, unless
    ``allow_float_sketch=True``: then the sketch is drawn in floating point
    at ``delta``, with a :class:`~skdp.PrivacyGuaranteeWarning`
    (``float_safe_ = False``).

    Input: dense float64/float32 arrays (memmaps included) and
    ``scipy.sparse`` CSR/CSC matrices are read one chunk of rows at a time
    by the statistics kernel :mod:`skdp._stats` (clipping, weighting and
    quantisation in one reused buffer; no copy of X, sparse input never
    densified). ``sample_weight`` (in the public range [0, 1]) scales row
    ``i`` by ``sqrt(w_i)`` after clipping: a weighted row is a row of norm at
    most ``data_norm``, the only property of the rows the NDIS analysis
    below uses, so the calibration is unchanged.

    Noise scale (replace-one neighbours, n public): rows are clipped to
    ``l = data_norm``; ``sigma = l * rp_noise_multiplier(eps, delta, r)``,
    the exact calibration of :func:`skdp.mechanisms.ndis.rp_replace_delta`:
    each sketch row is ``N(0, M0 + v v^T)`` vs ``N(0, M0 + v' v'^T)`` with
    ``M0 = X0^T X0 + sigma^2 I``, whose worst case over
    ``|v|, |v'| <= l`` is the pair of generalized eigenvalues
    ``(1 + l^2/sigma^2, 1/(1 + l^2/sigma^2))``. The paper's
    ``sigma = l / sqrt(lbar)`` (Theorem 3) is for add/remove neighbours and
    is not used. Scaling by ``1/sqrt(r)`` does not affect privacy.

    Parameters
    ----------
    n_components : int or None, default=None
        Number of components kept (``None``: ``n_features``). Must be
        ``<= min(n_features, sketch_size)``.
    sketch_size : int or None, default=None
        ``r``; ``None`` means ``max(300, n_features)`` (the paper's Cancer
        setting). Must be ``>= n_features``.
    epsilon : float, default=1.0
    delta : float or None, default=None
        ``None`` means ``1/n^2`` (n public); the paper uses ``1/n``.
    data_norm : float or None, default=None
        Public bound on row norms; ``None`` infers it with a
        PrivacyLeakWarning (``data_norm_``).
    random_state : int, Generator, RandomState or None, default=None
        Source of the noise. ``None`` (use it for real releases) draws fresh OS
        entropy for every fit. An int seed is for reproducible experiments:
        whoever knows it can regenerate the noise, so keep it secret and do
        not publish it with the model; charged to a ledger, it is mixed with
        the spend's serial number so that two fits on one ledger never share
        noise (see the privacy model).
    accountant : ledger or None
    chunk_size : int, default=10000
        Rows of X per chunk of the Gram accumulation.
    allow_float_sketch : bool, default=False
        Where no floating-point-safe grid release exists (see above: more
        than 256 features at large ``n`` or small ``delta``), draw the sketch
        in floating point with a warning instead of raising. Its guarantee
        holds in exact arithmetic only.

    Attributes
    ----------
    sketch_ : ndarray of shape (sketch_size, n_features)
        The DP release.
    components_ : ndarray of shape (n_components, n_features)
    singular_values_ : ndarray of shape (n_components,)
        Singular values of ``sketch_`` (their squares estimate the
        eigenvalues of ``X^T X + sigma^2 I``).
    sigma_ : float
        The regularization used (``sigma_eff``: ``sigma`` rounded up to the
        data grid for the grid release).
    noise_multiplier_ : float
        ``sigma_ / data_norm_``.
    float_safe_ : bool
        Whether ``sketch_`` was released on the grid (see above).
    delta_reserve_ : float
        The part of delta spent on the grid release's total-variation bound
        (0 for the floating-point release); the NDIS part is
        ``rp_replace_delta(epsilon, (data_norm_ / sigma_)^2, sketch_size_)``.
    delta_ : float
    data_norm_ : float
    privacy_spent_ : PrivacyBudget
    n_features_in_ : int

    References
    ----------
    .. [1] Lu, Magdon-Ismail, Wei, Zikas (2023). arXiv:2309.01243, Thm 2-3.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.random_projection import PrivateRandomProjection
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(1000, 4)) / 2
    >>> rp = PrivateRandomProjection(n_components=2, data_norm=1.0, random_state=0).fit(X)
    >>> rp.transform(X).shape
    (1000, 2)
    """

    _parameter_constraints = {
        **PrivateEstimatorMixin._privacy_parameter_constraints,
        "delta": [None, Interval(Real, 0, 1, closed="left")],
        "n_components": [None, Interval(Integral, 1, None, closed="left")],
        "sketch_size": [None, Interval(Integral, 1, None, closed="left")],
        "chunk_size": [Interval(Integral, 1, None, closed="left")],
        "allow_float_sketch": ["boolean"],
    }

    def __init__(self, n_components=None, sketch_size=None, epsilon=1.0, delta=None,
                 data_norm=None, random_state=None, accountant=None, chunk_size=10_000,
                 allow_float_sketch=False):
        self.n_components = n_components
        self.sketch_size = sketch_size
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.random_state = random_state
        self.accountant = accountant
        self.chunk_size = chunk_size
        self.allow_float_sketch = allow_float_sketch

    def _sketch_rows(self, d):
        return max(300, d) if self.sketch_size is None else int(self.sketch_size)

    def _check_public(self, n_samples, n_features):
        """Errors decided by the parameters and the shape of X alone."""
        super()._check_public(n_samples, n_features)
        if self.delta is not None and float(self.delta) == 0.0:
            # (a search's randomised strategies give their runs delta = 0)
            raise ValueError("PrivateRandomProjection needs delta > 0: its NDIS guarantee is "
                             "(epsilon, delta) with delta > 0 (None: 1/n^2).")
        if n_features is None:
            return
        r = self._sketch_rows(n_features)
        if r < n_features:
            raise ValueError(f"sketch_size={r} must be >= n_features={n_features}.")
        if self.n_components is not None and self.n_components > n_features:
            raise ValueError(
                f"n_components={self.n_components} must be <= n_features={n_features}.")

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Release the DP sketch of X and its top right singular vectors.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            float32 and CSR/CSC input are read chunk by chunk (no full copy,
            never densified).
        y : ignored
        sample_weight : array-like of shape (n_samples,) or None
            Per-record weights in ``[0, 1]`` (public bound; others raise
            after the charge, naming no value: the values are private). Record ``i`` enters the sketch as
            the row ``sqrt(w_i) clip(x_i)``, whose norm is still at most
            ``data_norm``: the NDIS analysis only uses that bound, so the
            calibration is unchanged.

        Returns
        -------
        self
        """
        from .linear_model._ols import default_delta

        n, d_public = self._public_shape(X, y)  # structure only (y: its length), no values
        if n is None:
            n = _num_samples(X)  # raises sklearn's error for inputs that are not array-like
        delta = default_delta(n) if self.delta is None else self.delta
        epsilon, delta = check_epsilon_delta(self.epsilon, delta)
        if delta == 0:
            raise ValueError(
                "PrivateRandomProjection needs delta > 0: its release is a Gaussian sketch "
                "(NDIS, Lu et al. 2023), which cannot give pure epsilon-DP. Pass delta > 0, or "
                "delta=None for 1 / n^2.")
        if sample_weight is not None:
            self._check_public(n, d_public)
            check_weight_structure(sample_weight, n, self)  # the length only
        pre = {}

        def curve():  # the sketch's release decided from public inputs, before the charge
            if self.data_norm is not None and d_public:
                pre["plan"] = check_sketch_plan(
                    type(self).__name__, n, d_public, self._sketch_rows(d_public), epsilon,
                    delta, self.data_norm, self.allow_float_sketch)
            return None

        n_public = n  # (the charged shape; n is the validated one below)
        budget, rng = self._start_fit(n, d_public, PrivacyBudget(epsilon, delta), curve=curve)
        sample_weight = check_unit_sample_weight(sample_weight, X, self)  # values: after the charge
        self.delta_ = budget.delta
        X = validate_fit_data(self, X, accept_sparse=["csr", "csc"], dtype=[np.float64, np.float32])
        n, d = X.shape
        r = self._sketch_rows(d)
        k = d if self.n_components is None else int(self.n_components)
        data_norm = check_data_norm(X, self.data_norm, estimator=self)
        self.data_norm_ = data_norm
        rows = AugmentedRows(X, data_norm, sample_weight=sample_weight)  # clipped chunk by chunk
        if "plan" in pre:
            self._check_charged_shape((n_public, d_public), (n, d))
        else:  # the bound was inferred: decided now, after the charge
            pre["plan"] = check_sketch_plan(type(self).__name__, n, d, r, epsilon, delta,
                                            data_norm, self.allow_float_sketch)
        S, info = private_sketch(rows, r, epsilon, delta, data_norm, rng, chunk_size=self.chunk_size,
                                 plan=pre["plan"])
        self.sigma_ = float(info["sigma"])
        self.noise_multiplier_ = self.sigma_ / data_norm
        self.float_safe_ = bool(info["float_safe"])
        self.delta_reserve_ = float(info["reserve"])
        self.sketch_ = S / np.sqrt(r)
        self.sketch_size_ = r
        s, Vt = _right_singular(self.sketch_)
        # deterministic sign: largest-magnitude entry of each component positive; only the
        # k kept rows are copied out (a slice would keep all d of them alive)
        self.components_ = _svd_flip_rows(Vt[:k])
        del Vt
        self.singular_values_ = s[:k].copy()
        return self

    @fixed_float_state  # (private rows: no error state may decide what happens)
    def transform(self, X):
        """Project rows onto the private components: ``X @ components_.T``.

        Rows of norm above ``data_norm_`` are scaled down to it first, as in
        ``fit`` (a finite row near the float64 limit would otherwise project
        to inf).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self)
        X = validate_private_data(self, X, reset=False, accept_sparse=["csr", "csc"],
                                  dtype=[np.float64, np.float32])
        X = clip_rows_for_transform(X, self.data_norm_)  # rows beyond the bound, as in fit
        # (float32: a product beyond its range saturates instead of becoming inf; |x . v| <=
        # data_norm_, which may exceed float32's largest value: skdp._validation.saturate)
        return saturate(np.asarray(X @ self.components_.T.astype(X.dtype)))

    def inverse_transform(self, X):
        """Map projected rows back: ``X @ components_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        if sp.issparse(X):  # projections are narrow: the dense output is larger than this copy
            check_sparse_structure(X)  # (scipy's toarray trusts it)
            X = X.toarray()
        X = np.asarray(X)
        X = call_without_values(  # a cell that is not a number: no value in the message
            X.astype, X.dtype if X.dtype in (np.float32, np.float64) else np.float64, copy=False)
        return X @ self.components_.astype(X.dtype)

    @property
    def _n_features_out(self):
        # read from a fitted attribute (as PrivatePCA): a failed refit, which removes the
        # fitted attributes, leaves no feature names of the previous fit behind
        return self.components_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.sparse = True
        return tags
