"""Normal distributions indistinguishability spectrum (NDIS).

The (epsilon, delta) hockey-stick divergence between two multivariate
Gaussians, evaluated exactly, and its closed forms for the mechanisms of
Lu, Magdon-Ismail, Wei & Zikas (2023) "The Normal Distributions
Indistinguishability Spectrum and its Application to Privacy-Preserving
Machine Learning" (arXiv:2309.01243v3; research note
``shared/research/seed003_ndis.md``).

Definitions
-----------
For distributions ``P, Q`` with densities ``p, q`` the hockey-stick
divergence (the paper's "indistinguishability spectrum", Definition 1) is

    delta_{P,Q}(eps) = sup_S P(S) - e^eps Q(S) = P[L > eps] - e^eps Q[L > eps],

with privacy loss ``L = ln p/q``. A mechanism is (eps, delta)-DP iff
``max(delta_{M(D),M(D')}, delta_{M(D'),M(D)})(eps) <= delta`` for all
neighbouring ``D, D'``.

Gaussian pairs (Theorem 1 of the paper)
---------------------------------------
For ``N1 = N(mu1, S1)``, ``N2 = N(mu2, S2)`` (both positive definite) write
``S1 = L L^T`` (Cholesky), ``U diag(a) U^T = I - L^T S2^{-1} L`` (EVD),
``b = -U^T L^T S2^{-1} (mu1 - mu2)`` and
``c = eps + 1/2 ln(det S1/det S2) - 1/2 (mu1-mu2)^T S2^{-1} (mu1-mu2)``.
With ``Z ~ N(0, I)`` and ``x = L U z + mu1`` one has
``e^eps p2(x)/p1(x) = exp(Q(z))``, ``Q(z) = 1/2 z^T diag(a) z + b^T z + c``, so

    delta_{N1,N2}(eps) = E[(1 - exp Q(Z))_+] = P[Q(Z) < 0] - e^eps P_{N2}[L > eps].

``Q(Z)`` is a generalized chi-square variable (weighted non-central
chi-squares plus a normal plus a constant). :func:`ndis_delta` evaluates
both probabilities exactly by Gil-Pelaez inversion of the characteristic
function

    log E[e^{it(a z^2/2 + b z)}] = -1/2 log(1 - i t a) - t^2 b^2 / (2 (1 - i t a)),

(valid also for ``a = 0``) with adaptive quadrature; :func:`ndis_delta_mc`
is the paper's Monte-Carlo estimator (Algorithm 2, additive Hoeffding
error). The exact route is checked against the Monte-Carlo estimator and the
closed forms below in ``tests/test_ndis.py``.

Closed forms
------------
* equal covariances (Gaussian mechanism): ``gaussian_delta`` of
  :mod:`skdp.mechanisms.gaussian` at the Mahalanobis distance;
* rank-1 covariance change, zero mean (Gaussian random projection, Theorem 2):
  :func:`rp_delta`, :func:`rp_delta_reverse`;
* the replace-one version of the random projection (derived here):
  :func:`rp_replace_delta`;
* rank-1 change plus collinear mean shift (asymptotic least squares,
  Theorem 4): :func:`als_F`.

All tail probabilities are evaluated with survival functions in log space:
the authors' code formed ``exp(eps - r/2 ln(1-l)) (1-l)^{r/2}``, which is
``inf * 0 = NaN`` for large ``r``; its bisection then read NaN as "private"
and returned a noise scale about 12.8 times too small for r = 3000 (note
section 7.8). Here that factor is simplified to ``e^eps`` and any non-finite
value raises ``FloatingPointError``.
"""

import warnings
from functools import lru_cache

import numpy as np
from scipy import linalg
from scipy.integrate import IntegrationWarning, quad
from scipy.special import gammaincc, gammaln, logsumexp, ndtr
from scipy.stats import chi2, norm

from .._validation import check_generator

__all__ = [
    "ndis_coefficients",
    "ndis_delta",
    "ndis_delta_mc",
    "generalized_chi2_cdf",
    "rp_delta",
    "rp_delta_reverse",
    "rp_replace_delta",
    "rp_noise_multiplier",
    "als_F",
    "ls_noise_multiplier",
    "gaussian_sketch",
    "least_squares_sample",
]


# ---------------------------------------------------------------------------
# General Gaussian pairs
# ---------------------------------------------------------------------------
def _check_pair(mu1, S1, mu2, S2):
    mu1 = np.atleast_1d(np.asarray(mu1, dtype=float))
    mu2 = np.atleast_1d(np.asarray(mu2, dtype=float))
    k = mu1.shape[0]
    S1 = np.atleast_2d(np.asarray(S1, dtype=float))
    S2 = np.atleast_2d(np.asarray(S2, dtype=float))
    if mu1.shape != (k,) or mu2.shape != (k,) or S1.shape != (k, k) or S2.shape != (k, k):
        raise ValueError(
            f"shape mismatch: mu1 {mu1.shape}, S1 {S1.shape}, mu2 {mu2.shape}, S2 {S2.shape}."
        )
    for a in (mu1, mu2, S1, S2):
        if not np.all(np.isfinite(a)):
            raise ValueError("means and covariances must be finite.")
    return mu1, S1, mu2, S2


