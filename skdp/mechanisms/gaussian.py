"""Gaussian mechanisms: classic, analytic (exact) and non-identical (i.n.i.d.).

All three add independent Gaussian noise to the released coordinates of the
query (the upper triangle, mirrored, for a symmetric query).

Privacy of Gaussian noise
-------------------------
For a mean shift ``d`` between neighbouring outputs and independent noise
``N(0, diag(sigma_i^2))``, the privacy loss is the same as that of a
one-dimensional Gaussian pair with separation ``mu = ||d / sigma||_2``
(Balle & Wang 2018, Lemma 3/Thm 8; Muthukrishnan & Kalyani 2023, Lemma 3). Such a pair is
(epsilon, delta)-DP **iff**

    delta >= Phi(mu/2 - epsilon/mu) - e^epsilon * Phi(-mu/2 - epsilon/mu)   (*)

(Balle & Wang 2018, Theorem 8). The right-hand side increases in ``mu``;
``mu0(epsilon, delta)`` denotes the largest ``mu`` satisfying (*). Under the
replace-one relation with l2 sensitivity ``Delta``, i.i.d. noise with
``sigma = Delta / mu0`` is therefore exactly (epsilon, delta)-DP (the
analytic Gaussian mechanism), and per-coordinate scales with
``sum_i lambda_i^2 / sigma_i^2 <= mu0^2`` are (epsilon, delta)-DP for every
difference inside the sensitivity profile box ``|d_i| <= lambda_i``.
"""

import numpy as np
from scipy.special import log_ndtr

from ._base import Mechanism, _usable_bound, register
from ._grid import (
    GridRelease,
    check_gaussian_steps,
    coarsen_for_samplers,
    coordinate_grids,
    discrete_gaussian_tv_reserve,
    refine_for_reserve,
    draws_by_scale,
    grid_step,
    pow2_at_least,
)

__all__ = [
    "gaussian_delta",
    "analytic_gaussian_mu",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "ClassicGaussian",
    "AnalyticGaussian",
    "InidGaussian",
    "AnalyticGaussianContinuous",
    "ClassicGaussianContinuous",
    "InidGaussianContinuous",
    "composed_gaussian_spec",
]


def _log_gaussian_delta(mu, epsilon):
    """log of the right-hand side of (*), computed without cancellation."""
    a = mu / 2.0 - epsilon / mu
    b = -mu / 2.0 - epsilon / mu
    la, lb = log_ndtr(a), log_ndtr(b)
    # delta = Phi(a) * (1 - exp(eps + log Phi(b) - log Phi(a))); the ratio is < 1.
    r = epsilon + lb - la
    if r > -1e-6:
        # cancellation (tiny mu and epsilon): r carries a rounding error of a few ulps of its
        # terms, comparable to r itself; lower r by a bound on that error so that delta is
        # overestimated, never underestimated (it was 0 whenever rounding gave r >= 0)
        err = 8.0 * np.finfo(float).eps * (abs(epsilon) + abs(la) + abs(lb)) + 1e-300
        r = min(r, 0.0) - err
    return la + np.log(-np.expm1(r))


def gaussian_delta(mu, epsilon):
    """Smallest delta for which a Gaussian pair at separation ``mu`` is (epsilon, delta)-DP.

    Balle & Wang (2018), Theorem 8: ``Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``.
    """
    mu = float(mu)
    if mu <= 0:
        return 0.0
    return float(np.exp(_log_gaussian_delta(mu, float(epsilon))))


