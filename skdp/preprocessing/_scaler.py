"""Differentially private standardisation (mean and variance per feature).

:class:`PrivateStandardScaler` releases, in **one** call to the mechanism
core, the per-feature mean and second moment of the rows clipped into public
per-feature bounds; ``mean_``, ``var_`` and ``scale_`` are post-processing of
that release.

Derivation (replace-one neighbours, n public)
---------------------------------------------
*Normalised coordinates.* Feature ``j`` has public bounds ``[a_j, b_j]``,
width ``w_j = b_j - a_j`` and midpoint ``c_j = (a_j + b_j) / 2``. Each value
is clipped into its bounds and mapped to

    u_ij = (clip(x_ij, a_j, b_j) - c_j) / w_j   in [-1/2, 1/2].

Features with ``w_j = 0`` are constant after clipping: they do not depend on
the data and are not released (``mean_ = a_j``, ``var_ = 0``). For the
``d`` others the released statistic is the vector

    T = (1/n) sum_i (u_i, s u_i^2)   in R^(2d)

(``M_j = mean u_ij`` and ``Q_j = mean u_ij^2``, the second moment about the
midpoint, weighted by a public constant ``s > 0``; ``with_std=False``
releases ``M`` alone). Then ``mean_j = c_j + w_j M_j`` and
``var_j = w_j^2 (Q_j - M_j^2)`` (population variance, ``ddof=0``, as in
:class:`sklearn.preprocessing.StandardScaler`).

Working in normalised units is the per-feature range used as the sensitivity
profile: in original units the mean of feature ``j`` moves by at most
``w_j / n`` and its second moment about ``c_j`` by at most ``w_j^2 / (4n)``.
Dividing by those ranges makes every feature's noise proportional to its
range, so the release is scale-invariant (changing the unit of one feature
does not change the relative noise on the others). Optimal non-identical
scales for the profile in original units would minimise the *absolute*
squared error summed over features, which the features of widest range
dominate; that is the wrong criterion for a scaler, whose output is unit-free.

*Sensitivity.* Replacing one record changes feature ``j``'s block of ``n T``
by ``(u' - u, s (u'^2 - u^2))`` with ``u, u'`` in ``[-1/2, 1/2]``. A record
may take any value in the box ``prod_j [a_j, b_j]``, so the supremum of a sum
over features is the sum of the per-feature suprema. With
``t = |u' - u|`` and ``p = u + u'`` the constraint ``|u|, |u'| <= 1/2`` is
``t + |p| <= 1`` and the change is ``t (1, s |p|)`` up to signs; both norms
increase with ``|p|``, so ``|p| = 1 - t``:

* l1: ``l1(s) = max_t t (1 + s (1 - t))``: ``1`` for ``s <= 1`` (``t = 1``)
  and ``(1 + s)^2 / (4 s)`` for ``s >= 1`` (``t = (1 + s) / (2 s)``);
* l2: ``l2(s)^2 = max_t t^2 (1 + s^2 (1 - t)^2)``.

The replace-one sensitivities of ``T`` are ``Delta_1 = d l1(s) / n`` and
``Delta_2 = sqrt(d) l2(s) / n``; both are attained (every feature at its
maximiser), so they are exact. ``M`` alone has ``Delta_1 = d / n`` and
``Delta_2 = sqrt(d) / n``. The released coordinates are also bounded
entry-wise by ``1/n`` (``M_j``) and ``s / (4 n)`` (``s Q_j``); this box
profile is passed to the core as well, but its norms are larger than the
joint sensitivities above (the two moments of one feature cannot both move
by their maximum).

*Floating-point computation.* The release is the statistic as computed:
the computed normalised values stay within ``rho / 2`` (``rho`` slightly
above 1, from the bounds) and each computed coordinate is within ``e1``
(mean) or ``e2`` (second moment) of the exact moment of those values
(:func:`_moments_rounding`, Higham 2002). The calibrated query takes the
sensitivities above times ``rho`` (``rho^2`` for the second moment) plus
twice those errors per coordinate; all from public inputs.

*Noise.* ``delta = 0``: the core's ``"laplace"`` mechanism (pure epsilon-DP,
scale ``Delta_1 / epsilon``); ``delta > 0``: ``"analytic_gaussian"`` (Balle &
Wang 2018, ``sigma = Delta_2 / mu0(epsilon, delta)``). Both release on a
floating-point-safe grid (:mod:`skdp.mechanisms._grid`).

*The split between mean and variance.* The weight ``s`` decides how the
noise is shared: ``M`` gets noise of standard deviation ``sigma`` and ``Q``
gets ``sigma / s``, with ``sigma`` proportional to ``l1(s)`` (Laplace) or
``l2(s)`` (Gaussian). The criterion, which depends on the bounds only, is the
squared error of each moment relative to the width of its range (``M`` lies
in an interval of width 1, ``Q`` in ``[0, 1/4]``):

    J(s) = E[e_M^2] + 16 E[e_Q^2]  proportional to  l(s)^2 (1 + 16 / s^2).

* Laplace: for ``s >= 1``, ``d/ds log J = 4/(1+s) - 4/s + 2s/(s^2+16)``,
  which vanishes at ``s^3 - s^2 - 32 = 0``: ``s* = 3.5456``, ``J = 4.824``;
  below ``s = 1``, ``J = 1 + 16/s^2 >= 17``.
* Gaussian: ``l2(s) = 1`` (attained at ``t = 1``: the mean alone moves) as long
  as ``t^2 (1 + s^2 (1 - t)^2) <= 1`` for all ``t``; there ``J = 1 + 16/s^2``
  decreases. The interior maximum reaches 1 where
  ``s^2 t^2 (1 - t) = 1 + t`` is tangent, i.e. also ``s^2 (2t - 3t^2) = 1``;
  dividing gives ``t^2 + t - 1 = 0``, ``t = (sqrt(5) - 1)/2``, and
  ``s*^2 = 2 / (5 sqrt(5) - 11)``: ``s* = 3.3302``, ``J = 40 sqrt(5) - 87 =
  2.4427``. Beyond ``s*``, ``l2`` grows faster than ``1 + 16/s^2`` falls
  (right derivative of ``J`` is positive), so ``s*`` is the minimum.

The test suite checks both optima by a numeric search over ``s`` and both
sensitivities by a numeric maximisation over the box. Splitting the budget
instead (two separate releases, optimal split) gives ``J = 8`` (Laplace,
``epsilon/2`` each) and ``J = 4`` (Gaussian, equal ``mu^2/2`` each): the
joint release with ``s*`` has 40 % less error for the same budget.
``var_`` is ``Q - M^2``, so it also carries the mean's noise (``2 M e_M``,
at most ``e_M`` in size); the criterion does not weigh it because ``M`` is
unknown (it is zero for data centred in its range).

*Post-processing.* ``M`` is clamped into ``[-1/2, 1/2]`` (the mean lies in
the bounds) and ``Q - M^2`` into ``[f, 1/4]`` (Popoviciu: a variable in an
interval of width ``w`` has variance at most ``w^2 / 4``), where ``f`` is the
standard deviation of the release's noise on ``Q`` (public, from the noise
spec): a noisy variance at or below the noise level is "within the noise",
not "constant", and dividing by its square root would blow the feature up
(measured: a wide feature such as ``capital`` in ``[0, 1e5]`` clamped to 0 and
left unscaled dominated every normalised row). Features whose bounds have
width 0 are public constants: variance 0, ``scale_ = 1``, the convention of
:class:`sklearn.preprocessing.StandardScaler`.
"""