def ndis_coefficients(mu1, S1, mu2, S2, epsilon):
    """Coefficients ``(a, b, c)`` of Theorem 1 (whitening + EVD).

    Returns ``a`` (eigenvalues, all < 1), ``b`` and the scalar ``c`` such that
    ``delta_{N1,N2}(eps) = E[(1 - exp(1/2 sum a_j Z_j^2 + b^T Z + c))_+]``.

    Raises
    ------
    ValueError
        If a covariance is not positive definite.
    """
    mu1, S1, mu2, S2 = _check_pair(mu1, S1, mu2, S2)
    try:
        L1 = linalg.cholesky(S1, lower=True)
        c2 = linalg.cho_factor(S2, lower=True)
    except linalg.LinAlgError:
        raise ValueError("both covariance matrices must be positive definite.") from None
    dm = mu1 - mu2
    W = linalg.cho_solve(c2, L1)  # S2^{-1} L
    M = np.eye(len(mu1)) - L1.T @ W
    a, U = linalg.eigh((M + M.T) / 2.0)
    b = -U.T @ (L1.T @ linalg.cho_solve(c2, dm))
    logdet1 = 2.0 * np.sum(np.log(np.diag(L1)))
    logdet2 = 2.0 * np.sum(np.log(np.diag(c2[0])))
    c = float(epsilon) + 0.5 * (logdet1 - logdet2) - 0.5 * float(dm @ linalg.cho_solve(c2, dm))
    return a, b, c


def generalized_chi2_cdf(x, a, b, c=0.0, *, epsabs=1e-13, epsrel=1e-10):
    """``P[1/2 sum_j a_j Z_j^2 + b^T Z + c <= x]`` for ``Z ~ N(0, I)``.

    Exact up to quadrature error: Gil-Pelaez inversion
    ``F(x) = 1/2 - 1/pi int_0^inf Im(e^{-itx} phi(t)) / t dt`` of the
    characteristic function given in the module docstring.
    """
    a = np.asarray(a, dtype=float).ravel()
    b = np.asarray(b, dtype=float).ravel()
    x = float(x) - float(c)
    keep = (a != 0) | (b != 0)
    a, b = a[keep], b[keep]
    if a.size == 0:
        return float(x >= 0)
    if not np.any(a):  # purely Gaussian
        return float(norm.cdf(x / np.linalg.norm(b)))
    if a.size <= 2:  # slow Gil-Pelaez tail: condition on one coordinate instead
        return _quad_form_cdf_lowdim(x, a, b, epsabs=epsabs)

    # the phase of e^{-itx} phi(t) is asymptotically linear, omega t, with
    # omega = -x - sum_{a_j != 0} b_j^2 / (2 a_j); psi removes it so that the
    # tail is integrated by QUADPACK's Fourier rule (QAWF) on a smooth function
    nz = a != 0
    omega = -x - float(np.sum(b[nz] ** 2 / (2.0 * a[nz])))

    def logphi(t):
        z = 1.0 - 1j * t * a
        return np.sum(-0.5 * np.log(z) - 0.5 * t * t * b * b / z)

    def integrand(t):
        return (np.exp(logphi(t) - 1j * t * x)).imag / t

    def psi(t):
        return np.exp(logphi(t) - 1j * t * (x + omega))

    # scale of the distribution, to place a break point for quad
    scale = np.sqrt(np.sum(0.5 * a * a + b * b))
    T = 50.0 / scale
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IntegrationWarning)
        v1 = quad(integrand, 0.0, T, limit=500, epsabs=epsabs, epsrel=epsrel)[0]
        if abs(omega) * T > 1e-6:
            # Im(psi e^{i w t}) / t = (Im psi cos wt + Re psi sin wt) / t
            v2 = quad(lambda t: psi(t).imag / t, T, np.inf, weight="cos", wvar=omega, limlst=200)[0]
            v2 += quad(lambda t: psi(t).real / t, T, np.inf, weight="sin", wvar=omega, limlst=200)[0]
        else:
            v2 = quad(integrand, T, np.inf, limit=500, epsabs=epsabs, epsrel=epsrel)[0]
    return float(min(1.0, max(0.0, 0.5 - (v1 + v2) / np.pi)))


def _one_coord_below(a, b, s):
    """``P[a z^2/2 + b z + s < 0]`` for ``z ~ N(0, 1)``, in closed form (vectorized in s)."""
    s = np.asarray(s, dtype=float)
    if a == 0:
        if b == 0:
            return (s < 0).astype(float)
        return norm.cdf(-s / b) if b > 0 else norm.sf(-s / b)
    m = b / a
    K = m * m - 2.0 * s / a
    rk = np.sqrt(np.maximum(K, 0.0))
    inside = np.where(K > 0, norm.cdf(rk - m) - norm.cdf(-rk - m), 0.0)  # P[(z+m)^2 < K]
    return inside if a > 0 else 1.0 - inside


