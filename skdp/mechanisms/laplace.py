"""Pure epsilon-DP mechanisms: Laplace, non-identical Laplace, Gamma-norm noise.

All three mechanisms give pure epsilon-DP (``pure = True``: ``delta = 0`` is
allowed). With ``delta > 0`` they are still calibrated to epsilon alone: an
epsilon-DP mechanism is (epsilon, delta)-DP for every ``delta >= 0``.

Privacy of additive noise with a bounded log-density ratio
----------------------------------------------------------
For an additive mechanism ``M(D) = f(D) + b`` with noise density ``p``, let
``d = f(D) - f(D')`` for replace-one neighbours ``D ~ D'``. The output
densities at ``y`` are ``p(y - f(D))`` and ``p(y - f(D'))``; with
``t = y - f(D)`` their log ratio is the privacy loss
``log p(t) - log p(t + d)``. If it is bounded by epsilon for every ``t`` and
every admissible ``d``, then for every measurable event ``E``,
``P(M(D) in E) = int_E p(y - f(D)) dy <= e^epsilon int_E p(y - f(D')) dy``,
i.e. the mechanism is epsilon-DP. Each mechanism below bounds this ratio:

* Laplace, scales ``beta_i``: ``log p(t) - log p(t + d)
  = sum_i (|t_i + d_i| - |t_i|) / beta_i <= sum_i |d_i| / beta_i`` by the
  triangle inequality (Muthukrishnan & Kalyani 2023, Theorem 5 proof; Dwork & Roth 2014,
  Theorem 3.6 for i.i.d. scales).
* Gamma-norm noise, ``p(b) ~ exp(-||b||_2 / s)``: the ratio is
  ``(||t + d||_2 - ||t||_2) / s <= ||d||_2 / s`` by the triangle inequality
  (Chaudhuri, Monteleoni & Sarwate 2011, proof of Theorem 6).

Floating point: the guarantees above are for the real-valued mechanisms, and
``fl(value + noise)`` in doubles leaks through the grid of representable
outputs (Mironov 2012, "On significance of the least significant bits for
differential privacy"). :class:`Laplace` and :class:`InidLaplace` therefore
release on a public power-of-two grid with exact discrete Laplace draws
(Canonne, Kamath & Steinke 2020), the rounding folded into the l1
sensitivity (see their ``_calibrate``); :class:`GammaNorm` and the
``*_continuous`` variants draw floating-point noise and are marked
unverified.

For a symmetric query the noise lives on the released upper triangle
(diagonal included) and is mirrored (``Query.expand``); the mirror is a
post-processing of the released coordinates, so the sensitivities are those
of the upper triangle (``Query.l1_bound``, ``Query.l2_bound``,
``Query.released_profile``).
"""

import math

import numpy as np
from scipy.special import gammaln

from ._base import Mechanism, _usable_bound, register
from ._grid import (
    SAMPLER_MAX_STEPS,
    GridRelease,
    coarsen_for_samplers,
    coordinate_grids,
    draws_by_scale,
    grid_step,
    pow2_at_least,
)

__all__ = [
    "laplace_scale",
    "inid_laplace_scales",
    "gamma_norm_scale",
    "laplace_grid_t",
    "Laplace",
    "InidLaplace",
    "GammaNorm",
]


# ----------------------------------------------------------------------
# closed forms
# ----------------------------------------------------------------------
def laplace_scale(epsilon, l1_sensitivity=1.0):
    """Scale of the i.i.d. Laplace mechanism, ``beta = Delta_1 / epsilon``.

    Dwork & Roth (2014), Theorem 3.6; Muthukrishnan & Kalyani 2023, Lemma 2.
    """
    return float(l1_sensitivity) / float(epsilon)


