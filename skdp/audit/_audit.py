"""Statistical privacy audit: certified lower bounds on the true delta.

A mechanism ``M`` is (epsilon, delta)-DP iff for every pair of neighbouring
datasets ``D ~ D'`` and every measurable event ``S``

    P[M(D) in S] - e^epsilon P[M(D') in S] <= delta          (both orders).

Any event ``S`` therefore witnesses a **lower bound** on the smallest delta
the mechanism satisfies at ``epsilon``. The audit draws samples of ``M(D)``
and ``M(D')``, searches a family of events for the largest gap, and turns
the gap into a one-sided confidence bound with Clopper-Pearson intervals.

What a result means
-------------------
``delta_lower_bound`` is a lower bound on the true delta that holds with
probability at least ``1 - alpha`` (over the audit's own randomness). Hence

* ``passed = False`` (``delta_lower_bound > delta``) is a **certified
  violation** at confidence ``1 - alpha``: the mechanism is not
  (epsilon, delta)-DP for the audited pair.
* ``passed = True`` is only evidence, never proof: the event family may miss
  the worst event, the pair may not be the worst pair, and the sample size
  limits the resolution to deltas of order ``1/sqrt(n_samples)``. Audits have
  power only at moderate delta (about 0.01 to 0.1) and small dimension.
"""

from dataclasses import dataclass

import numpy as np
from scipy.stats import beta as _beta

from .._validation import check_epsilon_delta, check_generator

__all__ = ["AuditResult", "audit_spec", "audit_samples", "clopper_pearson"]

_ALL_EVENTS = ("halfspace", "ball", "ratio", "likelihood")


@dataclass(frozen=True)
class AuditResult:
    """Outcome of a statistical privacy audit.

    Attributes
    ----------
    epsilon : float
        The epsilon at which delta is audited.
    delta : float
        The claimed delta (also available as ``claimed_delta``).
    delta_lower_bound : float
        Lower bound on the true delta at ``epsilon``, valid with probability
        at least ``1 - alpha``; floored at 0.
    passed : bool
        ``delta_lower_bound <= delta``. ``False`` is a certified violation
        at confidence ``1 - alpha``; ``True`` is evidence, not proof.
    event : str
        Description of the best certified event ``S`` and its direction.
    n_samples : int
        Number of samples drawn from each of the two output distributions
        (half of them select events, the other half certify them).
    p_hat : float
        Frequency of the best event under the distribution whose
        probability is bounded above (``P[M(D) in S]`` for direction
        ``D vs D'``), on the certification half.
    p_prime_hat : float
        Frequency of the best event under the other distribution, on the
        certification half.
    delta_hat : float
        Point estimate ``p_hat - e^epsilon p_prime_hat`` (not a bound).
    alpha : float
        Significance level of the bound.
    n_events : int
        Number of candidate events searched on the selection half.
    """

    epsilon: float
    delta: float
    delta_lower_bound: float
    passed: bool
    event: str
    n_samples: int
    p_hat: float
    p_prime_hat: float
    delta_hat: float
    alpha: float
    n_events: int

    @property
    def claimed_delta(self):
        """The claimed delta (alias of ``delta``)."""
        return self.delta