def _quad_form_cdf_lowdim(x, a, b, *, epsabs=1e-13):
    """Exact ``P[sum_j (a_j z_j^2/2 + b_j z_j) <= x]`` for one or two coordinates.

    The first coordinate is handled in closed form (:func:`_one_coord_below`),
    the second by adaptive quadrature against the normal density.
    """
    if a.size == 1:
        return float(_one_coord_below(a[0], b[0], -x))

    def f(z):
        return _one_coord_below(a[0], b[0], 0.5 * a[1] * z * z + b[1] * z - x) * norm.pdf(z)

    # kinks where the discriminant of the first coordinate vanishes
    pts = []
    if a[0] != 0:
        # K(z) = 0 <=> a1 z^2/2 + b1 z - x = b0^2/(2 a0)
        cc = -x - b[0] ** 2 / (2.0 * a[0])
        if a[1] != 0:
            disc = b[1] ** 2 - 2.0 * a[1] * cc
            if disc >= 0:
                pts = [(-b[1] + sg * np.sqrt(disc)) / a[1] for sg in (-1.0, 1.0)]
        elif b[1] != 0:
            pts = [-cc / b[1]]
    pts = sorted(p for p in pts if -38.0 < p < 38.0)
    val = quad(f, -38.0, 38.0, points=pts or None, limit=500, epsabs=epsabs, epsrel=1e-12)[0]
    return float(min(1.0, max(0.0, val)))


def _delta_exact_one(mu1, S1, mu2, S2, epsilon):
    # P_{N1}[L12 > eps]: L12 = -(Q(Z) - eps) with Q from the (1, 2) coefficients
    a, b, c = ndis_coefficients(mu1, S1, mu2, S2, epsilon)
    p1 = generalized_chi2_cdf(0.0, a, b, c)  # P[Q < 0] (continuous unless degenerate)
    # P_{N2}[L12 > eps] = P_{N2}[L21 < -eps]; L21 = -(Q'(Z) - eps') with eps' = -eps
    a2, b2, c2 = ndis_coefficients(mu2, S2, mu1, S1, -epsilon)
    # L21 < -eps  <=>  -(Q' + eps) < -eps  <=>  Q' > 0   (Q' built with eps' = -eps)
    p2 = 1.0 - generalized_chi2_cdf(0.0, a2, b2, c2)
    return max(0.0, p1 - np.exp(epsilon) * p2)


def ndis_delta(mu1, S1, mu2, S2, epsilon, *, order="both"):
    """Exact hockey-stick divergence between two multivariate Gaussians.

    Parameters
    ----------
    mu1, mu2 : array-like of shape (k,)
    S1, S2 : array-like of shape (k, k)
        Positive definite covariances.
    epsilon : float
        Any real (epsilon >= 0 for DP use).
    order : {"both", "forward", "reverse"}, default="both"
        "forward" is ``delta_{N1,N2}``, "reverse" ``delta_{N2,N1}``, "both"
        their maximum (the smallest delta for which the pair is
        (epsilon, delta)-indistinguishable).

    Returns
    -------
    delta : float
        Exact up to quadrature error. With at most two active coordinates the
        cdf is computed by conditioning (closed form in one coordinate,
        quadrature in the other); otherwise by Gil-Pelaez inversion whose
        oscillatory tail is integrated by QUADPACK's Fourier rule after
        removing its asymptotically linear phase. Checked to ~1e-10 against
        closed forms in the tests. Use the closed forms of this module to
        calibrate small deltas; this function is the general checker.

    References
    ----------
    Lu et al. (2023), Theorem 1; generalized chi-square evaluation derived in
    ``shared/research/seed003_ndis.md`` section 2.3.
    """
    mu1, S1, mu2, S2 = _check_pair(mu1, S1, mu2, S2)
    epsilon = float(epsilon)
    if order == "forward":
        return _delta_exact_one(mu1, S1, mu2, S2, epsilon)
    if order == "reverse":
        return _delta_exact_one(mu2, S2, mu1, S1, epsilon)
    if order != "both":
        raise ValueError(f"order must be 'both', 'forward' or 'reverse', got {order!r}.")
    return max(
        _delta_exact_one(mu1, S1, mu2, S2, epsilon),
        _delta_exact_one(mu2, S2, mu1, S1, epsilon),
    )


