"""Leverage scores and leverage-based regularization (part of the mechanism core).

The privacy of a Gaussian random projection ``G D`` of a dataset depends on
the leverage of the record that differs between neighbours (Lu et al. 2023,
Theorem 2); appending ``sigma I`` rows bounds every leverage, which is what
makes the projection differentially private. See
:mod:`skdp.mechanisms.ndis` for the spectra and sections 3-4 of our review
notes of Lu et al. (2023).

Regularization bound: which Gram matrix, and the tight form
--------------------------------------------------------------
Write ``Mt(D) = D^T D + sigma^2 I`` (the Gram matrix of ``[D; sigma I]``) and
let every record have ``|v| <= l``.

* Paper (add/remove, Fact 2): the leverage of ``v`` in the regularized
  dataset ``v^T Mt(D)^{-1} v <= |v|^2/sigma^2 <= l^2/sigma^2``; choosing
  ``sigma = l/sqrt(lbar)`` makes every leverage ``<= lbar``.
* Tight add/remove form (research note 3.3): ``v`` is a row of ``D``, so
  ``Mt(D) = Mt(D0) + v v^T`` with ``D0 = D`` minus ``v``, and by
  Sherman-Morrison ``v^T Mt(D)^{-1} v = u/(1+u)`` with
  ``u = v^T Mt(D0)^{-1} v <= l^2/sigma^2``; hence the leverage is
  ``<= l^2/(l^2+sigma^2)`` and ``sigma^2 = l^2 (1-lbar)/lbar`` suffices.
  This is confirmed, but **only for add/remove neighbours**, where the
  Gram matrix of the larger dataset contains ``v v^T``.
* Replace-one (skdp's relation): ``D = [D0; v]`` and ``D' = [D0; v']``. The
  quantity that matters is ``u = v^T Mt(D0)^{-1} v``, the leverage of the
  record relative to the Gram matrix of the *other* records, which does not
  contain ``v``; its bound ``l^2/sigma^2`` is attained (``D0 = 0``). The
  spectrum is then a rank-2 covariance change, calibrated exactly by
  :func:`skdp.mechanisms.ndis.rp_replace_delta` /
  :func:`~skdp.mechanisms.ndis.rp_noise_multiplier` with ``L = l^2/sigma^2``;
  neither ``lbar`` formula applies to it.
"""

import numpy as np
from scipy import linalg

from .mechanisms.ndis import _rp_log_delta, _regularized_gram

__all__ = [
    "leverage_scores",
    "residual_scores",
    "regularize",
    "rp_leverage_threshold",
    "regularization_sigma",
]


