"""Differentially private ordinary least squares."""

import math
from functools import lru_cache
from types import MappingProxyType
from numbers import Integral, Real

import numpy as np
from scipy import linalg
from scipy.stats import norm
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _num_samples, assert_all_finite, check_is_fitted

from .._budget import PrivacyBudget
from .._dask import check_dask_finite, is_dask_collection, scale_labels, validate_fit_data
from .._stats import (UNIT_ROUNDOFF, AugmentedRows, check_unit_sample_weight,
                      check_weight_structure, clipped_gram, computed_row_bound,
                      gram_rounding_bound, materialize)
from .._filter import release_curve
from .._validation import (
    MAX_PUBLIC_BOUND,
    MIN_PUBLIC_BOUND,
    call_without_values,
    is_sparse_input,
    check_data_norm,
    check_epsilon_delta,
    _leak_warning,
    check_positive_finite,
    validate_private_data,
)
from ..base import PrivateEstimatorMixin, ValueFreeScoreMixin, private_fit
from ..exceptions import PrivacyGuaranteeWarning, warn_at_caller
from ..leverage import leverage_scores, residual_scores
from ..mechanisms import NoiseSpec, Query, calibrate
from ..mechanisms._grid import (check_gaussian_steps, coarsen_for_samplers,
                                discrete_gaussian_tv_reserve, grid_step, refine_for_reserve)
from ..mechanisms.gaussian import analytic_gaussian_mu
from ..mechanisms.ndis import (
    als_F,
    gaussian_sketch,
    least_squares_sample,
    ls_noise_multiplier,
    private_sketch,
    rp_delta,
)
from ..random_projection import check_sketch_plan

__all__ = ["PrivateOLS"]

_METHODS = ("auto", "sketch", "ssp", "adassp", "mean", "ls", "als")
_PURE = ("ssp", "mean")  # the methods that offer delta = 0
_UNVERIFIED = ("ls", "als")
#: methods that release the labels at the features' scale (``y * data_norm / label_bound``)
_BALANCED = ("ssp", "adassp", "sketch")


@lru_cache(maxsize=64)
def _cached_ls_multiplier(epsilon, delta, r, d):
    return ls_noise_multiplier(epsilon, delta, r, d)


def default_delta(n_samples):
    """``delta = 1 / n^2`` (used when ``delta=None``; n is public)."""
    if n_samples < 2:
        raise ValueError(
            "delta=None sets delta = 1/n^2, which needs at least 2 samples; got 1 sample. "
            "Pass delta explicitly."
        )
    return 1.0 / float(n_samples) ** 2


def _ssp_sensitivity(R, B, c):
    """Exact replace-one l2 sensitivity of the upper triangle of ``Z^T Z``.

    ``z = (x, c, y)``, ``z' = (x', c, y')`` with ``||x||, ||x'|| <= R``,
    ``|y|, |y'| <= B`` and a shared constant ``c`` (``c = 0``: no intercept
    column). Returns ``sup ||triu(z z^T - z' z'^T)||_2`` (diagonal included,
    each off-diagonal entry once, as :class:`skdp.mechanisms.Query` with
    ``symmetric=True`` releases it); see :class:`PrivateOLS` for the
    derivation. The supremum is ``max_{|v| <= B} h(v)`` of the piecewise
    quartic ``h``; it is evaluated at the endpoints, the breakpoints and the
    real critical points of every piece (an exact finite candidate set).
    """
    R2, c2, B = float(R) ** 2, float(c) ** 2, float(B)

    def g(v):  # h(v): y = B, y' = v, |x| = |x'| = R, x.x' = t at its best value
        t = np.clip(-(c2 + B * v) / 2.0, -R2, R2)
        return (2 * R2**2 - 2 * t**2 + c2 * (2 * R2 - 2 * t) + R2 * (B**2 + v**2)
                - 2 * t * B * v + c2 * (B - v) ** 2 + (B**2 - v**2) ** 2)

    cand = [-B, B]
    if B > 0:
        cand += [v for v in ((2 * R2 - c2) / B, -(2 * R2 + c2) / B) if -B < v < B]
        v = np.polynomial.Polynomial([0.0, 1.0])
        for t in (None, R2, -R2):  # interior t* = -(c^2 + B v)/2, or clipped at +-R^2
            tt = -(c2 + B * v) / 2.0 if t is None else t
            h = (2 * R2**2 - 2 * tt**2 + c2 * (2 * R2 - 2 * tt) + R2 * (B**2 + v**2)
                 - 2 * tt * B * v + c2 * (B - v) ** 2 + (B**2 - v**2) ** 2)
            cand += [r.real for r in h.deriv().roots() if abs(r.imag) < 1e-9 and -B < r.real < B]
    return float(np.sqrt(max(g(v) for v in cand)))