def inid_laplace_scales(profile, epsilon, weights=None, p=2):
    """Error-optimal per-coordinate Laplace scales for a sensitivity profile.

    Solves ``min sum_i w_i E|b_i|^p = Gamma(p+1) sum_i w_i beta_i^p`` subject
    to the privacy constraint ``sum_i lambda_i / beta_i = epsilon`` (see
    :class:`InidLaplace`). Stationarity of the Lagrangian,
    ``p w_i beta_i^(p-1) Gamma(p+1) = nu lambda_i / beta_i^2``, gives
    ``beta_i = c (lambda_i / w_i)^(1/(p+1))`` and the constraint fixes ``c``:

        beta_i = (lambda_i / w_i)^(1/(p+1)) * sum_j lambda_j^(p/(p+1)) w_j^(1/(p+1)) / epsilon.

    With all ``w_i = 1`` this is Muthukrishnan & Kalyani 2023, Theorem 5 (``p = 2``, the squared
    error: ``beta_i = lambda_i^(1/3) sum_j lambda_j^(2/3) / epsilon``) and its
    l_p^p generalisation (``p = 1``, the absolute error, used for the paper's
    Table II: ``beta_i ~ sqrt(lambda_i)``). The mechanism ``"inid_laplace"``
    uses ``p = 2``.

    Parameters
    ----------
    profile : array-like of shape (K,)
        Non-negative per-coordinate sensitivities ``lambda``.
    epsilon : float
        Privacy parameter, > 0.
    weights : array-like of shape (K,), default=None
        Positive error weights ``w`` (None: all ones).
    p : float, default=2
        Exponent of the error ``sum_i w_i E|b_i|^p``, >= 1.

    Returns
    -------
    scales : ndarray of shape (K,)
        ``beta``; zero where ``lambda_i = 0`` (that coordinate never changes).
        They satisfy ``sum_i lambda_i / beta_i = epsilon`` (over ``lambda_i > 0``).

    Examples
    --------
    >>> from skdp.mechanisms.laplace import inid_laplace_scales
    >>> inid_laplace_scales([8.0, 1.0], epsilon=1.0).round(3)
    array([10.,  5.])
    """
    lam = np.asarray(profile, dtype=float).ravel()
    w = np.ones_like(lam) if weights is None else np.asarray(weights, dtype=float).ravel()
    if w.shape != lam.shape or np.any(w <= 0):
        raise ValueError("weights must be positive and match the profile.")
    if not p >= 1:
        raise ValueError(f"p must be >= 1, got {p!r}.")
    q = 1.0 / (p + 1.0)
    total = float(np.sum(lam ** (p * q) * w**q))
    return (lam / w) ** q * total / float(epsilon)


def gamma_norm_scale(epsilon, l2_sensitivity=1.0):
    """Scale ``s = Delta_2 / epsilon`` of the Gamma-norm mechanism (CMS 2011, Alg. 1)."""
    return float(l2_sensitivity) / float(epsilon)


# ----------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------
def _released(query, noise):
    """Noise arrays -> their released coordinates, shape (..., n_released).

    Accepts arrays whose trailing shape is ``query.shape`` or, as the audit
    passes them, rows flattened to ``query.size`` entries.
    """
    noise = np.asarray(noise, dtype=float)
    shape = query.shape
    nd = len(shape)
    if noise.shape[noise.ndim - nd:] != shape:
        if nd >= 2 and noise.ndim >= 1 and noise.shape[-1] == query.size:
            noise = noise.reshape(noise.shape[:-1] + shape)
        else:
            raise ValueError(
                f"noise must end with the query shape {shape} (or be flattened to "
                f"{query.size} entries), got {noise.shape}."
            )
    lead = noise.shape[: noise.ndim - nd]
    if query.symmetric:
        iu = np.triu_indices(shape[0])
        return noise[..., iu[0], iu[1]]
    return noise.reshape(lead + (query.n_released,))


def _expand_rows(query, z):
    """Batched ``query.expand``: (n, n_released) -> (n, size) flattened rows."""
    n = z.shape[0]
    if query.symmetric:
        d = query.shape[0]
        iu = np.triu_indices(d)
        out = np.zeros((n, d, d))
        out[:, iu[0], iu[1]] = z
        out[:, iu[1], iu[0]] = z
        return out.reshape(n, -1)
    return z.reshape(n, -1)


