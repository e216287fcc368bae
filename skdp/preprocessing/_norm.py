"""A private row-norm bound: scale rows by a DP quantile of their norms.

Every skdp estimator needs a public bound ``data_norm`` on the rows'
Euclidean norms. On raw data nobody knows it; taking the largest row norm
(``data_norm=None``) reads the private data and voids the guarantee.
:class:`PrivateRowNormScaler` spends a declared share of the budget on a
differentially private quantile ``q`` of the row norms, then maps every row
to ``x / q``, clipped to norm 1. Downstream estimators take
``data_norm=1.0``, a public constant, and clip nothing more than the few
rows above the quantile.

Derivation (replace-one neighbours, n public)
---------------------------------------------
*Candidates.* The public search range ``norm_range = (lower, upper)`` and
ratio ``r = grid_ratio`` give the public candidates ``c_j = lower r^j``,
``j = 0, ..., m`` with ``m = ceil(log(upper / lower) / log r)`` (``c_m >=
upper``). The target rank is ``t = floor(quantile n)`` (public: n is public).
``m + 1`` is computed from the public settings before the budget is charged
and must not exceed ``2^20`` (:data:`MAX_CANDIDATES`: the candidates and
their counts take 16 bytes each), and ``c_m`` (computed as ``lower * r^m``)
must be finite; otherwise the fit refuses before the charge
(:func:`check_grid`).

*Utility.* ``u_j = -|N_j - t|`` with ``N_j = #{i : ||x_i|| <= c_j}``.
Replacing one record changes every ``N_j`` by at most 1, so every ``u_j``
moves by at most ``Delta_u = 1``.

*Selection.* Permute-and-flip (McKenna & Sheldon 2020, "Permute-and-Flip: A
new mechanism for differentially private selection", Theorem 1): visit the
candidates in a uniformly random order and accept candidate ``j`` with
probability ``exp(-eps' (u* - u_j) / (2 Delta_u))``, ``u* = max_j u_j``;
the first accepted is released (the maximiser accepts surely, so it stops).
It is ``eps'``-DP and never worse in expected utility than the exponential
mechanism at the same ``eps'``. Its output is one public candidate, so its
release is exact: no floating-point noise reaches it.

*Exact sampling.* ``eps' <= epsilon`` is the largest fraction
``p / 2^20`` not above ``min(epsilon, 2^40)`` (:data:`MAX_SELECTION_EPSILON`;
``eps'`` smaller than ``epsilon`` only strengthens the guarantee: the
release is ``eps'``-DP, hence ``epsilon``-DP, and the fit reports and
charges the requested ``epsilon``, which is conservative; below ``2^40`` the
loss is under ``2^-20``). The utilities are integers, so every acceptance
probability is ``exp(-num / den)`` with integers ``num = p (u* - u_j)`` and
``den = 2^21``, drawn exactly by Canonne, Kamath & Steinke (2020,
Algorithm 1) with integer arithmetic only
(:func:`skdp.mechanisms._discrete.bernoulli_exp_neg_fraction`, after
splitting ``num / den`` into whole and fractional parts). To keep ``num``
below ``2^62`` (int64) the gaps are capped at ``C = floor((2^62 - 1) / p)``:
this is permute-and-flip, exactly, on the utility ``max(u_j, u* - C)``,
which still moves by at most 1 between neighbours (``u*`` and ``u_j`` both
do), so the guarantee is unchanged, and a capped candidate is accepted with
probability ``exp(-p C / 2^21) <= exp(-2^40)`` (sensitivity 1; ``p <= 2^60``
gives ``C >= 3`` and ``p C > 2^62 - 1 - p >= 2^61``). Without the clamp of
epsilon, ``p`` above ``2^62`` (epsilon above ``2^42``) would make ``C = 0``:
every gap zero and the choice uniform. The permutation comes from ``Generator.permutation``
(uniform integer draws).

*Accuracy.* With probability at least ``1 - beta`` the released candidate's
rank error is at most ``2 (ln(m + 1) + ln(1 / beta)) / eps'`` rows (the
exponential-mechanism bound, which permute-and-flip meets), plus the grid's
resolution: the true quantile lies within a factor ``r`` of a candidate.
With ``n = 10 000`` and ``epsilon = 0.1`` this is under 300 rows, or 3
quantile points, at ``beta = 0.05``.

*Pipeline.* ``transform`` is a row-wise function of the released ``q``
(post-processing), and the rows it returns have norm at most 1, so an
estimator fitted on them with ``data_norm=1.0`` is DP with respect to the
original rows; the two fits compose (sequentially, on one ledger).

References
----------
McKenna, R. and Sheldon, D. (2020). Permute-and-flip: a new mechanism for
differentially private selection. NeurIPS 2020.
Canonne, C. L., Kamath, G. and Steinke, T. (2020). The discrete Gaussian for
differential privacy. NeurIPS 2020.
Smith, A. (2011). Privacy-preserving statistical estimation with optimal
convergence rates. STOC 2011 (the exponential mechanism for quantiles).
"""