def analytic_gaussian_mu(epsilon, delta, rtol=1e-12):
    """Largest separation ``mu0`` with ``gaussian_delta(mu0, epsilon) <= delta``.

    Found by bisection on ``log mu`` in log space; the returned value is the
    **safe** (lower) end of the final bracket, so
    ``gaussian_delta(mu0, epsilon) <= delta`` always holds and the relative
    error is below ``rtol``.

    Oracles (Muthukrishnan & Kalyani 2023, section 8.0): ``mu0(0.5, 1e-6) = 0.124106``;
    (Lu et al. 2023) ``1/mu0(1, 1e-5) = 3.7306``.
    """
    epsilon, delta = float(epsilon), float(delta)
    if not (epsilon > 0 and 0 < delta < 1):
        raise ValueError("analytic_gaussian_mu needs epsilon > 0 and 0 < delta < 1.")
    log_delta = np.log(delta)
    lo, hi = 1.0, 1.0
    if _log_gaussian_delta(hi, epsilon) <= log_delta:
        while _log_gaussian_delta(hi, epsilon) <= log_delta:
            lo, hi = hi, hi * 2.0
    else:
        while _log_gaussian_delta(lo, epsilon) > log_delta:
            lo, hi = lo / 2.0, lo
    # invariant: delta(lo) <= delta < delta(hi)
    while hi - lo > rtol * lo:
        mid = np.sqrt(lo * hi)
        if _log_gaussian_delta(mid, epsilon) <= log_delta:
            lo = mid
        else:
            hi = mid
    return float(lo)


def analytic_gaussian_sigma(epsilon, delta, l2_sensitivity=1.0):
    """Noise scale of the analytic Gaussian mechanism, ``Delta / mu0(epsilon, delta)``."""
    return float(l2_sensitivity) / analytic_gaussian_mu(epsilon, delta)


def classic_gaussian_sigma(epsilon, delta, l2_sensitivity=1.0):
    """Dwork & Roth (2014), Theorem A.1: ``sigma = Delta sqrt(2 ln(1.25/delta)) / epsilon``.

    Valid only for ``0 < epsilon < 1``.
    """
    epsilon, delta = float(epsilon), float(delta)
    if not 0 < epsilon < 1:
        raise ValueError(
            f"the classic Gaussian mechanism is proven only for epsilon < 1, got {epsilon}; "
            "use 'analytic_gaussian'."
        )
    return float(l2_sensitivity) * np.sqrt(2.0 * np.log(1.25 / delta)) / epsilon


def _curve(mu, reserve, epsilon):
    """A GaussianCurve from a grid spec: the reserve is ``(1 + e^eps) tv``."""
    from .._filter import GaussianCurve

    return GaussianCurve(float(mu) * (1 + 1e-12), float(reserve) / (1.0 + np.exp(epsilon)))