def ndis_delta_mc(mu1, S1, mu2, S2, epsilon, *, n_samples=1_000_000, order="both",
                  random_state=None, chunk_size=200_000):
    """Monte-Carlo NDIS estimator (the paper's Algorithm 2 / Corollary 1).

    ``hat delta = mean_j f_{A,b,c}(Z_j)`` with ``f = (1 - exp Q)_+ in [0, 1]``;
    by Hoeffding, ``|hat delta - delta| <= sqrt(ln(2/gamma) / (2 N))`` with
    probability ``1 - gamma``. The error is additive: this estimator cannot
    certify small deltas and is meant for checks.

    Returns
    -------
    delta_hat : float
    """
    rng = check_generator(random_state)
    mu1, S1, mu2, S2 = _check_pair(mu1, S1, mu2, S2)

    def one(m1, s1, m2, s2):
        a, b, c = ndis_coefficients(m1, s1, m2, s2, epsilon)
        total, left = 0.0, int(n_samples)
        while left > 0:
            m = min(left, chunk_size)
            Z = rng.standard_normal((m, a.size))
            q = 0.5 * (Z * Z) @ a + Z @ b + c
            total += float(np.sum(-np.expm1(np.minimum(q, 0.0))))
            left -= m
        return total / n_samples

    if order == "forward":
        return one(mu1, S1, mu2, S2)
    if order == "reverse":
        return one(mu2, S2, mu1, S1)
    return max(one(mu1, S1, mu2, S2), one(mu2, S2, mu1, S1))


# ---------------------------------------------------------------------------
# Gaussian random projection (Theorem 2) -- add/remove neighbours
# ---------------------------------------------------------------------------
def _check_rp_args(epsilon, lev, r):
    epsilon, lev = float(epsilon), float(lev)
    if not np.isfinite(epsilon) or epsilon < 0:
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon}.")
    if int(r) != r or r < 1:
        raise ValueError(f"the sketch size r must be a positive integer, got {r!r}.")
    return epsilon, lev, int(r)


def _log_diff(log_p, log_q):
    """log(exp(log_p) - exp(log_q)), -inf when the difference is <= 0."""
    if not np.isfinite(log_p):
        return -np.inf
    d = log_q - log_p
    if d >= 0:
        return -np.inf
    return log_p + np.log(-np.expm1(d))


def _rp_log_delta(epsilon, lev, r):
    T = (2.0 * epsilon - r * np.log1p(-lev)) / lev
    log_s1 = chi2.logsf((1.0 - lev) * T, r)
    log_s2 = chi2.logsf(T, r)
    out = _log_diff(log_s1, epsilon + log_s2)
    if np.isnan(out):
        raise FloatingPointError(f"rp_delta is not finite at eps={epsilon}, lev={lev}, r={r}.")
    return out


def rp_delta(epsilon, lev, r):
    """Spectrum of Gaussian random projection ``GD`` vs ``GD'`` (dominant direction).

    ``D'`` is ``D`` without a record of leverage ``lev`` in ``D``, ``G`` is
    ``r x n`` i.i.d. N(0, 1) (Lu et al. 2023, Theorem 2). With
    ``T = (2 eps - r ln(1 - lev)) / lev``,

        delta = P[chi2_r >= (1 - lev) T] - e^eps P[chi2_r >= T],

    evaluated with ``chi2.logsf`` in log space (the paper's prefactor
    ``exp(eps - r/2 ln(1-lev)) (1-lev)^{r/2}`` equals ``e^eps``). The reverse
    direction is never larger (Props. 1-2; :func:`rp_delta_reverse`), and
    ``delta`` increases with ``lev`` (Prop. 3).

    Oracles (note section 10): ``rp_delta(1, 0.1, 1) = 1.2911e-06``,
    ``rp_delta(0.5, 0.02, 10) = 1.3357e-10``.
    """
    epsilon, lev, r = _check_rp_args(epsilon, lev, r)
    if lev <= 0:
        return 0.0
    if lev >= 1:
        return 1.0
    return float(np.exp(_rp_log_delta(epsilon, lev, r)))


def rp_delta_reverse(epsilon, lev, r):
    """Reverse direction ``delta_{GD', GD}`` of :func:`rp_delta` (Prop. 2).

    With ``S = (-2 eps - r ln(1-lev)) / lev``: ``P[chi2_r <= S] -
    e^eps P[chi2_r <= (1-lev) S]`` if ``S > 0``, else 0.
    """
    epsilon, lev, r = _check_rp_args(epsilon, lev, r)
    if lev <= 0:
        return 0.0
    if lev >= 1:
        return 1.0
    S = (-2.0 * epsilon - r * np.log1p(-lev)) / lev
    if S <= 0:
        return 0.0
    return float(np.exp(_log_diff(chi2.logcdf(S, r), epsilon + chi2.logcdf((1.0 - lev) * S, r))))


# ---------------------------------------------------------------------------
# Gaussian random projection -- replace-one neighbours (derived for skdp)
# ---------------------------------------------------------------------------
def _chi2_logsf(x, k):
    """Vectorized ``log P[chi2_k >= x]`` (regularized upper incomplete gamma)."""
    x = np.maximum(np.asarray(x, dtype=float), 0.0)
    with np.errstate(divide="ignore"):
        return np.log(gammaincc(0.5 * k, 0.5 * x))


