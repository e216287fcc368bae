"""Validation of privacy parameters and public bounds, and row clipping.

This is the one place where epsilon, delta, data bounds and random states are
checked, so that every estimator and every mechanism rejects bad input in the
same way (privacy rule 6: a clear error, never a silent fallback).
"""

import decimal
import math
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import _get_feature_names

from .exceptions import BudgetExceededError, PrivacyLeakWarning, warn_at_caller

__all__ = [
    "check_epsilon_delta",
    "check_positive_finite",
    "check_generator",
    "check_data_norm",
    "clip_rows",
    "row_norms",
    "public_shape",
    "check_public_structure",
    "check_known_chunks",
    "check_sparse_structure",
    "validate_private_data",
    "call_without_values",
    "fit_generator",
]


def _is_real_scalar(x):
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


#: largest norm bound (``data_norm``, ``label_bound``, ``clip_norm``; given or inferred) that
#: is accepted: its fourth power and the products of the calibrations stay finite in float64
MAX_PUBLIC_BOUND = 2.0**128
#: smallest such bound accepted: below it the squares of the statistics' entries (gradient
#: norms, Gram entries) can underflow, which the floating-point error bounds do not cover
MIN_PUBLIC_BOUND = 2.0**-128


def check_positive_finite(value, name, allow_zero=False):
    """Return ``float(value)`` after checking it is a finite (strictly) positive real."""
    if not _is_real_scalar(value) and not (
        isinstance(value, np.ndarray) and value.ndim == 0
    ):
        raise ValueError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value!r}.")
    return value


def check_epsilon_delta(epsilon, delta, *, require_delta=False, allow_zero_epsilon=False):
    """Validate a privacy budget (epsilon, delta).

    Parameters
    ----------
    epsilon : float
        Must be finite and > 0.
    delta : float
        Must lie in [0, 1).
    require_delta : bool, default=False
        If True, delta must be > 0 (Gaussian-type mechanisms).

    Returns
    -------
    epsilon, delta : float

    Raises
    ------
    ValueError
        With a message naming the offending parameter.
    """
    if allow_zero_epsilon:
        epsilon = check_positive_finite(epsilon, "epsilon", allow_zero=True)
    else:
        epsilon = check_positive_finite(epsilon, "epsilon")
    if delta is None:
        raise ValueError("delta must be a number in [0, 1), got None.")
    if not _is_real_scalar(delta) and not (
        isinstance(delta, np.ndarray) and delta.ndim == 0
    ):
        raise ValueError(f"delta must be a real number in [0, 1), got {delta!r}.")
    delta = float(delta)
    if not np.isfinite(delta) or delta < 0 or delta >= 1:
        raise ValueError(f"delta must lie in [0, 1), got {delta!r}.")
    if require_delta and delta == 0:
        raise ValueError(
            "delta must be > 0 for a Gaussian-type mechanism: Gaussian noise "
            "cannot give pure epsilon-DP. Use a Laplace-type mechanism for delta=0."
        )
    return epsilon, delta


