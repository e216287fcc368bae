"""Estimator-level privacy audit: the whole fit, exceptions and shapes included.

:func:`audit_samples` audits a mechanism from its outputs. An estimator
releases more than its noisy statistic: *whether* the fit returned, the
*shape* of what it returned (how many rows ``coef_`` has, which ``classes_``)
and the values. :func:`audit_estimator` fits an estimator many times on two
neighbouring datasets, reduces every outcome to

* a **structure** vector: did the fit raise, the size of every released
  array, the released class labels;
* a **value** vector: the released numbers, padded to a fixed length,

and certifies a lower bound on delta for each with :func:`audit_samples`
(Bonferroni: each at ``alpha / 2``). The reported result is the larger of the
two bounds. A structure difference that has probability one (three rows of
coefficients on ``D``, one on ``D'``) certifies a delta close to 1.
"""

import zlib
from dataclasses import replace
from numbers import Integral

import numpy as np
from sklearn.base import clone

from .._validation import check_epsilon_delta, check_generator
from ._audit import AuditResult, audit_samples

__all__ = ["audit_estimator", "DEFAULT_RELEASE_ATTRIBUTES"]

#: fitted attributes released by skdp estimators, in the order they are read
DEFAULT_RELEASE_ATTRIBUTES = (
    "coef_", "intercept_", "components_", "mean_", "explained_variance_", "sketch_",
    "scale_", "var_",
)


def _param_names(estimator, key):
    return [k for k in estimator.get_params(deep=True) if k == key or k.endswith("__" + key)]


def _label_code(value):
    if isinstance(value, (Integral, float, np.integer, np.floating)) and np.isfinite(value):
        return float(value)
    return float(zlib.crc32(repr(value).encode()) % 1_000_003)


def _outcome(estimator, X, y, fit_params, release, attributes):
    """(raised, structure list, value array) of one fit."""
    try:
        est = estimator.fit(X, y, **fit_params) if y is not None else estimator.fit(X, **fit_params)
    except Exception:  # noqa: BLE001 - a failed fit is an outcome of the release
        return 1.0, [], np.zeros(0)
    structure, values = [], []
    for name in attributes:
        arr = getattr(est, name, None)
        if arr is None:
            structure.append(-1.0)
            continue
        arr = np.asarray(arr)
        structure.extend([float(arr.size), float(arr.ndim)] + [float(s) for s in arr.shape[:2]])
        if release is None and arr.dtype.kind in "fiub":
            values.append(arr.astype(float).ravel())
    classes = getattr(est, "classes_", None)
    if classes is not None:
        codes = [_label_code(c) for c in np.asarray(classes).ravel().tolist()]
        structure.extend([float(len(codes))] + codes)
    if release is not None:
        values = [np.asarray(release(est), dtype=float).ravel()]
    vals = np.concatenate(values) if values else np.zeros(0)
    return 0.0, structure, vals


def _pad(rows, width, fill):
    out = np.full((len(rows), max(width, 1)), fill, dtype=float)
    for i, r in enumerate(rows):
        r = np.asarray(r, dtype=float)[:width]
        out[i, : r.size] = r
    return out


def _finite(a):
    """NaN and inf become finite sentinels (the audit needs finite samples)."""
    big = 1e12
    return np.nan_to_num(np.clip(a, -big, big), nan=-2 * big, posinf=big, neginf=-big)


