"""Mechanism and NoiseSpec: the contract between estimators and the core.

A :class:`Mechanism` turns a :class:`~skdp.mechanisms.Query` and a budget
(epsilon, delta) into a :class:`NoiseSpec`: the calibrated noise distribution,
what it guarantees and how much error it adds. Estimators never draw noise
themselves; they call ``spec.sample(rng)`` (or ``spec.privatize``).
"""

from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from .._validation import check_epsilon_delta, check_generator
from ..exceptions import PrivacyGuaranteeWarning, warn_at_caller
from ._query import Query, _upper_triangle

__all__ = ["Mechanism", "NoiseSpec", "register", "get_mechanism", "available_mechanisms"]

_REGISTRY = {}


class Mechanism:
    """Base class of every noise mechanism of the core.

    Subclasses set ``name``, ``verified``, ``pure`` (True when the mechanism
    gives pure epsilon-DP, delta = 0 allowed), ``needs_profile`` (True when
    it only answers queries with a sensitivity profile) and implement
    :meth:`_check_applicable`, :meth:`_calibrate` and :meth:`_sample`.

    Attributes
    ----------
    name : str
        Registry name.
    verified : bool
        True only when the privacy guarantee is established (a proof we
        checked, and a passing statistical audit). Unverified mechanisms warn
        with :class:`~skdp.PrivacyGuaranteeWarning` on every calibration and
        are never chosen by ``mechanism="auto"``.
    failure : str
        For unverified mechanisms: the measured failure, quoted in the warning.
    float_safe : bool
        True when the release is safe against floating-point attacks (on a
        public grid with discrete noise, :mod:`skdp.mechanisms._grid`).
        ``mechanism="auto"`` chooses only verified, floating-point-safe
        mechanisms; the others warn when calibrated by name.
    """

    name = None
    verified = True
    float_safe = False  # True: releases on a grid (skdp.mechanisms._grid); only these are "auto"
    pure = False
    needs_profile = False
    failure = ""

    # -- to implement ---------------------------------------------------
    def _check_applicable(self, query, epsilon, delta):
        """Return None if the mechanism can answer, else a reason string."""
        return None

    def _calibrate(self, query, epsilon, delta):
        """Return (params: dict, expected_squared_error: float)."""
        raise NotImplementedError

    def _sample(self, spec, rng):
        """Draw one noise array with shape ``spec.query.shape``."""
        raise NotImplementedError

    # -- public -----------------------------------------------------------
    def applicable(self, query, epsilon, delta):
        """Reason why this mechanism cannot answer the query, or None."""
        if delta == 0 and not self.pure:
            return f"{self.name} needs delta > 0"
        if self.needs_profile and query.sensitivity_profile is None:
            return "it needs a per-coordinate sensitivity profile"
        return self._check_applicable(query, epsilon, delta)

    def mse_lower_bound(self, query, epsilon, delta):
        """A lower bound on the expected squared error :meth:`calibrate` would report for
        an applicable ``query``, cheaper than the calibration, or None (no bound: the
        default, and where the bound would not be a finite float). ``mechanism="auto"``
        skips a candidate whose bound exceeds the error of one already calibrated
        (:func:`skdp.mechanisms.selection.select`)."""
        return None

    def calibrate(self, query, epsilon, delta, *, warn=True):
        """Calibrate this mechanism for ``query`` at (epsilon, delta).

        Raises
        ------
        ValueError
            If epsilon/delta are invalid or the mechanism does not apply.
        """
        if not isinstance(query, Query):
            raise TypeError(f"query must be a skdp.mechanisms.Query, got {type(query).__name__}.")
        epsilon, delta = check_epsilon_delta(epsilon, delta, require_delta=not self.pure)
        reason = self.applicable(query, epsilon, delta)
        if reason is not None:
            raise ValueError(f"mechanism {self.name!r} cannot answer this query: {reason}.")
        if warn and not self.verified:
            warn_unverified(self)
        elif warn and not self.float_safe:
            warn_at_caller(
                f"mechanism {self.name!r} adds floating-point noise: its guarantee holds in exact "
                "arithmetic, but its safety against attacks on the low bits of the release "
                "(Mironov 2012) is not established, and mechanism='auto' never chooses it. The "
                "Gaussian and Laplace mechanisms release on a grid and are safe.",
                PrivacyGuaranteeWarning,
            )
        params, mse = self._calibrate(query, epsilon, delta)
        return NoiseSpec(
            mechanism=self.name,
            query=query,
            epsilon=epsilon,
            delta=delta,
            verified=self.verified,
            params=MappingProxyType(dict(params)),
            expected_squared_error=float(mse),
        )

    def __repr__(self):
        return f"<Mechanism {self.name!r} verified={self.verified}>"