import math

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils.sparsefuncs import inplace_column_scale
from sklearn.utils.validation import FLOAT_DTYPES, check_array, check_is_fitted, validate_data

from .._budget import PrivacyBudget
from .._validation import (MAX_PUBLIC_BOUND, _leak_warning, call_without_values, saturate,
                           check_epsilon_delta, check_sparse_structure, is_sparse_input,
                           validate_private_data, _without_spare_capacity)
from .._filter import release_curve
from ..base import PrivateEstimatorMixin, fixed_float_state, private_fit
from ..mechanisms import Query, calibrate

__all__ = ["PrivateStandardScaler", "moment_weight", "moment_sensitivities"]

#: the optimal weight s of the second moment (module docstring)
_S_LAPLACE = float(np.max(np.real(np.roots([1.0, -1.0, 0.0, -32.0]))))
_S_GAUSSIAN = math.sqrt(2.0 / (5.0 * math.sqrt(5.0) - 11.0))


def moment_weight(delta):
    """The weight ``s`` of the second moment in the joint release.

    ``s* = 3.5456`` (root of ``s^3 - s^2 - 32``) for the Laplace mechanism
    (``delta = 0``) and ``s* = sqrt(2 / (5 sqrt(5) - 11)) = 3.3302`` for the
    Gaussian mechanism (``delta > 0``); derivation in
    :mod:`skdp.preprocessing._scaler`.
    """
    return _S_LAPLACE if delta == 0 else _S_GAUSSIAN


