"""Validation of privacy parameters and public bounds, and row clipping.

This is the one place where epsilon, delta, data bounds and random states are
checked, so that every estimator and every mechanism rejects bad input in the
same way (privacy rule 6: a clear error, never a silent fallback).
"""

import math
import numbers
import warnings

import numpy as np

from .exceptions import PrivacyLeakWarning

__all__ = [
    "check_epsilon_delta",
    "check_positive_finite",
    "check_generator",
    "check_data_norm",
    "clip_rows",
    "row_norms",
    "public_shape",
    "fit_generator",
]


def _is_real_scalar(x):
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


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
    Generator from one draw of its stream (so sklearn-style seeding stays
    reproducible).
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**32 - 1, dtype=np.uint64))
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
    warnings.warn(
        f"{who}{name} was not given, so the {what} was inferred from the private data and "
        f"stored in {attribute}. This leaks information about the data and voids the "
        f"privacy guarantee. Pass {name} as a public input to avoid this.",
        PrivacyLeakWarning,
        stacklevel=4,
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
    if not np.isfinite(bound) or bound > np.sqrt(np.finfo(np.float64).max):
        raise ValueError(
            f"{name} was not given and the row norms of X are too large to infer it in "
            f"float64 (their squares overflow). Pass {name} as a public bound."
        )
    if bound == 0.0:
        bound = 1.0
    return bound


def clip_rows(X, bound):
    """Scale every row of X whose Euclidean norm exceeds ``bound`` down to it.

    Rows inside the bound are untouched; the result is a new array.
    """
    X = np.asarray(X, dtype=float)
    norms = row_norms(X)
    scale = np.minimum(1.0, bound / np.maximum(norms, np.finfo(float).tiny))
    return X * scale[:, None]


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
        if isinstance(random_state, np.random.Generator):
            entropy = [int(v) for v in random_state.integers(0, 2**63, size=4)]
        elif isinstance(random_state, np.random.RandomState):
            entropy = [int(v) for v in random_state.randint(0, 2**63, size=4, dtype=np.int64)]
        elif isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
            entropy = int(random_state)
        else:
            return check_generator(random_state)  # raises the error for a bad value
        return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(int(serial),)))
    return check_generator(random_state)


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
    return uniq


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
            )
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
        )
    return classes, y_idx