def check_generator(random_state):
    """Turn ``random_state`` into a :class:`numpy.random.Generator`.

    ``None`` gives fresh OS entropy; an int seeds a new PCG64 generator; a
    Generator is returned as is; a legacy ``RandomState`` seeds a new
    Generator from four 63-bit draws of its stream (:func:`seed_entropy`; so
    sklearn-style seeding stays reproducible, and an OS-seeded ``RandomState``
    hands on 252 bits, not the 32 bits of one draw that 2^32 trial fits
    would enumerate).
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(seed_entropy(random_state))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return np.random.default_rng(int(random_state))
    raise ValueError(
        f"random_state must be None, an int, a numpy Generator or RandomState; got {random_state!r}."
    )


def one_plus_exp(epsilon):
    """``1 + e^epsilon`` as a float: ``inf`` where the exponential overflows (epsilon above
    about 709), never an ``OverflowError``. Callers multiply it by a total-variation
    reserve, so ``inf`` (or ``0`` for a zero reserve, see :func:`scaled_reserve`) is the
    conservative value."""
    epsilon = float(epsilon)
    return math.inf if epsilon > 709.0 else 1.0 + math.exp(epsilon)


def scaled_reserve(epsilon, tv):
    """``(1 + e^epsilon) tv`` without overflow: ``0`` for ``tv = 0``, ``inf`` if it overflows."""
    tv = float(tv)
    return 0.0 if tv == 0.0 else one_plus_exp(epsilon) * tv


def row_norms(X):
    """Euclidean norm of every row of a 2-D array (no copy of X).

    Rows whose squared norm overflows float64 (entries near 1e154 and above)
    are recomputed with scaling, so the result is finite for every finite row.
    """
    X = np.asarray(X)
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    bad = ~np.isfinite(norms)
    if np.any(bad):
        rows = np.asarray(X[bad], dtype=np.float64)
        peak = np.max(np.abs(rows), axis=1)
        safe = np.where(peak > 0, peak, 1.0)
        with np.errstate(over="ignore", invalid="ignore"):
            norms[bad] = peak * np.linalg.norm(rows / safe[:, None], axis=1)
    return norms


def _leak_warning(estimator, name, attribute, what="bound"):
    """Warn that a public input was inferred from the data (no value in the message)."""
    who = f"{type(estimator).__name__}: " if estimator is not None else ""
    warn_at_caller(
        f"{who}{name} was not given, so the {what} was inferred from the private data and "
        f"stored in {attribute}. This leaks information about the data and voids the "
        f"privacy guarantee. Pass {name} as a public input to avoid this.",
        PrivacyLeakWarning,
    )


def check_data_norm(X, data_norm, *, name="data_norm", estimator=None):
    """Return the public row-norm bound, inferring it (with a warning) if omitted.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
    data_norm : float or None
        Public bound on every row's Euclidean norm. ``None`` means: infer the
        largest row norm from ``X`` and emit :class:`~skdp.PrivacyLeakWarning`
        (the inferred value depends on private data). Neither the warning
        nor any error message contains the inferred value.
    name : str
        Parameter name used in messages.

    Returns
    -------
    bound : float
        The bound to use; callers store it in a fitted attribute
        (``data_norm_``), never back into the parameter.

    Raises
    ------
    ValueError
        If the inferred bound is not a finite float64 (rows too large): pass
        a public bound instead.
    """
    if data_norm is not None:
        return check_positive_finite(data_norm, name)
    from ._stats import max_row_norm

    bound = max_row_norm(X)  # chunk by chunk (dense, float32, memmap) or on the sparse structure
    _leak_warning(estimator, name, f"{name}_")
    if not np.isfinite(bound) or bound > MAX_PUBLIC_BOUND:
        raise ValueError(
            f"{name} was not given and the row norms of X are too large to infer it in "
            f"float64 (the calibrations raise it to powers, which overflow). Pass {name} as a "
            "public bound."
        )
    if bound == 0.0:
        bound = 1.0
    return max(bound, MIN_PUBLIC_BOUND)  # (a larger bound is still a bound)


def clip_rows_for_transform(X, bound):
    """``X`` with every row of norm above the public ``bound`` scaled down to it (a projection
    of out-of-bound rows, never of the others; ``X`` itself where no row exceeds the bound).

    The private projections' ``transform`` applies it, as ``fit`` clips: a finite row near
    the float64 limit would otherwise project to inf, which a private step after it refuses
    after its own charge. Dense or sparse, the dtype kept."""
    from .linear_model._rows import row_norms_any

    factor = _clip_factor(row_norms_any(X), bound)
    if np.all(factor == 1.0):
        return X
    factor = factor.astype(X.dtype, copy=False)
    if sp.issparse(X):
        return (sp.diags(factor) @ X).asformat(X.format)
    return X * factor[:, None]


def saturate(A, dtype=None):
    """``A`` as ``dtype`` (default: its own) with values beyond that dtype's finite range
    saturated to its largest finite value, in place where the dtype is kept.

    The private transforms' float32 outputs: a value inside the public bounds (up to
    ``2^128``, above float32's largest ``3.4028235e38``) can overflow a float32 product, a
    centring or a whitening, and an inf that a private step after it refuses after its own
    charge tells that some record held such a value. ``A`` holds no NaN (finite inputs, no
    ``inf - inf``); float overflow while computing it is silenced by the caller."""
    dtype = np.dtype(A.dtype if dtype is None else dtype)
    big = np.finfo(dtype).max
    if A.dtype == dtype:
        return np.clip(A, -big, big, out=A)
    return np.clip(A, -big, big).astype(dtype)


def clip_rows(X, bound):
    """Scale every row of X whose Euclidean norm exceeds ``bound`` down to it.

    Rows inside the bound are untouched; the result is a new array.
    """
    X = np.asarray(X, dtype=float)
    return X * _clip_factor(row_norms(X), bound)[:, None]


def _clip_factor(norms, bound):
    """``min(1, bound / norm)`` per row; a zero row's ``bound / tiny`` overflows to inf, then
    1, without a warning (its existence would tell that the data has such a row)."""
    with np.errstate(over="ignore", divide="ignore"):
        return np.minimum(1.0, bound / np.maximum(norms, np.finfo(float).tiny))


def public_shape(X):
    """``(n_samples, n_features)`` of X from its structure alone (no values read).

    The number of rows and the number of columns are public under the
    replace-one relation, so errors they decide are raised before the budget
    is charged. Either entry is ``None`` when the structure of X does not
    tell it (validation of the data reports that later).
    """
    from sklearn.utils.validation import _num_features, _num_samples

    try:
        n = int(_num_samples(X))
    except Exception:
        n = None
    try:
        d = int(_num_features(X))
    except Exception:
        d = None
    return n, d


def _public_ndim(X):
    """The number of dimensions of X from its structure alone (``None`` if it does not tell).

    Arrays, sparse matrices, DataFrames and dask collections carry it as an
    attribute; for a list (or tuple) the type of its first entry decides
    (a scalar: 1-D, a sequence: 2-D or more). No value is converted.
    """
    shape = getattr(X, "shape", None)
    ndim = getattr(X, "ndim", None)
    if isinstance(ndim, numbers.Integral):
        return int(ndim)
    if isinstance(shape, tuple):
        return len(shape)
    if isinstance(X, (list, tuple)):
        if len(X) == 0:
            return None
        first = X[0]
        if isinstance(first, (str, bytes)) or not hasattr(first, "__len__"):
            return 1
        inner = _public_ndim(first)
        return None if inner is None else 1 + inner
    if X is None or isinstance(X, (numbers.Number, str, bytes)):
        return 0
    return None


_RESHAPE_HINT = ("Reshape your data either using array.reshape(-1, 1) if your data has a single "
                 "feature or array.reshape(1, -1) if it contains a single sample.")


def check_known_chunks(v, name):
    """Refuse a dask array whose chunk sizes are unknown (NaN), and a dask DataFrame or Series,
    before anything is charged.

    Its shape (the number of rows above all) is a public input under the
    replace-one relation: it is never counted from the data (a boolean mask
    leaves the chunk sizes unknown). A dask DataFrame never knows its length:
    counting it runs every partition (reads the data, and a worker's log can
    quote a cell that fails to convert) before the budget is checked, even
    for a fit the ledger then refuses (review 23, F2). Anything else passes
    unchanged.
    """
    from ._dask import is_dask_collection

    if not is_dask_collection(v):
        return
    if hasattr(v, "to_dask_array"):
        raise ValueError(
            f"{name} is a dask DataFrame or Series: its number of rows is a public input here, "
            "and counting it would run every partition before the budget is checked. Convert "
            f"it first with {name}.to_dask_array(lengths=True) (which counts the rows) and pass "
            "the array.")
    chunks = getattr(v, "chunks", None)
    if isinstance(chunks, tuple) and any(np.isnan(c) for axis in chunks for c in axis):
        raise ValueError(f"{name} has unknown chunk sizes: the number of rows is a public input "
                         f"here; call {name}.compute_chunk_sizes() first.")


def _dtype_name(dtype):
    """A dtype's name for a message, without values: a pandas sparse dtype prints its fill
    value, which pandas advises setting to the column's most common value (review 23, F3)."""
    if type(dtype).__name__ == "SparseDtype":
        return f"Sparse[{getattr(dtype, 'subtype', '?')}] (its fill value is not shown)"
    kinds = {"U": "str", "S": "bytes", "V": "void", "M": "datetime64", "m": "timedelta64"}
    if getattr(dtype, "kind", None) in kinds:
        # numpy's fixed-width text and void dtypes print their item size (<U9: the length of
        # the longest private string), dates and spans the finest unit among the values
        # (datetime64[us] when one holds a time of day): only the kind is named (reviews 32
        # F2, 35 F2)
        return kinds[dtype.kind]
    return str(dtype)