def _laplace_log_density(x, scales):
    """Sum of independent Laplace log densities; zero scales are point masses at 0."""
    scales = np.broadcast_to(np.asarray(scales, dtype=float), x.shape[-1:])
    pos = scales > 0
    out = np.sum(-np.abs(x[..., pos]) / scales[pos] - np.log(2.0 * scales[pos]), axis=-1)
    if not np.all(pos):
        off = np.any(x[..., ~pos] != 0, axis=-1)
        out = np.where(off, -np.inf, out)
    return out


class _PureMechanism(Mechanism):
    pure = True

    def log_density(self, spec, noise):
        """Log density of the noise on the released coordinates.

        Parameters
        ----------
        spec : NoiseSpec
            A spec calibrated by this mechanism.
        noise : array-like of shape (..., *spec.query.shape) or (n, spec.query.size)
            Noise arrays, or rows of flattened noise arrays (for symmetric
            queries only the upper triangle is read).

        Returns
        -------
        ndarray of shape (...) or (n,)
            Log density with respect to Lebesgue measure on the released
            coordinates (coordinates with zero scale are point masses at 0).
        """
        return self._released_log_density(spec, _released(spec.query, noise))

    # hooks used by skdp.audit
    def _log_density(self, spec, noise):
        """Audit hook: :meth:`log_density` rounded to multiples of 2^-30 nats.

        The audit uses it only to *select* likelihood-ratio events. Laplace
        noise attains the privacy loss ``epsilon`` exactly on a set of
        positive probability; there, the exact log-density difference of
        floating-point outputs ``y - v0`` and ``y - v1`` lands on either side
        of ``epsilon`` by one ulp depending on the float grid of ``y``, and
        ``fl(v + noise)`` puts outputs on grids that depend on ``v``. Events
        built on that ulp distinguish the floating-point grids of the outputs
        (the attack of Mironov 2012), not the real-valued distributions this
        module proves private. Rounding removes the ulp-level noise; it cannot
        hide a calibration error (a privacy loss larger than epsilon by more
        than 2^-30 still shows).
        """
        ld = self.log_density(spec, noise)
        return np.round(ld * 2.0**30) / 2.0**30

    def _sample_batch(self, spec, rng, n):
        """``n`` independent draws at once, as flattened rows (n, size)."""
        return _expand_rows(spec.query, self._released_batch(spec, rng, int(n)))

    def _sample(self, spec, rng):
        return spec.query.expand(self._released_batch(spec, rng, 1)[0])


# ----------------------------------------------------------------------
# mechanisms
# ----------------------------------------------------------------------
def laplace_grid_t(l1, g, k, epsilon):
    """Scale ``t`` (in steps of the grid ``g``) of discrete Laplace noise for an l1 sensitivity.

    A value rounded to the grid moves by at most ``l1 / g + k`` steps in l1
    between neighbours (``k`` coordinates, each rounding at most one more
    step), and the discrete Laplace loss is at most that over ``t``: so
    ``t = ceil((l1 / g + k) / epsilon)`` gives exactly epsilon-DP.
    """
    return math.ceil((float(l1) / float(g) + int(k)) / float(epsilon))


