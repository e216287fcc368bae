"""Calibration entry point and mechanism selection (``mechanism="auto"``)."""

from .._validation import check_epsilon_delta
from ._base import _REGISTRY, Mechanism, get_mechanism
from ._query import Query

__all__ = ["calibrate", "select", "candidates", "applicable_names"]


def applicable_names(query, epsilon, delta):
    """Names of the verified, floating-point-safe mechanisms that apply (nothing calibrated)."""
    return [name for name in sorted(_REGISTRY)
            if _REGISTRY[name].verified and getattr(_REGISTRY[name], "float_safe", False)
            and _REGISTRY[name].applicable(query, epsilon, delta) is None]


def candidates(query, epsilon, delta):
    """Calibrate every verified mechanism that applies; return the NoiseSpecs."""
    return [_REGISTRY[name].calibrate(query, epsilon, delta)
            for name in applicable_names(query, epsilon, delta)]


def select(query, epsilon, delta):
    """The verified mechanism with the least expected squared error.

    Only mechanisms with ``verified = True`` that apply to the query's shape,
    sensitivity information and budget are compared; unverified mechanisms
    are never selected. Ties go to the alphabetically first name, so the
    choice is deterministic (it depends on public inputs only).

    Mechanisms with a cheap lower bound on their error
    (:meth:`~skdp.mechanisms._base.Mechanism.mse_lower_bound`: the
    non-identical Gaussian and Laplace, whose calibrations of a ``d x d``
    statistic take seconds) are calibrated last, and only when half their
    bound does not exceed the least error found so far: the choice is the
    one of calibrating them all.
    """
    if not isinstance(query, Query):
        raise TypeError(f"query must be a skdp.mechanisms.Query, got {type(query).__name__}.")
    epsilon, delta = check_epsilon_delta(epsilon, delta)
    names = applicable_names(query, epsilon, delta)
    bounded = {name: _REGISTRY[name] for name in names
               if type(_REGISTRY[name]).mse_lower_bound is not Mechanism.mse_lower_bound}
    best = None
    for name in [n for n in names if n not in bounded] + list(bounded):
        if name in bounded and best is not None:
            bound = bounded[name].mse_lower_bound(query, epsilon, delta)
            if bound is not None and 0.5 * bound > best.expected_squared_error:
                continue  # its error exceeds the best one's: it cannot change the choice
        # one calibration alive besides the best so far (those of a d x d statistic are large);
        # the least error wins, and of equal errors the alphabetically first name
        spec = _REGISTRY[name].calibrate(query, epsilon, delta)
        if best is None or ((spec.expected_squared_error, name)
                            < (best.expected_squared_error, best.mechanism)):
            best = spec
        del spec
    if best is None:
        raise ValueError(
            f"no verified mechanism applies to {query!r} at epsilon={epsilon}, delta={delta}."
        )
    return best


def calibrate(query, epsilon, delta=0.0, mechanism="auto"):
    """Calibrate noise for ``query`` at (epsilon, delta).

    Parameters
    ----------
    query : Query
    epsilon : float
        > 0.
    delta : float, default=0.0
        In [0, 1). Gaussian-type mechanisms need delta > 0.
    mechanism : str, default="auto"
        A registered mechanism name, or ``"auto"`` for the verified mechanism
        with the least expected squared error (:func:`select`).

    Returns
    -------
    NoiseSpec

    Examples
    --------
    >>> from skdp.mechanisms import Query, calibrate
    >>> spec = calibrate(Query(shape=(3,), l2_sensitivity=1.0), epsilon=1.0, delta=1e-5,
    ...                  mechanism="analytic_gaussian")
    >>> round(spec.params["sigma"], 4)
    3.7306
    """
    if mechanism == "auto":
        return select(query, epsilon, delta)
    if not isinstance(mechanism, str):
        raise ValueError(f"mechanism must be a name or 'auto', got {mechanism!r}.")
    return get_mechanism(mechanism).calibrate(query, epsilon, delta)