def _single_output(estimator):
    """Whether ``estimator`` fits one target column (its tags do not declare multi-output)."""
    from sklearn.utils import get_tags

    try:
        return not get_tags(estimator).target_tags.multi_output
    except Exception:  # not a scikit-learn estimator: no claim
        return False


def is_sparse_input(X):
    """Whether the validation of ``X`` gives a scipy.sparse matrix, from its structure: a
    scipy.sparse matrix or array, or a pandas DataFrame whose columns all have a sparse dtype
    (scikit-learn converts it to COO). Decides public choices before the charge (the
    kernel's chunks and their rounding bounds), which must match the validated input."""
    if sp.issparse(X):
        return True
    dtypes = getattr(X, "dtypes", None)
    if not hasattr(X, "sparse") or getattr(X, "ndim", 0) != 2 or dtypes is None:
        return False
    try:
        from pandas import SparseDtype
    except ImportError:  # pragma: no cover
        return False
    return len(dtypes) > 0 and all(isinstance(dt, SparseDtype) for dt in dtypes)


#: pandas extension dtypes whose values never convert to float (their kind is "O")
_NEVER_NUMERIC = ("PeriodDtype", "IntervalDtype")


def _is_zero(value):
    try:
        return bool(value == 0)
    except Exception:
        return False