def _l1_per_feature(s):
    return 1.0 if s <= 1.0 else (1.0 + s) ** 2 / (4.0 * s)


def _l2sq_per_feature(s):
    """``max_{t in [0,1]} t^2 (1 + s^2 (1-t)^2)`` (endpoint t = 1 or the interior root)."""
    best = 1.0
    disc = 1.0 - 8.0 / s**2 if s > 0 else -1.0
    if disc >= 0:  # f'(t) = 0 at 2t^2 - 3t + 1 + 1/s^2 = 0; the smaller root is the local max
        t = (3.0 - math.sqrt(disc)) / 4.0
        best = max(best, t**2 * (1.0 + s**2 * (1.0 - t) ** 2))
    return best


def moment_sensitivities(n_samples, n_features, s=None):
    """Replace-one sensitivities ``(Delta_1, Delta_2)`` of the normalised moments.

    Parameters
    ----------
    n_samples : int
        Public number of rows ``n``.
    n_features : int
        Number of released features ``d`` (features of width 0 excluded).
    s : float or None
        Weight of the second moment; ``None`` releases the mean alone.

    Returns
    -------
    l1, l2 : float
        ``d l1(s) / n`` and ``sqrt(d) l2(s) / n`` (``d / n`` and
        ``sqrt(d) / n`` for the mean alone); see the module docstring.
    """
    n, d = float(n_samples), int(n_features)
    if s is None:
        return d / n, math.sqrt(d) / n
    return d * _l1_per_feature(s) / n, math.sqrt(d * _l2sq_per_feature(s)) / n


def _moments_query(n_samples, n_features, s, rounding=None):
    """The release's query; ``rounding=(rho, e1, e2)`` (:func:`_moments_rounding`) makes it the
    query of the statistic as computed in floating point, ``None`` the exact one."""
    l1, l2 = moment_sensitivities(n_samples, n_features, s)
    n, d = n_samples, n_features
    rho, e1, e2 = (1.0, 0.0, 0.0) if rounding is None else rounding
    # computed values |u| <= rho / 2: the mean moves rho times, the second moment rho^2 times as
    # far (rho >= 1, so rho^2 bounds both), and each computed coordinate is off by e1 (mean) or
    # e2 (second moment) on either side
    if s is None:
        return Query(shape=(d,), l1_sensitivity=rho * l1 + 2.0 * d * e1,
                     l2_sensitivity=rho * l2 + 2.0 * np.sqrt(d) * e1,
                     sensitivity_profile=np.full(d, rho / n + 2.0 * e1))
    profile = np.concatenate([np.full(d, rho / n + 2.0 * e1),
                              np.full(d, rho**2 * s / (4.0 * n) + 2.0 * e2)])
    return Query(shape=(2 * d,), l1_sensitivity=rho**2 * l1 + 2.0 * d * (e1 + e2),
                 l2_sensitivity=rho**2 * l2 + 2.0 * np.sqrt(d * (e1**2 + e2**2)),
                 sensitivity_profile=profile)