class _IIDGaussian(GridRelease, Mechanism):
    """i.i.d. Gaussian noise released on a grid (floating-point safe).

    The release is ``g * (round(f / g) + Y)`` with ``Y`` i.i.d. discrete
    Gaussian ``N_Z(0, (sigma/g)^2)`` (Canonne, Kamath & Steinke 2020) on a
    public power-of-two grid ``g`` (:mod:`skdp.mechanisms._grid`). Privacy:

    1. the rounded query ``m = round(f / g)`` has l2 sensitivity at most
       ``Delta / g + sqrt(k)`` (``k`` released coordinates);
    2. ``g * (m + round(s Z))`` with ``Z ~ N(0, I)`` and ``s = sigma / g`` is
       post-processing (rounding to integers commutes with adding the integer
       ``m``) of the continuous Gaussian mechanism on ``m``; with
       ``sigma = (Delta + g sqrt(k)) / mu0(epsilon, delta')`` it is
       (epsilon, delta')-DP by (*);
    3. per coordinate, the discrete Gaussian is within total variation
       ``tv(s)`` of the rounded Gaussian (``rounded_gaussian_tv_bound``) and
       the implemented sampler within ``DISCRETE_GAUSSIAN_SAMPLER_TV`` of the
       discrete Gaussian; an output law within total variation ``eta`` of an
       (epsilon, delta')-DP law on every input is
       (epsilon, delta' + (1 + e^epsilon) eta)-DP. The calibration reserves
       ``(1 + e^epsilon) k (tv(s) + DISCRETE_GAUSSIAN_SAMPLER_TV)`` of delta
       for this (``params["tv_reserve"]``, about 1e-13 per coordinate).
    """

    pure = False

    def _check_applicable(self, query, epsilon, delta):
        if query.l2_bound is None:
            return "it needs an l2 sensitivity (or a sensitivity profile)"
        return None

    def _sigma(self, epsilon, delta, l2):
        raise NotImplementedError

    def _calibrate(self, query, epsilon, delta):
        l2, k = query.l2_bound, query.n_released
        g = grid_step(l2, np.sqrt(k))
        # a finer grid where e^eps makes the sampler's reserve large (refine_for_reserve)
        g *= float(refine_for_reserve(
            epsilon, delta, [self._sigma(epsilon, delta, l2 + g * np.sqrt(k)) / g], counts=[k])[0])
        # a tiny epsilon: a coarser grid keeps the exact sampler in range (the final sigma, at
        # delta - reserve, is a little larger: SAMPLER_MAX_STEPS leaves room for it)
        g = coarsen_for_samplers(g, self._sigma(epsilon, delta, l2 + g * np.sqrt(k)) / g)
        l2g = l2 + g * np.sqrt(k)
        sigma0 = self._sigma(epsilon, delta, l2g)
        reserve = discrete_gaussian_tv_reserve(epsilon, delta, np.full(k, sigma0 / g))
        sigma = self._sigma(epsilon, delta - reserve, l2g)
        check_gaussian_steps(sigma / g, epsilon)
        mse = (sigma**2 + g**2 / 4.0) * float(np.sum(query.squared_error_weights()))
        return {"sigma": sigma, "l2_sensitivity": l2, "grid": g, "rounded_l2_sensitivity": l2g,
                "tv_reserve": reserve}, mse

    def _gaussian_curve(self, spec):
        """``mu = Delta_rounded / sigma``; ``tv`` = the reserve over ``1 + e^eps`` (or None)."""
        p = spec.params
        if "tv_reserve" not in p or "rounded_l2_sensitivity" not in p:
            return None  # a spec built by a caller (composition): the caller knows its curve
        return _curve(p["rounded_l2_sensitivity"] / p["sigma"], p["tv_reserve"], spec.epsilon)

    def _draws(self, spec, rng, lead):
        from ._discrete import sample_discrete_gaussian

        return sample_discrete_gaussian(spec.params["sigma"] / spec.params["grid"],
                                        lead + (spec.query.n_released,), rng)

    def _sample(self, spec, rng):
        return spec.query.expand(self._draws(spec, rng, ()) * spec.params["grid"])

    def _sample_batch(self, spec, rng, n):
        """``n`` draws at once as flattened rows (used by the audits)."""
        from .laplace import _expand_rows

        return _expand_rows(spec.query, self._draws(spec, rng, (int(n),)) * spec.params["grid"])

    def sample_continuous(self, spec, rng):
        """Continuous ``N(0, sigma^2)`` noise with the query's shape.

        For analyses that need a density and never release the noise itself
        (the objective perturbation of Chaudhuri et al. 2011); never use it
        for an additive release.
        """
        z = rng.standard_normal(spec.query.n_released) * spec.params["sigma"]
        return spec.query.expand(z)


class _ContinuousIID(Mechanism):
    verified = False
    pure = False
    failure = ("it adds floating-point Gaussian noise, whose low bits reveal the value it is "
               "added to (Mironov 2012; Jin et al. 2022); kept for comparison only.")

    def _check_applicable(self, query, epsilon, delta):
        if query.l2_bound is None:
            return "it needs an l2 sensitivity (or a sensitivity profile)"
        return None

    def _calibrate(self, query, epsilon, delta):
        sigma = self._sigma(epsilon, delta, query.l2_bound)
        mse = sigma**2 * float(np.sum(query.squared_error_weights()))
        return {"sigma": sigma, "l2_sensitivity": query.l2_bound}, mse

    def _sample(self, spec, rng):
        z = rng.standard_normal(spec.query.n_released) * spec.params["sigma"]
        return spec.query.expand(z)


