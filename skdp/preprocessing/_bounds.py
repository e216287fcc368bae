"""Public row-norm bounds from public per-feature ranges.

The private linear models and PCA clip every row to ``data_norm``. That
bound must be public: derive it from what is known about the columns before
seeing the data, never from the data. If every feature ``j`` lies in a public
interval ``[lo_j, hi_j]`` then ``x_j^2 <= max(|lo_j|, |hi_j|)^2`` and

    ||x||_2^2 = sum_j x_j^2 <= sum_j max(|lo_j|, |hi_j|)^2,

with equality at the corner where every feature sits at its end of larger
magnitude, so the bound is the smallest one the ranges imply. A categorical
feature encoded one-hot (``OneHotEncoder``, with or without ``drop``, with
``handle_unknown="ignore"``) has at most one entry equal to 1 in its block of
columns: the block adds at most 1 to ``||x||^2``, however many categories it
has (not 1 per column).
"""

import math

import numpy as np

from .._validation import call_without_values, check_positive_finite
from ..base import fixed_float_state

__all__ = ["data_norm_from_bounds", "scale_by_bounds"]


def _as_bounds(bounds, name="bounds"):
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise ValueError(f"{name} must be a pair (lower, upper), got {bounds!r}.")
    lower = np.asarray(bounds[0], dtype=np.float64)
    upper = np.asarray(bounds[1], dtype=np.float64)
    if lower.ndim > 1 or upper.ndim > 1:
        raise ValueError(f"{name}: lower and upper must be scalars or 1-D arrays.")
    if lower.ndim == 1 and upper.ndim == 1 and lower.shape != upper.shape:
        raise ValueError(f"{name}: lower and upper must have the same length (got "
                         f"{lower.shape[0]} and {upper.shape[0]}); only a scalar is broadcast.")
    lower, upper = np.broadcast_arrays(np.atleast_1d(lower), np.atleast_1d(upper))
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        raise ValueError(f"{name} must be finite.")
    if np.any(lower > upper):
        raise ValueError(f"{name}: every lower bound must be <= its upper bound.")
    return lower.astype(np.float64), upper.astype(np.float64)


def data_norm_from_bounds(bounds=None, *, one_hot_blocks=0, scale=1.0):
    """The smallest row-norm bound implied by public per-feature ranges.

    ``sqrt(sum_j max(|lo_j|, |hi_j|)^2 + one_hot_blocks) * scale``: numeric
    features in ``[lo_j, hi_j]`` contribute their largest square, every
    one-hot encoded categorical feature contributes at most 1 (one active
    column per block). The bound is attained (every feature at its end of
    larger magnitude, one category per block), so no smaller bound is
    implied by the ranges. Derivation in :mod:`skdp.preprocessing._bounds`.

    Parameters
    ----------
    bounds : tuple (lower, upper) or None, default=None
        Public bounds of the numeric columns *as they enter the estimator*
        (after any public transformation): scalars or 1-D arrays of equal
        length (a scalar is broadcast, so give arrays when there is more
        than one column; arrays of different lengths raise). None if there
        are no numeric columns.
    one_hot_blocks : int, default=0
        Number of categorical features encoded one-hot (blocks, not columns).
    scale : float, default=1.0
        Public factor applied to every column (e.g. a weight on a block).

    Returns
    -------
    data_norm : float
        Finite: bounds whose norm exceeds the float64 maximum raise
        ``ValueError`` (the squares are scaled, so tiny or huge bounds whose
        norm is representable are fine).

    Examples
    --------
    Two numeric columns mapped to [-1, 1] and two categorical features:

    >>> from skdp.preprocessing import data_norm_from_bounds
    >>> data_norm_from_bounds(([-1, -1], [1, 1]), one_hot_blocks=2)
    2.0
    >>> data_norm_from_bounds(([0, -3], [2, 1]))  # sqrt(2^2 + 3^2)
    3.605551275463989
    """
    peaks = np.zeros(0)
    if bounds is not None:
        lower, upper = _as_bounds(bounds)
        peaks = np.maximum(np.abs(lower), np.abs(upper))
    if isinstance(one_hot_blocks, bool) or not isinstance(one_hot_blocks, (int, np.integer)) \
            or one_hot_blocks < 0:
        raise ValueError(f"one_hot_blocks must be a non-negative int, got {one_hot_blocks!r}.")
    blocks = int(one_hot_blocks)
    scale = check_positive_finite(scale, "scale")
    # squares taken after dividing by the power of two 2^k with 2^k <= max term < 2^(k+1):
    # exact scaling, so the result is the unscaled formula's wherever that neither overflows
    # nor underflows, and finite whenever the norm is
    top = max(float(peaks.max(initial=0.0)), 1.0 if blocks else 0.0)
    if top == 0.0:
        raise ValueError("the bounds imply rows of norm 0: give non-zero bounds or one-hot blocks.")
    k = math.frexp(top)[1] - 1
    unit = math.ldexp(1.0, k)
    total = float(np.sum((peaks / unit) ** 2)) + math.ldexp(blocks, -2 * k)
    with np.errstate(over="ignore"):
        norm = float(np.sqrt(total) * unit * scale)
    if not math.isfinite(norm):
        raise ValueError("the bounds imply a row norm above the float64 maximum: give smaller "
                         "bounds or a smaller scale.")
    return norm


@fixed_float_state  # (private rows: no error state may decide what happens)
def scale_by_bounds(X, bounds):
    """Clip every column into its public range and map the range onto [-1, 1].

    ``2 (clip(x_j, lo_j, hi_j) - lo_j) / (hi_j - lo_j) - 1`` (a column with
    ``lo_j = hi_j`` maps to 0). A row-wise, data-independent transformation:
    after it, every row has norm at most ``sqrt(n_features)``, the value of
    :func:`data_norm_from_bounds` for ``([-1] * d, [1] * d)``. Use it in a
    pipeline through :class:`sklearn.preprocessing.FunctionTransformer`
    (``FunctionTransformer(scale_by_bounds, kw_args={"bounds": bounds})``).
    A cell that is not a number is refused without its value; NaN passes
    through (the private step after it refuses it).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    bounds : tuple (lower, upper)
        Public per-feature bounds (scalars or arrays of shape (n_features,)).

    Returns
    -------
    X_scaled : ndarray of shape (n_samples, n_features)

    Examples
    --------
    >>> from skdp.preprocessing import scale_by_bounds
    >>> scale_by_bounds([[0.0, 50.0], [200.0, 0.0]], bounds=([0, 0], [100, 100]))
    array([[-1.,  0.],
           [ 1., -1.]])
    """
    # (without values: numpy's error would quote the cell that is not a number, and this runs
    # on private rows, ahead of a private step's charge)
    X = call_without_values(np.asarray, X, dtype=np.float64, name="X")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}.")
    lower, upper = _as_bounds(bounds)
    if lower.size not in (1, X.shape[1]):
        raise ValueError(f"bounds have {lower.size} entries but X has {X.shape[1]} columns.")
    width = upper - lower
    safe = np.where(width > 0, width, 1.0)
    out = 2.0 * (np.clip(X, lower, upper) - lower) / safe - 1.0
    return np.where(width > 0, out, 0.0)
