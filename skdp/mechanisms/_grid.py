"""Releases on a public power-of-two grid: the transformation half of a safe release.

Why
---
``value + sigma * rng.standard_normal()`` computed in doubles is not
differentially private: the set of doubles that a floating-point sampler can
output depends on the value it is added to, and the low bits of a release
tell ``value = 0`` from ``value = Delta`` (Mironov 2012; Jin et al. 2022;
Haney et al. 2022). The verified additive mechanisms of :mod:`skdp.mechanisms`
therefore release

    M(D) = g * (round(f(D) / g) + Y),    Y integer noise,

on a grid of step ``g = 2^j`` chosen from public quantities only:

* **rounding** (a transformation, like clipping): ``m = round(f(D) / g)`` is an
  integer vector; dividing by a power of two is exact in binary floating
  point, so ``m`` is a deterministic function of the computed statistic. Two
  neighbouring statistics with ``||f(D) - f(D')||_2 <= Delta`` give
  ``||m(D) - m(D')||_2 <= Delta / g + sqrt(k)`` for ``k`` released
  coordinates (each coordinate's rounding moves by at most 1/2 on each side;
  ``Delta / g + k`` in l1). The mechanisms calibrate to this *rounded
  sensitivity*.
* **noise** (a measurement): ``Y`` is drawn from the discrete Gaussian or the
  discrete Laplace on the integers (Canonne, Kamath & Steinke 2020), see
  :mod:`skdp.mechanisms._discrete`.
* **the release** ``fl(m + Y) * g``: IEEE addition returns the exactly rounded
  sum, so the double released is a function of the integer ``m + Y`` alone
  (exact whenever ``|m + Y| < 2^53``; beyond, rounded to a coarser grid, which
  is again a function of ``m + Y``), and multiplying by ``g`` is exact. Nothing
  about the sampler's internals or about ``f(D)`` beyond ``m + Y`` reaches
  the output: the released double is post-processing of an integer whose law
  is the one analysed.

The grid rule
-------------
``g`` is the largest power of two with ``g * extra <= GRID_UTILITY_LOSS / 2.5 * Delta``
where ``extra`` is ``sqrt(k)`` (l2) or ``k`` (l1): the rounded sensitivity is
at most ``(1 + 4e-7) Delta``, so the calibrated noise scale grows by at most a
factor ``1 + 4e-7`` and its variance by less than ``1e-6`` relative (the
rounding error of the statistic, at most ``g^2 / 4`` per coordinate, is
about ``1e-13`` of the noise variance). With ``Delta / sigma`` bounded by the
calibration, the noise spans ``sigma / g >= 2^20`` grid steps in every
practical setting, so the discrete noise is as smooth as the continuous one.
The discrete Gaussian's total-variation reserve is multiplied by
``1 + e^eps``; where that makes it exceed 1% of delta (epsilon above about
15 at delta ``1e-5``) the grids are refined by powers of two
(:func:`refine_for_reserve`).

What this does not cover
------------------------
The statistic ``f(D)`` itself is computed in floating point, and the
argument above uses the *computed* statistics of ``D`` and ``D'``: their
difference is the exact difference (at most ``Delta``) plus the rounding
errors of the two computations. Those errors are not added to the
sensitivity. A worst-case bound for a sum of ``n`` terms (``n u`` times the
sum of their absolute values, ``u = 2^-53``) can exceed ``g`` for large
``n`` (for a mean of ``n = 10^6`` clipped rows, about ``1e-10 R`` against
``g ~ 4e-7 * 2R / n / sqrt(k)``), so the proof is complete only for
statistics whose computed neighbouring difference stays within ``Delta`` up
to a fraction of ``g``; bounding it (compensated or exact summation, or
adding a proven error bound to ``Delta``) is open. Noise that is not
released directly but enters a nonlinear computation (the objective
perturbation of Chaudhuri et al. 2011) is not on a grid; see that module.
The random projection ``Z F`` has no exact discrete analysis either; it is
released by :func:`skdp.mechanisms.ndis.grid_sketch`, which computes the
sketch in exact integer arithmetic (quantised data, exact Gram sum, exact
product with a long-double Cholesky factor on a grid, discrete Gaussian
normals) and bounds the total variation of the remaining steps against the
real-arithmetic sketch from public quantities; ``(1 + e^eps)`` times that
bound is added to delta (and the release falls back to floating point, with
a warning, when the bound exceeds ``delta / 100``).
"""

import math

import numpy as np

from .._validation import scaled_reserve