class ClassicGaussian(_IIDGaussian):
    """Classic Gaussian mechanism (Dwork & Roth 2014, Theorem A.1).

    ``sigma = Delta_2 * sqrt(2 ln(1.25/delta)) / epsilon`` with i.i.d. noise on
    every released coordinate. The theorem needs ``epsilon < 1``; the
    mechanism refuses larger epsilon (use ``"analytic_gaussian"``, which is
    exact and never larger). ``Delta_2`` is the replace-one l2 sensitivity.
    """

    name = "gaussian"

    def _check_applicable(self, query, epsilon, delta):
        if epsilon >= 1:
            return "the classic bound holds only for epsilon < 1"
        return super()._check_applicable(query, epsilon, delta)

    def _sigma(self, epsilon, delta, l2):
        return classic_gaussian_sigma(epsilon, delta, l2)


class AnalyticGaussian(_IIDGaussian):
    """Analytic Gaussian mechanism (Balle & Wang 2018, Theorem 8 / Algorithm 1).

    ``sigma = Delta_2 / mu0(epsilon, delta)`` where ``mu0`` is the largest
    separation satisfying the exact condition (*) of this module; the
    calibration is tight (necessary and sufficient) and is solved to a
    relative error below 1e-12 on the safe side.
    """

    name = "analytic_gaussian"

    def _sigma(self, epsilon, delta, l2):
        return analytic_gaussian_sigma(epsilon, delta, l2)