def _check_public_dtype(A, name, refused):
    """Refuse, from the declared dtype(s) alone, kinds that the validation of the data refuses
    after the charge: complex (X, y and weights), strings, dates and void (X), pandas
    periods and intervals (X), and any kind but numbers and booleans for a dask collection
    (whose declared dtype is all its validation reads). ``np.matrix`` and masked arrays
    are refused by type (scikit-learn refuses the first after the charge; the mask of the
    second would be ignored). Object columns of other inputs are left to that validation
    (their values decide)."""
    if isinstance(A, np.matrix):
        raise TypeError(f"np.matrix is not supported: pass {name} as np.asarray({name}) "
                        "(decided by its type, before the budget is charged).")
    if isinstance(A, np.ma.MaskedArray):
        raise TypeError(f"masked arrays are not supported: {name}'s mask would be ignored; "
                        "fill the masked entries with a public constant first (decided by its "
                        "type, before the budget is charged).")
    dtypes = getattr(A, "dtypes", None)  # a DataFrame's columns
    if dtypes is None or not hasattr(dtypes, "__iter__"):
        dtypes = [getattr(A, "dtype", None)]
    dask = type(A).__module__.split(".")[0] == "dask" and hasattr(A, "__dask_graph__")
    for dtype in dtypes:
        kind = getattr(dtype, "kind", None)
        # the inputs whose dates are refused (X, weights, a regressor's y) must be numbers:
        # dtypes that never convert to one are refused with them
        never = "M" in refused and (
            type(dtype).__name__ in _NEVER_NUMERIC
            # a sparse column whose fill value is not 0 never converts (pandas' default fill for
            # float data is NaN)
            or (type(dtype).__name__ == "SparseDtype"
                and not _is_zero(getattr(dtype, "fill_value", 0))))
        if (isinstance(kind, str) and kind in refused) or never or (
                dask and isinstance(kind, str) and kind not in "biuf"):
            what = "Complex data" if kind == "c" else f"{name} of dtype {_dtype_name(dtype)}"
            raise ValueError(f"{what} not supported: {name} must be real numbers (its declared "
                             "dtype decides, before the budget is charged).")


def check_public_structure(X, y=None, *, estimator=None, requires_y=False):
    """``(n_samples, n_features)`` of X, after raising every error its structure decides.

    Reads only the structure of ``X`` and ``y`` (their types, numbers of
    dimensions, lengths and chunk sizes: public under the replace-one
    relation), never a value, so the errors come before the budget is
    charged and carry no value: X is not 2-D, its column names mix strings and
    other types, X has no feature, a dask X or
    ``y`` has unknown chunk sizes (:func:`check_known_chunks`), X's declared dtype is
    complex, a string, a date or void, or ``y``'s is complex, ``y`` is
    missing (``requires_y``), its length differs from X's (numpy, pandas or
    dask alike), or, for a single-output ``estimator`` that requires ``y``
    (its tags do not declare ``multi_output``), ``y`` has more than one
    column or more than two dimensions (a column ``(n, 1)`` passes:
    scikit-learn's validation ravels it with a ``DataConversionWarning``).
    Returns :func:`public_shape` of X.
    """
    who = f" by {type(estimator).__name__}" if estimator is not None else ""
    ndim = _public_ndim(X)
    if ndim == 0:
        raise ValueError(f"Expected 2D array, got scalar array instead: X must be 2-D. "
                         f"{_RESHAPE_HINT}")
    if ndim == 1:
        raise ValueError(f"Expected 2D array, got 1D array instead: X must be 2-D. {_RESHAPE_HINT}")
    if ndim is not None and ndim > 2:
        raise ValueError(f"Found array with dim {ndim}, while dim <= 2 is required{who}: X must "
                         "be 2-D.")
    check_known_chunks(X, "X")
    check_sparse_index_dtypes(X)
    # column names are schema: names that mix strings and other types raise now (scikit-learn's
    # check, reading X.columns only), not in the validation after the charge
    _get_feature_names(X)
    _check_public_dtype(X, "X", "cUSMmV")
    if y is not None:
        # a regressor's labels are numbers: dates, periods and intervals never convert
        from sklearn.base import is_regressor

        regressor = estimator is not None and is_regressor(estimator)
        _check_public_dtype(y, "y", "cMmV" if regressor else "c")
        if requires_y and _public_ndim(y) == 0:
            raise ValueError("y should be a 1d array, got a scalar instead: y holds one target "
                             "per row of X.")
        if requires_y and sp.issparse(y):  # its type: refused before the charge (review 30)
            raise ValueError("Sparse data was passed for y, but dense data is required: pass "
                             "y as a 1-D array (y.toarray().ravel()).")
    n, d = public_shape(X)
    if d == 0:
        shape = (n, 0) if n is not None else "(n_samples, 0)"
        raise ValueError(f"Found array with 0 feature(s) (shape={shape}) while a minimum of 1 is "
                         f"required{who}.")
    if requires_y and y is None:
        name = type(estimator).__name__ if estimator is not None else "this estimator"
        raise ValueError(f"{name} requires y to be passed, but the target y is None.")
    if y is None:
        return n, d
    check_known_chunks(y, "y")
    if requires_y and _single_output(estimator):
        _check_single_output(y, type(estimator).__name__)
    if n is not None:
        n_y = public_shape(y)[0]  # None if y is not array-like: the validation of the data reports it
        if n_y is not None and n_y != n:
            raise ValueError(
                f"Found input variables with inconsistent numbers of samples: [{n}, {n_y}]")
    return n, d


def _check_single_output(y, name):
    """Refuse a ``y`` of more than one column or more than two dimensions (structure only)."""
    ndim = _public_ndim(y)
    if ndim is None or ndim < 2:
        return
    n_columns = public_shape(y)[1] if ndim == 2 else None
    if ndim == 2 and n_columns in (1, None):  # a column (or unknown): the validation decides
        return
    shape = getattr(y, "shape", None)
    got = (f"an array of shape {tuple(shape)}" if isinstance(shape, tuple)
           else f"a {ndim}-D array" if ndim > 2 else f"an array of {n_columns} columns")
    raise ValueError(f"y should be a 1d array, got {got} instead: {name} fits one target "
                     "column.")