__all__ = ["GRID_UTILITY_LOSS", "grid_step", "coordinate_grids", "pow2_at_least", "draws_by_scale",
           "GridRelease", "snap", "release_on_grid", "discrete_gaussian_tv_reserve",
           "refine_for_reserve", "RESERVE_SHARE"]

#: relative increase of the expected squared error allowed for the grid
GRID_UTILITY_LOSS = 1e-6


def grid_step(sensitivity, extra):
    """Largest power of two ``g`` with ``g * extra <= GRID_UTILITY_LOSS / 2.5 * sensitivity``.

    Parameters
    ----------
    sensitivity : float
        The query's sensitivity in the norm of the calibration.
    extra : float
        How much rounding can add to it per unit of ``g``: ``sqrt(k)`` for the
        l2 norm of ``k`` coordinates, ``k`` for l1.
    """
    sensitivity, extra = float(sensitivity), float(extra)
    if not (sensitivity > 0 and np.isfinite(sensitivity) and extra > 0):
        raise ValueError("grid_step needs a finite sensitivity > 0 and extra > 0.")
    target = GRID_UTILITY_LOSS / 2.5 * sensitivity / extra
    j = math.floor(math.log2(target))
    if j < -1000:
        raise ValueError("the sensitivity is too small for a floating-point grid (below 2^-1000).")
    g = math.ldexp(1.0, j)
    while g * extra > GRID_UTILITY_LOSS / 2.5 * sensitivity:  # guard log2 rounding
        g /= 2.0
    return g


#: largest noise scale, in grid steps, that the calibrations give the exact samplers (half of
#: the discrete Gaussian's 2^40 and a quarter of the discrete Laplace's 2^41: room for the
#: small increase of the final scale over the one the grid was chosen for)
SAMPLER_MAX_STEPS = 2.0**39


def coarsen_for_samplers(g, steps):
    """``g 2^m`` with the least ``m >= 0`` for which ``steps / 2^m <= SAMPLER_MAX_STEPS``.

    ``steps`` is the noise scale in units of ``g``. At a tiny epsilon the scale
    outgrows the exact samplers' range on the utility-loss grid of
    :func:`grid_step`; a coarser power of two keeps it in range, and its
    rounding (folded into the sensitivity by every caller) stays below
    ``2^-39`` of the noise scale. Public: a function of the calibration's inputs.
    """
    g, steps = float(g), float(steps)
    if not steps > SAMPLER_MAX_STEPS:
        return g
    return math.ldexp(g, max(0, math.ceil(math.log2(steps / SAMPLER_MAX_STEPS))))


def check_gaussian_steps(steps, epsilon):
    """Raise where a discrete Gaussian scale, in grid steps, is beyond the exact sampler's 2^40
    even on the coarsened grid (:func:`coarsen_for_samplers`): the epsilon is too small."""
    if float(steps) > 2.0 * SAMPLER_MAX_STEPS:
        raise ValueError(
            f"epsilon={float(epsilon):g} (this release's share of the fit's epsilon) is too "
            "small for the exact discrete Gaussian sampler (the noise would span more than "
            "2^40 grid steps); raise the epsilon.")


def coordinate_grids(profile, scales):
    """Per-coordinate power-of-two grids for the i.n.i.d. mechanisms.

    Coordinate ``i`` (sensitivity ``lambda_i > 0``, noise scale ``b_i``) gets
    the largest power of two ``g_i <= GRID_UTILITY_LOSS / 2.5 * lambda_i`` and
    ``g_i <= b_i 2^-20`` (the noise spans at least 2^20 steps), but at least
    ``b_i 2^-39`` (the samplers' range). Rounding adds ``g_i`` to
    ``lambda_i``: the profile grows by a factor at most ``1 + 4e-7``, and the
    optimal errors of the i.n.i.d. mechanisms (homogeneous in the profile, of
    degree 2) by less than 1e-6. Coordinates with ``lambda_i = 0`` get
    ``g_i = 0`` (no noise, released as computed).
    """
    lam = np.asarray(profile, dtype=float)
    b = np.asarray(scales, dtype=float)
    on = lam > 0
    sel = slice(None) if on.all() else on  # views, not copies, when every coordinate is on
    tiny = np.finfo(float).tiny
    # in place: the profiles of d x d statistics have d(d+1)/2 coordinates
    g_on = GRID_UTILITY_LOSS / 2.5 * lam[sel]
    low = b[sel] * 2.0**-20
    np.minimum(g_on, low, out=g_on)
    np.maximum(g_on, tiny, out=g_on)
    np.log2(g_on, out=g_on)
    np.floor(g_on, out=g_on)
    np.exp2(g_on, out=g_on)
    np.multiply(b[sel], 2.0**-39, out=low)
    np.maximum(low, tiny, out=low)
    np.maximum(g_on, pow2_at_least(low, out=low), out=g_on)
    if isinstance(sel, slice):
        return g_on
    g = np.zeros_like(lam)
    g[on] = g_on
    return g