class InidGaussian(GridRelease, Mechanism):
    """Gaussian noise with optimal non-identical scales (Muthukrishnan & Kalyani 2023, Theorem 4).

    Given a sensitivity profile ``lambda`` (``|d_i| <= lambda_i`` for every
    replace-one difference ``d``), any scales with
    ``sum_i lambda_i^2 / sigma_i^2 <= mu0(epsilon, delta)^2`` give
    (epsilon, delta)-DP (module docstring). Minimising the expected squared
    error ``sum_i w_i sigma_i^2`` (``w_i`` = 2 for mirrored off-diagonal
    entries of a symmetric query, else 1) under that constraint gives, by
    Lagrange multipliers,

        sigma_i^2 = (lambda_i / sqrt(w_i)) * (sum_j lambda_j sqrt(w_j)) / mu0^2,
        E||noise||^2 = (sum_j lambda_j sqrt(w_j))^2 / mu0^2,

    which is the paper's ``sigma_i^2 = lambda_i ||lambda||_1 / mu0^2`` when
    all ``w_i = 1`` (the weighted form is derived here, not in the paper).
    Coordinates with ``lambda_i = 0`` do not depend on the data and get no
    noise. The condition is sufficient for any query; it is tight only when
    coordinates are decoupled (Muthukrishnan & Kalyani 2023, section 9.1), so ``"auto"`` compares
    it with i.i.d. noise calibrated to the query's l2 sensitivity.
    """

    name = "inid_gaussian"
    pure = False
    needs_profile = True

    def mse_lower_bound(self, query, epsilon, delta):
        """``(sum_i lambda_i sqrt(w_i))^2 / mu0(epsilon, delta)^2``.

        The calibrated scales satisfy ``sum_i lambda_i^2 / sigma_i^2 <= sum_i
        lambda_g,i^2 / sigma_i^2 <= mu0^2`` for a ``mu0`` computed at
        ``delta - reserve <= delta`` (``mu0`` grows with delta), and the reported
        error is at least ``sum_i w_i sigma_i^2``, which Cauchy-Schwarz bounds
        below: ``(sum_i lambda_i sqrt(w_i))^2 <= (sum_i lambda_i^2 / sigma_i^2)
        (sum_i w_i sigma_i^2)``. (:func:`analytic_gaussian_mu` returns the
        lower end of its bracket, within ``1e-12`` relative: ``select`` uses
        the bound with a factor 2 to spare.)
        """
        lam = query.released_profile()
        total = float(np.dot(lam, np.sqrt(query.squared_error_weights())))
        with np.errstate(all="ignore"):  # (inf or 0 near the float64 limits: no bound)
            bound = float((np.float64(total) / analytic_gaussian_mu(epsilon, delta)) ** 2)
        return bound if _usable_bound(bound) else None

    def _calibrate(self, query, epsilon, delta):
        # in place where it can be: the profiles of d x d statistics have d(d+1)/2 coordinates
        # (every operation below is the one of the plain expression, on the same operands)
        lam = query.released_profile()
        w = query.squared_error_weights()
        sw = np.sqrt(w)
        noisy = lam > 0
        on = slice(None) if noisy.all() else noisy  # views, not copies, when all are noisy

        def scales_at(profile, d):
            total = float(np.dot(profile, sw))
            mu0 = analytic_gaussian_mu(epsilon, d)
            out = profile / sw
            out *= total
            np.sqrt(out, out=out)
            out /= mu0
            return out, mu0, total

        # per-coordinate grids (skdp.mechanisms._grid.coordinate_grids): rounding adds
        # g_i to lambda_i on the coordinates that depend on the data; the others are
        # data-independent and released as computed
        g = coordinate_grids(lam, scales_at(lam, delta)[0])
        lam_g = lam + g
        scales0, _, _ = scales_at(lam_g, delta)
        # the sampler's range (sigma_i / g_i <= 2^40): coarser grids where the scales grew
        # past it (coordinates whose lambda is negligible next to the grid)
        np.maximum(scales0, np.finfo(float).tiny, out=scales0)
        scales0 *= 2.0**-39
        np.maximum(g, pow2_at_least(scales0, out=scales0), out=g)
        g[~noisy] = 0.0
        np.add(lam, g, out=lam_g)
        scales0, _, _ = scales_at(lam_g, delta)
        # finer grids where e^eps makes the sampler's reserve large (refine_for_reserve)
        g[on] *= refine_for_reserve(epsilon, delta, scales0[on] / g[on])
        np.add(lam, g, out=lam_g)
        del scales0
        scales0, _, _ = scales_at(lam_g, delta)
        units = scales0[on] / g[on]
        del scales0
        reserve = discrete_gaussian_tv_reserve(epsilon, delta, units)
        del units
        scales, mu0, total = scales_at(lam_g, delta - reserve)
        # the condition of the module docstring for the rounded profile (holds by
        # construction; a coarsened grid only raises lambda_g and the scales with it)
        t = lam_g[on] / scales[on]
        ratio = float(np.sum(np.square(t, out=t))) / mu0**2
        del t
        if ratio > 1.0:
            scales *= np.sqrt(ratio)
            scales *= 1 + 1e-12
        t = np.square(scales)
        t *= w
        mse = float(np.sum(t))
        np.square(g, out=t)
        t *= w
        mse += float(np.sum(t)) / 4.0
        return {"scales": scales, "mu0": mu0, "grid": g, "tv_reserve": reserve}, mse

    def _gaussian_curve(self, spec):
        """``mu = mu0`` (the calibration's bound on ``||lambda_g / sigma||_2``), ``tv`` as i.i.d."""
        return _curve(spec.params["mu0"], spec.params["tv_reserve"], spec.epsilon)

    def _draws(self, spec, rng, lead):
        from ._discrete import sample_discrete_gaussian

        scales, g = spec.params["scales"], spec.params["grid"]
        noisy = scales > 0
        s_units = np.where(noisy, scales / np.where(noisy, g, 1.0), 0.0)
        return draws_by_scale(s_units, lead, lambda s, size, r: sample_discrete_gaussian(float(s), size, r),
                              rng)

    def _sample(self, spec, rng):
        return spec.query.expand(self._draws(spec, rng, ()) * spec.params["grid"])

    def _sample_batch(self, spec, rng, n):
        """``n`` draws at once as flattened rows (used by the audits)."""
        from .laplace import _expand_rows

        return _expand_rows(spec.query, self._draws(spec, rng, (int(n),)) * spec.params["grid"])

    def sample_continuous(self, spec, rng):
        """Continuous noise (see :meth:`_IIDGaussian.sample_continuous`)."""
        scales = spec.params["scales"]
        return spec.query.expand(rng.standard_normal(scales.shape) * scales)