# composite Gauss-Legendre rule on [0, 1]: 400 panels x 16 nodes
_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)


def _log_int_pdf_sf(r, threshold, u_lo, u_hi, panels=400):
    """``log int_0^inf chi2_r.pdf(y) chi2_r.sf(threshold(y)) dy``.

    Substituting ``y = u^2`` makes the integrand ``u^{r-1} e^{-u^2/2}`` times a
    smooth tail, without the ``y^{-1/2}`` singularity of ``r = 1``;
    integrated by a composite 16-point Gauss-Legendre rule on
    ``[u_lo, u_hi]`` (the chi_r mass outside is below 1e-300) in log space.
    """
    edges = np.linspace(u_lo, u_hi, panels + 1)
    half = 0.5 * np.diff(edges)
    mid = 0.5 * (edges[:-1] + edges[1:])
    u = (mid[:, None] + half[:, None] * _GL_X[None, :]).ravel()
    logw = np.log(np.repeat(half, _GL_X.size) * np.tile(_GL_W, panels))
    y = u * u
    log_pdf = (np.log(2.0) + (r - 1) * np.log(u) - 0.5 * y
               - 0.5 * r * np.log(2.0) - gammaln(0.5 * r))
    return float(logsumexp(logw + log_pdf + _chi2_logsf(threshold(y), r)))


def rp_replace_delta(epsilon, L, r):
    """Exact spectrum of the regularized Gaussian sketch under replace-one neighbours.

    Setting: ``D = [D0; v]`` and ``D' = [D0; v']`` (same n), released as
    ``G [D; sigma I]`` with ``G`` i.i.d. N(0, 1). Each of the ``r`` sketch rows
    is i.i.d. ``N(0, M0 + v v^T)`` vs ``N(0, M0 + v' v'^T)`` with
    ``M0 = D0^T D0 + sigma^2 I``. Whitening by ``M0`` gives
    ``N(0, I + a a^T)`` vs ``N(0, I + a' a'^T)`` with
    ``|a|^2 = v^T M0^{-1} v <= |v|^2 / sigma^2 <= l^2/sigma^2 =: L`` (the
    leverage of the record relative to the *other* dataset's regularized
    Gram matrix ``M0``, which need not contain ``v``: ``D0 = 0`` attains it).

    The pair depends only on the generalized eigenvalues ``kappa`` of
    ``(I + aa^T, I + a'a'^T)``; by Rayleigh quotients ``kappa_max <= 1 + |a|^2``
    and ``kappa_min >= 1/(1 + |a'|^2)``, the others are 1. The divergence of
    ``N(0, kappa) ^{x r}`` vs ``N(0, 1) ^{x r}`` in one coordinate only
    decreases when ``kappa`` moves towards 1 (add independent N(0, s) noise
    and rescale by ``(1+s)^{-1/2}``: a post-processing that maps ``kappa``
    to ``(kappa+s)/(1+s)``), so the worst case is ``kappa = (1+L, 1/(1+L))``,
    attained by ``D0 = 0``, ``v = l e1``, ``v' = l e2``. Its privacy loss is
    ``L/2 (C1 - C2/(1+L))`` under ``D`` and ``L/2 (C1/(1+L) - C2)`` under
    ``D'`` with ``C1, C2`` i.i.d. chi2_r, and both orders are equal by symmetry:

        delta = P[C1 - C2/(1+L) > 2 eps/L] - e^eps P[C1/(1+L) - C2 > 2 eps/L],

    each term a one-dimensional integral of ``chi2_r.pdf * chi2_r.sf``,
    computed by composite Gauss-Legendre quadrature in log space
    (:func:`_log_int_pdf_sf`). It is increasing in
    ``L`` (same post-processing argument).

    Parameters
    ----------
    epsilon : float
    L : float
        Bound ``l^2 / sigma^2`` on ``|a|^2``.
    r : int
        Sketch size (number of rows of ``G``).
    """
    epsilon, L, r = _check_rp_args(epsilon, L, r)
    if L <= 0:
        return 0.0
    if not np.isfinite(L):
        return 1.0
    return float(np.exp(_rp_replace_log_delta(epsilon, L, r)))


def _rp_replace_log_delta(epsilon, L, r):
    t = 2.0 * epsilon / L
    # chi_r = sqrt(chi2_r) lies in [sqrt(r) - 38, sqrt(r) + 38] up to mass 1e-300
    u_lo = max(0.0, np.sqrt(r) - 38.0)
    u_hi = np.sqrt(r) + 38.0
    # P[C1 > t + C2/(1+L)]  (C2 = y)
    log_p1 = _log_int_pdf_sf(r, lambda y: t + y / (1.0 + L), u_lo, u_hi)
    # P[C1 > (1+L)(t + C2)]
    log_p2 = _log_int_pdf_sf(r, lambda y: (1.0 + L) * (t + y), u_lo, u_hi)
    out = _log_diff(log_p1, epsilon + log_p2)
    if np.isnan(out):
        raise FloatingPointError(f"rp_replace_delta is not finite at eps={epsilon}, L={L}, r={r}.")
    return out