def _ssp_l1_sensitivity(R, B, c, d):
    """Replace-one l1 sensitivity bound of the upper triangle of ``Z^T Z`` (pure route).

    ``z = (x, c, y)``, ``z' = (x', c, y')``, ``x, x'`` in the ball of radius
    ``R`` of ``R^d``, ``|y|, |y'| <= B``, ``c`` shared (``c = 0``: no
    intercept column). The released change splits into five blocks,

    * ``T1 = sum_{i<=j} |x_i x_j - x'_i x'_j|``. For a sign pattern ``s``,
      ``sum s_ij (x_i x_j - x'_i x'_j) = x^T A x - x'^T A x'`` with
      ``A_ii = s_ii``, ``A_ij = s_ij / 2``; over the ball this is at most
      ``R^2 (lambda_max(A)_+ + lambda_min(A)_-) <= R^2 sqrt(2) ||A||_F
      = R^2 sqrt(d (d + 3) / 2)`` (``a + b <= sqrt(2 (a^2 + b^2))`` and
      ``lambda_max^2 + lambda_min^2 <= ||A||_F^2``), for every pattern;
    * ``T2 = c ||x - x'||_1 <= 2 c sqrt(d) R`` (``||x||_1 <= sqrt(d) ||x||``);
    * ``T3 = ||x y - x' y'||_1 <= |y| ||x||_1 + |y'| ||x'||_1 <= 2 sqrt(d) R B``;
    * ``T4 = c |y - y'| <= 2 c B``; ``T5 = |y^2 - y'^2| <= B^2``;

    (the ``c^2`` entry does not change). Also ``||.||_1 <= sqrt(K) Delta_2``
    for ``K`` released coordinates, with the exact ``Delta_2`` of
    :func:`_ssp_sensitivity`. The smaller of the two bounds is returned.
    Both also hold for rows weighted by ``sqrt(w)``, ``w`` in ``[0, 1]``:
    the l1 norm of ``w z z^T - w' z' z'^T`` is convex in ``(w, w')``, so it
    is largest at a vertex; ``(1, 1)`` is the case above, and ``(1, 0)``
    gives ``(||z||_1^2 + |z|^2) / 2 <= (d+1) R^2 / 2 + c^2 + B^2 + sqrt(d) R (c
    + B) + c B``, below the block bound term by term when ``c <= sqrt(d) R``
    (``d^2 + 4d - 1 >= 0`` for the ``R^2`` terms), and below ``sqrt(K)``
    times the l2 change, itself at most ``Delta_2``. It is an upper bound, not the supremum
    (each block's worst case is reached by a different pair): against a
    numeric maximisation over the domain it is 1.20-1.45x above the
    largest change found for ``d <= 4`` (``tests/test_ols.py``).
    """
    R, B, c, d = float(R), float(B), float(c), int(d)
    sd = np.sqrt(d)
    blocks = (np.sqrt(d * (d + 3) / 2.0) * R**2 + 2 * sd * R * B + B**2
              + 2 * c * (sd * R + B))
    k = d + (2 if c > 0 else 1)  # columns of Z
    if c > np.sqrt(d) * R:
        raise ValueError("the l1 bound is derived for a constant column c <= sqrt(d) data_norm.")
    return float(min(blocks, np.sqrt(k * (k + 1) // 2) * _ssp_sensitivity(R, B, c)))


def _gram_sensitivity(R, c):
    """Exact replace-one l2 sensitivity of the upper triangle of ``X^T X`` with
    rows ``(x, c)``, ``||x|| <= R`` (``c = 0``: no intercept column).

    The squared norm is at most ``2R^4 - 2t^2 + c^2 (2R^2 - 2t)`` with
    ``t = x.x' in [-R^2, R^2]`` (attained when ``|x| = |x'| = R`` and
    ``x x^T - x' x'^T`` is diagonal); its maximum is at ``t = -c^2/2``:
    ``2R^4 + 2c^2R^2 + c^4/2`` when ``c^2 <= 2R^2``, else at ``t = -R^2``:
    ``4 c^2 R^2``.
    """
    R2, c2 = float(R) ** 2, float(c) ** 2
    t = max(-c2 / 2.0, -R2)
    return float(np.sqrt(2 * R2**2 - 2 * t**2 + c2 * (2 * R2 - 2 * t)))


#: public share of mu^2 of AdaSSP's lambda_min release (see PrivateOLS)
ADASSP_LAMBDA_SHARE = 0.1


def _adassp_shares(R, B, c):
    """Public shares of ``mu^2`` for AdaSSP's (lambda_min, X^T X, X^T y) releases.

    ``lambda_min`` gets ``ADASSP_LAMBDA_SHARE``. The rest is split to
    minimise the first-order error of ``theta = (G + E)^{-1} (b + e)``:
    ``theta - theta* ~ G^{-1} (e - E theta*)`` with
    ``E||e - E theta*||^2 = p s_b^2 + (p + 1) s_G^2 |theta*|^2``. With
    ``s_i = Delta_i / (sqrt(w_i) mu)`` and ``w_G + w_b`` fixed, Lagrange
    multipliers give ``w_G : w_b = Delta_G |theta*| : Delta_b``. ``theta*``
    is private; its public scale is ``|theta*| = B / Lx`` (a coefficient
    vector that maps the feature bound onto the label bound).
    """
    Lx = float(np.sqrt(R**2 + c**2))
    a_g = _gram_sensitivity(R, c) * float(B) / Lx
    a_b = 2.0 * Lx * float(B)
    rest = 1.0 - ADASSP_LAMBDA_SHARE
    return (ADASSP_LAMBDA_SHARE, rest * a_g / (a_g + a_b), rest * a_b / (a_g + a_b))


def _joint_gaussian_specs(queries, shares, epsilon, delta):
    """Grid Gaussian specs for releases that share one (epsilon, delta) jointly.

    Releases ``i = 1..m`` with replace-one l2 sensitivities ``Delta_i`` and
    independent Gaussian noise ``sigma_i`` are, together, one Gaussian
    mechanism on the stacked, rescaled query ``(f_i / sigma_i)_i``, whose l2
    sensitivity is ``mu = sqrt(sum_i (Delta_i / sigma_i)^2)`` (the worst case
    of the sum is at most the sum of the worst cases); equivalently the
    composition of ``mu_i``-GDP releases is ``sqrt(sum mu_i^2)``-GDP (Dong,
    Roth & Su 2022, Cor. 3.3). It is (epsilon, delta')-DP iff
    ``delta' >= Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)`` (Balle & Wang
    2018, Thm 8), so ``mu = mu0(epsilon, delta - reserve)`` and
    ``sigma_i = Delta_i^g / (sqrt(share_i) mu)`` with ``sum share_i = 1``.

    Every release is on its own power-of-two grid ``g_i``
    (:func:`skdp.mechanisms._grid.grid_step`): its rounded sensitivity is
    ``Delta_i^g = Delta_i + g_i sqrt(k_i)`` (``k_i`` released coordinates)
    and its discrete-Gaussian sampler is within total variation ``tv_i`` of
    the rounded continuous Gaussian. The reserve
    ``(1 + e^eps) sum_i tv_i`` (:func:`~skdp.mechanisms._grid.discrete_gaussian_tv_reserve`)
    is computed at the scales calibrated for the full delta, which are
    smaller than the final ones (the bound decreases in the scale), and taken
    from delta before ``mu`` is calibrated, so the fit is (epsilon,
    delta)-DP including the sampling error. Each spec records its own
    reserve, so :func:`skdp._filter.release_curve` of the specs is the
    curve ``(mu, reserve / (1 + e^eps))`` of the whole fit.
    """
    shares = np.asarray(shares, dtype=float)
    if not (len(shares) == len(queries) and np.all(shares > 0)
            and abs(shares.sum() - 1.0) < 1e-12):
        raise ValueError("shares must be positive, one per query, and sum to 1.")
    shares = shares / shares.sum()
    grids = [grid_step(q.l2_bound, np.sqrt(q.n_released)) for q in queries]
    rounded = [q.l2_bound + g * np.sqrt(q.n_released) for q, g in zip(queries, grids)]
    mu_full = analytic_gaussian_mu(epsilon, delta)

    def grid_scales():  # each release's noise scale in grid steps, at the full delta
        return [dg / (np.sqrt(w) * mu_full) / g for g, dg, w in zip(grids, rounded, shares)]

    # finer grids where e^eps makes the sampler's reserve large (refine_for_reserve)
    factors = refine_for_reserve(epsilon, delta, grid_scales(),
                                 counts=[q.n_released for q in queries])
    grids = [g * float(f) for g, f in zip(grids, factors)]
    # ... or coarser ones where a tiny epsilon puts a scale beyond the exact sampler's range
    grids = [coarsen_for_samplers(g, s) for g, s in zip(grids, grid_scales())]
    rounded = [q.l2_bound + g * np.sqrt(q.n_released) for q, g in zip(queries, grids)]
    reserves = [discrete_gaussian_tv_reserve(epsilon, delta, np.full(q.n_released, scale))
                for q, scale in zip(queries, grid_scales())]
    reserve = math.fsum(reserves)
    mu = analytic_gaussian_mu(epsilon, delta - reserve)
    specs = []
    for q, g, dg, w, res in zip(queries, grids, rounded, shares, reserves):
        sigma = dg / (np.sqrt(w) * mu)
        check_gaussian_steps(sigma / g, epsilon)
        mse = (sigma**2 + g**2 / 4.0) * float(np.sum(q.squared_error_weights()))
        params = {"sigma": float(sigma), "grid": float(g), "l2_sensitivity": float(q.l2_bound),
                  "rounded_l2_sensitivity": float(dg), "tv_reserve": float(res),
                  "joint_mu": float(mu), "share": float(w)}
        specs.append(NoiseSpec(mechanism="analytic_gaussian", query=q, epsilon=float(epsilon),
                               delta=float(delta), verified=True, params=MappingProxyType(params),
                               expected_squared_error=float(mse)))
    return specs


def _spectral_bound(s_entry, p):
    """``s sqrt(p log(2 p^2 / 0.05))``: AdaSSP's bound on the spectral norm of the
    symmetric ``p x p`` Gram noise with per-entry scale ``s`` (Wang 2018)."""
    return float(s_entry) * np.sqrt(p * np.log(2.0 * p * p / 0.05))


def _noise_to_signal(bound, n, p, Lx2):
    """``rho = bound / (n Lx^2 / p)``: the noise bound against the mean eigenvalue
    ``tr(X^T X) / p <= n Lx^2 / p`` that the augmented features can have (public)."""
    return float(bound) * p / (float(n) * float(Lx2))


#: ``rho`` above which the SSP floor grows with it: ``floor = bound * max(1, rho / SSP_WEAK_RHO)``
SSP_WEAK_RHO = 2.0
#: ``method="auto"``: AdaSSP inside this ``rho`` window when ``d >= AUTO_ADASSP_MIN_D``, else SSP
AUTO_ADASSP_RHO = (0.2, 1.5)
AUTO_ADASSP_MIN_D = 20


def _unit_entry_noise(d, epsilon, delta, c):
    """Standard deviation of one entry of the "ssp" noise at unit bounds (``data_norm =
    label_bound = 1``, intercept constant ``c``): Gaussian for ``delta > 0``; for ``delta = 0``
    the pure route's Laplace (``sqrt(2)`` times its scale)."""
    if delta == 0:
        return float(np.sqrt(2.0) * _ssp_l1_sensitivity(1.0, 1.0, c, d) / epsilon)
    return float(_ssp_sensitivity(1.0, 1.0, c) / analytic_gaussian_mu(epsilon, delta))


def _auto_rho(n, d, epsilon, delta, fit_intercept):
    """``rho`` of "ssp" at ``label_bound = data_norm`` (scale free): a function of
    (n, d, epsilon, delta) only, used by ``method="auto"``."""
    c = 1.0 if fit_intercept else 0.0
    p = d + int(fit_intercept)
    s = _unit_entry_noise(d, epsilon, delta, c)
    return _noise_to_signal(_spectral_bound(s, p), n, p, 1.0 + c * c)


#: ``method="auto"``: the private mean ("mean") when SSP's intercept noise, in units of the
#: label bound, is at least this (``_auto_intercept_noise``)
AUTO_MEAN_NOISE = 0.1


def _auto_intercept_noise(n, d, epsilon, delta):
    """Standard deviation of the intercept "ssp" would release, in units of the label bound.

    At unit bounds (``data_norm = label_bound = 1``, ``c = 1``) the intercept
    is ``(sum_i y_i + e) / n`` with ``e`` one entry of the SSP noise: its
    standard deviation is the per-entry noise scale (:func:`_unit_entry_noise`)
    over ``n``. A function of ``(n, d, epsilon, delta)`` only.
    """
    return _unit_entry_noise(d, epsilon, delta, 1.0) / n


def _auto_method(n, d, epsilon, delta, fit_intercept):
    """The public rule of ``method="auto"`` (see :class:`PrivateOLS`)."""
    if fit_intercept and _auto_intercept_noise(n, d, epsilon, delta) >= AUTO_MEAN_NOISE:
        return "mean"
    if delta == 0:
        return "ssp"  # the pure epsilon-DP route (Laplace)
    lo, hi = AUTO_ADASSP_RHO
    rho = _auto_rho(n, d, epsilon, delta, fit_intercept)
    return "adassp" if d >= AUTO_ADASSP_MIN_D and lo <= rho <= hi else "ssp"


def _mean_sensitivity(c, B, weighted):
    """Replace-one l1 sensitivity of the mean route's release (exact arithmetic).

    Rows ``sqrt(w) (c, clip_B(y))``; the released entries of their Gram
    matrix are ``s = c sum_i w_i y_i`` and, with weights, ``m = c^2 sum_i
    w_i`` (without weights ``m = n c^2`` is public and not released). A
    replacement changes ``s`` by ``c (w y - w' y')`` and ``m`` by
    ``c^2 (w - w')``. Without weights (``w = w' = 1``): ``|s - s'| <= 2 c
    B``. With weights in ``[0, 1]`` the l1 change ``c |w y - w' y'| + c^2
    |w - w'|`` is convex in ``(w, w')`` for fixed labels, so it is largest at
    a vertex of ``[0, 1]^2``: ``(1, 1)`` gives ``2 c B``, ``(1, 0)`` and
    ``(0, 1)`` give ``c B + c^2``, ``(0, 0)`` gives 0. Both are attained
    (``y = B, y' = -B``; ``y = B`` against a zero weight).
    """
    c, B = float(c), float(B)
    return max(2.0 * c * B, c * B + c * c) if weighted else 2.0 * c * B


def _intercept_count(A, p, n, c, weighted):
    """Post-processing of the intercept column's own Gram entry ``c^2 sum_i w_i`` (in place).

    It is the denominator of the intercept (:func:`_psd_solve`, ``free_last``),
    released with noise like the rest of the statistic; at small ``n`` and
    epsilon a noisy value near 0 made the intercept explode. Without weights
    it is ``n c^2``, a public number, which replaces the release; with
    weights in ``[0, 1]`` it is private, and the release is clipped to its
    public range ``[c^2, n c^2]`` (at least one record's weight, as
    PrivatePCA floors its noisy total weight).
    """
    A[p - 1, p - 1] = _public_count(A[p - 1, p - 1], n, c, weighted)


def _public_count(noisy, n, c, weighted):
    """``c^2 sum_i w_i`` as used: ``n c^2`` without weights (public; ``noisy`` is ignored),
    else the noisy release clipped to its public range ``[c^2, n c^2]``."""
    top = float(n) * float(c) * float(c)
    if not weighted:
        return top
    return min(max(float(noisy), float(c) * float(c)), top)


def _psd_solve(A, b, ridge=0.0, floor=0.0, free_last=False):
    """Solve ``(A + ridge I) x = b`` for a noisy symmetric ``A``.

    Post-processing: eigenvalues of ``A + ridge I`` are floored at ``floor``
    (``0``: the projection onto the PSD cone; a public ``floor > 0`` keeps
    noise-dominated directions from being inverted) and the pseudo-inverse
    is applied.

    ``free_last=True`` (the intercept column, last): the ridge and the floor
    act on the features only. The intercept is profiled out (Schur
    complement ``S = F - f f^T / a`` of the noisy ``A = [[F, f], [f^T, a]]``,
    the centred Gram matrix), the floored system is solved for the features,
    and the intercept is the exact solution given them. A floor far above
    the signal then gives the mean predictor (feature weights 0, intercept
    ``b_c / a``: the noisy mean of y), not the prediction 0. If the noisy
    ``a`` is not positive the whole system is floored as above.
    """
    A = 0.5 * (A + A.T)
    p = A.shape[0]
    if free_last and p >= 2 and A[-1, -1] > 0:
        F, f, a = A[:-1, :-1], A[:-1, -1], A[-1, -1]
        bf, bc = b[:-1], b[-1]
        S = F - np.outer(f, f) / a
        theta_f = _psd_solve(S, bf - f * (bc / a), ridge, floor)
        return np.r_[theta_f, (bc - f @ theta_f) / a]
    A = A + ridge * np.eye(p)
    w, V = linalg.eigh(A)
    w = np.maximum(w, max(float(floor), 0.0))
    tol = max(w.max(initial=0.0), 1e-300) * A.shape[0] * np.finfo(float).eps
    inv = np.where(w > tol, 1.0 / np.where(w > tol, w, 1.0), 0.0)
    return V @ (inv * (V.T @ b))


def _float_labels(y):
    """``y`` as float64, refused (``Input y contains NaN or infinity``) unless finite."""
    y = np.asarray(y, dtype=np.float64)
    assert_all_finite(y, input_name="y")
    return y


class PrivateOLS(ValueFreeScoreMixin, PrivateEstimatorMixin, RegressorMixin, BaseEstimator):
    """Differentially private ordinary least squares.

    Neighbouring relation: replace-one record ``(x, y)``, n public. Public
    bounds: ``||x|| <= data_norm`` (rows are clipped to it) and
    ``|y| <= label_bound`` (labels outside are clipped to it, like rows beyond
    ``data_norm``; never trusted, never reported).

    Intercept: with ``fit_intercept=True`` every row is augmented with a
    constant ``c = data_norm`` (a public value on the feature scale), so the
    augmented feature row has norm ``<= sqrt(2) data_norm`` and the full
    row ``z = [x, c, y]`` has ``||z||^2 <= R^2 = 2 data_norm^2 + label_bound^2``
    (``data_norm^2 + label_bound^2`` without intercept). Every sensitivity
    below is stated with these augmented bounds; the intercept is the
    coefficient of the constant column times ``c``. Without weights that
    column's own Gram entry is ``n c^2``, public, and "ssp"/"adassp" use it
    in place of its noisy release (post-processing; with weights it is
    clipped to its public range ``[c^2, n c^2]``, ``_intercept_count``).

    Methods
    -------
    ``"sketch"`` (verified)
        ``M_RP`` of Lu et al. (2023) on ``Z = [X, (c), y]``: release
        ``G [Z; sigma I]`` (``G`` r x (n+p+1) i.i.d. N(0, 1)), then least
        squares on the sketch (post-processing; approximately ridge with
        ``lambda = sigma^2``). ``sigma = R * rp_noise_multiplier(eps, delta, r)``
        for **replace-one** neighbours: the exact rank-2 spectrum of
        :func:`skdp.mechanisms.ndis.rp_replace_delta` at ``L = R^2/sigma^2``
        (the paper's ``sigma = l/sqrt(lbar)`` covers add/remove only).
        The row bound keeps the constant column: although every other row
        carries ``c`` too, the ``n - 1`` other rows can all be
        ``z0 = (-x, c, 0)``, orthogonal to both ``v = (x, c, B)`` and
        ``v' = (x, c, -B)``, and ``v`` is orthogonal to ``v'`` when
        ``B^2 = 2 R^2`` (``R = data_norm``); the whitened pair is then
        exactly the worst case of ``rp_replace_delta`` at
        ``L = (2 R^2 + B^2) / sigma^2`` for every n, so no discount for the
        shared column is valid in general (tested with the exact
        hockey-stick divergence of the two sketch laws, ``ndis_delta``). At
        ``B = R`` a numeric search over such pairs (large n, ``d >= 2``)
        reaches generalized eigenvalues within 1% of the same worst case,
        so a discount there could lower the noise by well under 1%, not
        the ``sqrt(3/2)`` once hoped for.
        The sketch is sampled as ``Z_r F`` with ``F^T F = Z^T Z + sigma^2 I``
        (same distribution as ``G [Z; sigma I]``), in ``O(n p^2 + r p^2)``
        time, and released on a public grid by the shared
        :func:`skdp.mechanisms.ndis.private_sketch` (floating-point safe:
        sigma calibrated at ``0.99 delta``, the grid's public
        total-variation reserve ``delta_reserve_`` added; when no grid
        release keeps the reserve within ``delta / 100`` the fit raises
        before the charge, unless ``allow_float_sketch=True``: then the
        sketch is drawn in floating point with a warning,
        ``float_safe_ = False``), see :class:`skdp.PrivateRandomProjection`.
    ``"ssp"`` (verified)
        Sufficient statistics perturbation: release the symmetric
        ``(p+1) x (p+1)`` matrix ``A = Z^T Z`` (it holds ``X^T X`` and ``X^T y``)
        through :func:`skdp.mechanisms.calibrate`. Replace-one sensitivity:
        ``A - A' = z z^T - z' z'^T`` with ``z = (x, c, y)``, ``z' = (x', c, y')``
        (``c`` shared; no ``c`` without intercept). The core releases the upper
        triangle (diagonal included, each off-diagonal entry once), whose
        squared change is ``U_xx + c^2 |x - x'|^2 + |x y - x' y'|^2 +
        c^2 (y - y')^2 + (y^2 - y'^2)^2`` (the ``c^2`` diagonal entry cancels),
        with ``U_xx <= ||x x^T - x' x'^T||_F^2 = a^2 + b^2 - 2 t^2``
        (``a = |x|^2``, ``b = |x'|^2``, ``t = x.x'``; equality after a rotation
        that diagonalises ``x x^T - x' x'^T``, every other term being rotation
        invariant). The bound increases in ``a``, ``b`` (so ``a = b = R^2``)
        and, for every feasible ``t``, in ``(y+y')^2`` and ``(y-y')^2``, so
        ``|y| = B`` (``y = B``, ``y' = v``); it is concave in ``t``, maximised at
        ``t = clip(-(c^2 + B v)/2, -R^2, R^2)``. ``Delta_2^2`` is the maximum over
        ``|v| <= B`` of the resulting piecewise quartic, evaluated exactly at
        its endpoints, breakpoints and critical points (``_ssp_sensitivity``).
        Closed forms: with intercept (``c = R``) and ``B^2 <= 3 R^2`` (attained
        at ``y' = -B``, ``t = (B^2 - R^2)/2``)
        ``Delta_2 = sqrt((9R^2 + B^2)(R^2 + B^2)/2)`` (``sqrt(10)`` at
        ``R = B = 1``, was ``sqrt(2)(2R^2 + B^2) = 4.243``); without
        intercept and ``B^2 <= 2 R^2``: ``Delta_2 = (2R^2 + B^2)/sqrt(2)``.
        Tested against a numeric maximisation over the domain.
        With ``delta = 0`` (pure epsilon-DP): the same release with the
        Laplace mechanism on the grid (exactly epsilon-DP, Dwork et al.
        2006; floating-point safe) calibrated to the replace-one l1
        sensitivity bound of the upper triangle of ``Z^T Z``
        (``_ssp_l1_sensitivity``: ``sqrt(d (d+3)/2) R^2 + 2 sqrt(d) R B + B^2
        + 2 c (sqrt(d) R + B)`` or ``sqrt(K) Delta_2``, whichever is
        smaller; 23.7 at ``R = B = c = 1``, ``d = 10``), tested against a
        numeric maximisation over the domain (never exceeded; 1.20-1.45x
        above the largest change found, so a tighter exact supremum would
        lower the noise by up to that factor).
        Then ``theta`` solves the noisy normal equations with the
        eigenvalues of the noisy ``X^T X`` floored at the public
        ``bound * max(1, rho / 2)`` (``floor_``), then the pseudo-inverse:
        ``bound = s sqrt(p log(2 p^2 / 0.05))`` (``s`` the per-entry noise
        scale) is the bound on the noise's spectral norm that AdaSSP uses
        (Wang 2018), and ``rho = bound / (n Lx^2 / p)`` compares it with the
        largest mean eigenvalue the augmented features allow. Post-processing
        of the release with public quantities: noise-dominated directions are
        not inverted, and when the noise dominates everywhere (``rho > 2``)
        the coefficients shrink towards 0 (the centre of the public label
        range), which keeps the fit at or below the mean predictor when the
        signal is weak (``benchmarks/bench_ols.py --crossover``).
    ``"adassp"`` (verified)
        AdaSSP (Wang 2018, Algorithm 2) with its three Gaussian releases
        calibrated **jointly** to ``(eps, delta)``: (i) ``lambda_min(X^T X)``,
        replace-one sensitivity ``Lx^2`` (Weyl: removing ``x x^T`` lowers it
        by at most ``|x|^2``, adding ``x' x'^T`` never lowers it),
        released as ``max(lambda_min + noise - s1 z_{0.95}, 0)`` (a lower
        bound w.p. 0.95); (ii) ``X^T X`` (symmetric upper triangle: rows
        ``(x, c)`` share ``c``, so ``Delta_2^2 = max_t 2R^4 - 2t^2 + c^2 (2R^2 - 2t)
        = 2R^4 + 2c^2R^2 + c^4/2`` at ``t = x.x' = -c^2/2``: ``sqrt(2) 1.5 R^2``
        with intercept, ``sqrt(2) R^2`` without);
        (iii) ``X^T y`` (``Delta_2 = 2 Lx B``: ``|x y - x' y'| <= 2 Lx B``,
        attained at ``x = x'``, ``y = -y' = B``: already exact),
        where ``Lx`` is the augmented feature bound and ``B = label_bound``.
        Joint calibration: three independent Gaussian releases with
        sensitivities ``Delta_i`` and scales ``sigma_i`` are one Gaussian
        mechanism with separation ``mu = sqrt(sum (Delta_i / sigma_i)^2)``
        (Dong, Roth & Su 2022, Cor. 3.3), exactly (eps, delta)-DP at
        ``mu = mu0(eps, delta)`` (Balle & Wang 2018, Thm 8); ``mu^2`` is split
        in public shares ``w_i`` (``sigma_i = Delta_i / (sqrt(w_i) mu)``):
        ``w_1 = 0.1`` for ``lambda_min`` and the rest in the ratio
        ``Delta_2 B / Lx : Delta_3``, which minimises the first-order error
        ``p s_3^2 + (p+1) s_2^2 |theta|^2`` at the public coefficient scale
        ``|theta| = B / Lx`` (``_adassp_shares``). The grid reserve of the
        three discrete samplers is taken from delta first
        (``_joint_gaussian_specs``). The former split (eps/3, delta/3) per
        release by basic composition had a true composed delta of about
        5e-12 at (1, 1e-5); the joint calibration adds 1.70x less noise at
        eps = 1 for equal shares (1.73x at eps = 0.1, 1.61x at eps = 5).
        Ridge ``lambda = max(0, s2 sqrt(p log(2 p^2 / 0.05)) - lambda_min~)``
        with ``s2`` the per-entry noise scale of (ii) (Wang's rule with the
        noise scale of our calibration).
    ``"ls"`` (**unverified**, warns PrivacyGuaranteeWarning)
        ``M_LS`` (Lu et al. 2023, Figure 4): one sample of
        ``N(xt, |wt|^2/r (Bt^T Bt)^{-1})`` on the regularized data. Its DP
        rests on the paper's *unproven* monotonicity conjecture on
        ``F_{r,d}`` (Theorem 5) and is stated for add/remove neighbours; we
        calibrate it at ``(eps/2, delta/(1 + e^{eps/2}))`` so that the
        add/remove guarantee, chained over ``D -> D minus z -> D'``, would
        give replace-one ``(eps, delta)``.
    ``"als"`` (**unverified**)
        ``M_ALS`` (Lu et al. 2023, Figure 11): least squares on
        ``G [Z; sigma I]`` with the ``M_LS`` calibration; only
        *asymptotically* DP (a central limit theorem in r), no finite-r
        guarantee.
    ``"mean"`` (verified, pure epsilon-DP)
        The intercept-only model: ``coef_ = 0`` and ``intercept_`` the mean
        of the clipped labels, released by the Laplace mechanism on a grid
        (Dwork et al. 2006; the discrete Laplace of Canonne, Kamath & Steinke
        2020). The rows ``sqrt(w) (c, clip_B(y))`` with ``c = B`` (the
        constant cancels in the intercept) go through the chunked kernel
        without the features; the release is ``s = c sum_i w_i y_i`` (with
        weights also ``m = c^2 sum_i w_i``, clipped to ``[c^2, n c^2]``;
        without weights ``m = n c^2`` is public) and ``intercept_ = c s / m``,
        clipped to ``[-B, B]``. Replace-one l1 sensitivity ``2 c B`` (with
        weights ``max(2 c B, c B + c^2)``, ``_mean_sensitivity``): ``2 B^2``
        in both cases at ``c = B``. It spends ``(epsilon, 0)`` whatever
        ``delta`` allows, and needs no ``data_norm``. The baseline every
        private regression has to beat, and what ``"auto"`` returns when the
        budget cannot pay for the features: at ``n epsilon`` small the SSP
        intercept alone (one entry of a Gaussian release shared with every
        Gram entry) is about four times noisier than this dedicated Laplace
        mean (diabetes at epsilon = 0.1: test MSE 0.26-0.31 for "ssp"
        against 0.146 for "mean"; the non-private mean predictor 0.136).
    ``"auto"``
        A public rule of ``(n, d, epsilon, delta)`` (no data, no bounds).
        First, with an intercept, ``"mean"`` when the intercept "ssp" would
        release has a noise standard deviation of at least
        ``AUTO_MEAN_NOISE = 0.1`` label bounds at unit bounds
        (``_auto_intercept_noise``: the SSP per-entry noise scale over
        ``n``; the pure route's Laplace for ``delta = 0``). Measured
        (``benchmarks/bench_ols.py --weak``, diabetes and synthetic data,
        n = 309 to 10 000, d = 5 to 50, 10 seeds): at 0.1 and above the
        private mean beats SSP in every cell, by 1.03x to 8x; below it SSP
        is better on diabetes (by up to 25%), while the synthetic data,
        whose rows have a third of the bound's squared norm on average,
        would still gain up to 1.52x from the mean between 0.05 and 0.1
        (left to SSP: the signal strength that decides it is private). Otherwise
        ``rho`` is the noise-to-signal ratio of ``"ssp"`` at
        ``label_bound = data_norm`` (``_auto_rho``); ``"adassp"`` when
        ``d >= 20`` and ``0.2 <= rho <= 1.5``, else ``"ssp"``. Derived from
        the measured crossovers (``benchmarks/bench_ols.py --crossover``,
        diabetes and synthetic data, n = 1000 to 100 000, d = 5 to 50,
        epsilon = 0.1 to 3, 20 seeds): AdaSSP's ridge beats SSP's floor by
        5-21% only for ``d >= 20`` at intermediate ``rho``, SSP is better or
        equal elsewhere (up to 2x at ``rho`` about 0.1-0.3, where AdaSSP's
        ridge over-regularises), and the sketch is never better than the
        better of the two by more than 3%, up to 4.9x worse at large n.
        With ``delta = 0``: ``"mean"`` by the same first rule, else the
        pure-epsilon ``"ssp"`` (Laplace).

    Sample weights (``fit(X, y, sample_weight=w)``, ``w_i`` in the public
    range [0, 1]): record ``i`` enters every statistic as the row
    ``sqrt(w_i) z_i``, so a replacement changes a statistic by
    ``w f(z) - w' f(z')`` with ``f(z) = z z^T`` (or ``x y``). Its norm is a
    convex function of ``(w, w')``, maximal at a vertex of ``[0, 1]^2``:
    ``(1, 1)`` is the unweighted sensitivity above and ``(1, 0)``, ``(0, 1)``
    give the norm of one term. For "ssp",
    ``||triu(z z^T)||^2 = (|z|^4 + sum_j z_j^4)/2 <= R^4 + c^4 + B^4 + R^2 c^2
    + R^2 B^2 + c^2 B^2``, which is below the unweighted value at ``y' = 0``
    (``v = 0`` in ``_ssp_sensitivity``) by ``R^4 + R^2 c^2 - c^4/2 > 0`` for
    ``c`` in ``{0, R}``; in particular the intercept-by-intercept entry
    ``sum_i w_i c^2``, constant without weights, is covered by the l2 bound
    (it is released with the rest, never assumed constant). For "adassp":
    (i) ``|lambda_min|`` moves by at most ``max(w |z|^2, w' |z'|^2) <= Lx^2``
    (Weyl, the spectral norm of a difference of two PSD matrices);
    (ii) ``||triu(x x^T)||^2 <= R^4 + R^2 c^2 + c^4``, below
    ``2R^4 + 2c^2R^2 + c^4/2``; (iii) ``|x y| <= Lx B <= 2 Lx B``. "sketch":
    a weighted row is a row of smaller norm, inside the same bound. So the
    calibration is unchanged; the vertex values are checked against a
    numeric maximisation over the real domain (weights included) in
    ``tests/test_ols.py``.

    Scales ("ssp", "adassp", "sketch"). These methods release the labels at
    the features' scale: ``y`` is multiplied by the public factor
    ``data_norm / label_bound`` and clipped to ``data_norm`` before the rows
    are formed, and the coefficients and intercept are divided by it after
    the release (post-processing). The analysis above then holds with
    ``B = R``. One noise scale serves the whole statistic, and with bounds of
    different scales it was set by the larger one: on diabetes with the raw
    target (``label_bound = 400``, ``data_norm = 1``) the ``"ssp"`` that
    ``"auto"`` picks reached 860 times the mean predictor's test MSE, and
    about 1.05 times it at the features' scale. ``noise_spec_`` describes the
    release of the scaled statistic; ``label_bound_`` stays the bound given.

    Floating-point computation ("ssp", "adassp"). The sensitivities above
    are for exact arithmetic; the released statistic is the one the chunked
    kernel computes. Its computed rows depend on their own record only and
    have norms at most the computed row bound
    (:func:`skdp._stats.computed_row_bound`: ``R (1 + gamma_{d+10})``, the
    same factor on ``c`` and ``B``), and its Gram matrix is within
    ``r = gamma_{h+1} n L^2`` in Frobenius norm of the exact Gram of those
    rows (:func:`skdp._stats.gram_rounding_bound`; ``h`` the public depth of
    the chunked sum). So the computed statistics of neighbouring data sets
    differ by at most the exact sensitivity at the computed bounds plus
    ``2 r``, which is what is calibrated (``sqrt(K) 2 r`` more in l1 for the
    pure route, over ``K`` released entries); ``r`` is a function of ``n``,
    ``d``, the input format and ``chunk_size``, never of the data (relative
    to the sensitivity about ``1e-7`` at a million rows, ``3e-4`` at ``10^8``).
    AdaSSP's ``lambda_min`` is computed by LAPACK from the computed matrix:
    Weyl's inequality moves it by at most ``r``, and the eigensolver's
    backward error (``O(p) u ||G||_2``, Anderson et al. 1999, section 4.7,
    a bound without a published constant) is taken as ``p^2 u n Lx^2``.

    Parameters
    ----------
    method : {"auto", "sketch", "ssp", "adassp", "mean", "ls", "als"}, default="auto"
    epsilon : float, default=1.0
    delta : float or None, default=None
        ``None`` means ``1/n^2`` (n public). ``0`` gives pure epsilon-DP:
        ``"ssp"`` (Laplace) and ``"mean"`` offer it, and ``"auto"`` selects one. The paper uses ``1/n``, which
        allows mechanisms that publish one whole record; ``1/n^2`` is the
        safer default.
    data_norm : float or None, default=None
        Public bound on ``||x||``. ``None``: inferred from the data with
        :class:`~skdp.PrivacyLeakWarning` (stored in ``data_norm_``).
    label_bound : float or None, default=None
        Public bound on ``|y|``. ``None``: inferred with a
        PrivacyLeakWarning (``label_bound_``). Labels outside the bound
        are clipped to ``[-label_bound, label_bound]``. "ssp", "adassp" and
        "sketch" release the labels at the features' scale (multiplied by
        ``data_norm / label_bound``, a public factor undone on the
        coefficients; see "Scales"), so bounds of different scales do not
        inflate the noise; a bound far above the labels' range still
        costs accuracy, and labels centred on a public midpoint (for
        example with :func:`skdp.preprocessing.scale_by_bounds`) fit better.
    sketch_size : int or None, default=None
        ``r`` for "sketch", "ls", "als" (``None``: ``max(300, 2 (p+1))``, the
        paper's Cancer setting). Must be ``>= p + 1``.
    fit_intercept : bool, default=True
    random_state : int, Generator, RandomState or None, default=None
        Source of the noise. ``None`` (use it for real releases) draws fresh OS
        entropy for every fit. An int seed is for reproducible experiments:
        whoever knows it can regenerate the noise, so keep it secret and do
        not publish it with the model; charged to a ledger, it is mixed with
        the spend's serial number so that two fits on one ledger never share
        noise (see the privacy model).
    accountant : ledger or None
    relative_dp : bool, default=False
        Data-dependent "relative DP" variants (paper section 6) for
        "sketch", "ls", "als": if the data's own largest leverage (and
        residual) already meet the target, no regularization is added. The
        branch depends on the private data: this is **NOT** differential
        privacy; a PrivacyGuaranteeWarning is emitted.
    chunk_size : int, default=10000
        Rows per chunk of the Gram / leverage accumulation.
    allow_float_sketch : bool, default=False
        ``method="sketch"`` only: where no floating-point-safe grid release
        of the sketch exists (more than 255 features at large ``n`` or small
        ``delta``), draw it in floating point with a warning instead of
        raising (see :class:`skdp.PrivateRandomProjection`).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    method_ : str
        The method used ("auto" resolved).
    sigma_ : float or None
        Regularization / sketch noise scale ("sketch", "ls", "als").
    float_safe_, delta_reserve_ : bool, float
        Only for "sketch": whether the sketch was released on the grid, and
        the part of delta spent on its total-variation bound.
    noise_spec_ : NoiseSpec, list of NoiseSpec or None
        Core noise specs ("ssp", "mean": one; "adassp": three, calibrated jointly:
        each records the fit's (epsilon, delta), the joint ``mu`` and its
        share of ``mu^2`` in ``params``).
    ridge_ : float
        AdaSSP ridge ``lambda`` (0 for other methods).
    floor_ : float
        SSP eigenvalue floor (0 for other methods).
    delta_ : float
        The delta used (``delta`` or ``1/n^2``; 0 for "mean").
    data_norm_, label_bound_ : float
        The bounds used (inferred ones with a PrivacyLeakWarning). "mean"
        never reads the features: without ``data_norm`` it infers nothing
        and ``data_norm_`` is None.
    privacy_spent_ : PrivacyBudget
    n_features_in_ : int

    References
    ----------
    .. [1] Lu, Magdon-Ismail, Wei, Zikas (2023). The Normal Distributions
       Indistinguishability Spectrum and its Application to
       Privacy-Preserving Machine Learning. arXiv:2309.01243.
    .. [2] Wang, Y.-X. (2018). Revisiting differentially private linear
       regression: optimal and adaptive prediction & estimation in unbounded
       domain. UAI.
    .. [3] Dong, J., Roth, A., Su, W. J. (2022). Gaussian differential
       privacy. JRSS B.
    .. [4] Balle, B., Wang, Y.-X. (2018). Improving the Gaussian mechanism
       for differential privacy: analytical calibration and optimal
       denoising. ICML.
    .. [5] Dwork, C., McSherry, F., Nissim, K., Smith, A. (2006). Calibrating
       noise to sensitivity in private data analysis. TCC.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model import PrivateOLS
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(20000, 3)) / np.sqrt(3)
    >>> y = X @ [1.0, -1.0, 0.5]
    >>> reg = PrivateOLS(epsilon=1.0, data_norm=1.0, label_bound=2.0, random_state=0).fit(X, y)
    >>> reg.coef_.shape
    (3,)
    """

    _parameter_constraints = {
        **PrivateEstimatorMixin._privacy_parameter_constraints,
        "delta": [None, Interval(Real, 0, 1, closed="left")],
        "method": [StrOptions(set(_METHODS))],
        "label_bound": [None, Interval(Real, 0, None, closed="neither")],
        "sketch_size": [None, Interval(Integral, 1, None, closed="left")],
        "fit_intercept": ["boolean"],
        "relative_dp": ["boolean"],
        "chunk_size": [Interval(Integral, 1, None, closed="left")],
        "allow_float_sketch": ["boolean"],
    }

    def __init__(self, method="auto", epsilon=1.0, delta=None, data_norm=None, label_bound=None,
                 sketch_size=None, fit_intercept=True, random_state=None, accountant=None,
                 relative_dp=False, chunk_size=10_000, allow_float_sketch=False):
        self.method = method
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.label_bound = label_bound
        self.sketch_size = sketch_size
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.accountant = accountant
        self.relative_dp = relative_dp
        self.chunk_size = chunk_size
        self.allow_float_sketch = allow_float_sketch

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        tags.input_tags.sparse = True
        return tags

    # ------------------------------------------------------------------
    def _resolve_method(self, n_samples, n_features):
        """The method; ``"auto"`` by the public rule of ``(n, d, epsilon, delta)``."""
        if self.method != "auto":
            return self.method
        delta = self.delta
        if delta is None:
            delta = default_delta(n_samples) if n_samples is not None and n_samples >= 2 else None
        eps = self.epsilon
        if (not n_features or not n_samples or delta is None
                or not (isinstance(eps, Real) and 0 < eps < np.inf) or not 0 <= delta < 1):
            return "ssp"  # the structure or the budget does not tell; fit reports the error if any
        return _auto_method(n_samples, n_features, float(eps), float(delta), self.fit_intercept)

    def _sketch_row_bounds(self, data_norm, label_bound):
        """``(Lx^2, R^2)``: the squared norm bounds of a row's features with the intercept
        column (``c = data_norm``) and of the whole row ``[x, (c), y]``."""
        Lx2 = data_norm**2 * (2.0 if self.fit_intercept else 1.0)
        return Lx2, Lx2 + label_bound**2

    def _sketch_plan(self, n, k, data_norm, label_bound, epsilon, delta):
        """The sketch's release for ``n`` rows of ``k`` columns ``[X, (c), y]``
        (:func:`skdp.random_projection.check_sketch_plan`); one computation before the charge
        (bounds given) and after it (a bound inferred), so that both give the same plan."""
        R2 = self._sketch_row_bounds(data_norm, label_bound)[1]
        return check_sketch_plan(type(self).__name__, n, k, self._sketch_rows(k - 1), epsilon,
                                 delta, np.sqrt(R2), self.allow_float_sketch)

    def _unused_bounds(self):
        """Public bounds this fit never reads: ``"mean"`` reads no feature, so no
        ``data_norm`` (a search need not demand it)."""
        return {"data_norm"} if self.method == "mean" else set()

    def _check_public(self, n_samples, n_features):
        """Errors decided by the parameters and the shape of X alone."""
        super()._check_public(n_samples, n_features)
        method = self._resolve_method(n_samples, n_features)
        if self.relative_dp and method not in ("sketch", "ls", "als"):
            raise ValueError(
                f"relative_dp=True is only available for 'sketch', 'ls', 'als', not {method!r}.")
        if self.delta is None and n_samples is not None and n_samples < 2:
            default_delta(n_samples)  # raises with a clear message
        if self.delta == 0 and method not in _PURE:
            raise ValueError(
                f"delta=0 (pure epsilon-DP) is available for method='ssp', 'mean' or 'auto', not "
                f"{method!r}; give delta > 0 or use method='auto'.")
        if method == "mean" and not self.fit_intercept:
            raise ValueError("method='mean' releases the intercept only; it needs fit_intercept=True.")
        if method in ("sketch", "ls", "als") and n_features is not None:
            p = n_features + (1 if self.fit_intercept else 0)
            r = self._sketch_rows(p)
            if r < p + 1:
                raise ValueError(
                    f"sketch_size={r} must be >= the number of columns of [X, (1), y] = {p + 1}."
                )

    def _ssp_specs(self, method, n, p, data_norm, lb, epsilon, delta, sparse=False):
        """The calibrated Gaussian releases of "ssp" (one) or "adassp" (three).

        Depends on public inputs only (bounds, ``n``, ``p``, the input format,
        the budget), so it is also called before the charge to give the
        ledger the fit's curve. The sensitivities are those of the statistic
        as computed in floating point (class docstring, "Floating-point
        computation"): the exact ones at the computed row bounds plus twice the
        rounding bound of the chunked Gram kernel.
        """
        d = p - int(self.fit_intercept)
        c0 = data_norm if self.fit_intercept else 0.0
        R, c, lb = (computed_row_bound(v, d) for v in (data_norm, c0, lb))
        Lx2 = R**2 + c**2
        k = p + 1
        rnd = gram_rounding_bound(n, d, k, Lx2 + lb**2, sparse=sparse, chunk_rows=self.chunk_size)
        if method == "ssp" and delta == 0:  # pure epsilon-DP: Laplace on the grid
            l1 = _ssp_l1_sensitivity(R, lb, c, d) + 2.0 * np.sqrt(k * (k + 1) / 2.0) * rnd
            return [calibrate(Query((k, k), l1_sensitivity=l1, symmetric=True),
                              epsilon, 0.0, mechanism="laplace")]
        if method == "ssp":
            return [calibrate(Query((k, k), l2_sensitivity=_ssp_sensitivity(R, lb, c) + 2.0 * rnd,
                                    symmetric=True), epsilon, delta)]
        # lambda_min of the computed X^T X: Weyl moves it by at most ||fl(G) - G||_2 <= rnd, and
        # LAPACK's eigensolver is backward stable, exact for a matrix within O(p) u ||G||_2
        # (Anderson et al. 1999, section 4.7), taken here with the constant p^2 (||G||_2 <= n Lx2)
        eig = rnd + p * p * UNIT_ROUNDOFF * n * Lx2
        return _joint_gaussian_specs(
            [Query((), l2_sensitivity=Lx2 + 2.0 * eig),
             Query((p, p), l2_sensitivity=_gram_sensitivity(R, c) + 2.0 * rnd, symmetric=True),
             Query((p,), l2_sensitivity=2.0 * np.sqrt(Lx2) * lb + 2.0 * rnd)],
            _adassp_shares(data_norm, lb, c0), epsilon, delta)

    def _mean_spec(self, n, lb, epsilon, weighted):
        """The Laplace release of the "mean" route (public inputs only: also used before the
        charge), its constant column ``c = label_bound``. Sensitivity: :func:`_mean_sensitivity`
        at the computed bounds, plus twice the kernel's rounding bound per released entry
        (class docstring, "Floating-point computation")."""
        c = B = computed_row_bound(lb, 0)
        rnd = gram_rounding_bound(n, 0, 2, c * c + B * B, chunk_rows=self.chunk_size)
        k = 2 if weighted else 1
        query = Query((2,) if weighted else (), l1_sensitivity=_mean_sensitivity(c, B, weighted)
                      + 2.0 * k * rnd)
        return calibrate(query, epsilon, 0.0, mechanism="laplace")

    def _sketch_rows(self, p):
        return max(300, 2 * (p + 1)) if self.sketch_size is None else int(self.sketch_size)

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the private linear model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            float32 and CSR/CSC input are read chunk by chunk (no full copy,
            never densified) for "ssp", "adassp" and "sketch".
        y : array-like of shape (n_samples,)
            Targets; values outside ``[-label_bound, label_bound]`` are
            clipped to it.
        sample_weight : array-like of shape (n_samples,) or None
            Per-record weights in ``[0, 1]`` (public bound; others raise
            after the charge, naming no value: the values are private). Record ``i`` enters every statistic
            as the row ``sqrt(w_i) (clip(x_i), c, clip(y_i))``; the
            sensitivities are unchanged (see the class docstring).

        Returns
        -------
        self
        """
        n, d_public = self._public_shape(X, y, requires_y=True)  # structure only, no values
        if n is None:
            n = _num_samples(X)  # raises sklearn's error for inputs that are not array-like
        n_public = n
        method = self._resolve_method(n, d_public)
        if is_dask_collection(X) and (method not in ("ssp", "adassp", "sketch", "mean")
                                      or self.relative_dp):
            raise ValueError(f"PrivateOLS(method={method!r}, relative_dp={self.relative_dp}) needs "
                             "an in-memory array; dask input supports the verified methods "
                             "'ssp', 'adassp', 'sketch' and 'mean'.")
        delta = default_delta(n) if self.delta is None else self.delta
        epsilon, delta = check_epsilon_delta(self.epsilon, delta, require_delta=method not in _PURE)
        if method == "mean":
            delta = 0.0  # a Laplace release: pure epsilon-DP, whatever delta allowed
        if method in _UNVERIFIED:
            warn_at_caller(
                f"PrivateOLS(method={method!r}) is NOT verified differentially private: "
                + ("its DP rests on the unproven monotonicity conjecture of Lu et al. (2023), Thm 5."
                   if method == "ls" else
                   "it is only asymptotically DP (central limit theorem in the sketch size)."),
                PrivacyGuaranteeWarning,
            )
        if self.relative_dp and method in ("sketch", "ls", "als"):  # (others raise below)
            warn_at_caller(
                "relative_dp=True: the noise decision depends on the private data's leverage; "
                "the result is relative DP with respect to this dataset, NOT differential privacy.",
                PrivacyGuaranteeWarning,
            )
        pre = {}
        sparse = is_sparse_input(X)  # public: the input's format (it sets the kernel's chunks)

        def curve():  # SSP-type releases are Gaussian: calibrated from public inputs before the charge
            if (method == "sketch" and self.data_norm is not None
                    and self.label_bound is not None and d_public):
                # the sketch's release (grid, or refused / floating point), decided now
                pre["sketch_plan"] = self._sketch_plan(  # labels at the features' scale
                    n, d_public + int(self.fit_intercept) + 1, float(self.data_norm),
                    float(self.data_norm), epsilon, delta)
                return None
            if method in ("ls", "als") and d_public:
                # (unverified, no curve) its noise multiplier is decided by public inputs:
                # computed now (and cached), so an impossible calibration raises before the charge
                p_pub = d_public + int(self.fit_intercept)
                r_pub = int(self._sketch_rows(p_pub))
                eps_ar, delta_ar = epsilon / 2.0, delta / (1.0 + np.exp(epsilon / 2.0))
                try:
                    _cached_ls_multiplier(eps_ar, delta_ar, r_pub, p_pub)
                except ValueError as exc:
                    raise ValueError(
                        f"PrivateOLS(method={method!r}) has no noise multiplier at epsilon="
                        f"{epsilon:g}, delta={delta:g} with a sketch of r={r_pub} rows ({exc}); "
                        "raise epsilon or delta, or use method='auto'.") from None
                return None
            if method == "mean" and self.label_bound is not None:  # (it needs no data_norm)
                pre["specs"] = [self._mean_spec(n, float(self.label_bound), epsilon,
                                                sample_weight is not None)]
                return release_curve(pre["specs"])
            if (method not in ("ssp", "adassp") or self.data_norm is None
                    or self.label_bound is None or not d_public):
                return None
            pre["specs"] = self._ssp_specs(method, n, d_public + int(self.fit_intercept),
                                           float(self.data_norm), float(self.data_norm),
                                           epsilon, delta, sparse)  # labels at the features' scale
            return release_curve(pre["specs"])

        if sample_weight is not None:
            self._check_public(n, d_public)
            check_weight_structure(sample_weight, n, self)  # the length only
        budget, rng = self._start_fit(n, d_public, PrivacyBudget(epsilon, delta), curve=curve)
        sample_weight = check_unit_sample_weight(sample_weight, X, self)  # values: after the charge
        self.delta_ = budget.delta

        X, y = validate_fit_data(self, X, y, requires_y=True, accept_sparse=["csr", "csc"],
                                 y_numeric=True, dtype=[np.float64, np.float32])
        if not is_dask_collection(X):  # dask: the blocks stay on the workers (skdp._dask)
            # (a string y passes scikit-learn's y_numeric unconverted: numpy's error would
            # quote a label, and "nan" / "inf" strings would skip the finiteness check)
            y = call_without_values(_float_labels, y, name="y", spent=True)
        n, p0 = X.shape
        if method == "mean" and self.data_norm is None:
            data_norm = 1.0  # unused: this route never reads the features (nothing is inferred)
            self.data_norm_ = None
        else:
            data_norm = check_data_norm(X, self.data_norm, estimator=self)
            self.data_norm_ = data_norm
        if self.label_bound is None:
            lb = float(np.max(np.abs(y))) if y.size else 0.0
            _leak_warning(self, "label_bound", "label_bound_")
            if not np.isfinite(lb) or lb > MAX_PUBLIC_BOUND:
                raise ValueError(
                    "label_bound was not given and |y| is too large to infer it in float64 (the "
                    "calibrations raise it to powers, which overflow). Pass label_bound as a "
                    "public bound.")
            lb = max(lb, MIN_PUBLIC_BOUND) if lb > 0 else 1.0  # (a larger bound is a bound)
        else:
            lb = check_positive_finite(self.label_bound, "label_bound")
        # labels beyond the public bound are clipped, never trusted nor reported
        self.label_bound_ = lb
        c = data_norm
        # the labels enter at the features' scale, y * (data_norm / label_bound), clipped to
        # data_norm: a public factor, undone on the coefficients (class docstring, "Scales")
        y_scale, lb_fit = 1.0, lb
        if method in _BALANCED and data_norm != lb:
            y_scale, lb_fit = data_norm / lb, data_norm
            # clipped first (a huge label cannot overflow), in float64 (dask: on the workers)
            y = (scale_labels(y, lb, y_scale) if is_dask_collection(y)
                 else y.clip(-lb, lb) * y_scale)
        # the rows z_i = sqrt(w_i) (clip(x_i), c, clip(y_i)), clipped chunk by chunk (no copy of X)
        Z = AugmentedRows(X, data_norm, y=y, label_bound=lb_fit,
                          intercept=c if self.fit_intercept else None, sample_weight=sample_weight)
        p = Z.k - 1
        Lx2, R2 = self._sketch_row_bounds(data_norm, lb_fit)

        r = self._sketch_rows(p) if method in ("sketch", "ls", "als") else self.sketch_size
        self.sketch_size_ = r
        self.sigma_, self.noise_spec_, self.ridge_, self.floor_ = None, None, 0.0, 0.0
        # the releases calibrated before the charge, for the shape charged for; or now, when a
        # bound was inferred after the charge
        if "specs" in pre:
            self._check_charged_shape((n_public, d_public), (n, p0))
        elif method == "mean":
            pre["specs"] = [self._mean_spec(n, lb, epsilon, sample_weight is not None)]
        elif method in ("ssp", "adassp"):
            pre["specs"] = self._ssp_specs(method, n, p, data_norm, lb_fit, epsilon, delta, sparse)
        if method in ("ls", "als") or self.relative_dp:  # these routes need the rows in memory
            Z = materialize(Z)
            X, y = Z[:, :p], Z[:, p]

        if method == "sketch":
            self.float_safe_, self.delta_reserve_ = False, 0.0
            sigma = None
            if self.relative_dp:
                lev = float(np.max(leverage_scores(Z, chunk_size=self.chunk_size)))
                if lev < 1 and rp_delta(epsilon, lev, int(r)) <= delta:
                    sigma = 0.0
            if sigma is None:
                # the shared grid release (floating-point safe), or the float release if allowed
                if "sketch_plan" in pre:
                    self._check_charged_shape((n_public, d_public), (n, p0))
                else:  # a bound was inferred: decided now, after the charge
                    pre["sketch_plan"] = self._sketch_plan(n, p + 1, data_norm, lb_fit, epsilon,
                                                           delta)
                S, info = private_sketch(Z, int(r), epsilon, delta, np.sqrt(R2), rng,
                                         chunk_size=self.chunk_size, plan=pre["sketch_plan"])
                sigma = info["sigma"]
                self.float_safe_, self.delta_reserve_ = bool(info["float_safe"]), float(info["reserve"])
            else:
                S = gaussian_sketch(Z, r, sigma, random_state=rng, chunk_size=self.chunk_size)
            theta = linalg.lstsq(S[:, :p], S[:, p])[0]
            self.sigma_ = float(sigma)
        elif method in ("ls", "als"):
            eps_ar, delta_ar = epsilon / 2.0, delta / (1.0 + np.exp(epsilon / 2.0))
            sigma = np.sqrt(R2) * _cached_ls_multiplier(eps_ar, delta_ar, int(r), p)
            if self.relative_dp:
                lev = leverage_scores(X, chunk_size=self.chunk_size)
                res = residual_scores(X, y)
                if als_F(eps_ar, float(lev.max()), float(res.max()), int(r), p) <= delta_ar:
                    sigma = 0.0
            if method == "ls":
                theta = least_squares_sample(Z, sigma, int(r), random_state=rng)
            else:
                S = gaussian_sketch(Z, r, sigma, random_state=rng, chunk_size=self.chunk_size)
                theta = linalg.lstsq(S[:, :p], S[:, p])[0]
            self.sigma_ = float(sigma)
        elif method == "mean":
            intercept = self._fit_mean(X, y, sample_weight, n, lb, pre["specs"][0], rng)
            self.method_, self.coef_, self.intercept_ = method, np.zeros(p0), intercept
            return self
        elif method == "ssp":
            A = clipped_gram(Z, None, chunk_rows=self.chunk_size)
            (spec,) = pre["specs"]
            A = spec.privatize(A, rng)
            if self.fit_intercept:
                _intercept_count(A, p, n, c, weighted=sample_weight is not None)
            # public eigenvalue floor: the bound on the noise's spectral norm that AdaSSP uses,
            # raised with the noise-to-signal ratio rho when the noise dominates
            bound = _spectral_bound(np.sqrt(spec.expected_squared_error) / (p + 1), p)
            rho = _noise_to_signal(bound, n, p, Lx2)
            self.floor_ = float(bound * max(1.0, rho / SSP_WEAK_RHO))
            theta = _psd_solve(A[:p, :p], A[:p, p], floor=self.floor_, free_last=self.fit_intercept)
            self.noise_spec_ = spec
        else:  # adassp
            A = clipped_gram(Z, None, chunk_rows=self.chunk_size)  # [[X^T X, X^T y], [., y^T y]]
            G, Xty = A[:p, :p], A[:p, p]
            lam_min = float(linalg.eigvalsh(G, subset_by_index=[0, 0])[0]) if p > 0 else 0.0
            spec_l, spec_g, spec_b = pre["specs"]
            s1 = np.sqrt(spec_l.expected_squared_error)
            s2 = np.sqrt(spec_g.expected_squared_error / (p * p))
            lam_tilde = max(spec_l.privatize(lam_min, rng) - s1 * norm.isf(0.05), 0.0)
            ridge = max(0.0, s2 * np.sqrt(p * np.log(2.0 * p * p / 0.05)) - lam_tilde)
            G_hat = spec_g.privatize(G, rng)
            if self.fit_intercept:
                _intercept_count(G_hat, p, n, c, weighted=sample_weight is not None)
            b_hat = spec_b.privatize(Xty, rng)
            theta = _psd_solve(G_hat, b_hat, ridge, free_last=self.fit_intercept)
            self.noise_spec_ = [spec_l, spec_g, spec_b]
            self.ridge_ = float(ridge)
        self.method_ = method
        theta = np.asarray(theta, dtype=float).ravel() / y_scale  # back to the labels' scale
        if self.fit_intercept:
            self.coef_ = theta[:-1]
            self.intercept_ = float(theta[-1] * c)
        else:
            self.coef_ = theta
            self.intercept_ = 0.0
        return self

    def _fit_mean(self, X, y, sample_weight, n, lb, spec, rng):
        """The "mean" route's intercept ``c s / m`` from the Laplace release of ``s = c sum_i
        clip_B(y_i)`` (with weights, of ``(s, m)``, ``m = c^2 sum_i w_i``, clipped to its
        public range ``[c^2, n c^2]``; without, ``m = n c^2``), with ``c = B`` (the constant
        cancels; ``c = B`` makes the weighted sensitivity ``2 B^2``, as the unweighted one).
        The rows ``(c, clip_B(y))`` go through the chunked kernel (dask: on the workers)
        without the features; their values are only checked to be finite (numpy: by the
        validation; dask: on the workers), as for every other method."""
        c = lb
        if is_dask_collection(X):
            check_dask_finite(X)
            rows = X[:, :0]
        else:
            rows = np.empty((n, 0))
        Z = AugmentedRows(rows, None, y=y, label_bound=lb, intercept=c, sample_weight=sample_weight)
        G = clipped_gram(Z, None, chunk_rows=self.chunk_size)  # [[c^2 sum w, c sum w y], [., .]]
        weighted = sample_weight is not None
        if weighted:
            s, m = spec.privatize(np.array([G[0, 1], G[0, 0]]), rng)
        else:
            s, m = spec.privatize(G[0, 1], rng), None
        m = _public_count(m, n, c, weighted)
        self.noise_spec_ = spec
        # the intercept is clipped to the public label range (post-processing)
        return float(np.clip(c * float(s) / m, -lb, lb))

    def predict(self, X):
        """Predict with the private linear model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_private_data(self, X, reset=False, accept_sparse=["csr", "csc"],
                                  dtype=[np.float64, np.float32])
        return np.asarray(X @ self.coef_ + self.intercept_)