def _moments_rounding(n, d, lower, upper, s, sparse_input):
    """``(rho, e1, e2)``: the floating-point computation of the moments (module docstring).

    ``rho``: computed normalised values satisfy ``|u~| <= rho / 2`` with
    ``rho = max_j (1 + u (|a_j| + |b_j|) / w_j) (1 + u)^3`` (the midpoint
    ``fl((a + b) / 2)`` is within ``u |a + b| / 2`` of the exact one; a
    subtraction and a division round once each). ``e1``, ``e2``: bounds on the
    error of each computed coordinate ``fl(sum u~ / n)`` and ``fl(s sum u~^2 /
    n)`` against the exact moments of the computed values: a sum of ``n``
    terms in a tree of depth ``h`` errs by at most ``gamma_h`` times the sum
    of the absolute values (Higham 2002, Lemma 3.1): ``h = m + C`` for
    dense input (chunks of ``m`` rows summed along the rows, ``C`` chunk
    sums added in turn), ``h = n + 2`` for sparse input (``bincount`` adds in
    stored order, then the implicit zeros' term), plus the final products
    and division. All public: bounds, ``n``, ``d`` and the input format.
    """
    from .._stats import UNIT_ROUNDOFF as u, chunked_sum_depth, rounding_gamma

    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    w = upper - lower
    rho = float(np.max((1.0 + u * (np.abs(lower) + np.abs(upper)) / w) * (1.0 + u) ** 3,
                       initial=1.0))
    n = max(int(n), 1)
    if sparse_input:
        h = n + 2
    else:
        m = min(n, _dense_chunk_rows(d))
        h = chunked_sum_depth(n, m, m)
    e1 = rounding_gamma(h + 2) * rho / 2.0
    e2 = 0.0 if s is None else s * rounding_gamma(h + 4) * rho**2 / 4.0
    return rho, e1, e2