# Messages of scikit-learn / numpy validation errors that name only the structure of the
# input (shapes, lengths, dtypes, formats, column names), kept as they are. Every other
# message is replaced (it may quote a value of the data: numpy's conversion errors quote the
# offending cell, and check_array prints whole arrays).
_STRUCTURAL_MESSAGES = (
    "inconsistent numbers of samples",
    "feature(s) (shape=",
    "sample(s) (shape=",
    "dim <= 2 is required",
    "expected 2d input, got input with shape",
    "sparse",
    "requires y to be passed",
    "y should be a 1d array",
    "feature names",
    "features, but",
    "sample_weight.shape ==",
    "sample weights must be 1d array or scalar",
    "dtype='numeric' is not compatible",
    "unknown chunk sizes",
    "must be a dask array",
    "must be numeric, got dtype",
    "must be 1-d with one entry per row",
)


def spent_note(hint="impute missing values with a public constant"):
    """Appended to the errors about private values, raised after the budget was charged;
    ``hint``: what fixing the data could look like."""
    return (" The values are checked after the budget is charged (whether they pass is covered "
            "by the guarantee), so this fit's budget counts as spent: fix the data first"
            + (f" (for example {hint})." if hint else "."))


_SPENT_NOTE = spent_note()
#: for values that are not numbers at all (text in a numeric input)
_SPENT_NOTE_TEXT = spent_note("encode text columns with a OneHotEncoder or OrdinalEncoder whose "
                              "categories are public")


def _error_without_values(exc, name, spent=False):
    """A new exception for a failed validation of ``name``, without any value of the data."""
    msg = str(exc)
    low = msg.lower()
    cls = TypeError if isinstance(exc, TypeError) else ValueError
    if (isinstance(exc, (OverflowError, decimal.InvalidOperation))  # a cell beyond float64
            # (an int or a Fraction) or a signalling-NaN Decimal
            or "could not convert" in low or "invalid literal" in low or "argument must be" in low
            or "cannot convert" in low or "unable to convert" in low
            or "could not broadcast" in low or "setting an array element" in low
            or "inhomogeneous" in low):
        return cls(
            f"{name} contains values that cannot be converted to float (a float() argument must "
            "be a string or a real number, and a string must spell a number). The values are "
            "not shown: they are private data."
            + ((_SPENT_NOTE_TEXT if name == "X" else spent_note(None)) if spent else ""))
    if "complex" in low:
        return ValueError(f"Complex data not supported: {name} must be real-valued.")
    if "got 1d array" in low:
        return ValueError(f"Expected 2D array, got 1D array instead: {name} must be 2-D. "
                          f"{_RESHAPE_HINT}")
    if "got scalar array" in low:
        return ValueError(f"Expected 2D array, got scalar array instead: {name} must be 2-D. "
                          f"{_RESHAPE_HINT}")
    if "unknown label type" in low:
        return ValueError(
            "Unknown label type: y must hold discrete class labels (a classifier cannot fit a "
            "continuous or otherwise unsupported target). The labels are not shown: they are "
            "private data." + (spent_note(None) if spent else ""))
    if "contains nan" in low or "contains infinity" in low or "nan or inf" in low:
        return ValueError(f"Input {name} contains NaN or infinity (or a value too large for its "
                          "dtype). The values are not shown: they are private data."
                          + (_SPENT_NOTE if spent else ""))
    if "array=" not in low and any(m in low for m in _STRUCTURAL_MESSAGES):
        return cls(msg)
    return cls(
        f"{name} failed validation ({type(exc).__name__}); the original message is withheld "
        f"because it may quote private values. {name} must be a numeric array-like "
        "(2-D for X, 1-D for y and sample_weight) of finite real numbers."
        + (spent_note(None) if spent else ""))


def _failed_in_y(exc):
    """Whether a validation error of ``validate_data(X, y)`` was raised while checking y (or,
    re-masked, names y: an inner fit's message already rewritten without values)."""
    if str(exc).lower().startswith(("input y ", "y ")):
        return True
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name in ("_check_y", "column_or_1d"):
            return True
        tb = tb.tb_next
    return False


def call_without_values(fn, *args, name="X",
                        catch=(ValueError, TypeError, OverflowError, decimal.InvalidOperation),
                        spent=False, **kwargs):
    """``fn(*args, **kwargs)``, with its ``ValueError`` / ``TypeError`` (and the
    ``OverflowError`` / ``decimal.InvalidOperation`` of a cell beyond float64's range)
    re-raised without values.

    The one wrapper of every validation of private data (``validate_data``,
    ``_check_sample_weight``, ``check_classification_targets``): the error
    is replaced by :func:`_error_without_values`, which keeps the phrases
    that name the structure of the input ("Expected 2D array", "Input X
    contains NaN", "0 feature(s)", "Complex data not supported", "Unknown
    label type", ...) and never a value of the data. The original error is
    neither chained (``__cause__``) nor kept as ``__context__``. ``name``
    is the input's name; ``("X", "y")`` names the one whose check failed.
    ``catch``: the exception types replaced (``Exception`` where the call runs
    code that is not a validation, such as a search's runs: an ``IndexError``
    of a table lookup quotes its key too). ``spent``: the call comes after a fit's charge,
    and the messages about values say that the budget counts as spent.
    """
    try:
        return fn(*args, **kwargs)
    except BudgetExceededError:
        raise  # a ledger's refusal: its message has public values only
    except catch as exc:
        if isinstance(name, tuple):
            which = name[1] if _failed_in_y(exc) else name[0]
        else:
            which = name
        err = _error_without_values(exc, which, spent)
    # raised outside the handler: the original error is not attached as __context__
    raise err from None