class Laplace(GridRelease, _PureMechanism):
    """Laplace mechanism with i.i.d. noise (Dwork et al. 2006; Dwork & Roth 2014, Thm 3.6).

    Adds i.i.d. ``Laplace(0, beta)`` noise (``beta`` is the *scale*: density
    ``exp(-|x|/beta) / (2 beta)``, variance ``2 beta^2``) to every released
    coordinate, with

        beta = Delta_1 / epsilon,

    ``Delta_1 = query.l1_bound`` the replace-one l1 sensitivity of the
    released coordinates. Privacy: the privacy loss is at most
    ``sum_i |d_i| / beta = ||d||_1 / beta <= Delta_1 / beta = epsilon``
    (module docstring), so the mechanism is epsilon-DP.

    Expected squared error over the whole statistic:
    ``E||noise||^2 = 2 beta^2 sum_i w_i`` with ``w = query.squared_error_weights()``
    (Muthukrishnan & Kalyani 2023, Table I: ``2 K Delta_1^2 / epsilon^2`` when all ``w_i = 1``).
    """

    name = "laplace"  # applies to every Query: each one implies an l1 bound

    def _calibrate(self, query, epsilon, delta):
        # floating-point safe: release g * (round(f / g) + Y), Y ~ discrete Laplace(t)
        # (Canonne, Kamath & Steinke 2020, exact sampler). The rounded query moves by
        # at most Delta_1 / g + k in l1 (k released coordinates), and the discrete
        # Laplace loss is sum_i |d_i| / t <= (Delta_1 / g + k) / t <= epsilon for
        # t = ceil((Delta_1 / g + k) / epsilon): exactly epsilon-DP, no delta.
        l1, k = query.l1_bound, query.n_released
        g = grid_step(l1, k)
        t = laplace_grid_t(l1, g, k, epsilon)
        while t > SAMPLER_MAX_STEPS:  # a tiny epsilon: a coarser grid keeps the sampler in range
            if k / epsilon > SAMPLER_MAX_STEPS / 2:  # the rounding term alone is out of range
                raise ValueError(
                    f"epsilon={epsilon:g} (this release's share of the fit's epsilon) is too small "
                    f"for the exact Laplace sampler with {k} released coordinates (the share "
                    f"must exceed {2.0 * k / SAMPLER_MAX_STEPS:.2g}); raise the epsilon.")
            g = coarsen_for_samplers(g, t)
            t = laplace_grid_t(l1, g, k, epsilon)
        beta = t * g
        var = _discrete_laplace_variance(t) * g**2 + g**2 / 4.0
        mse = var * float(np.sum(query.squared_error_weights()))
        return {"scale": beta, "l1_sensitivity": l1, "grid": g, "t": t}, mse

    def _draws(self, spec, rng, lead):
        from ._discrete import sample_discrete_laplace

        return sample_discrete_laplace(spec.params["t"], lead + (spec.query.n_released,), rng)

    def _released_batch(self, spec, rng, n):
        return self._draws(spec, rng, (n,)) * spec.params["grid"]

    def sample_continuous(self, spec, rng):
        """Continuous ``Laplace(scale)`` noise, for analyses that need a density (never released)."""
        z = rng.laplace(0.0, 1.0, size=spec.query.n_released) * spec.params["scale"]
        return spec.query.expand(z)

    def _released_log_density(self, spec, x):
        return _laplace_log_density(x, spec.params["scale"])


class LaplaceContinuous(_PureMechanism):
    """The Laplace mechanism with floating-point noise (unverified, comparison only).

    ``value + rng.laplace(scale=Delta_1 / epsilon)`` in doubles: the low bits
    of the release reveal the value (Mironov 2012).
    """

    name = "laplace_continuous"
    verified = False
    failure = ("it adds floating-point Laplace noise, whose low bits reveal the value it is "
               "added to (Mironov 2012); kept for comparison only.")

    def _calibrate(self, query, epsilon, delta):
        l1 = query.l1_bound
        beta = laplace_scale(epsilon, l1)
        mse = 2.0 * beta**2 * float(np.sum(query.squared_error_weights()))
        return {"scale": beta, "l1_sensitivity": l1}, mse

    def _released_batch(self, spec, rng, n):
        return rng.laplace(0.0, 1.0, size=(n, spec.query.n_released)) * spec.params["scale"]

    def _released_log_density(self, spec, x):
        return _laplace_log_density(x, spec.params["scale"])


def _discrete_laplace_variance(t):
    """Variance of the discrete Laplace ``P(y) ~ exp(-|y|/t)``: ``2 q / (1 - q)^2``, ``q = e^{-1/t}``."""
    q = math.exp(-1.0 / t)
    return 2.0 * q / math.expm1(-1.0 / t) ** 2


def _discrete_laplace_variances(t):
    """:func:`_discrete_laplace_variance` of every entry of ``t`` (0 where ``t <= 0``), vectorised."""
    t = np.asarray(t, dtype=np.float64)
    pos = t > 0
    x = -1.0 / t[pos]
    val = np.exp(x)
    val *= 2.0
    np.expm1(x, out=x)
    val /= np.square(x, out=x)
    if pos.all():
        return val.reshape(t.shape)
    out = np.zeros_like(t)
    out[pos] = val
    return out


