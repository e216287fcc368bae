"""Validation of privacy parameters and public bounds, and row clipping.

This is the one place where epsilon, delta, data bounds and random states are
checked, so that every estimator and every mechanism rejects bad input in the
same way (privacy rule 6: a clear error, never a silent fallback).
"""

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


def row_norms(X):
    """Euclidean norm of every row of a 2-D array (no copy of X)."""
    X = np.asarray(X)
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def check_data_norm(X, data_norm, *, name="data_norm", estimator=None):
    """Return the public row-norm bound, inferring it (with a warning) if omitted.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    data_norm : float or None
        Public bound on every row's Euclidean norm. ``None`` means: infer the
        largest row norm from ``X`` and emit :class:`~skdp.PrivacyLeakWarning`
        (the inferred value depends on private data).
    name : str
        Parameter name used in messages.

    Returns
    -------
    bound : float
        The bound to use; callers store it in a fitted attribute
        (``data_norm_``), never back into the parameter.
    """
    if data_norm is not None:
        return check_positive_finite(data_norm, name)
    norms = row_norms(X)
    bound = float(norms.max()) if norms.size else 0.0
    who = f"{type(estimator).__name__}: " if estimator is not None else ""
    warnings.warn(
        f"{who}{name} was not given, so it was inferred from the data as "
        f"{bound:.6g}. This leaks information about the private data and voids "
        f"the privacy guarantee. Pass {name} as a public bound to avoid this.",
        PrivacyLeakWarning,
        stacklevel=3,
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