# ---------------------------------------------------------------------------
# Clopper-Pearson
# ---------------------------------------------------------------------------
def clopper_pearson(k, n, level, side):
    """One-sided exact (Clopper-Pearson) binomial confidence bound.

    Parameters
    ----------
    k : int or array of int
        Number of successes.
    n : int or array of int
        Number of trials (> 0).
    level : float
        One-sided error probability ``a`` in (0, 1): the bound is violated
        with probability at most ``a``.
    side : {"lower", "upper"}

    Returns
    -------
    bound : float or ndarray
        ``lower``: ``Beta.ppf(a, k, n - k + 1)`` (0 when ``k = 0``);
        ``upper``: ``Beta.ppf(1 - a, k + 1, n - k)`` (1 when ``k = n``).

    References
    ----------
    Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or
    fiducial limits illustrated in the case of the binomial. Biometrika 26.
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}.")
    if np.any(n <= 0) or np.any(k < 0) or np.any(k > n):
        raise ValueError("clopper_pearson needs 0 <= k <= n and n > 0.")
    if side == "lower":
        safe = np.maximum(k, 1.0)
        out = np.where(k == 0, 0.0, _beta.ppf(level, safe, n - safe + 1.0))
    elif side == "upper":
        safe = np.minimum(k, n - 1.0)
        out = np.where(k == n, 1.0, _beta.isf(level, safe + 1.0, n - safe))
    else:
        raise ValueError(f"side must be 'lower' or 'upper', got {side!r}.")
    return out[()] if out.ndim == 0 else out


# ---------------------------------------------------------------------------
# Geometry and features
# ---------------------------------------------------------------------------
_MAX_FULL_COV = 500  # above this dimension whiten with the diagonal only
_COV_ROWS = 10_000  # rows per distribution used to estimate the noise covariance


def _row_norms(A):
    return np.sqrt(np.einsum("ij,ij->i", A, A))


class _Geometry:
    """Centres, directions and densities, chosen on the selection half only."""

    def __init__(self, P0, P1, centers, log_density, events):
        k = P0.shape[1]
        if centers is None:
            # coordinate-wise medians: robust to heavy tails (Cauchy-like noise)
            v0, v1 = np.median(P0, axis=0), np.median(P1, axis=0)
            self.center_desc = "estimated centres v0, v1 (selection-half medians)"
        else:
            v0, v1 = centers
            self.center_desc = "centres v0, v1"
        self.v0, self.v1 = v0, v1
        diff = v1 - v0
        norm = float(np.linalg.norm(diff))
        self.u = diff / norm if norm > 0 else None
        self.w = None
        if self.u is not None and k > 1 and "halfspace" in events:
            # a subsample of the selection half suffices to choose a direction
            m = max(_COV_ROWS, 20 * k)
            R = np.concatenate([P0[:m] - v0, P1[:m] - v1])
            if k <= _MAX_FULL_COV and R.shape[0] > 2 * k:
                cov = np.cov(R, rowvar=False)
                w = np.linalg.pinv(cov, rcond=1e-10, hermitian=True) @ diff
            else:
                var = R.var(axis=0)
                w = np.where(var > 0, diff / np.where(var > 0, var, 1.0), 0.0)
            wn = float(np.linalg.norm(w))
            if wn > 0:
                w = w / wn
                if abs(float(w @ self.u)) < 1 - 1e-6:  # else same as u
                    self.w = w
        self.log_density = log_density
        self.events = events

    def feature_names(self):
        names = []
        if "halfspace" in self.events and self.u is not None:
            names.append(("halfspace", "<y - v0, u>, u = (v1 - v0)/||v1 - v0||"))
            if self.w is not None:
                names.append(("halfspace", "<y - v0, w>, w ~ Cov^-1 (v1 - v0) (whitened)"))
        if "ball" in self.events:
            names.append(("ball", "||y - v0||"))
            names.append(("ball", "||y - v1||"))
        if "ratio" in self.events and self.u is not None:
            names.append(("ratio", "log(||y - v1|| / ||y - v0||)"))
        if "likelihood" in self.events and self.log_density is not None:
            names.append(("likelihood", "log p0(y) - log p1(y)"))
        return names

    def features(self, Y):
        """Statistics of each row of ``Y`` (n, F), computed in row blocks."""
        block = max(1, (1 << 18) // max(Y.shape[1], 1))
        if Y.shape[0] <= block:
            return self._features(Y)
        return np.concatenate(
            [self._features(Y[i:i + block]) for i in range(0, Y.shape[0], block)]
        )

    def _features(self, Y):
        cols = []
        D0 = Y - self.v0
        if "halfspace" in self.events and self.u is not None:
            cols.append(D0 @ self.u)
            if self.w is not None:
                cols.append(D0 @ self.w)
        r0 = r1 = None
        if "ball" in self.events or "ratio" in self.events:
            r0 = _row_norms(D0)
            r1 = _row_norms(Y - self.v1)
        if "ball" in self.events:
            cols.extend([r0, r1])
        if "ratio" in self.events and self.u is not None:
            tiny = np.finfo(float).tiny
            cols.append(np.log(np.maximum(r1, tiny)) - np.log(np.maximum(r0, tiny)))
        if "likelihood" in self.events and self.log_density is not None:
            cols.append(self._llr(Y))
        return np.column_stack(cols) if cols else np.empty((Y.shape[0], 0))

    def _llr(self, Y):
        ld = self.log_density
        if isinstance(ld, (tuple, list)):
            l0, l1 = (np.asarray(f(Y), dtype=float).reshape(-1) for f in ld)
        else:
            l0 = np.asarray(ld(Y - self.v0), dtype=float).reshape(-1)
            l1 = np.asarray(ld(Y - self.v1), dtype=float).reshape(-1)
        with np.errstate(invalid="ignore"):
            llr = l0 - l1
        # inf - inf: the point is impossible under both; put it in the middle.
        return np.where(np.isnan(llr), 0.0, llr)


def _threshold_grid(values, n_thresholds):
    """Thresholds at empirical quantiles, denser in the tails."""
    mid = np.linspace(0.0, 1.0, n_thresholds + 2)[1:-1]
    tails = np.geomspace(1e-4, mid[0], 15)
    probs = np.unique(np.clip(np.concatenate([mid, tails, 1.0 - tails]), 0.0, 1.0))
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return np.array([0.0])
    return np.unique(np.quantile(finite, probs))


def _event_counts(F0, F1, thresholds_per_feature):
    """Counts of {f <= c} under both samples for each feature and threshold."""
    out = []
    for j, thr in enumerate(thresholds_per_feature):
        c0 = np.searchsorted(np.sort(F0[:, j]), thr, side="right")
        c1 = np.searchsorted(np.sort(F1[:, j]), thr, side="right")
        out.append((c0, c1))
    return out


def _delta_bounds(k0, n0, k1, n1, epsilon, level):
    """Certified gaps for direction D vs D' and D' vs D (each bound at ``level``)."""
    e = np.exp(epsilon)
    fwd = clopper_pearson(k0, n0, level, "lower") - e * clopper_pearson(k1, n1, level, "upper")
    bwd = clopper_pearson(k1, n1, level, "lower") - e * clopper_pearson(k0, n0, level, "upper")
    return fwd, bwd


def _select_and_certify(FA0, FA1, FB0, FB1, names, epsilon, alpha, n_thresholds):
    """Select the best event per feature on half A, certify on half B.

    Returns ``(bound, p_hat, p_prime_hat, event_text, n_events)``.
    """
    nA0, nA1, nB0, nB1 = len(FA0), len(FA1), len(FB0), len(FB1)
    n_feat = len(names)
    # K candidate events are certified on half B; each needs two one-sided
    # bounds (P lower, P' upper): Bonferroni level alpha / (2K).
    level = alpha / (2.0 * max(n_feat, 1))
    grids = [_threshold_grid(np.concatenate([FA0[:, j], FA1[:, j]]), n_thresholds)
             for j in range(n_feat)]
    countsA = _event_counts(FA0, FA1, grids)
    n_events = 0
    candidates = []
    for j in range(n_feat):
        c0, c1 = countsA[j]
        n_events += 4 * len(grids[j])
        best = None
        # side "le": S = {f <= c}; side "gt": S = {f > c}; then both directions.
        for side, k0, k1 in (("<=", c0, c1), (">", nA0 - c0, nA1 - c1)):
            fwd, bwd = _delta_bounds(k0, nA0, k1, nA1, epsilon, level)
            for direction, vals in (("fwd", fwd), ("bwd", bwd)):
                i = int(np.argmax(vals))
                if best is None or vals[i] > best[0]:
                    best = (float(vals[i]), side, direction, float(grids[j][i]))
        candidates.append((j,) + best)

    result = (0.0, np.nan, np.nan, "none (no event with a positive certified gap)")
    best_bound = -np.inf
    for j, _, side, direction, c in candidates:
        f0, f1 = FB0[:, j], FB1[:, j]
        k0 = int(np.count_nonzero(f0 <= c)) if side == "<=" else int(np.count_nonzero(f0 > c))
        k1 = int(np.count_nonzero(f1 <= c)) if side == "<=" else int(np.count_nonzero(f1 > c))
        fwd, bwd = _delta_bounds(k0, nB0, k1, nB1, epsilon, level)
        if direction == "fwd":
            bound, p, pp, order = float(fwd), k0 / nB0, k1 / nB1, "P[M(D) in S] - e^eps P[M(D') in S]"
        else:
            bound, p, pp, order = float(bwd), k1 / nB1, k0 / nB0, "P[M(D') in S] - e^eps P[M(D) in S]"
        if bound > best_bound:
            best_bound = bound
            kind, desc = names[j]
            text = f"{kind}: S = {{{desc} {side} {c:.6g}}}; {order}"
            result = (max(bound, 0.0), p, pp, text)
    return result + (n_events,)


def _check_events(events):
    if events is None:
        return _ALL_EVENTS
    if isinstance(events, str):
        events = (events,)
    events = tuple(events)
    bad = [e for e in events if e not in _ALL_EVENTS]
    if bad or not events:
        raise ValueError(f"events must be a non-empty subset of {_ALL_EVENTS}, got {events!r}.")
    return events


def _check_alpha(alpha):
    alpha = float(alpha)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}.")
    return alpha


def _as_samples(Y, name):
    Y = np.asarray(Y, dtype=float)
    if Y.ndim == 1:
        Y = Y[:, None]
    elif Y.ndim > 2:
        Y = Y.reshape(Y.shape[0], -1)
    if Y.ndim != 2 or Y.shape[0] < 4:
        raise ValueError(f"{name} must hold at least 4 samples (rows), got shape {Y.shape}.")
    if not np.all(np.isfinite(Y)):
        raise ValueError(f"{name} contains NaN or inf.")
    return Y


def _finish(epsilon, delta, alpha, n_samples, certified):
    bound, p, pp, text, n_events = certified
    delta_hat = p - np.exp(epsilon) * pp if np.isfinite(p) else np.nan
    return AuditResult(
        epsilon=float(epsilon),
        delta=float(delta),
        delta_lower_bound=float(bound),
        passed=bool(bound <= delta),
        event=text,
        n_samples=int(n_samples),
        p_hat=float(p),
        p_prime_hat=float(pp),
        delta_hat=float(delta_hat),
        alpha=float(alpha),
        n_events=int(n_events),
    )


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------
def audit_samples(Y0, Y1, epsilon, delta, centers=None, alpha=0.05, log_density=None,
                  *, events=None, n_thresholds=200):
    """Audit (epsilon, delta)-DP from samples of two neighbouring outputs.

    The samples are split in two halves. On the first (selection) half the
    audit searches a family of events ``S`` and, for each kind of statistic,
    keeps the event and direction with the largest Clopper-Pearson gap. Only
    these ``K`` events are certified on the second half, with Bonferroni
    level ``alpha / (2K)`` for each of the two one-sided bounds per event:

        delta_lb(S) = CP_lower(P[M(D) in S]) - e^epsilon CP_upper(P[M(D') in S])

    (and the same with ``D`` and ``D'`` swapped). The reported bound is the
    largest ``delta_lb`` over the ``K`` certified events, floored at 0, and
    is a valid lower bound on the true delta with probability at least
    ``1 - alpha``, however the events were selected (they depend on the
    first half only). Sample splitting avoids the multiple-comparison
    penalty of the hundreds of searched events.

    Event family (thresholds ``c`` at ``n_thresholds`` empirical quantiles of
    the pooled selection half, denser in the tails, both ``<= c`` and ``> c``):

    * ``"halfspace"``: ``<y - v0, u>`` with ``u = (v1 - v0)/||v1 - v0||``,
      and ``<y - v0, w>`` with ``w`` proportional to
      ``Cov^{-1} (v1 - v0)`` (noise covariance estimated on at most
      ``max(10000, 20 k)`` rows of each selection half; diagonal only above
      500 coordinates); for Gaussian noise this is the likelihood-ratio
      (optimal) event.
    * ``"ball"``: ``||y - v0||`` and ``||y - v1||``: balls around each
      centre and their complements. These catch noise whose density is
      singular at the centre (spherical noise ``s z v`` as in R1SMG or
      product noise), which half-spaces miss.
    * ``"ratio"``: ``log(||y - v1|| / ||y - v0||)``.
    * ``"likelihood"``: ``log p0(y) - log p1(y)`` when ``log_density`` is given.

    Parameters
    ----------
    Y0 : array-like of shape (n0, ...)
        Samples of ``M(D)``; each row (flattened) is one output.
    Y1 : array-like of shape (n1, ...)
        Samples of ``M(D')``, independent of ``Y0``.
    epsilon : float
        > 0, the epsilon at which delta is audited.
    delta : float
        Claimed delta in [0, 1).
    centers : tuple (v0, v1) of array-like, optional
        Noise-free outputs ``f(D)`` and ``f(D')``. If None, estimated as the
        coordinate-wise medians of the selection half (valid, since only the
        choice of events depends on it).
    alpha : float, default=0.05
        The bound fails with probability at most ``alpha``.
    log_density : callable or tuple of two callables, optional
        A callable ``f(noise) -> (n,) log density`` of the noise, applied to
        ``Y - v0`` and ``Y - v1`` (rows flattened); or a pair
        ``(log p0, log p1)`` of log densities of the outputs themselves.
        Used only to *select* likelihood-ratio events, so a wrong density
        cannot make the bound invalid, only weaker.
    events : str or sequence of str, optional
        Subset of ``("halfspace", "ball", "ratio", "likelihood")`` to search
        (default: all).
    n_thresholds : int, default=200
        Number of quantile thresholds per statistic (plus 30 tail thresholds).

    Returns
    -------
    AuditResult
        ``passed = False`` is a certified violation of (epsilon, delta)-DP at
        confidence ``1 - alpha``; ``passed = True`` is evidence, not proof.

    References
    ----------
    .. [1] Ding, Z., Wang, Y., Wang, G., Zhang, D. and Kifer, D. (2018).
       Detecting violations of differential privacy. ACM CCS.
    .. [2] Jagielski, M., Ullman, J. and Oprea, A. (2020). Auditing
       differentially private machine learning: how private is private SGD?
       NeurIPS (Clopper-Pearson lower bounds on the privacy parameters).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.audit import audit_samples
    >>> rng = np.random.default_rng(0)
    >>> Y0 = rng.normal(0.0, 1.0, size=(50_000, 1))
    >>> Y1 = rng.normal(1.0, 1.0, size=(50_000, 1))
    >>> res = audit_samples(Y0, Y1, epsilon=0.1, delta=0.01, centers=(0.0, 1.0))
    >>> res.passed  # N(0,1) vs N(1,1) has delta(eps=0.1) ~ 0.34
    False
    """
    epsilon, delta = check_epsilon_delta(epsilon, delta)
    alpha = _check_alpha(alpha)
    events = _check_events(events)
    n_thresholds = int(n_thresholds)
    if n_thresholds < 1:
        raise ValueError(f"n_thresholds must be >= 1, got {n_thresholds}.")
    Y0 = _as_samples(Y0, "Y0")
    Y1 = _as_samples(Y1, "Y1")
    if Y0.shape[1] != Y1.shape[1]:
        raise ValueError(f"Y0 and Y1 have different output sizes {Y0.shape[1]} and {Y1.shape[1]}.")
    k = Y0.shape[1]
    if centers is not None:
        if len(centers) != 2:
            raise ValueError("centers must be a pair (v0, v1).")
        centers = tuple(np.asarray(c, dtype=float).reshape(-1) for c in centers)
        if any(c.shape != (k,) for c in centers):
            raise ValueError(f"centers must each have {k} entries (the flattened output size).")
        if not all(np.all(np.isfinite(c)) for c in centers):
            raise ValueError("centers contain NaN or inf.")
    if log_density is not None and not (
        callable(log_density)
        or (isinstance(log_density, (tuple, list)) and len(log_density) == 2
            and all(callable(f) for f in log_density))
    ):
        raise ValueError("log_density must be a callable or a pair of callables.")
    h0, h1 = Y0.shape[0] // 2, Y1.shape[0] // 2
    geom = _Geometry(Y0[:h0], Y1[:h1], centers, log_density, events)
    names = geom.feature_names()
    if not names:
        raise ValueError(
            f"no event family in {events} applies (the two centres coincide); "
            "include 'ball' events."
        )
    F0, F1 = geom.features(Y0), geom.features(Y1)
    certified = _select_and_certify(F0[:h0], F1[:h1], F0[h0:], F1[h1:], names,
                                    epsilon, alpha, n_thresholds)
    n = min(Y0.shape[0], Y1.shape[0])
    return _finish(epsilon, delta, alpha, n, certified)


def _release_center(spec, value):
    """Where ``spec.privatize(value)`` centres its noise: the grid point of ``value``.

    Grid mechanisms release ``g * round(value / g) + noise`` on the coordinates
    with noise (skdp.mechanisms._grid); the audit draws the same outputs.
    """
    g = spec.params.get("grid")
    if g is None:
        return value
    from ..mechanisms._grid import release_on_grid, snap

    if np.ndim(g):  # per released coordinate: expand to the query's entries
        g = spec.query.expand(g).reshape(value.shape)
    return release_on_grid(snap(value, g), 0.0, g)  # the release without noise


def _draw(spec, rng, n):
    """``n`` noise draws of ``spec``, flattened to rows of shape (n, size)."""
    batch = getattr(spec.mechanism_, "_sample_batch", None)
    if batch is not None:
        out = np.asarray(batch(spec, rng, n), dtype=float)
        return out.reshape(n, -1)
    out = np.empty((n, spec.query.size))
    for i in range(n):
        out[i] = np.ravel(spec.sample(rng))
    return out


def audit_spec(spec, value, neighbour_value, n_samples=200_000, random_state=0, alpha=0.05,
               *, log_density=None, events=None, n_thresholds=200):
    """Audit a calibrated NoiseSpec on one pair of neighbouring query values.

    Draws ``n_samples`` outputs ``value + noise`` (``M(D)``) and
    ``n_samples`` independent outputs ``neighbour_value + noise``
    (``M(D')``) with ``spec.sample`` and audits them at
    ``(spec.epsilon, spec.delta)`` with :func:`audit_samples` (centres are
    the known values). Noise is drawn in chunks and reduced to a few scalar
    statistics per sample, so memory stays bounded for large queries.

    The pair should be a worst case allowed by the query's sensitivity (for
    example ``value = 0`` and ``neighbour_value`` of l2 norm exactly
    ``query.l2_sensitivity``, or at the corner of a sensitivity profile);
    the audit does not check that ``||value - neighbour_value||`` respects
    the sensitivity.

    Parameters
    ----------
    spec : NoiseSpec
        From :func:`skdp.mechanisms.calibrate`.
    value, neighbour_value : array-like of shape ``spec.query.shape``
        ``f(D)`` and ``f(D')``.
    n_samples : int, default=200_000
        Samples per output distribution (half select events, half certify).
    random_state : int, Generator or None, default=0
    alpha : float, default=0.05
        The reported bound fails with probability at most ``alpha``.
    log_density : callable, optional
        Log density of the (flattened) noise, see :func:`audit_samples`. If
        None and the spec's mechanism defines ``_log_density(spec, noise)``
        (``noise`` of shape (n, size) -> (n,)), that is used.
    events : str or sequence of str, optional
        Event families to search (default: all), see :func:`audit_samples`.
    n_thresholds : int, default=200

    Returns
    -------
    AuditResult
        ``delta_lower_bound`` is a lower bound on the true delta at
        ``spec.epsilon``, valid with probability ``1 - alpha``.
        ``passed = False`` is a certified violation; ``passed = True`` is
        evidence, not proof.

    Notes
    -----
    By default each draw calls ``spec.sample`` (the code path estimators
    use), about 6 microseconds per draw. A mechanism may define
    ``_sample_batch(spec, rng, n)`` returning ``n`` draws at once; the audit
    then uses it.

    Examples
    --------
    >>> from skdp.mechanisms import Query, calibrate
    >>> from skdp.audit import audit_spec
    >>> spec = calibrate(Query(shape=(2,), l2_sensitivity=1.0), epsilon=1.0, delta=0.05,
    ...                  mechanism="analytic_gaussian")
    >>> res = audit_spec(spec, [0.0, 0.0], [1.0, 0.0], n_samples=20_000)
    >>> res.passed
    True
    """
    epsilon, delta = spec.epsilon, spec.delta
    alpha = _check_alpha(alpha)
    events = _check_events(events)
    shape = spec.query.shape
    v0 = np.asarray(value, dtype=float)
    v1 = np.asarray(neighbour_value, dtype=float)
    for name, v in (("value", v0), ("neighbour_value", v1)):
        if v.shape != shape:
            raise ValueError(f"{name} has shape {v.shape}, but the spec was calibrated for {shape}.")
        if not np.all(np.isfinite(v)):
            raise ValueError(f"{name} contains NaN or inf.")
    n_samples = int(n_samples)
    if n_samples < 8:
        raise ValueError(f"n_samples must be >= 8, got {n_samples}.")
    n_thresholds = int(n_thresholds)
    if n_thresholds < 1:
        raise ValueError(f"n_thresholds must be >= 1, got {n_thresholds}.")
    if log_density is None:
        hook = getattr(spec.mechanism_, "_log_density", None)
        if hook is not None:
            def log_density(noise, _hook=hook, _spec=spec):
                return _hook(_spec, noise)
    rng = check_generator(random_state)
    v0, v1 = _release_center(spec, v0).reshape(-1), _release_center(spec, v1).reshape(-1)
    k = v0.size
    half = n_samples // 2
    chunk = int(max(1, min(half, max(1000, (1 << 22) // max(k, 1)))))
    # The first chunk of each distribution lies in the selection half and
    # fixes the geometry (directions, whitening) before any feature is kept.
    N0 = _draw(spec, rng, chunk)
    N1 = _draw(spec, rng, chunk)
    geom = _Geometry(v0 + N0, v1 + N1, (v0, v1), log_density, events)
    names = geom.feature_names()
    if not names:
        raise ValueError(
            f"no event family in {events} applies (value == neighbour_value); include 'ball' events."
        )
    F0 = [geom.features(v0 + N0)]
    F1 = [geom.features(v1 + N1)]
    done = chunk
    while done < n_samples:
        m = min(chunk, n_samples - done)
        F0.append(geom.features(v0 + _draw(spec, rng, m)))
        F1.append(geom.features(v1 + _draw(spec, rng, m)))
        done += m
    F0, F1 = np.concatenate(F0), np.concatenate(F1)
    certified = _select_and_certify(F0[:half], F1[:half], F0[half:], F1[half:], names,
                                    epsilon, alpha, n_thresholds)
    return _finish(epsilon, delta, alpha, n_samples, certified)