def audit_estimator(estimator, X, y, X_prime, y_prime=None, *, epsilon=None, delta=None,
                    n_fits=2000, release=None, fit_params=None, random_state=0, alpha=0.05,
                    events=None, max_features=64, attributes=DEFAULT_RELEASE_ATTRIBUTES):
    """Audit an estimator's whole fit on a pair of neighbouring datasets.

    The estimator is cloned and fitted ``n_fits`` times on ``(X, y)`` and
    ``n_fits`` times on ``(X_prime, y_prime)``. Every ``random_state``
    parameter (at any depth, e.g. inside a pipeline) gets a fresh int from
    the audit's own generator for each fit, and every ``accountant`` is
    removed, so the audit is reproducible and charges nothing.

    Each outcome is reduced to a *structure* vector (whether the fit raised,
    the size, number of dimensions and shape of each released attribute, and
    the released ``classes_``) and a *value* vector (the released numbers:
    by default the flattened attributes in ``attributes`` that exist; or
    ``release(fitted_estimator)``), padded with zeros to a fixed length of at
    most ``max_features``. Both sets are audited with
    :func:`skdp.audit.audit_samples` at ``alpha / 2`` each and the result with
    the larger certified lower bound on delta is returned.

    Parameters
    ----------
    estimator : estimator
        Unfitted estimator (or pipeline); it is cloned for every fit.
    X, y : array-like
        The dataset ``D`` (``y`` may be None for unsupervised estimators).
    X_prime, y_prime : array-like
        Its neighbour ``D'`` (one record replaced, same number of rows).
    epsilon, delta : float, default=None
        The claim to audit; default: the estimator's own ``epsilon`` and
        ``delta`` parameters.
    n_fits : int, default=2000
        Fits per dataset (>= 4). Half select the events, half certify them.
    release : callable, default=None
        ``release(fitted) -> 1-D array`` overriding the value vector.
    fit_params : dict, default=None
        Extra arguments of ``fit``.
    random_state : int, default=0
        Seeds the fits and the audit (reproducible).
    alpha : float, default=0.05
        The reported bound fails with probability at most ``alpha``.
    events : str or sequence of str, default=None
        Event families of :func:`audit_samples` for the value audit
        (the structure audit uses halfspaces and balls).
    max_features : int, default=64
        Largest value vector (longer releases are truncated).
    attributes : sequence of str
        Fitted attributes read for the structure (and the default values).

    Returns
    -------
    AuditResult
        ``passed = False`` is a certified violation of (epsilon, delta)-DP at
        confidence ``1 - alpha`` *for this pair*. ``passed = True`` is
        evidence only: the pair may not be the worst one (choosing worst-case
        neighbours is the caller's job), the event families may miss the
        worst event, and with ``n_fits`` fits the resolution is about
        ``1/sqrt(n_fits)``, so audits have power only at moderate claimed
        delta (about 0.01-0.1) and on small releases. Its ``event`` says
        which of the two audits ("structure" or "values") gave the bound.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import PrivatePCA
    >>> from skdp.audit import audit_estimator
    >>> X = np.zeros((20, 2)); X_prime = X.copy(); X_prime[0] = [1.0, 0.0]
    >>> res = audit_estimator(PrivatePCA(epsilon=1.0, delta=0.05, data_norm=1.0), X, None,
    ...                       X_prime, n_fits=400, release=lambda est: est.mean_)
    >>> res.passed
    True
    """
    n_fits = int(n_fits)
    if n_fits < 4:
        raise ValueError(f"n_fits must be >= 4, got {n_fits}.")
    params = estimator.get_params(deep=False)
    if epsilon is None:
        if "epsilon" not in params:
            raise ValueError("the estimator has no epsilon parameter: pass epsilon (and delta).")
        epsilon = params["epsilon"]
    if delta is None:
        delta = params.get("delta", 0.0)
        if delta is None:
            raise ValueError("the estimator's delta is None (data-dependent default): pass delta.")
    epsilon, delta = check_epsilon_delta(epsilon, delta)
    if np.shape(X)[0] != np.shape(X_prime)[0]:
        raise ValueError("X and X_prime must have the same number of rows (n is public).")
    if y_prime is None:
        y_prime = y  # a pair that differs in X only
    if y is not None and np.shape(y) != np.shape(y_prime):
        raise ValueError("y and y_prime must have the same shape.")
    if release is not None and not callable(release):
        raise ValueError("release must be a callable fitted_estimator -> 1-D array.")
    fit_params = {} if fit_params is None else dict(fit_params)
    rng = check_generator(random_state)
    base = clone(estimator)
    base.set_params(**{k: None for k in _param_names(base, "accountant")})
    seed_names = _param_names(base, "random_state")

    outcomes = ([], [])
    for side, (Xs, ys) in enumerate(((X, y), (X_prime, y_prime))):
        for _ in range(n_fits):
            est = clone(base)
            est.set_params(**{k: int(rng.integers(0, 2**31 - 1)) for k in seed_names})
            outcomes[side].append(_outcome(est, Xs, ys, fit_params, release, attributes))

    all_out = outcomes[0] + outcomes[1]
    s_width = max(len(o[1]) for o in all_out)
    v_width = min(int(max_features), max(o[2].size for o in all_out))
    S = [_pad([[o[0]] + o[1] for o in side], s_width + 1, -7.0) for side in outcomes]
    V = [_finite(_pad([o[2] for o in side], v_width, 0.0)) for side in outcomes]
    # the two sides are drawn in the same order; shuffle so halves are exchangeable
    results = []
    for kind, (A0, A1), fams in (("structure", S, ("halfspace", "ball")), ("values", V, events)):
        if np.all(A0 == A0[0]) and np.all(A1 == A0[0]):
            continue  # identical constant outcomes: no event separates them
        res = audit_samples(A0[rng.permutation(len(A0))], A1[rng.permutation(len(A1))],
                            epsilon, delta, alpha=alpha / 2.0, events=fams)
        results.append((res.delta_lower_bound, kind, res))
    if not results:
        return AuditResult(epsilon=epsilon, delta=delta, delta_lower_bound=0.0, passed=True,
                           event="none (every fit on both datasets had the same outcome)",
                           n_samples=n_fits, p_hat=np.nan, p_prime_hat=np.nan,
                           delta_hat=np.nan, alpha=alpha, n_events=0)
    bound, kind, res = max(results, key=lambda t: t[0])
    return replace(res, event=f"{kind}: {res.event}", alpha=alpha)