class ClassicGaussianContinuous(_ContinuousIID):
    """The classic Gaussian mechanism with floating-point noise (unverified, comparison only)."""

    name = "gaussian_continuous"

    def _check_applicable(self, query, epsilon, delta):
        if epsilon >= 1:
            return "the classic bound holds only for epsilon < 1"
        return super()._check_applicable(query, epsilon, delta)

    def _sigma(self, epsilon, delta, l2):
        return classic_gaussian_sigma(epsilon, delta, l2)


class AnalyticGaussianContinuous(_ContinuousIID):
    """The analytic Gaussian mechanism with floating-point noise (unverified, comparison only).

    ``value + sigma * rng.standard_normal()``: the calibration of Balle & Wang
    (2018) for real-valued noise, released in doubles. The low bits of the
    release reveal the value (see :func:`skdp.audit.float_attack`).
    """

    name = "analytic_gaussian_continuous"

    def _sigma(self, epsilon, delta, l2):
        return analytic_gaussian_sigma(epsilon, delta, l2)


class InidGaussianContinuous(Mechanism):
    """i.n.i.d. Gaussian noise in floating point (unverified, comparison only)."""

    name = "inid_gaussian_continuous"
    verified = False
    pure = False
    needs_profile = True
    failure = _ContinuousIID.failure

    def _calibrate(self, query, epsilon, delta):
        lam = query.released_profile()
        w = query.squared_error_weights()
        mu0 = analytic_gaussian_mu(epsilon, delta)
        sw = np.sqrt(w)
        total = float(np.dot(lam, sw))
        scales = np.sqrt(lam / sw * total) / mu0
        return {"scales": scales, "mu0": mu0}, total**2 / mu0**2

    def _sample(self, spec, rng):
        scales = spec.params["scales"]
        return spec.query.expand(rng.standard_normal(scales.shape) * scales)


def composed_gaussian_spec(query, sigma, grid, epsilon, delta):
    """A grid Gaussian spec whose scale was derived by the caller (composition, accounting).

    For mechanisms made of many Gaussian releases (DP-SGD's steps), the noise
    scale comes from an accountant, not from one release's (epsilon, delta).
    The caller derives ``sigma`` for the *rounded* per-release sensitivity
    (``Delta + grid * sqrt(k)``) and reserves the discrete noise's total
    variation (:func:`skdp.mechanisms._grid.discrete_gaussian_tv_reserve`,
    once per release) from its delta; ``epsilon`` and ``delta`` record the
    guarantee of the whole composition. ``privatize`` then releases on
    ``grid`` with discrete Gaussian noise of scale ``sigma``.
    """
    from types import MappingProxyType

    from ._base import NoiseSpec

    sigma, grid = float(sigma), float(grid)
    if not (sigma / grid >= 1.0):
        raise ValueError("sigma must span at least one grid step.")
    check_gaussian_steps(sigma / grid, epsilon)  # the caller coarsens its grid first
    mse = (sigma**2 + grid**2 / 4.0) * float(np.sum(query.squared_error_weights()))
    params = {"sigma": sigma, "grid": grid, "l2_sensitivity": query.l2_bound}
    return NoiseSpec(mechanism="analytic_gaussian", query=query, epsilon=float(epsilon),
                     delta=float(delta), verified=True, params=MappingProxyType(params),
                     expected_squared_error=mse)


register(ClassicGaussian())
register(AnalyticGaussian())
register(InidGaussian())
register(ClassicGaussianContinuous())
register(AnalyticGaussianContinuous())
register(InidGaussianContinuous())