def pow2_at_least(x, out=None):
    """Smallest powers of two ``>= x`` (elementwise; 0 where ``x <= 0``).

    ``out`` (may be ``x`` itself): the array to write them to.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:  # a scalar: numpy's ufuncs return scalars, which cannot serve as out=
        return np.exp2(np.ceil(np.log2(x))) if x > 0 else np.float64(0.0)
    pos = x > 0
    if pos.all():
        out = np.log2(x, out=out)
        np.ceil(out, out=out)
        return np.exp2(out, out=out)
    vals = np.exp2(np.ceil(np.log2(x[pos])))
    out = np.zeros_like(x) if out is None else out
    out[...] = 0.0
    out[pos] = vals
    return out


def draws_by_scale(scales, lead, sample, rng):
    """Integer noise per coordinate: one vectorised ``sample(scale, size, rng)`` per distinct scale.

    Coordinates with scale 0 get 0. Returns int64 of shape ``lead + scales.shape``.
    """
    out = np.zeros(lead + scales.shape, dtype=np.int64)
    for s in np.unique(scales[scales > 0]):
        idx = np.flatnonzero(scales == s)
        out[..., idx] = sample(s, lead + (idx.size,), rng)
    return out


class GridRelease:
    """Release on the grid of ``spec.params["grid"]`` with the integer noise of ``_draws``.

    Mixed into the floating-point-safe mechanisms; ``_draws(spec, rng, lead)``
    returns integer noise of shape ``lead + (n_released,)``.
    """

    float_safe = True

    def _draws(self, spec, rng, lead):
        raise NotImplementedError

    def _release(self, spec, released_value, rng, noise_int=None):
        g = spec.params["grid"]
        if noise_int is None:
            noise_int = self._draws(spec, rng, ())
        # coordinates without noise (g = 0) do not depend on the data: released as computed
        return release_on_grid(snap(released_value, g), noise_int, g)

    def draw_grid_noise(self, spec, n, rng):
        """Integer noise for ``n`` releases at once, shape (n, n_released).

        For iterative algorithms (DP-SGD): the noise does not depend on the
        data, so drawing all steps' noise in one vectorised call and releasing
        with :meth:`release_with` is the same mechanism, without the per-call
        cost of the sampler.
        """
        return self._draws(spec, rng, (int(n),))

    def release_with(self, spec, value, noise_int):
        """``privatize(value)`` with integer noise drawn by :meth:`draw_grid_noise`."""
        value = np.asarray(value, dtype=float)
        return spec.query.expand(self._release(spec, spec._released_coordinates(value), None, noise_int))


def snap(value, g):
    """``round(value / g)`` as exact float integers (the transformation).

    ``g`` is a power of two or an array of them (per coordinate); entries with
    ``g = 0`` (coordinates without noise) are returned unchanged.
    """
    value = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(value)):
        raise ValueError("the statistic to privatize contains NaN or inf.")
    g = np.asarray(g, dtype=float)
    if g.ndim == 0:
        return np.rint(value / g)
    return np.where(g > 0, np.rint(value / np.where(g > 0, g, 1.0)), value)


def release_on_grid(m, noise_int, g):
    """``fl(m + Y) * g``: a function of the integer ``m + Y`` only (module docstring).

    Entries with ``g = 0`` (no noise) return ``m`` (the value as computed).
    """
    g = np.asarray(g, dtype=float)
    out = (m + np.asarray(noise_int, dtype=float)) * g
    return out if g.ndim == 0 else np.where(g > 0, out, m)


#: share of delta the sampler's reserve may take before :func:`refine_for_reserve` halves the grid
RESERVE_SHARE = 0.01

#: largest noise scale in grid steps that :func:`refine_for_reserve` makes (the samplers' range
#: is 2^40)
_REFINE_MAX_SCALE = 2.0**39


def _tv_sum(vals, counts, releases):
    from ._discrete import DISCRETE_GAUSSIAN_SAMPLER_TV, rounded_gaussian_tv_bound

    tv = math.fsum(int(c) * rounded_gaussian_tv_bound(float(v)) for v, c in zip(vals, counts))
    return int(releases) * (tv + int(np.sum(counts)) * DISCRETE_GAUSSIAN_SAMPLER_TV)


def refine_for_reserve(epsilon, delta, s, releases=1, counts=None):
    """Factors ``2^-j`` (one per scale) by which to refine the grids so the sampler's reserve
    stays small.

    ``s`` are the noise scales in steps of the grids the public rule chose
    (:func:`grid_step`, :func:`coordinate_grids`). The reserve of
    :func:`discrete_gaussian_tv_reserve`, ``(1 + e^eps) sum_i tv(s_i)``,
    falls like ``s^-2`` (``tv(s) ~ 0.02 / s^2``) while ``e^eps`` grows: at
    epsilon 20 and delta ``1e-5`` the rule's grids left a reserve above a
    tenth of delta for every Gaussian release. So every coordinate whose
    scale is below ``s_min`` gets its grid halved until its scale reaches
    ``s_min`` (or ``2^39`` steps, within the samplers' range), where
    ``s_min`` (the smallest scale times a power of two) is where all the
    coordinates together would take at most ``RESERVE_SHARE * delta``. A finer grid is
    as safe as the rule's (the rounding adds less to the sensitivity); only
    the integers drawn get larger. Public: a function of epsilon, delta and
    the scales (``counts``: how many coordinates have each scale, default
    one each). The factors are all 1.0 when the rule's grids already
    qualify (every setting up to epsilon of about 15 at delta ``1e-5``).
    """
    s = np.atleast_1d(np.asarray(s, dtype=float))
    if s.size == 0 or np.min(s) < 1.0:
        return np.ones_like(s)
    k = s.size if counts is None else int(np.sum(np.asarray(counts, dtype=np.int64)))

    def over(scale):
        return scaled_reserve(epsilon, _tv_sum([scale], [k], releases)) > RESERVE_SHARE * delta

    s_min = float(np.min(s))  # the smallest scale that qualifies, found by doubling
    if not (s_min < _REFINE_MAX_SCALE and over(s_min)):
        return np.ones_like(s)  # every j below is <= 0: no refinement
    while s_min < _REFINE_MAX_SCALE and over(s_min):
        s_min *= 2.0
    # in place (the scales of a d x d statistic's coordinates are many)
    j = s_min / s
    np.ceil(np.log2(j, out=j), out=j)  # 0 for the coordinates already at or above s_min
    cap = _REFINE_MAX_SCALE / s
    np.floor(np.log2(cap, out=cap), out=cap)  # stay within the samplers' range
    np.minimum(j, cap, out=j)
    del cap
    np.clip(j, 0.0, None, out=j)
    return np.exp2(np.negative(j, out=j), out=j)


def discrete_gaussian_tv_reserve(epsilon, delta, s, releases=1):
    """The share of delta reserved for the discrete noise: ``(1 + e^eps) sum_i tv(s_i)``.

    ``s`` are the noise scales in grid units of the noisy coordinates of one
    release, repeated ``releases`` times (the steps of DP-SGD);
    ``tv(s) = rounded_gaussian_tv_bound(s) + DISCRETE_GAUSSIAN_SAMPLER_TV``
    bounds the total variation between the implemented sampler and the rounded
    continuous Gaussian that the calibration analyses (see
    :class:`skdp.mechanisms.gaussian.AnalyticGaussian`). Raises if the reserve
    would exceed a tenth of delta (scales far below the grid rule's).
    """
    s = np.atleast_1d(np.asarray(s, dtype=float))
    if s.size == 0:
        return 0.0
    if np.min(s) < 1.0:
        raise ValueError("the noise is narrower than one grid step: the grid rule does not apply.")
    vals, counts = np.unique(s, return_counts=True)
    reserve = scaled_reserve(epsilon, _tv_sum(vals, counts, releases))
    if reserve > 0.1 * delta:
        raise ValueError(
            "delta is too small for the floating-point-safe Gaussian sampler: its reserve "
            f"for sampling error ({reserve:.3g}) exceeds a tenth of delta. The reserve is "
            "(1 + e^epsilon) times the sampler's total-variation error, which even the finest "
            "grids the samplers support (2^39 steps per noise scale) keep only near "
            "0.02 * 2^-78 per coordinate: at delta = 1e-5 that allows epsilon up to about "
            "44 - ln(number of released coordinates). Use a smaller epsilon or a larger delta."
        )
    return reserve