def _bisect_safe(pred, lo, hi, *, tol=1e-12, max_iter=400):
    """Largest ``x`` in ``[lo, hi]`` with ``pred(x)`` True, for a predicate
    that is True below a threshold and False above it.

    Returns the safe end of the final bracket (where ``pred`` holds).

    Raises
    ------
    ValueError
        If ``pred(lo)`` is False (no safe value in the bracket).
    """
    if not pred(lo):
        raise ValueError("no value in the search bracket satisfies the privacy constraint.")
    if pred(hi):
        return hi
    for _ in range(max_iter):
        if hi - lo <= tol * max(1.0, abs(lo)):
            break
        mid = 0.5 * (lo + hi)
        if pred(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _solve_safe(excess, lo, hi, *, xtol=1e-12):
    """Largest safe ``x`` for a continuous increasing ``excess`` (safe iff ``excess(x) <= 0``).

    Brent's method locates the root, then the result is moved to the safe
    side and *checked*: the returned ``x`` always satisfies
    ``excess(x) <= 0`` (falls back to :func:`_bisect_safe` otherwise).
    """
    from scipy.optimize import brentq

    f_lo, f_hi = excess(lo), excess(hi)
    if not f_lo <= 0:
        raise ValueError("no value in the search bracket satisfies the privacy constraint.")
    if f_hi <= 0:
        return hi
    g = lambda x: max(min(excess(x), 1e300), -1e300)  # noqa: E731  (-inf -> finite)
    root = brentq(g, lo, hi, xtol=xtol, rtol=4 * np.finfo(float).eps, maxiter=200)
    step = max(xtol, 1e-12 * abs(root))
    for k in range(60):
        x = root - step * 2.0**k
        if x <= lo:
            break
        if excess(x) <= 0:
            return x
    return _bisect_safe(lambda x: excess(x) <= 0, lo, hi, tol=xtol)


def leverage_scores(X, *, sigma=0.0, chunk_size=None):
    """Leverage of every row: ``x_i^T (X^T X + sigma^2 I)^{-1} x_i``.

    Computed from the (chunk-accumulated) Gram matrix with a Cholesky solve
    when ``chunk_size`` is given (memory O(chunk d + d^2)), otherwise from a
    thin QR of ``[X; sigma I]`` (more accurate). Never forms an inverse.

    Parameters
    ----------
    X : array-like of shape (n, d)
    sigma : float, default=0
        Regularization (appended ``sigma I`` rows).
    chunk_size : int or None

    Returns
    -------
    lev : ndarray of shape (n,)
        Values in [0, 1]; rows of a rank-deficient ``X`` (``sigma = 0``) get
        the leverages of the orthogonal projection onto ``col(X)``.
    """
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    if chunk_size is None:
        A = np.vstack([X, sigma * np.eye(d)]) if sigma > 0 else X
        if sigma > 0:
            Q, _ = linalg.qr(A, mode="economic")
            return np.einsum("ij,ij->i", Q[:n], Q[:n])
        U, s, _ = linalg.svd(X, full_matrices=False)
        rank = int(np.sum(s > s.max(initial=0.0) * max(n, d) * np.finfo(float).eps)) if s.size else 0
        U = U[:, :rank]
        return np.einsum("ij,ij->i", U, U)
    try:
        cf = linalg.cho_factor(_regularized_gram(X, sigma, chunk_size=chunk_size), lower=True)
    except linalg.LinAlgError:  # rank-deficient X at sigma = 0: the projection, by the SVD
        return leverage_scores(X, sigma=sigma, chunk_size=None)
    out = np.empty(n)
    for start in range(0, n, chunk_size):
        B = X[start:start + chunk_size]
        out[start:start + chunk_size] = np.einsum("ij,ji->i", B, linalg.cho_solve(cf, B.T))
    return out


def residual_scores(X, y):
    """Residual scores ``rho_i = w_i^2 / ||w||^2`` of least squares (paper section 3.3).

    ``w = y - X x_opt``; the leverage of row ``i`` of ``[X y]`` is
    ``lev_i + rho_i`` (Prop. 4).
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float).ravel()
    coef = linalg.lstsq(X, y)[0]
    w = y - X @ coef
    tot = float(w @ w)
    if tot == 0:
        return np.zeros_like(w)
    return w * w / tot


def regularize(X, sigma):
    """``[X; sigma I_d]``: appending these rows adds ``sigma^2 I`` to the Gram matrix."""
    X = np.asarray(X, dtype=float)
    return np.vstack([X, float(sigma) * np.eye(X.shape[1])])


def rp_leverage_threshold(epsilon, delta, r):
    """Largest leverage ``lbar`` with ``rp_delta(eps, lbar, r) <= delta``.

    Bisection is valid because the RP spectrum increases with the leverage
    (Lu et al. 2023, Prop. 3); the value is computed in log space
    (``chi2.logsf``) and any non-finite evaluation raises. Returns the safe
    (lower) end of the bracket, with absolute tolerance 1e-13.

    Oracles (note sections 4.3, 10): ``rp_leverage_threshold(1, 1/2809, 300)
    = 0.0261370``; ``rp_leverage_threshold(1, 1e-5, 100) = 0.0315846``.
    """
    epsilon = float(epsilon)
    delta = float(delta)
    if not (epsilon >= 0 and 0 < delta < 1):
        raise ValueError("rp_leverage_threshold needs epsilon >= 0 and 0 < delta < 1.")
    log_delta = np.log(delta)
    return float(_solve_safe(lambda lev: _rp_log_delta(epsilon, lev, int(r)) - log_delta,
                             1e-15, 1.0 - 1e-15, xtol=1e-14))


def regularization_sigma(data_norm, lbar, *, bound="paper"):
    """``sigma`` such that every (add/remove) leverage is ``<= lbar``.

    ``bound="paper"``: ``l / sqrt(lbar)`` (Fact 2);
    ``bound="tight"``: ``l sqrt((1-lbar)/lbar)`` (module docstring; valid for
    add/remove neighbours only).
    """
    if bound == "paper":
        return float(data_norm) / np.sqrt(lbar)
    if bound == "tight":
        return float(data_norm) * np.sqrt((1.0 - lbar) / lbar)
    raise ValueError(f"bound must be 'paper' or 'tight', got {bound!r}.")