def rp_noise_multiplier(epsilon, delta, r, *, neighbours="replace", bound="paper"):
    """``sigma / l`` of the DP Gaussian random projection ``G [D; sigma I]``.

    Parameters
    ----------
    epsilon, delta : float
    r : int
        Sketch size.
    neighbours : {"replace", "add_remove"}, default="replace"
        "replace" (skdp's relation): the largest ``L`` with
        ``rp_replace_delta(eps, L, r) <= delta`` by bisection (safe end),
        ``sigma/l = 1/sqrt(L)``; see :func:`rp_replace_delta` for the proof.
        "add_remove" (the paper's relation, Theorem 3): the leverage threshold
        ``lbar`` of :func:`skdp.leverage.rp_leverage_threshold`, then
        ``sigma/l = 1/sqrt(lbar)`` (``bound="paper"``, Fact 2) or
        ``sqrt((1-lbar)/lbar)`` (``bound="tight"``: the removed record lies in
        ``D``, so its leverage is ``|a|^2/(1+|a|^2) <= l^2/(l^2+sigma^2)``).
    bound : {"paper", "tight"}
        Only for ``neighbours="add_remove"``.

    Oracles (note section 4.3, eps=1, delta=1/n, add/remove, paper bound):
    6.1855 (r=300, n=2809), 10.1792 (r=1200, n=327346),
    12.8216 (r=3000, n=515345).
    """
    from ..leverage import _solve_safe, rp_leverage_threshold

    if neighbours == "add_remove":
        lbar = rp_leverage_threshold(epsilon, delta, r)
        if bound == "paper":
            return float(1.0 / np.sqrt(lbar))
        if bound == "tight":
            return float(np.sqrt((1.0 - lbar) / lbar))
        raise ValueError(f"bound must be 'paper' or 'tight', got {bound!r}.")
    if neighbours != "replace":
        raise ValueError(f"neighbours must be 'replace' or 'add_remove', got {neighbours!r}.")
    log_delta = np.log(delta)
    # bisection on log L: find the largest L with log delta(L) <= log delta
    Lmax = _solve_safe(lambda logL: _rp_replace_log_delta(epsilon, np.exp(logL), r) - log_delta,
                       -60.0, 10.0, xtol=1e-11)
    return float(np.exp(-0.5 * Lmax))


# ---------------------------------------------------------------------------
# Asymptotic least squares (Theorem 4) -- M_LS / M_ALS calibration
# ---------------------------------------------------------------------------
def _p_nc1(s, w1, lam, upper):
    # P[w1 X <= s] (upper=False) or P[w1 X >= s] (upper=True), X ~ chi'^2_1(lam)
    if w1 == 0:
        return float(s <= 0) if upper else float(s >= 0)
    u, below = s / w1, ((w1 > 0) != upper)
    if u <= 0:
        return 0.0 if below else 1.0
    a, m = np.sqrt(u), np.sqrt(lam)
    # scipy.special.ndtr (the standard normal cdf) instead of scipy.stats.norm:
    # the same values, without the per-call overhead that dominated quad
    if below:
        return float(ndtr(a - m) - ndtr(-a - m))
    return float(ndtr(m - a) + ndtr(-a - m))


def _gx2(x, w1, lam, w2, k, upper):
    # P[w1 X + w2 Y >= x] (upper) or <= x, X ~ chi'^2_1(lam), Y ~ chi2_k
    if k == 0 or w2 == 0:
        return _p_nc1(x, w1, lam, upper)
    lo, hi, y0 = chi2.ppf(1e-16, k), chi2.isf(1e-16, k), x / w2
    log_norm = gammaln(k / 2.0) + k / 2.0 * np.log(2.0)

    def f(y):  # _p_nc1 times the chi2_k density, written out (lo > 0)
        return _p_nc1(x - w2 * y, w1, lam, upper) * np.exp((k / 2.0 - 1.0) * np.log(y) - y / 2.0 - log_norm)

    return quad(f, lo, hi, points=[y0] if lo < y0 < hi else None, limit=1000,
                epsabs=1e-15, epsrel=1e-11)[0]