def _usable_bound(bound):
    """Whether an error bound can prune (:meth:`Mechanism.mse_lower_bound`): finite, and far
    enough above the subnormal range that the calibrated errors it is compared with do not
    underflow to 0 where the bound does not (review 36, F2)."""
    return bool(np.isfinite(bound)) and bound >= np.finfo(float).tiny * 2.0**52


def warn_unverified(mechanism):
    warn_at_caller(
        f"mechanism {mechanism.name!r} is NOT verified differentially private: "
        f"{mechanism.failure} Its output must not be presented as DP.",
        PrivacyGuaranteeWarning,
    )


@dataclass(frozen=True, eq=False)
class NoiseSpec:
    """A calibrated noise distribution for one query.

    Attributes
    ----------
    mechanism : str
        Registry name of the mechanism.
    query : Query
        The query it was calibrated for.
    epsilon, delta : float
        The guarantee it is calibrated to (meaningful only if ``verified``).
    verified : bool
        Whether the guarantee is established (see :class:`Mechanism`).
    params : mapping
        Mechanism parameters (e.g. ``sigma``, per-coordinate ``scales``).
    expected_squared_error : float
        ``E ||noise||^2`` summed over all entries of the statistic (Frobenius
        for matrices; for symmetric queries both mirrored halves count).
    """

    mechanism: str
    query: Query
    epsilon: float
    delta: float
    verified: bool
    params: MappingProxyType = field(repr=False)
    expected_squared_error: float

    def __reduce__(self):  # MappingProxyType does not pickle
        return (
            _rebuild_spec,
            (self.mechanism, self.query, self.epsilon, self.delta, self.verified,
             dict(self.params), self.expected_squared_error),
        )

    @property
    def mechanism_(self):
        return get_mechanism(self.mechanism)

    def sample(self, random_state=None):
        """Draw noise with the query's shape (scalar query: a float)."""
        rng = check_generator(random_state)
        noise = self.mechanism_._sample(self, rng)
        noise = np.asarray(noise, dtype=float)
        if self.query.shape == ():
            return float(noise.reshape(()))
        return noise.reshape(self.query.shape)

    def privatize(self, value, random_state=None):
        """Release ``value`` with noise, after checking the value's shape.

        Mechanisms calibrated on a grid (``"grid"`` in ``params``: the verified
        Gaussian and Laplace families) release ``g * (round(value / g) + Y)``
        with integer noise ``Y`` (floating-point safe, see
        :mod:`skdp.mechanisms._grid`); others return ``value + sample()``. Always
        release through this method: ``value + sample()`` is not on the grid.
        """
        value = np.asarray(value, dtype=float)
        if value.shape != self.query.shape:
            raise ValueError(
                f"value has shape {value.shape}, but the spec was calibrated for {self.query.shape}."
            )
        if not np.all(np.isfinite(value)):
            raise ValueError("the statistic to privatize contains NaN or inf.")
        mech = self.mechanism_
        if "grid" in self.params:  # floating-point-safe release on a grid (skdp.mechanisms._grid)
            rng = check_generator(random_state)
            released = mech._release(self, self._released_coordinates(value), rng)
            out = self.query.expand(released)
            return float(out.reshape(())) if self.query.shape == () else out
        return value + self.sample(random_state)

    def gaussian_curve(self):
        """The release's :class:`skdp._filter.GaussianCurve`, or ``None``.

        For the grid Gaussian mechanisms: the GDP parameter of the ideal
        release (rounded statistic plus continuous Gaussian noise,
        ``mu = Delta_rounded / sigma``, or the i.n.i.d. ``mu0``) and the
        sampler's total variation to it. ``None`` for every other mechanism.
        Ledgers with ``composition="filter"`` compose Gaussian fits by it.
        """
        fn = getattr(self.mechanism_, "_gaussian_curve", None)
        return None if fn is None else fn(self)

    def _released_coordinates(self, value):
        if self.query.symmetric:
            return _upper_triangle(value)
        return value.reshape(-1)


def _rebuild_spec(mechanism, query, epsilon, delta, verified, params, mse):
    return NoiseSpec(mechanism, query, epsilon, delta, verified, MappingProxyType(params), mse)


#: functions called after the registry changes (caches of values computed from mechanisms
#: named in it: the C="auto" rule of skdp.linear_model._erm)
_ON_REGISTER = []


def register(mechanism):
    """Add a mechanism instance to the registry (by its ``name``)."""
    if not isinstance(mechanism, Mechanism) or not mechanism.name:
        raise TypeError("register takes a named Mechanism instance.")
    _REGISTRY[mechanism.name] = mechanism
    for hook in _ON_REGISTER:
        hook()
    return mechanism


def get_mechanism(name):
    """Look up a registered mechanism by name."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown mechanism {name!r}; available: {sorted(_REGISTRY)} or 'auto'."
        ) from None


def available_mechanisms(verified_only=False):
    """Names of the registered mechanisms."""
    return sorted(n for n, m in _REGISTRY.items() if m.verified or not verified_only)