def _dense_chunk_rows(d):
    return max(1, 2**20 // max(int(d), 1))


def _normalise(values, lower, width):
    """``(clip(v, a, b) - c) / w`` for values of one or more features (w > 0)."""
    upper = lower + width
    return (np.clip(values, lower, upper) - (lower + upper) / 2.0) / width


def _normalised_moments(X, lower, width, second):
    """Per-feature ``(sum u, sum u^2)`` of the clipped, normalised values.

    ``X`` is dense (n, d) or a scipy sparse matrix; for sparse input the
    implicit zeros count as the value 0 (clipped like any other value)
    without densifying.
    """
    n, d = X.shape
    if sparse.issparse(X):
        Xc = sparse.csc_matrix(X, dtype=np.float64, copy=True)
        Xc.sum_duplicates()  # scipy sums duplicate entries: each record's value is their sum
        cols = np.repeat(np.arange(d), np.diff(Xc.indptr))
        u0 = _normalise(np.zeros(d), lower, width)
        u = _normalise(Xc.data, lower[cols], width[cols])
        counts = np.diff(Xc.indptr)
        s1 = np.bincount(cols, weights=u, minlength=d) + (n - counts) * u0
        s2 = (np.bincount(cols, weights=u * u, minlength=d) + (n - counts) * u0 * u0) if second else None
        return s1, s2
    s1 = np.zeros(d)
    s2 = np.zeros(d) if second else None
    step = _dense_chunk_rows(d)  # public: _moments_rounding charges this depth
    for start in range(0, n, step):
        u = _normalise(np.asarray(X[start:start + step], dtype=np.float64), lower, width)
        s1 += u.sum(axis=0)
        if second:
            s2 += (u * u).sum(axis=0)
    return s1, s2


def _check_bounds(bounds, n_features, estimator):
    """Validate public ``bounds=(lower, upper)``; return float arrays of shape (d,)."""
    name = type(estimator).__name__
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise ValueError(f"{name}: bounds must be a pair (lower, upper), got {bounds!r}.")
    try:
        lower = np.asarray(bounds[0], dtype=np.float64)
        upper = np.asarray(bounds[1], dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: bounds must hold real numbers.") from None
    out = []
    for side, arr in (("lower", lower), ("upper", upper)):
        if arr.ndim == 0:
            arr = np.full(n_features, float(arr)) if n_features is not None else arr
        elif arr.ndim != 1 or (n_features is not None and arr.shape[0] != n_features):
            raise ValueError(
                f"{name}: the {side} bound must be a scalar or have shape (n_features,) = "
                f"({n_features},), got shape {arr.shape}."
            )
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name}: bounds must be finite.")
        out.append(arr)
    lower, upper = out
    if np.any(lower > upper):
        raise ValueError(f"{name}: every lower bound must be <= its upper bound.")
    with np.errstate(over="ignore"):  # the midpoint (a + b) / 2 and rho need |a| + |b| finite
        too_large = ~np.isfinite(np.abs(lower) + np.abs(upper))
    if (np.any(upper - lower > np.finfo(np.float64).max / 4) or np.any(too_large)
            or np.any(np.maximum(np.abs(lower), np.abs(upper)) > MAX_PUBLIC_BOUND)):
        raise ValueError(f"{name}: bounds are too wide or too large to compute with in float64 "
                         f"(their magnitudes must stay below {MAX_PUBLIC_BOUND:.3g}: the variance "
                         "squares them).")
    return lower, upper


def _infer_bounds(X):
    """Per-feature min and max of X (private! the caller warns, before X is read)."""
    if sparse.issparse(X):
        Xc = sparse.csc_matrix(X)
        lower = np.asarray(Xc.min(axis=0).toarray()).ravel().astype(np.float64)
        upper = np.asarray(Xc.max(axis=0).toarray()).ravel().astype(np.float64)
    else:
        lower = np.min(X, axis=0).astype(np.float64)
        upper = np.max(X, axis=0).astype(np.float64)
    return lower, upper


class PrivateStandardScaler(PrivateEstimatorMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Standardise features with a differentially private mean and variance.

    Like :class:`sklearn.preprocessing.StandardScaler`, ``transform`` returns
    ``(X - mean_) / scale_``; here ``mean_`` and ``var_`` come from one
    (epsilon, delta)-DP release (replace-one neighbours, ``n`` public) of the
    per-feature mean and second moment of the data clipped into the public
    ``bounds``. ``transform`` itself does not clip (it is applied to any data,
    like scikit-learn's scaler; the downstream private estimator bounds rows).

    The sensitivities, the choice of noise and the split of the budget
    between mean and variance (a weight ``s`` of the second moment, optimal
    for a criterion that depends on the bounds only) are derived in
    :mod:`skdp.preprocessing._scaler`. In short, for ``d`` features and the
    mean and variance released jointly, the noise on each feature's mean is
    ``w_j`` times that of a vector query with ``Delta_1 = 1.457 d / n``
    (Laplace, ``delta = 0``) or ``Delta_2 = sqrt(d) / n`` (Gaussian,
    ``delta > 0``), ``w_j`` the width of feature ``j``'s bounds.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter epsilon of one fit, > 0.
    delta : float, default=0.0
        Privacy parameter delta, in [0, 1). ``0`` uses Laplace noise (pure
        epsilon-DP), ``> 0`` the analytic Gaussian mechanism, which adds
        less noise for many features.
    bounds : tuple (lower, upper) or None, default=None
        Public bounds of every feature: each of ``lower`` and ``upper`` a
        scalar or an array of shape (n_features,), with ``lower <= upper``,
        finite, and ``|lower| + |upper|`` finite in float64 (checked before
        the budget is charged). Values outside are clipped for the fit
        (never reported). They must
        not be computed from the private data: take them from a data
        dictionary, the domain (ages in [0, 120]) or a public dataset. If
        None they are inferred from the data with a
        :class:`~skdp.PrivacyLeakWarning` (this voids the guarantee) and
        stored in ``bounds_``.
    with_mean : bool, default=True
        If True, centre the data before scaling. Not supported for sparse
        input (as in scikit-learn).
    with_std : bool, default=True
        If True, scale the data to unit variance.
    accountant : object with a ``spend`` method or None, default=None
        Optional privacy ledger charged ``(epsilon, delta)`` before any data
        is read. Nothing is charged when both ``with_mean`` and
        ``with_std`` are False (nothing is released).
    random_state : int, Generator, RandomState or None, default=None
        Source of the noise. Use None for real releases (fresh OS entropy);
        an int seed is for reproducible experiments and must be kept secret.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,) or None
        Private per-feature mean (within the bounds); None if
        ``with_mean=False`` (as in scikit-learn; the variance still uses the
        private mean internally).
    var_ : ndarray of shape (n_features,) or None
        Private per-feature variance (``ddof=0``), in ``[0, w_j^2 / 4]``;
        None if ``with_std=False``.
    scale_ : ndarray of shape (n_features,) or None
        ``sqrt(var_)``, with 1 where the variance is 0; None if
        ``with_std=False``.
    n_samples_seen_ : int
        Number of rows (public under the replace-one relation).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in,)
        Defined when X has string feature names.
    bounds_ : tuple of ndarray
        The bounds used: ``bounds`` as arrays, or the inferred ones.
    noise_spec_ : NoiseSpec or None
        The calibrated noise of the release (None if nothing was released).
    privacy_spent_ : PrivacyBudget
        Budget spent by the last fit.

    See Also
    --------
    data_norm_from_bounds : a row-norm bound for the next step of a pipeline.

    References
    ----------
    C. Dwork, F. McSherry, K. Nissim, A. Smith. "Calibrating noise to
    sensitivity in private data analysis." TCC 2006.

    B. Balle, Y.-X. Wang. "Improving the Gaussian mechanism for differential
    privacy: analytical calibration and optimal denoising." ICML 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import PrivateStandardScaler
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([rng.uniform(20, 70, 5000), rng.normal(50, 10, 5000)])
    >>> scaler = PrivateStandardScaler(epsilon=1.0, bounds=([18, 0], [90, 100]),
    ...                                random_state=0).fit(X)
    >>> np.round(scaler.mean_)
    array([45., 50.])
    >>> scaler.noise_spec_.mechanism
    'laplace'
    """

    _parameter_constraints = {
        "epsilon": PrivateEstimatorMixin._privacy_parameter_constraints["epsilon"],
        "delta": PrivateEstimatorMixin._privacy_parameter_constraints["delta"],
        "random_state": PrivateEstimatorMixin._privacy_parameter_constraints["random_state"],
        "accountant": PrivateEstimatorMixin._privacy_parameter_constraints["accountant"],
        "bounds": [None, tuple, list],
        "with_mean": ["boolean"],
        "with_std": ["boolean"],
    }

    def __init__(self, epsilon=1.0, delta=0.0, bounds=None, with_mean=True, with_std=True,
                 accountant=None, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.with_mean = with_mean
        self.with_std = with_std
        self.accountant = accountant
        self.random_state = random_state

    # ------------------------------------------------------------------
    def _check_public(self, n_samples, n_features):
        super()._check_public(n_samples, n_features)
        check_epsilon_delta(self.epsilon, self.delta)
        if self.bounds is not None:
            _check_bounds(self.bounds, n_features, self)

    def _calibrate(self, n, k, budget, lower, upper, sparse_input):
        """The one release of ``k`` live features with bounds ``lower, upper`` (public inputs only),
        for the statistic as computed in floating point (:func:`_moments_rounding`)."""
        s = moment_weight(budget.delta) if self.with_std else None
        mechanism = "laplace" if budget.delta == 0 else "analytic_gaussian"
        rounding = _moments_rounding(n, k, lower, upper, s, sparse_input)
        return calibrate(_moments_query(n, k, s, rounding), budget.epsilon, budget.delta,
                         mechanism=mechanism)

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Release the private mean and variance of X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Sparse input needs ``with_mean=False``; its implicit zeros are
            values 0 (clipped into the bounds like any other value).
        y : ignored

        Returns
        -------
        self : PrivateStandardScaler
        """
        if is_sparse_input(X) and self.with_mean:
            raise ValueError(
                "Cannot center sparse matrices: pass `with_mean=False` instead. See docstring "
                "for motivation and alternatives."
            )
        n_pub, d_pub = self._public_shape(X, y)  # structure only (y: its length), no values
        releases = self.with_mean or self.with_std
        pre = {}
        # the declared bounds, read once from the public structure (None: inferred after the
        # charge, or the structure does not tell the shape)
        bounds_pub = (_check_bounds(self.bounds, d_pub, self)
                      if self.bounds is not None and n_pub and d_pub else None)

        def curve():  # a Gaussian release, calibrated from public inputs before the charge
            if bounds_pub is None:
                return None
            lo, hi = bounds_pub
            live_pub = hi - lo > 0
            k_pub = int(np.count_nonzero(live_pub))
            if not k_pub:
                return None
            pre["spec"] = self._calibrate(n_pub, k_pub, self._privacy_budget(), lo[live_pub],
                                          hi[live_pub], is_sparse_input(X))
            return release_curve([pre["spec"]])

        if releases and bounds_pub is not None:
            # every feature of width 0 is a public constant: nothing is computed from the
            # data, so nothing is charged (review 28, F4)
            releases = bool(np.any(bounds_pub[1] - bounds_pub[0] > 0))
        if releases:
            budget, rng = self._start_fit(n_pub, d_pub, curve=curve)
        else:  # nothing is released: nothing is charged
            self._check_public(n_pub, d_pub)
            self.privacy_spent_ = PrivacyBudget.zero()
        if not releases and bounds_pub is not None:
            # nothing is charged, so no value is read: a validation of the values would answer
            # "does X hold a NaN?" for free (review 14, F4); the structure sets the features
            validate_data(self, X, skip_check_array=True, reset=True)
            self.bounds_ = bounds_pub
            self.n_samples_seen_ = n_pub
            self.noise_spec_ = None
            # the declared constants (all widths 0), or None when nothing was asked for
            self.mean_ = self.bounds_[0].copy() if self.with_mean else None
            self.var_ = np.zeros(d_pub) if self.with_std else None
            self.scale_ = np.ones(d_pub) if self.with_std else None
            return self
        if self.bounds is None:  # warned before any value is read, the NaN check included
            _leak_warning(self, "bounds", "bounds_", what="per-feature range")
        X = validate_private_data(self, X, accept_sparse=("csr", "csc"), dtype=FLOAT_DTYPES,
                                  ensure_min_samples=1, spent=releases)
        n, d = X.shape
        if self.bounds is None:
            lower, upper = _infer_bounds(X)
        else:
            lower, upper = _check_bounds(self.bounds, d, self)
        self.bounds_ = (lower, upper)
        self.n_samples_seen_ = n
        self.noise_spec_ = None
        if not releases:
            self.mean_ = self.var_ = self.scale_ = None
            return self

        width = upper - lower
        live = width > 0  # features of width 0 are public constants
        mean = lower.copy()
        var = np.zeros(d)
        k = int(np.count_nonzero(live))
        if k:
            s = moment_weight(budget.delta) if self.with_std else None
            spec = pre.get("spec")
            if spec is not None:
                self._check_charged_shape((n_pub, spec.query.shape),
                                          (n, _moments_query(n, k, s).shape))
            else:  # bounds inferred after the charge, or the structure did not tell the shape
                spec = self._calibrate(n, k, budget, lower[live], upper[live], sparse.issparse(X))
            Xl = X[:, np.flatnonzero(live)] if not np.all(live) else X
            s1, s2 = _normalised_moments(Xl, lower[live], width[live], second=s is not None)
            value = s1 / n if s is None else np.concatenate([s1 / n, s * s2 / n])
            noisy = np.asarray(spec.privatize(value, random_state=rng), dtype=np.float64)
            self.noise_spec_ = spec
            # ---- post-processing of the single release ----
            M = np.clip(noisy[:k], -0.5, 0.5)
            w = width[live]
            mean[live] = (lower[live] + upper[live]) / 2.0 + w * M
            if s is not None:
                Q = noisy[k:] / s
                # a released variance below the noise of its release says "within the noise",
                # not "constant": floor it at the noise's standard deviation in these units
                # (public: from the spec), so scale_ never divides by a noise artefact
                floor = min(np.sqrt(spec.expected_squared_error / spec.query.n_released) / s, 0.25)
                var[live] = w**2 * np.clip(Q - M**2, floor, 0.25)
        self.mean_ = mean if self.with_mean else None
        if self.with_std:
            self.var_ = var
            scale = np.sqrt(var)
            scale[scale == 0.0] = 1.0
            self.scale_ = scale
        else:
            self.var_ = self.scale_ = None
        return self

    # ------------------------------------------------------------------
    @fixed_float_state  # (private rows: no error state may decide what happens)
    def transform(self, X):
        """Standardise X with the private ``mean_`` and ``scale_``, after clipping it to ``bounds_``.

        Values beyond the public bounds are clipped, as in ``fit`` (never
        trusted: a finite 1.5e308 would otherwise become inf, which the next
        private step of a pipeline refuses after its charge); sparse input has
        its stored values clipped (implicit zeros stay 0).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        X_tr : {ndarray, sparse matrix} of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        X = validate_private_data(self, X, reset=False, accept_sparse="csr", copy=True,
                                  dtype=FLOAT_DTYPES)
        lower, upper = self.bounds_
        if sparse.issparse(X):
            X.data = np.clip(X.data, lower[X.indices], upper[X.indices]).astype(X.dtype, copy=False)
        else:
            np.clip(X, lower.astype(X.dtype), upper.astype(X.dtype), out=X)
        if sparse.issparse(X):
            if self.with_mean:
                raise ValueError(
                    "Cannot center sparse matrices: pass `with_mean=False` instead. See "
                    "docstring for motivation and alternatives."
                )
            if self.scale_ is not None:
                inplace_column_scale(X, 1.0 / self.scale_)  # (overflow: silent here)
                saturate(X.data)
            return X
        if X.dtype == np.float64:  # (bounds below 2^128: no overflow in float64)
            if self.mean_ is not None:
                X -= self.mean_
            if self.scale_ is not None:
                X /= self.scale_
            return X
        # float32: the bounds (up to 2^128) and so mean_ and scale_ may exceed its range; each
        # chunk of rows is centred and scaled in float64 and saturated back into X
        # (skdp._validation.saturate): an inf, a NaN (inf / inf), or a warning would tell a
        # private step after this one that some record held such a value
        mean = 0.0 if self.mean_ is None else self.mean_
        scale = 1.0 if self.scale_ is None else self.scale_
        step = max(1, (1 << 20) // max(1, X.shape[1]))
        for start in range(0, X.shape[0], step):
            Z = X[start:start + step].astype(np.float64)
            Z -= mean
            Z /= scale
            X[start:start + step] = saturate(Z, X.dtype)
        return X

    def inverse_transform(self, X):
        """Undo :meth:`transform`: ``X * scale_ + mean_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        X_original : {ndarray, sparse matrix} of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        if sparse.issparse(X):
            check_sparse_structure(X)  # (its conversion to CSR trusts it)
            X = _without_spare_capacity(X)  # (values past indptr[-1]: scipy ignores them)
        X = call_without_values(check_array, X, accept_sparse="csr", copy=True,
                                dtype=FLOAT_DTYPES)
        if sparse.issparse(X):
            if self.with_mean:
                raise ValueError(
                    "Cannot uncenter sparse matrices: pass `with_mean=False` instead."
                )
            if self.scale_ is not None:
                inplace_column_scale(X, self.scale_)
            return X
        if self.scale_ is not None:
            X *= self.scale_.astype(X.dtype, copy=False)
        if self.mean_ is not None:
            X += self.mean_.astype(X.dtype, copy=False)
        return X

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = not self.with_mean
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