def als_F(epsilon, lev, res, r, d):
    """``F_{r,d}(lev, res)``: spectrum of asymptotic least squares (Theorem 4, Def. 13).

    Maximum of both directions between ``N(x_opt, |w|^2/r (B^T B)^{-1})``
    for ``D`` and ``D'`` = ``D`` without a record of leverage ``lev`` and
    residual score ``res`` (add/remove neighbours). With
    ``g = res - lev(1-lev)``, ``lam1 = r lev res (1-lev)^2/g^2``,
    ``lam2 = lam1 (1-lev-res)/(1-lev)^2``,
    ``s = r lev res/g - d ln(1-lev-res) + (d+1) ln(1-lev)`` and generalized
    chi-squares ``U = g/(1-lev-res) chi'^2_1(lam1) + res/(1-lev-res) chi2_{d-1}``,
    ``V = g/(1-lev)^2 chi'^2_1(lam2) + res/(1-lev) chi2_{d-1}``:

        fwd = P[U >= 2 eps + s] - e^eps P[V >= 2 eps + s],
        bwd = P[V <= s - 2 eps] - e^eps P[U <= s - 2 eps].

    Reconstructed and checked against Monte Carlo in the research note
    (section 5.3, 10); the chi'^2_1 part is exact through Phi, the central
    part integrated by ``quad``. ``g = 0`` is handled by a tiny perturbation
    (the function is continuous there).
    """
    lev, res = float(lev), float(res)
    g, qb, lb = res - lev * (1 - lev), 1 - lev - res, 1 - lev
    if qb <= 0:
        return 1.0
    if abs(g) < 1e-12:
        res = res + 1e-9
        g, qb = res - lev * (1 - lev), 1 - lev - res
    lam1 = r * lev * res * lb**2 / g**2
    lam2 = lam1 * qb / lb**2
    s = r * lev * res / g - d * np.log(qb) + (d + 1) * np.log(lb)
    U = dict(w1=g / qb, lam=lam1, w2=res / qb, k=d - 1)
    V = dict(w1=g / lb**2, lam=lam2, w2=res / lb, k=d - 1)
    fwd = _gx2(2 * epsilon + s, upper=True, **U) - np.exp(epsilon) * _gx2(2 * epsilon + s, upper=True, **V)
    bwd = _gx2(s - 2 * epsilon, upper=False, **V) - np.exp(epsilon) * _gx2(s - 2 * epsilon, upper=False, **U)
    out = max(0.0, fwd, bwd)
    if not np.isfinite(out):
        raise FloatingPointError("als_F is not finite.")
    return float(out)


def ls_noise_multiplier(epsilon, delta, r, d):
    """``sigma / l`` of ``M_LS`` / ``M_ALS`` (Figure 4): smallest ``s`` with
    ``als_F(eps, 1/s^2, 1/s^2, r, d) <= delta`` (the paper's box corner).

    Valid **only** under the paper's unproven monotonicity conjecture on
    ``F`` (Theorem 5) and for add/remove neighbours. Root search on ``s`` over
    ``(sqrt(2), 1e4]``; the returned value is checked to satisfy the constraint.

    Oracles (note section 10): 7.1488 (eps=1, delta=1/2809, r=300, d=12);
    11.8039 (1/327346, 1200, 2); 15.0551 (1/515345, 3000, 91).
    """
    from ..leverage import _solve_safe

    def excess(t):  # t = -log s; increasing in t under the conjecture
        x = np.exp(2.0 * t)
        return als_F(epsilon, x, x, r, d) - delta

    # largest t (smallest s) with F <= delta; brentq + checked safe end
    neg = _solve_safe(excess, -np.log(1e4), -0.5 * np.log(2.0) - 1e-9, xtol=1e-10)
    return float(np.exp(-neg))


@lru_cache(maxsize=64)
def _cached_rp_noise_multiplier(epsilon, delta, r):
    # the estimators' cache: a pure function of public scalars, and a root search
    return rp_noise_multiplier(epsilon, delta, r)