class InidLaplace(GridRelease, _PureMechanism):
    """Laplace noise with optimal non-identical scales (Muthukrishnan & Kalyani 2023, Theorem 5).

    Privacy. Given a sensitivity profile ``lambda`` (``|d_i| <= lambda_i`` for
    every replace-one difference ``d`` of the released coordinates), the
    privacy loss of independent ``Laplace(0, beta_i)`` noise satisfies, for
    every noise value ``t``::

        log p(t) - log p(t + d) = sum_i (|t_i + d_i| - |t_i|) / beta_i
                                <= sum_i |d_i| / beta_i <= sum_i lambda_i / beta_i,

    (triangle inequality, then the box). So any scales with
    ``sum_i lambda_i / beta_i <= epsilon`` give epsilon-DP, whatever the
    coupling between coordinates; the bound is attained (tight) when a
    neighbour can reach the corner ``|d_i| = lambda_i`` of the box.
    Coordinates with ``lambda_i = 0`` never change and get no noise.

    Optimal scales. Minimise the expected squared error
    ``sum_i w_i E[b_i^2] = sum_i 2 w_i beta_i^2`` (``w_i = 2`` for the mirrored
    off-diagonal entries of a symmetric query, else 1) subject to
    ``sum_i lambda_i / beta_i = epsilon`` (the constraint is active at the
    optimum since the error decreases with every ``beta_i``). Stationarity of
    the Lagrangian ``sum 2 w_i beta_i^2 + nu (sum lambda_i / beta_i - eps)``
    gives ``4 w_i beta_i = nu lambda_i / beta_i^2``, i.e.
    ``beta_i = c (lambda_i / w_i)^(1/3)``; the constraint fixes
    ``c = S / epsilon`` with ``S = sum_j lambda_j^(2/3) w_j^(1/3)``. Hence

        beta_i = (lambda_i / w_i)^(1/3) S / epsilon,
        E||noise||^2 = 2 S^3 / epsilon^2,

    which is Theorem 5 (``beta_i = lambda_i^(1/3) sum_j lambda_j^(2/3) / eps``,
    MSE ``2 (sum_j lambda_j^(2/3))^3 / eps^2``) when all ``w_i = 1``. The
    problem is convex (``1/beta`` is convex on ``beta > 0``), so this
    stationary point is the minimum.

    Notes
    -----
    Seed 002, Corollary 6 (use ``epsilon - log(1 - delta)`` in place of
    epsilon when ``delta > 0``) is not implemented: its gain is below
    ``delta`` in relative terms (Muthukrishnan & Kalyani 2023, footnote 5). With ``delta > 0``
    the mechanism is calibrated to pure epsilon-DP, which implies
    (epsilon, delta)-DP.
    """

    name = "inid_laplace"
    needs_profile = True

    def mse_lower_bound(self, query, epsilon, delta):
        """``2 (sum_i lambda_i)^3 min_i w_i / (max_i lambda_i epsilon^2)``.

        The calibrated scales ``beta_i = t_i g_i`` satisfy ``sum_i lambda_i /
        beta_i <= sum_i (lambda_i + g_i) / beta_i <= epsilon``, and among such
        scales ``2 sum_i w_i beta_i^2`` is least at :func:`inid_laplace_scales`
        (``p = 2``), where it equals ``2 (sum_i lambda_i^(2/3) w_i^(1/3))^3 /
        epsilon^2``. Each coordinate's reported variance is at least ``2
        beta_i^2``: the discrete Laplace variance ``g^2 / (2 sinh^2(1 / (2
        t)))`` exceeds ``g^2 (2 t^2 - 1/6)`` (``1 / sinh^2 x >= 1 / x^2 -
        1/3``), and the grid term adds ``g^2 / 4``. Finally ``lambda_i^(2/3)
        >= lambda_i / max_j lambda_j^(1/3)`` and ``w_i >= min_j w_j`` give
        this bound, one sum and two extrema (cube roots of a ``d x d``
        profile cost more than the pruning saves); it is tight for the flat
        profiles of Gram matrices, where it matters.
        """
        lam = query.released_profile()
        w = query.squared_error_weights()
        top = float(lam.max(initial=0.0))
        if top <= 0.0:
            return 0.0
        total = float(lam.sum())
        with np.errstate(all="ignore"):  # (inf or 0 near the float64 limits: no bound)
            e = np.float64(epsilon)
            bound = float(2.0 * np.float64(w.min()) / e / e * (total / top) * np.float64(total)
                          * total)
        return bound if _usable_bound(bound) else None

    def _calibrate(self, query, epsilon, delta):
        # floating-point safe (see Laplace): the rounded profile is lambda_i + g on the
        # coordinates that depend on the data; the scales are recalibrated for it and
        # rounded up to integers t_i in grid units (more noise is still epsilon-DP)
        # in place where it can be: the profiles of d x d statistics have d(d+1)/2
        # coordinates (every operation is the plain expression's, on the same operands)
        lam = query.released_profile()
        w = query.squared_error_weights()
        noisy = lam > 0
        on = slice(None) if noisy.all() else noisy  # views, not copies, when all are noisy
        g = coordinate_grids(lam, inid_laplace_scales(lam, epsilon, w))  # per coordinate
        lam_g = lam + g
        scales = inid_laplace_scales(lam_g, epsilon, w)
        # the sampler's range (t <= 2^40): coarser grids where the scales grew past it
        # (coordinates whose lambda is negligible), then integer scales, raised
        # together if needed so that sum (lambda_i + g_i) / (t_i g_i) <= epsilon
        tmp = scales * 2.0**-39
        np.maximum(g, pow2_at_least(tmp, out=tmp), out=g)
        g[~noisy] = 0.0
        t = tmp
        t[...] = 0.0
        t[on] = np.ceil(scales[on] / g[on])
        del scales
        np.add(lam, g, out=lam_g)
        tg = t * g
        loss = float(np.sum(lam_g[on] / tg[on]))
        del lam_g
        if loss > epsilon:
            t[on] = np.ceil(t[on] * (loss / epsilon) * (1 + 1e-12))
        scales = np.multiply(t, g, out=tg)
        var = _discrete_laplace_variances(t)
        g2 = np.square(g)
        var *= g2
        g2 /= 4.0
        var += g2
        del g2
        var *= w
        mse = float(np.sum(var))
        return {"scales": scales, "grid": g, "t": t.astype(np.int64)}, mse

    def _draws(self, spec, rng, lead):
        from ._discrete import sample_discrete_laplace

        return draws_by_scale(spec.params["t"], lead,
                              lambda t, size, r: sample_discrete_laplace(int(t), size, r), rng)

    def _released_batch(self, spec, rng, n):
        return self._draws(spec, rng, (n,)) * spec.params["grid"]

    def sample_continuous(self, spec, rng):
        """Continuous Laplace noise, for analyses that need a density (never released)."""
        scales = spec.params["scales"]
        return spec.query.expand(rng.laplace(0.0, 1.0, size=scales.shape) * scales)

    def _released_log_density(self, spec, x):
        return _laplace_log_density(x, spec.params["scales"])