import math
from fractions import Fraction
from numbers import Real

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import FLOAT_DTYPES, check_is_fitted

from .._budget import PrivacyBudget
from .._validation import (MAX_PUBLIC_BOUND, MIN_PUBLIC_BOUND, _leak_warning, check_epsilon_delta,
                           saturate, seed_entropy, validate_private_data)
from ..base import PrivateEstimatorMixin, fixed_float_state, private_fit
from ..linear_model._rows import row_norms_any
from ..mechanisms._discrete import bernoulli_exp_neg_fraction

__all__ = ["PrivateRowNormScaler", "permute_and_flip", "norm_candidates"]

#: denominator of the rational epsilon used by the exact sampler
_EPS_BITS = 20

#: the largest epsilon the selection uses (a larger one is clamped to it: see the module
#: docstring); at 2^40 a candidate one row worse than the best is accepted with probability
#: exp(-2^39)
MAX_SELECTION_EPSILON = 2.0**40

#: the most candidates a fit searches (public settings beyond it are refused before the charge)
MAX_CANDIDATES = 2**20


def _grid_size(lower, upper, grid_ratio):
    """``m``, the index of the first candidate ``lower * grid_ratio**m`` at or above ``upper``
    (a Python int, whatever its size: nothing is allocated)."""
    span = upper / lower
    log_span = math.log(span) if math.isfinite(span) else math.log(upper) - math.log(lower)
    return max(0, math.ceil(log_span / math.log(grid_ratio) - 1e-12))


def check_grid(lower, upper, grid_ratio, *, inferred=False):
    """The number of candidates ``m + 1`` of a grid, after refusing one that is too large
    (more than :data:`MAX_CANDIDATES`) or whose last candidate overflows float64.

    For a public ``norm_range`` this runs before the charge and the message
    quotes the settings. ``inferred=True``: the range was read from the
    private data (``norm_range=None``), so the message quotes none of it.
    """
    m = _grid_size(lower, upper, grid_ratio)
    what = ("the norm_range inferred from the data" if inferred
            else f"norm_range={(lower, upper)}")
    if m + 1 > MAX_CANDIDATES:
        count = "more than 2^20" if inferred else str(m + 1)
        raise ValueError(
            f"{what} with grid_ratio={grid_ratio} gives {count} candidates; at most "
            f"{MAX_CANDIDATES} (2^20) are searched. Increase grid_ratio or pass a narrower "
            "public norm_range.")
    with np.errstate(over="ignore"):
        last = lower * np.float64(grid_ratio) ** m
    if not np.isfinite(last):
        raise ValueError(f"The candidates lower * grid_ratio**j of {what} with grid_ratio="
                         f"{grid_ratio} overflow float64 (grid_ratio**j reaches upper / lower, "
                         "which must stay below the float64 maximum): pass a narrower public "
                         "norm_range.")
    return m + 1


def norm_candidates(lower, upper, grid_ratio):
    """The public candidates ``lower * grid_ratio**j`` up to the first at or above ``upper``."""
    m = check_grid(lower, upper, grid_ratio) - 1
    return lower * grid_ratio ** np.arange(m + 1, dtype=np.float64)


def _rational_epsilon(epsilon):
    """``(p, 2^20)`` with ``p / 2^20 <= min(epsilon, MAX_SELECTION_EPSILON)``, the largest such
    fraction (``p >= 1``)."""
    eps = Fraction(float(epsilon))
    p = math.floor(min(eps, Fraction(MAX_SELECTION_EPSILON)) * 2**_EPS_BITS)
    if p < 1:
        raise ValueError("epsilon is below 2^-20: too small for the exact selection.")
    return p, 2**_EPS_BITS


def _bernoulli_exp(num, den, rng):
    """Exact Bernoulli(exp(-num/den)) for non-negative int arrays ``num`` (any size)."""
    num = np.asarray(num, dtype=np.int64)
    whole, frac = np.divmod(num, den)
    out = bernoulli_exp_neg_fraction(frac, den, rng)
    # exp(-whole) = product of `whole` Bernoulli(exp(-1)) draws, stopped at the first failure
    k = 0
    live = np.flatnonzero(out & (whole > 0))
    while live.size:
        out[live] = bernoulli_exp_neg_fraction(np.ones(live.size, dtype=np.int64), 1, rng)
        k += 1
        live = live[out[live] & (whole[live] > k)]
    return out