# ---------------------------------------------------------------------------
# The sketch itself (the randomness of M_RP)
# ---------------------------------------------------------------------------
def gaussian_sketch(X, r, sigma=0.0, *, random_state=None, chunk_size=10_000, algorithm="gram"):
    """A draw of ``G [X; sigma I_d]`` with ``G`` an ``r x (n + d)`` i.i.d. N(0, 1) matrix.

    The Gaussian random projection of Lu et al. (2023), Figure 3 (``M_RP``):
    ``G_1 X + sigma G_2`` with independent ``G_1`` (r x n) and ``G_2``
    (r x d). Privacy is invariant to the entry variance of ``G``; utility
    code divides by ``sqrt(r)``.

    Two samplers of the *same distribution*:

    * ``algorithm="gram"`` (default): row ``i`` of ``G [X; sigma I]`` is
      ``sum_j g_ij x_j + sigma h_i`` with independent standard normals, a
      Gaussian vector with mean 0 and covariance
      ``M = X^T X + sigma^2 I``; different rows use disjoint entries of
      ``G`` and are independent. So the sketch is exactly distributed as
      ``Z F`` with ``Z`` an ``r x d`` standard normal matrix and any ``F``
      with ``F^T F = M`` (Cholesky factor ``F = L^T``; when ``M`` is singular,
      ``sigma = 0``, the eigen-factor ``Lambda^{1/2} V^T``). The output
      distribution, which is all that (eps, delta)-DP and the NDIS analysis
      of ``M_RP`` depend on (the analysis itself is of the pair
      ``N(0, M)^r`` vs ``N(0, M')^r``), is identical; the cost is
      ``O(n d^2 + r d^2)`` instead of ``O(r n d)`` plus ``r n`` Gaussian
      draws. ``X^T X`` is accumulated in row chunks.
    * ``algorithm="explicit"``: ``G_1`` is generated and applied in row
      chunks of ``X`` (memory ``O(r * chunk_size + r d)``), the literal
      construction of the paper.

    As with every floating-point mechanism, the released doubles are not
    exactly the real-valued distribution (Mironov 2012); both samplers share
    this caveat.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Rows already clipped to the public norm bound.
    r : int
    sigma : float, default=0
        Regularization scale (``0`` gives the plain, non-private projection).
    random_state : None, int or Generator
    chunk_size : int, default=10000
    algorithm : {"gram", "explicit"}, default="gram"

    Returns
    -------
    S : ndarray of shape (r, d)
    """
    rng = check_generator(random_state)
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    r = int(r)
    chunk_size = int(chunk_size)
    if algorithm == "gram":
        M = _regularized_gram(X, sigma, chunk_size=chunk_size)
        return rng.standard_normal((r, d)) @ _psd_factor(M)
    if algorithm != "explicit":
        raise ValueError(f"algorithm must be 'gram' or 'explicit', got {algorithm!r}.")
    S = np.zeros((r, d))
    for start in range(0, n, chunk_size):
        block = X[start:start + chunk_size]
        S += rng.standard_normal((r, block.shape[0])) @ block
    if sigma > 0:
        S += float(sigma) * rng.standard_normal((r, d))
    return S


def _regularized_gram(X, sigma=0.0, *, chunk_size=10_000):
    """``X^T X + sigma^2 I`` (the Gram matrix of ``[X; sigma I]``), accumulated in row chunks."""
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    M = float(sigma) ** 2 * np.eye(d)
    for start in range(0, n, int(chunk_size)):
        block = X[start:start + int(chunk_size)]
        M += block.T @ block
    return M


def _psd_factor(M):
    """``F`` with ``F^T F = M`` for a symmetric positive semi-definite ``M``.

    The upper Cholesky factor when ``M`` is positive definite; otherwise the
    eigen-factor ``diag(sqrt(lambda)) V^T`` with eigenvalues below the
    rank tolerance ``d * eps_machine * lambda_max`` set to zero (they are
    rounding errors of a singular Gram matrix; their square roots would
    otherwise leak ~1e-8 relative mass out of the row space).
    """
    M = (M + M.T) / 2.0
    # numpy.linalg (the BLAS pool of the Gram product) rather than scipy.linalg:
    # two OpenBLAS thread pools contending on loaded cores cost up to seconds here
    try:
        return np.linalg.cholesky(M).T
    except np.linalg.LinAlgError:
        lam, V = np.linalg.eigh(M)
        tol = M.shape[0] * np.finfo(float).eps * max(float(lam[-1]), 0.0)
        lam = np.where(lam > tol, lam, 0.0)
        return np.sqrt(lam)[:, None] * V.T


def least_squares_sample(Z, sigma, r, *, random_state=None):
    """One draw of ``M_LS`` (Lu et al. 2023, Figure 4, step 3) on ``Z = [B b]``.

    With ``[Bt bt] = [B b; sigma I_{d+1}]`` (so ``Bt^T Bt = B^T B + sigma^2 I``,
    ``xt = (B^T B + sigma^2 I)^{-1} B^T b``: ridge with ``lambda = sigma^2``, and
    ``|wt|^2 = |b - B xt|^2 + sigma^2 |xt|^2 + sigma^2``), returns

        xt + |wt| / sqrt(r) * L^{-T} z,   z ~ N(0, I_d),  L L^T = Bt^T Bt,

    a sample of ``N(xt, |wt|^2/r (Bt^T Bt)^{-1})`` without forming an inverse.
    The Gram matrix is accumulated in row chunks. Calibration of ``sigma``:
    :func:`ls_noise_multiplier` (DP only under the paper's conjecture).
    """
    rng = check_generator(random_state)
    Z = np.asarray(Z, dtype=float)
    n, p1 = Z.shape
    d = p1 - 1
    G = _regularized_gram(Z, chunk_size=50_000)
    A = G[:d, :d] + sigma**2 * np.eye(d)
    cf = linalg.cho_factor(A, lower=True)
    xt = linalg.cho_solve(cf, G[:d, d])
    # |b - B xt|^2 = b^T b - 2 xt^T B^T b + xt^T B^T B xt
    rss = G[d, d] - 2.0 * xt @ G[:d, d] + xt @ G[:d, :d] @ xt
    w2 = max(rss, 0.0) + sigma**2 * float(xt @ xt) + sigma**2
    z = rng.standard_normal(d)
    noise = linalg.solve_triangular(cf[0], z, lower=True, trans="T")
    return xt + np.sqrt(w2 / r) * noise