class InidLaplaceContinuous(_PureMechanism):
    """i.n.i.d. Laplace noise in floating point (unverified, comparison only)."""

    name = "inid_laplace_continuous"
    needs_profile = True
    verified = False
    failure = LaplaceContinuous.failure

    def _calibrate(self, query, epsilon, delta):
        lam = query.released_profile()
        w = query.squared_error_weights()
        scales = inid_laplace_scales(lam, epsilon, w)
        total = float(np.sum(lam ** (2.0 / 3.0) * np.cbrt(w)))
        return {"scales": scales}, 2.0 * total**3 / epsilon**2

    def _released_batch(self, spec, rng, n):
        scales = spec.params["scales"]
        return rng.laplace(0.0, 1.0, size=(n,) + scales.shape) * scales

    def _released_log_density(self, spec, x):
        return _laplace_log_density(x, spec.params["scales"])


class GammaNorm(_PureMechanism):
    """Pure epsilon-DP vector noise for an l2 sensitivity (Gamma-distributed norm).

    Chaudhuri, Monteleoni & Sarwate (2011), Algorithm 1 (output perturbation)
    and Theorem 6: noise ``b`` on the ``K = query.n_released`` released
    coordinates with density

        p(b) = exp(-||b||_2 / s) / Z,   s = Delta_2 / epsilon,

    ``Delta_2 = query.l2_bound`` (replace-one l2 sensitivity of the released
    coordinates). Privacy: for a difference ``d`` with ``||d||_2 <= Delta_2``,
    ``log p(t) - log p(t + d) = (||t + d||_2 - ||t||_2) / s <= ||d||_2 / s
    <= epsilon`` (triangle inequality), so the mechanism is epsilon-DP.

    Sampling: in polar coordinates the density of ``r = ||b||_2`` is
    proportional to ``r^(K-1) exp(-r/s)``, i.e. ``r ~ Gamma(shape=K, scale=s)``,
    independent of the direction, which is uniform on the unit sphere (a
    normalised standard Gaussian vector). The normaliser is
    ``Z = Gamma(K) s^K 2 pi^(K/2) / Gamma(K/2)``.

    Expected squared error: ``E||b||^2 = E r^2 = K(K+1) s^2``. For a symmetric
    query the mirrored off-diagonal entries count twice; by isotropy
    ``E b_i^2 = E||b||^2 / K``, so
    ``E||expand(b)||_F^2 = sum_i w_i E b_i^2 = (K+1) s^2 sum_i w_i``.

    In one dimension this is the Laplace mechanism. Compared with
    i.i.d. Laplace calibrated through ``Delta_1 <= sqrt(K) Delta_2`` it has
    about half the error (``K(K+1)`` vs ``2 K^2``).
    """

    name = "gamma_norm"
    # the theorem holds in exact arithmetic; the noise is drawn in floating point and a
    # held-out attack on the low bits of the release distinguishes neighbours (rule 5)
    verified = False
    failure = ("its noise is drawn in floating point (a Gamma radius times a normalised "
               "Gaussian direction), and the low bits of the release reveal the value it is "
               "added to: an independent attack at epsilon 1 (values 0 vs 1, 20 000 draws "
               "each) saw an event of probability 0.049 vs 0 (99.9% lower bound on delta "
               "0.043 where 0 is claimed). The exact-arithmetic guarantee of Chaudhuri et al. "
               "(2011) does not carry over to doubles; use 'laplace' (on a grid) for pure DP.")

    def _check_applicable(self, query, epsilon, delta):
        if query.l2_bound is None:
            return "it needs an l2 sensitivity (or a sensitivity profile)"
        return None

    def _calibrate(self, query, epsilon, delta):
        l2 = query.l2_bound
        s = gamma_norm_scale(epsilon, l2)
        k = query.n_released
        mse = (k + 1) * s**2 * float(np.sum(query.squared_error_weights()))
        return {"scale": s, "l2_sensitivity": l2}, mse

    def _released_batch(self, spec, rng, n):
        k = spec.query.n_released
        z = rng.standard_normal((n, k))
        nz = np.linalg.norm(z, axis=1)
        bad = nz == 0.0
        while np.any(bad):  # probability zero; keeps the direction well defined
            z[bad] = rng.standard_normal((int(bad.sum()), k))
            nz = np.linalg.norm(z, axis=1)
            bad = nz == 0.0
        r = rng.gamma(shape=k, scale=spec.params["scale"], size=n)
        return z * (r / nz)[:, None]

    def _released_log_density(self, spec, x):
        k = x.shape[-1]
        s = spec.params["scale"]
        log_z = gammaln(k) + k * np.log(s) + np.log(2.0) + 0.5 * k * np.log(np.pi) - gammaln(0.5 * k)
        return -np.linalg.norm(x, axis=-1) / s - log_z


register(Laplace())
register(InidLaplace())
register(GammaNorm())
register(LaplaceContinuous())
register(InidLaplaceContinuous())