def validate_private_data(estimator, X, y="no_validation", spent=None, **kwargs):
    """scikit-learn's ``validate_data`` whose errors carry no value of the data
    (:func:`call_without_values`). ``spent``: whether the fit was charged (default: a
    fit's validation, ``reset=True``, comes after its charge; predict's and transform's not)."""
    from sklearn.utils.validation import validate_data

    if spent is None:
        spent = kwargs.get("reset", True)
    if sp.issparse(X):
        check_sparse_structure(X, spent)
        X = _without_spare_capacity(X)
    if isinstance(y, str) and y == "no_validation":
        out = call_without_values(validate_data, estimator, X, name="X", spent=spent, **kwargs)
    else:
        out = call_without_values(validate_data, estimator, X, y, name=("X", "y"), spent=spent,
                                  **kwargs)
    if not kwargs.get("reset", True):
        # predict and transform read a sparse X with its duplicate entries summed, as fit
        # does: clipping or scaling the stored entries one by one, or a product over them,
        # would apply to each copy what is meant for their sum (review 34, F1-F3)
        if isinstance(out, tuple):
            return (_summed_duplicates(out[0]),) + tuple(out[1:])
        return _summed_duplicates(out)
    return out


def _without_spare_capacity(X):
    """A CSR/CSC matrix without stored values beyond ``indptr[-1]`` (views of its arrays).

    scipy ignores that capacity, but scikit-learn's finiteness check reads all of
    ``data``: a NaN there was refused, after a fit's charge, in a matrix that holds
    none (review 34, F5)."""
    if not sp.issparse(X) or X.format not in ("csr", "csc"):
        return X
    nnz = int(X.indptr[-1])
    if X.data.shape[0] == nnz and X.indices.shape[0] == nnz:
        return X
    return type(X)((X.data[:nnz], X.indices[:nnz], X.indptr), shape=X.shape)


def _summed_duplicates(X):
    """``X`` with duplicate entries summed if it is a CSR/CSC matrix that stores some (summed
    in float64, then back to ``X``'s dtype, saturated: :func:`saturate`), else ``X``."""
    from ._stats import canonical_sparse

    if not sp.issparse(X) or X.format not in ("csr", "csc"):
        return X
    summed = canonical_sparse(X, spent=False)  # (X itself when it stores no duplicate)
    if summed.dtype != X.dtype:
        summed = type(X)((saturate(summed.data, X.dtype), summed.indices, summed.indptr),
                         shape=X.shape)
    return summed


def _compressed_ok(indptr, indices, data, major, minor, data_ndim=1):
    """Whether compressed pointers and indices describe a ``major x minor`` matrix (``data``:
    one value per index, or one block for BSR's ``data_ndim=3``)."""
    ptr, idx = np.asarray(indptr), np.asarray(indices)
    if not (ptr.ndim == 1 and idx.ndim == 1 and np.ndim(data) == data_ndim
            and ptr.shape[0] == major + 1 and ptr.shape[0]
            and int(ptr[0]) == 0 and int(ptr[-1]) <= min(idx.shape[0], np.shape(data)[0])
            and bool(np.all(ptr[1:] >= ptr[:-1]))):
        return False
    nnz = int(ptr[-1])
    return nnz == 0 or (int(idx[:nnz].min()) >= 0 and int(idx[:nnz].max()) < minor)


def _indices_ok(coords, data, shape):
    """Whether each coordinate array has one entry per stored value, inside ``shape``."""
    coords = [np.asarray(c) for c in coords]
    if np.ndim(data) != 1 or not all(c.ndim == 1 and c.shape[0] == np.shape(data)[0]
                                     for c in coords):
        return False
    return np.shape(data)[0] == 0 or all(int(c.min()) >= 0 and int(c.max()) < size
                                         for c, size in zip(coords, shape))


def _index_dtype_ok(dtype):
    """Integers that cast safely to int64 (scipy builds int32 or int64; smaller ones work)."""
    return dtype.kind == "i" or (dtype.kind == "u" and dtype.itemsize < 8)


def check_sparse_index_dtypes(X):
    """Refuse a compressed sparse matrix whose index arrays are not integers that cast safely
    to int64 (uint64 set by hand failed with numpy's casting error inside the kernels, after
    the charge: review 34, F5). Their dtypes are public structure."""
    # (sparse only: a DataFrame's ``format`` attribute may be a column)
    if sp.issparse(X) and X.format in ("csr", "csc", "bsr") and not all(
            _index_dtype_ok(np.asarray(a).dtype) for a in (X.indptr, X.indices)):
        raise ValueError("X is a sparse matrix whose index arrays are not integers that fit "
                         "int64: convert them to int32 or int64 (decided by their dtypes, "
                         "before the budget is charged).")