def permute_and_flip(utility, epsilon, rng, sensitivity=1):
    """Index chosen by permute-and-flip (McKenna & Sheldon 2020) from integer utilities.

    ``eps' = p / 2^20 <= min(epsilon, 2^40)`` (:data:`MAX_SELECTION_EPSILON`: a
    smaller epsilon only strengthens the guarantee); candidate ``j`` is accepted with
    probability ``exp(-eps' (u* - u_j) / (2 sensitivity))`` (exact, integer
    arithmetic only) in a uniformly random order. ``utility`` must be
    integers and ``sensitivity`` a positive integer.
    """
    u = np.asarray(utility)
    if u.dtype.kind not in "iu" or u.ndim != 1 or u.size == 0:
        raise ValueError("utility must be a non-empty 1-D integer array.")
    p, den = _rational_epsilon(epsilon)
    gap = (u.max() - u).astype(np.int64)
    # the exact coins draw a number of words that depends on the utilities (private
    # counts): they come from a child stream seeded by four words of ``rng``, so that
    # ``rng`` (a caller's Generator) leaves in a state that does not depend on the data
    coins = np.random.default_rng(seed_entropy(rng))
    order = coins.permutation(u.size)
    if int(gap.max()) * p >= 2**62:  # capped gaps: accepted with probability <= e^-2^40, and
        gap = np.minimum(gap, (2**62 - 1) // p)  # still eps'-DP (module docstring)
    accept = _bernoulli_exp(gap[order] * p, 2 * int(sensitivity) * den, coins)
    return int(order[int(np.argmax(accept))])  # the maximiser accepts surely


class PrivateRowNormScaler(OneToOneFeatureMixin, TransformerMixin, PrivateEstimatorMixin,
                           BaseEstimator):
    """Scale rows by a differentially private quantile of their norms (output norm <= 1).

    Fit releases ``norm_``, a DP ``quantile`` of the rows' Euclidean norms
    (permute-and-flip over a public geometric grid, pure ``epsilon``-DP;
    derivation in the module docstring). ``transform`` returns ``x / norm_``
    with rows above norm 1 scaled down to 1, so a downstream estimator can
    use the public bound ``data_norm=1.0``. Put it first in a Pipeline that
    shares one ledger with the estimator; its ``epsilon`` is usually a small
    share of the total (0.05–0.1 of it).

    Parameters
    ----------
    quantile : float in (0, 1], default=0.95
        Which quantile of the row norms becomes the bound. Rows above it
        are clipped (their direction is kept); a lower quantile clips more
        rows but lets the estimator add less noise relative to the rest.
    epsilon : float, default=0.1
        Privacy budget of the quantile (pure, delta = 0). The selection uses
        at most ``2^40`` (a larger value is clamped, which only strengthens
        the guarantee); ``privacy_spent_`` and the ledger record the
        requested ``epsilon``.
    norm_range : (float, float) or None, default=None
        Public range ``(lower, upper)``, ``0 < lower < upper``, searched for
        the quantile. A quantile below ``lower`` is reported as ``lower``,
        one above ``upper`` as the first candidate at or above it. ``None``:
        inferred from the data (smallest positive and largest row norm)
        with :class:`~skdp.PrivacyLeakWarning`; stored in ``norm_range_``.
    grid_ratio : float > 1, default=2**(1/16)
        Ratio of consecutive candidates (resolution: about 4.4%). With
        ``norm_range``, at most ``2^20`` candidates (``MAX_CANDIDATES``): a
        finer grid is refused before the budget is charged.
    accountant : object with a ``spend`` method or None, default=None
        Ledger charged ``(epsilon, 0)`` before the data is read.
    random_state : None, int or numpy.random.Generator, default=None
        ``None`` draws fresh OS entropy.

    Attributes
    ----------
    norm_ : float
        The released quantile (a public candidate).
    norm_range_ : tuple of float
    n_candidates_ : int
    privacy_spent_ : PrivacyBudget
    n_features_in_ : int
    feature_names_in_ : ndarray of str (when X has string column names)

    See Also
    --------
    skdp.preprocessing.data_norm_from_bounds : the bound from public per-feature ranges.

    References
    ----------
    McKenna, R. and Sheldon, D. (2020). Permute-and-flip: a new mechanism for
    differentially private selection. NeurIPS 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from skdp import BudgetLedger
    >>> from skdp.linear_model import PrivateLogisticRegression
    >>> from skdp.preprocessing import PrivateRowNormScaler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(scale=5.0, size=(2000, 4)); y = (X[:, 0] > 0).astype(int)
    >>> ledger = BudgetLedger(1.0, 1e-5)
    >>> pipe = make_pipeline(
    ...     PrivateRowNormScaler(epsilon=0.1, norm_range=(0.01, 1000.0), accountant=ledger),
    ...     PrivateLogisticRegression(epsilon=0.9, data_norm=1.0, classes=[0, 1], accountant=ledger))
    >>> pipe.fit(X, y).score(X, y) > 0.9
    True
    """

    _parameter_constraints = {
        "quantile": [Interval(Real, 0, 1, closed="right")],
        "epsilon": PrivateEstimatorMixin._privacy_parameter_constraints["epsilon"],
        "norm_range": [None, tuple, list],
        "grid_ratio": [Interval(Real, 1, None, closed="neither")],
        "accountant": PrivateEstimatorMixin._privacy_parameter_constraints["accountant"],
        "random_state": PrivateEstimatorMixin._privacy_parameter_constraints["random_state"],
    }

    def __init__(self, quantile=0.95, epsilon=0.1, norm_range=None, grid_ratio=2 ** (1 / 16),
                 accountant=None, random_state=None):
        self.quantile = quantile
        self.epsilon = epsilon
        self.norm_range = norm_range
        self.grid_ratio = grid_ratio
        self.accountant = accountant
        self.random_state = random_state

    def _privacy_budget(self):
        eps, _ = check_epsilon_delta(self.epsilon, 0.0)
        return PrivacyBudget(eps, 0.0)

    def _check_public(self, n_samples, n_features):
        super()._check_public(n_samples, n_features)
        _rational_epsilon(self.epsilon)
        if self.norm_range is not None:
            check_grid(*_check_range(self.norm_range), float(self.grid_ratio))

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Release the private quantile of the row norms.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : PrivateRowNormScaler
        """
        budget, rng = self._start_fit(*self._public_shape(X, y))  # structure only (y: its length)
        X = validate_private_data(self, X, accept_sparse=("csr", "csc"), dtype=FLOAT_DTYPES)
        n = X.shape[0]
        norms = row_norms_any(X)
        if self.norm_range is None:
            pos = norms[norms > 0]
            lower = float(pos.min()) if pos.size else 1.0
            upper = float(norms.max()) if pos.size else 1.0
            upper = upper if upper > lower else lower * self.grid_ratio
            _leak_warning(self, "norm_range", "norm_range_", what="search range")
        else:
            lower, upper = _check_range(self.norm_range)
        check_grid(lower, upper, float(self.grid_ratio), inferred=self.norm_range is None)
        cand = norm_candidates(lower, upper, float(self.grid_ratio))
        counts = np.searchsorted(np.sort(norms), cand, side="right").astype(np.int64)
        t = int(math.floor(float(self.quantile) * n))
        j = permute_and_flip(-np.abs(counts - t), budget.epsilon, rng)
        self.norm_ = float(cand[j])
        self.norm_range_ = (lower, upper)
        self.n_candidates_ = int(cand.size)
        return self

    @fixed_float_state  # (private rows: no error state may decide what happens)
    def transform(self, X):
        """Rows divided by ``norm_``, those above norm 1 scaled down to 1.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        X_new : same kind and dtype as X (float), rows of norm at most 1
        """
        check_is_fitted(self)
        X = validate_private_data(self, X, accept_sparse=("csr", "csc"), dtype=FLOAT_DTYPES,
                                  reset=False)
        # (1 / norm_) min(1, norm_ / ||x||) = 1 / max(norm_, ||x||): no overflow for huge rows
        factor = 1.0 / np.maximum(row_norms_any(X), self.norm_)
        # (at most 2^128, for norm_ at the bottom of the public range: float32 saturates, no
        # inf and no cast warning that only a row shorter than 1 / 3.4e38 would trigger)
        factor = saturate(factor, X.dtype)
        if sparse.issparse(X):
            return sparse.diags(factor) @ X if X.format == "csr" else (sparse.diags(factor) @ X).tocsc()
        return X * factor[:, None]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


def _check_range(norm_range):
    try:
        lower, upper = (float(v) for v in norm_range)
    except (TypeError, ValueError):
        raise ValueError("norm_range must be a pair (lower, upper) of numbers.") from None
    if not (0 < lower < upper < np.inf):
        raise ValueError("norm_range must satisfy 0 < lower < upper < inf.")
    if lower < MIN_PUBLIC_BOUND or upper > MAX_PUBLIC_BOUND:
        raise ValueError(f"norm_range must lie within [{MIN_PUBLIC_BOUND:.3g}, "
                         f"{MAX_PUBLIC_BOUND:.3g}]: beyond it the row scaling under- or "
                         "overflows in float64. Rescale the data by a public factor.")
    return lower, upper