def check_sparse_structure(X, spent=False):
    """Refuse a scipy.sparse matrix whose stored structure is corrupt: an index outside its
    shape, or compressed pointers that do not start at 0, decrease or pass the stored values.

    scipy's conversions and products trust the structure: a CSR matrix with a column index
    beyond its width crashed the process (a segfault in ``tocsc``) after the charge
    (review 23). O(nnz) reads, nothing copied but one flag per row; the message names no
    value (the sparsity pattern is private data too).
    """
    fmt = getattr(X, "format", None)
    check_sparse_index_dtypes(X)
    if fmt in ("csr", "csc"):
        major, minor = X.shape if fmt == "csr" else X.shape[::-1]
        ok = _compressed_ok(X.indptr, X.indices, X.data, major, minor)
    elif fmt == "bsr":  # a CSR structure over blocks (scipy's tocsr trusts it too)
        (r, c), (m, n) = X.blocksize, X.shape
        ok = (r > 0 and c > 0 and m % r == 0 and n % c == 0
              and _compressed_ok(X.indptr, X.indices, X.data, m // r, n // c, data_ndim=3)
              and tuple(X.data.shape[1:]) == (r, c))
    elif fmt == "coo":
        coords = getattr(X, "coords", None) or (X.row, X.col)
        ok = _indices_ok(coords, X.data, X.shape)
    elif fmt == "lil":  # rows: one list of column indices per row, data alike
        rows, data = X.rows, X.data
        ok = (len(rows) == len(data) == X.shape[0]
              and all(len(a) == len(b) for a, b in zip(rows, data)))
        if ok and len(rows):
            cols = np.concatenate([np.asarray(a, dtype=np.int64).ravel() for a in rows])
            ok = _indices_ok([cols], cols, X.shape[1:])
    elif fmt == "dok":  # keys: (row, column) pairs (dict methods bypass scipy's checks)
        keys = np.asarray(list(X.keys()), dtype=np.int64).reshape(-1, 2)
        ok = _indices_ok([keys[:, 0], keys[:, 1]], keys[:, 0], X.shape)
    elif fmt == "dia":  # out-of-range diagonals are masked by scipy's conversions
        ok = (np.ndim(X.data) == 2 and np.ndim(X.offsets) == 1
              and X.data.shape[0] == X.offsets.shape[0])
    else:
        ok = False  # a format this check does not know: refused rather than trusted
    if not ok:
        raise ValueError(
            "X is a sparse matrix whose stored structure is invalid (an index outside its shape, "
            "or row or column pointers that decrease): scipy cannot read it. The values are not "
            "shown: they are private data." + (_SPENT_NOTE if spent else ""))


def fit_generator(random_state, spend=None):
    """The generator of one fit's noise.

    ``None`` gives fresh OS entropy. A seed with a ledger ``spend`` record
    derives the stream from the seed *and* the record's serial number in its
    ledger (``SeedSequence(entropy, spawn_key=(serial,))``), so two fits
    charged to one ledger never share a noise draw even when they are given
    the same seed. The entropy is the int seed itself, or four 63-bit words
    drawn from a ``Generator`` or ``RandomState`` passed as the seed: a clone
    (``sklearn.base.clone`` deep-copies the generator, so every clone draws the
    same words) still gets its own stream from its own serial. Without a
    ledger a seed reproduces the same noise (and so do clones sharing a
    copied generator): that is for reproducible experiments only, and an
    estimator fitted with a seed carries it in its parameters, so whoever
    holds the estimator can replay its noise (see the privacy model).
    Without a ledger, generators and ``RandomState`` are handled as in
    :func:`check_generator`.
    """
    serial = getattr(spend, "serial", None)
    if serial is not None and serial >= 0 and random_state is not None:
        return np.random.default_rng(np.random.SeedSequence(seed_entropy(random_state),
                                                            spawn_key=(int(serial),)))
    return check_generator(random_state)


def seed_entropy(random_state):
    """The entropy a seed contributes to a ``SeedSequence``: the int itself, or four 63-bit
    words drawn from a ``Generator`` / ``RandomState`` (advancing it). Shared by
    :func:`fit_generator` and the search's root sequence, so that both mix a ledger's serial
    into every kind of seed."""
    if isinstance(random_state, np.random.Generator):
        return [int(v) for v in random_state.integers(0, 2**63, size=4)]
    if isinstance(random_state, np.random.RandomState):
        return [int(v) for v in random_state.randint(0, 2**63, size=4, dtype=np.int64)]
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return int(random_state)
    check_generator(random_state)  # raises the error for a bad value
    raise ValueError(f"random_state must be None, an int, a numpy Generator or RandomState; "
                     f"got {random_state!r}.")


def check_classes(classes, estimator=None):
    """Validate the public set of class labels (``None`` stays ``None``).

    Returns the sorted unique labels as an array. Raises ``ValueError``
    (before any budget is charged: ``classes`` is a public input) if it is
    not a 1-D list of at least two distinct labels.
    """
    if classes is None:
        return None
    who = f"{type(estimator).__name__}: " if estimator is not None else ""
    arr = np.asarray(classes)
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError(f"{who}classes must be a 1-D list of at least two class labels.")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{who}classes must not contain NaN or inf.")
    uniq = np.unique(arr)
    if uniq.size != arr.size:
        raise ValueError(f"{who}classes must not contain duplicate labels.")
    from sklearn.utils.multiclass import type_of_target

    with warnings.catch_warnings(), np.errstate(all="ignore"):  # (huge floats: int cast)
        warnings.simplefilter("ignore", RuntimeWarning)
        kind = type_of_target(uniq)
    if kind == "continuous":  # decided here, on the public list
        raise ValueError(f"{who}classes must be discrete labels: strings, or numbers that are "
                         "integers within the int64 range (scikit-learn reads these floats as "
                         "continuous values).")
    return uniq


def declared_label_dtype(y):
    """The dtype ``y``'s labels are declared with (structure only, no value): a categorical's
    categories' dtype, and pandas' string dtypes ("string", pandas 3's default "str") as
    numpy strings; other dtypes as they are (``None`` without one)."""
    dtype = getattr(y, "dtype", None)
    if type(dtype).__name__ == "CategoricalDtype":
        dtype = getattr(getattr(dtype, "categories", None), "dtype", None)
    if type(dtype).__name__ == "StringDtype":
        dtype = np.dtype("<U1")
    return dtype


def check_label_kind(y, classes, estimator=None):
    """Before the charge: refuse labels whose declared dtype can never match the public
    ``classes`` (numbers against strings, or strings against numbers).

    Reads the declared dtype of ``y`` only (a numpy array or a pandas Series; lists and
    object labels are left to :func:`encode_labels`, their values decide). Every label
    of such a ``y`` would be refused after the charge as "not in the declared classes".
    """
    if classes is None:
        return
    kind = getattr(declared_label_dtype(y), "kind", None)
    if not isinstance(kind, str):
        return
    numeric_classes = classes.dtype.kind in "biuf"
    string_classes = classes.dtype.kind in "US" or (
        classes.dtype.kind == "O" and all(isinstance(c, str) for c in classes.tolist()))
    # bytes and dates match neither numbers nor strings (bytes classes are refused)
    if (kind in "SMm" or (numeric_classes and kind == "U")
            or (string_classes and kind in "biuf")):
        who = f"{type(estimator).__name__}: " if estimator is not None else ""
        what = {"U": "strings", "S": "bytes", "M": "dates", "m": "time spans"}.get(kind, "numbers")
        declared = "numbers" if numeric_classes else "strings"
        raise ValueError(f"{who}y holds {what} (its dtype is {_dtype_name(y.dtype)}) and the "
                         f"declared classes are {declared}: no label could match. Convert y or "
                         "classes (decided by the dtypes, before the budget is charged).")


def encode_labels(y, classes, estimator=None):
    """Map labels to indices into the public ``classes``.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
    classes : ndarray or None
        The validated public classes (:func:`check_classes`). ``None``:
        infer them from ``y`` with a :class:`~skdp.PrivacyLeakWarning` (the
        set of labels present is private).

    Returns
    -------
    classes_ : ndarray
        The classes of the release: ``classes`` when given, whatever the data.
    y_idx : ndarray of int
        Index of each label in ``classes_``.

    Raises
    ------
    ValueError
        If ``y`` holds a label outside the declared ``classes`` (a format
        error for the data holder; the message names no label), or, with
        inferred classes, fewer than two classes are present.
    """
    who = f"{type(estimator).__name__}: " if estimator is not None else ""
    if classes is None:
        _leak_warning(estimator, "classes", "classes_", what="set of class labels")
        classes_, y_idx = np.unique(y, return_inverse=True)
        if classes_.size < 2:
            raise ValueError(
                f"{who}the data contain only one class, and classes was not given. "
                "Pass the public set of classes (classes=[...]) to fit data of any composition."
                + spent_note(None))
        return classes_, y_idx.ravel()
    try:
        y_arr = np.asarray(y)
        if classes.dtype.kind in "OUS" or y_arr.dtype.kind in "OUS":
            lookup = {label: i for i, label in enumerate(classes.tolist())}
            y_idx = np.fromiter((lookup.get(v, -1) for v in y_arr.tolist()), dtype=np.intp,
                                count=y_arr.size)
        else:
            pos = np.searchsorted(classes, y_arr)
            pos = np.clip(pos, 0, classes.size - 1)
            y_idx = np.where(classes[pos] == y_arr, pos, -1)
    except TypeError:
        y_idx = np.full(np.size(y), -1)
    if np.any(y_idx < 0):
        raise ValueError(
            f"{who}y contains labels that are not in the declared classes. Map or drop such "
            "records before fitting (the labels are not shown: they are private data)."
            + spent_note(None))
    return classes, y_idx
