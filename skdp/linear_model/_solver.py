r"""The deterministic solver of the private ERM routes: it always returns, within a public bound.

The output and objective perturbation routes of :mod:`skdp.linear_model._erm`
calibrate their noise for a minimiser known up to a public error: the
released ``W~`` must satisfy ``||grad F(W~)|| <= gamma`` with the public
tolerance ``gamma = tol * R / n``, where

    F(W) = (1/n) sum_i sum_k loss(y_ik <w_k, u_i>) + (lam/2) ||W||_F^2 + <B, W>

(``B = 0`` for output perturbation, the objective noise otherwise). Then
``||W~ - W*|| <= gamma / lam`` by ``lam``-strong convexity. ``F`` is also
``L``-smooth with the public ``L = c R^2 + lam`` (rows ``||u_i|| <= R``,
``0 <= loss'' <= c``).

Why the solver may never fail
-----------------------------
If the solver could give up (and the fit raise) on some data sets and not on
their neighbours, the *existence* of a release would depend on one record,
with no noise to hide it: the review of this code found a data set on which
``PrivateHuberSVM(h=1e-3, C=100)`` raised every time while its neighbour
fitted every time. So :func:`minimize` has no failure exit: only its running
time depends on the data (a timing side channel that the guarantee, like
every DP library's, assumes hidden).

Three stages, each started from the best point of the previous one:

1. **Fast path** (what makes fits as fast as scikit-learn's, or faster), no
   convergence guarantee:

   * logistic loss (``p`` at most :func:`_dense_hessian_max`): a **public**
     row subset (``max(20000, 100 p)`` evenly strided rows, chosen from
     ``n`` and ``p`` alone; all rows when ``n`` is below twice that) serves
     twice. First the same problem on the subset alone is solved coarsely
     (its gradient norm down by ``_WARM_REL``; a few percent of one pass
     over ``X``), which starts the full problem near its minimiser. Then
     quasi-Newton steps whose initial inverse Hessian is the factorised
     Hessian of the subset rescaled to ``n``, recomputed at every iterate,
     corrected by the L-BFGS two-loop recursion over the last secant pairs
     of the full gradients (Byrd, Chin, Neveitt & Nocedal 2011 use such
     subsampled curvature; the secant pairs correct the subset's error in
     the directions the iterates explore). A step is halved until Armijo's
     condition on ``F`` holds or the gradient norm drops. No full Hessian:
     on 1M x 100 (``gamma ~ 1e-12``) about 10 passes over ``X``.
   * otherwise (Huber hinge, or high ``p``): L-BFGS to a coarse gradient
     norm, then at most 50 Newton steps with the exact Hessian, reusing a
     factorisation while it halves the gradient ("chord" steps) and accepting
     steps that lower the gradient norm (on the review's hard Huber problem
     it stalls).

2. **Damped Newton with an Armijo line search on F**, at most
   ``_NEWTON_STEPS`` steps. For a strongly convex ``F`` with Lipschitz
   gradient every accepted step decreases ``F`` by a fixed fraction of
   ``||grad F||^2 / L`` (Nocedal & Wright 2006, Thm 3.2 with Zoutendijk's
   condition), so it converges globally; near the minimiser of these
   piecewise-smooth losses it takes full steps.
3. **Backstop with a proven rate**: Nesterov's accelerated gradient method
   for ``lam``-strongly convex, ``L``-smooth functions, constant step
   ``1/L`` and momentum ``(sqrt(kappa) - 1) / (sqrt(kappa) + 1)``,
   ``kappa = L / lam`` (Nesterov 2004, constant step scheme (2.2.19) and
   Theorem 2.2.3 with ``gamma_0 = lam``):

       F(x_t) - F* <= (1 - 1/sqrt(kappa))^t * Phi_0,
       Phi_0 = F(x_0) - F* + (lam/2) ||x_0 - x*||^2 <= g_0^2 / lam,

   with ``g_0 = ||grad F(x_0)||`` (strong convexity gives both
   ``F(x_0) - F* <= g_0^2 / (2 lam)`` and ``||x_0 - x*|| <= g_0 / lam``), and
   ``||grad F(x)||^2 <= 2 L (F(x) - F*)`` for an ``L``-smooth convex ``F``.
   Hence after

       T_max = ceil( log(2 kappa g_0^2 / gamma^2) / -log(1 - 1/sqrt(kappa)) )

   steps ``||grad F(x_T)|| <= gamma`` (:func:`accelerated_iteration_cap`).
   The method stops earlier as soon as the certificate below holds; if it
   reaches ``T_max`` (computed for ``gamma / 2``) it returns ``x_T``, which
   satisfies the bound by the theorem in exact arithmetic only (the one
   place where the floating-point certificate is not checked; no test or
   benchmark problem gets there).

The certificate in floating point
---------------------------------
A computed gradient norm at most ``gamma`` says nothing rigorous about the
exact gradient: the margins, the loss derivatives and the sum over ``n`` rows
are rounded, and at a million rows the worst case of that error is of the
order of ``gamma = 1e-6 R / n`` itself. Every stopping test is therefore
:class:`_Certificate`: the computed norm, rounded up, plus a rigorous bound
on the error of the computed gradient (Higham 2002, ch. 3; unit roundoff
``u = 2^-53``) must be at most ``gamma``:

* :func:`gradient_error_bound`, a priori: ``e0 + e1 ||W||`` with
  ``e0 = sqrt(K) R' gamma_{h+30}`` (``h`` the public depth of the sum over
  rows, :meth:`~skdp.linear_model._rows.RowOperator.sum_depth`: chunks of at
  most ``_FUSED_BYTES / (8 d)`` dense rows or ``2^16`` sparse rows, each
  chunk's sum formed fresh and then added) and ``e1 = c R'^2 gamma_{d+4}``
  for the margins (worst case: every row's margin error at the largest
  curvature);
* when that worst case is too coarse, :func:`margin_error` replaces the
  margins' part by a bound read from the rows at the candidate point (each
  row's margin error from ``sum_j |u_ij w_j|``, times the loss's curvature
  bound around its margin: zero for a Huber row outside its band).

Both are tested against 60-digit decimal arithmetic
(``tests/test_solver.py``). The public tolerance of the estimators is at
least ``4 e0`` (:func:`float_floor`) so that the test stays reachable.

Cost. The rows are a :class:`~skdp.linear_model._rows.RowOperator`: one
evaluation of ``F`` and its gradient is one fused pass over cache-sized row
chunks of ``X`` (never a copy of ``X``). The subset Hessians of stage 1 cost
``m p^2`` flops for ``m`` rows; the exact Hessians (the Huber hinge's fast
path, stage 2) are accumulated chunk-wise over all rows (rows of zero
curvature skipped). When ``p`` exceeds 400 (dense ``X``) or 2000 (sparse
``X``) no ``p x p`` matrix is formed: Newton directions are solved by
conjugate gradients with Hessian-vector products. None of this touches the
guarantee: only the returned point's exact gradient norm on the full data
(``<= gamma``) or the backstop's iteration count carries it, and both are
computed on all rows.

No message of this module contains a value computed from the data.

References
----------
N. J. Higham. Accuracy and Stability of Numerical Algorithms, 2nd ed. SIAM, 2002.
R. H. Byrd, G. M. Chin, W. Neveitt, J. Nocedal. On the use of stochastic
Hessian information in optimization methods for machine learning. SIAM J.
Optim. 21(3), 2011.
Yu. Nesterov. Introductory Lectures on Convex Optimization. Kluwer, 2004.
J. Nocedal, S. J. Wright. Numerical Optimization, 2nd ed. Springer, 2006.
"""

import math

import numpy as np
from scipy import linalg, optimize

from .._stats import UNIT_ROUNDOFF, computed_row_bound, rounding_gamma
from ._rows import as_operator, sum_depth

__all__ = ["minimize", "accelerated_iteration_cap", "gradient_error_bound", "margin_error",
           "float_floor"]

_COARSE_REL = 1e-1
_NEWTON_STEPS = 200  # stage 2 budget (steps, each one Hessian factorisation)
_ARMIJO = 1e-4
_DENSE_HESSIAN_MAX = 400  # dense X: p x p Hessians (n p^2 flops) up to this p, else CG
_DENSE_HESSIAN_MAX_SPARSE = 2000  # sparse X: X^T D X costs ~ sum_i nnz_i^2
_HESS_ROWS_MIN = 20000  # fast path: Hessian on max(20000, 100 p) strided rows (if fewer than n)
_HESS_ROWS_PER_FEATURE = 100
_WARM_REL = 1e-3  # subset warm start solved to this fraction of its first gradient norm
_MEMORY = 10  # secant pairs of the subset-preconditioned quasi-Newton steps
_CG_RTOL = 1e-6
_CG_MAXITER = 250


def _obj_grad(wflat, U, Y, loss, lam, B, sw=None):
    """``F`` and its gradient at ``wflat``: two passes over the rows (``U`` an operator)."""
    U = as_operator(U)
    n = U.shape[0]
    W = wflat.reshape(B.shape)
    # per-record weights in [0, 1] multiply the loss terms (module docstring of _erm)
    fsum, G = U.loss_grad(W, Y, loss, sw)
    f = fsum / n + 0.5 * lam * np.dot(wflat, wflat) + np.dot(B.ravel(), wflat)
    G = G / n + lam * W + B
    return f, G.ravel()


def _dense_hessian_max(U):
    """Largest ``p`` for which the exact ``p x p`` Hessians are formed (a public rule)."""
    return _DENSE_HESSIAN_MAX_SPARSE if U.sparse else _DENSE_HESSIAN_MAX


def _hessian_rows(n, p):
    """Rows of the fast path's Hessian: all (``None``) or every ``step``-th row, a slice
    (a view of dense X, no copy) chosen from the public ``n`` and ``p`` alone."""
    m = max(_HESS_ROWS_MIN, _HESS_ROWS_PER_FEATURE * p)
    if 2 * m > n:
        return None
    return slice(None, None, n // m)


def _hessian_factors(wflat, U, Y, loss, lam, shape, sw=None, rows=None):
    """The per-class Hessians at ``wflat``: Cholesky factors, or a CG solver in high dimension.

    ``U^T diag(S_k / n) U + lam I`` with ``S_ik = w_i loss''(.)``: formed chunk-wise
    (:meth:`RowOperator.grams`) and factorised when ``p`` is at most
    :func:`_dense_hessian_max`; otherwise Newton directions are solved by conjugate
    gradients with Hessian-vector products (two passes over the rows each).
    """
    U = as_operator(U)
    if rows is not None:  # fast path: the curvature of a public row subset, rescaled
        U, Y, sw = U.take(rows), Y[rows], None if sw is None else sw[rows]
    n, p = U.shape
    W = wflat.reshape(shape)

    def curvature(Z, Yc, i, j):  # w_i loss''(z_ik) / n of the rows i:j
        S = loss.second(Z)
        if sw is not None:
            S *= sw[i:j, None]
        S /= n
        return S

    if p > _dense_hessian_max(U):
        return _CGHessian(U, U.map_margins(W, Y, curvature), lam)
    factors = []
    for H in U.grams(W, Y, curvature):
        H[np.diag_indices(p)] += lam
        try:
            factors.append(linalg.cho_factor(H, lower=False, check_finite=False))
        except (np.linalg.LinAlgError, ValueError):
            # numerically indefinite (collinear columns under a tiny public lam) or not
            # finite: None ends the calling stage, whatever the data; the factorisation-free
            # stage 3 still reaches the certificate (no error depends on a record)
            return None
    return factors


class _CGHessian:
    """Newton directions by conjugate gradients: ``H_k v = U^T (S_k * (U v)) + lam v``."""

    def __init__(self, U, S, lam):
        self.U, self.S, self.lam = U, S, lam

    def solve(self, G):
        from scipy.sparse.linalg import LinearOperator, cg

        U, lam = self.U, self.lam
        p = U.shape[1]
        out = []
        for k in range(G.shape[0]):
            c = np.ascontiguousarray(self.S[:, k])

            def mv(v, c=c):
                return U.curvature_dot(c, v) + lam * np.ravel(v)

            x, _ = cg(LinearOperator((p, p), matvec=mv, dtype=np.float64), G[k],
                      rtol=_CG_RTOL, atol=0.0, maxiter=_CG_MAXITER)
            out.append(x)
        return -np.concatenate(out)


def _newton_direction(factors, g, shape):
    G = g.reshape(shape)
    if isinstance(factors, _CGHessian):
        return factors.solve(G)
    return -np.concatenate([linalg.cho_solve(c, G[k], check_finite=False)
                            for k, c in enumerate(factors)])


class _Memo:
    """``_obj_grad`` remembering its last point (L-BFGS re-evaluates its start and end)."""

    def __init__(self, U, Y, loss, lam, B, sw):
        self.args = (U, Y, loss, lam, B, sw)
        self.x = None

    def __call__(self, x):
        if self.x is None or not np.array_equal(x, self.x):
            self.x = np.array(x, copy=True)
            self.value = _obj_grad(self.x, *self.args)
        return self.value[0], self.value[1].copy()


class _Best:
    """The point with the smallest finite gradient norm seen so far."""

    def __init__(self, w, f, g):
        self.w, self.f, self.g, self.gnorm = w, f, g, float(np.linalg.norm(g))

    def offer(self, w, f, g):
        gnorm = float(np.linalg.norm(g))
        if np.isfinite(f) and np.isfinite(gnorm) and gnorm < self.gnorm:
            self.w, self.f, self.g, self.gnorm = w, f, g, gnorm


def gradient_error_bound(U, loss, lam, B, R):
    """``(e0, e1)`` with ``||fl(grad F)(W) - grad F(W)|| <= e0 + e1 ||W||`` for every ``W``.

    A rigorous a-priori bound on the floating-point error of :func:`_obj_grad`
    (float64, unit roundoff ``u = 2^-53``; Higham 2002, ch. 3), for the exact
    ``F`` of the computed rows ``u_i = [a_i x_i, s]`` (``||u_i|| <= R' =``
    :func:`~skdp._stats.computed_row_bound` ``(R, d)``; the clip factors
    ``a_i`` are numbers like any other, so ``F`` is a function of the data
    whose per-record terms the privacy analysis covers). Per class ``k``:

    * margins ``z_ik = a_i <x_i, w> + s w_s``: a dot product of length ``d``
      and three more roundings, error at most ``gamma_{d+3} sum_j |u_ij w_j|
      <= gamma_{d+3} R' ||w_k||``;
    * ``loss'`` at the computed margin: at most ``c |dz|`` (``c`` bounds
      ``loss''``) plus its own evaluation, at most 11 roundings for the
      logistic ``-expit(-z)`` (``exp`` allowed 8 ulps) and 4 for the Huber
      hinge (``|loss'| <= 1``, so these are absolute), then the sample weight
      and ``a_i`` (2 more): ``|dA_ik| <= c gamma_{d+3} R' ||w_k|| + 18 u``;
    * the sum over rows ``sum_i A_ik u_i``: ``h`` additions
      (:meth:`~skdp.linear_model._rows.RowOperator.sum_depth`) and one
      product per term, any order: at most ``gamma_{h+1} sum_i |A_ik|
      ||u_i|| <= gamma_{h+1} n R' (1 + 18 u)`` in l2 (Minkowski over the
      coordinates); the error of ``A`` adds ``n R' |dA|``;
    * ``G / n + lam W + B``: three roundings of terms of norms at most
      ``sqrt(K) R'``, ``lam ||W||`` and ``||B||``.

    Summed over the classes (Minkowski, ``sum_k ||w_k||^2 = ||W||^2``)::

        e0 = sqrt(K) R' gamma_{h+30} + 4 u ||B||,
        e1 = c R'^2 gamma_{d+4} + 4 u lam.

    The 30 collects the single roundings above (at most 25) with room to
    spare; the data's values enter only through ``||u_i|| <= R'``.
    """
    U = as_operator(U)
    K = B.shape[0]
    Rc = computed_row_bound(R, U.d)
    e0 = float_floor(U.n, U.d, K, R, U.sparse) + 4.0 * UNIT_ROUNDOFF * float(np.linalg.norm(B))
    e1 = loss.curvature * Rc * Rc * rounding_gamma(U.d + 4) + _lambda_error(lam)
    return float(e0), float(e1)


def _lambda_error(lam):
    """The part ``4 u lam`` of :func:`gradient_error_bound`'s ``e1`` that is not the margins'."""
    return 4.0 * UNIT_ROUNDOFF * float(lam)


def float_floor(n, d, K, R, sparse):
    """The part of :func:`gradient_error_bound`'s ``e0`` known before the data: public.

    ``sqrt(K) R' gamma_{h+30}`` for ``n`` rows of ``d`` features (``sparse``:
    the input kind), the depth ``h`` of :func:`~skdp.linear_model._rows.sum_depth`.
    """
    h = sum_depth(n, d, sparse)
    return float(np.sqrt(K) * computed_row_bound(R, d) * rounding_gamma(h + 30))


def margin_error(U, W, Y, loss, R, sample_weight=None):
    """A bound, computed from the data at ``W``, on the margins' share of the gradient error.

    :func:`gradient_error_bound`'s ``e1 ||W||`` charges every row the worst
    case ``c gamma_{d+3} R'^2 ||w_k||``. This bound reads each row: the margin
    error of row ``i`` is at most ``dz_ik = gamma_{d+3} sum_j |u_ij w_kj|``
    (computed, then divided by ``1 - gamma_{d+4}`` for its own rounding), and
    the derivative moves by at most ``c_ik dz_ik`` with ``c_ik`` the loss's
    curvature bound on ``[z~ - 2 dz, z~ + 2 dz]`` around the recomputed margin
    ``z~`` (``loss.local_curvature``: within ``dz`` of both the exact margin
    and the one the gradient pass computed). Zero for a Huber row outside its
    band, ``e^-|z|`` for a confident logistic row. The share of class ``k`` is
    ``R' / n sum_i w_i c_ik dz_ik`` (a sum of non-negative terms of depth
    ``h``: divided by ``1 - gamma_{h+10}``), the norm over classes is rounded
    up by ``1 + gamma_{K+3}``. One pass over the rows (no copy of ``X``).
    """
    U = as_operator(U)
    K = Y.shape[1]
    W = np.asarray(W, dtype=np.float64).reshape(K, -1)
    g3 = rounding_gamma(U.d + 3) / (1.0 - rounding_gamma(U.d + 4))
    acc = np.zeros(K)
    with np.errstate(over="ignore", invalid="ignore"):
        for i, j, Z, T in U.margin_chunks(W, Y):
            dz = g3 * T
            t = loss.local_curvature(Z, 2.0 * dz) * dz
            if sample_weight is not None:
                t *= sample_weight[i:j, None]
            acc += t.sum(axis=0)
    m = computed_row_bound(R, U.d) * acc / U.n / (1.0 - rounding_gamma(U.sum_depth() + 10))
    val = float(np.linalg.norm(m)) * (1.0 + rounding_gamma(K + 3))
    return val if np.isfinite(val) else float("inf")


class _Certificate:
    """``||grad F(W)|| <= gamma`` decided from floating-point values, rigorously.

    With the computed gradient ``g~`` and its computed norm ``nu`` (a sum of
    ``k = K p`` squares and a square root: ``||g~|| <= nu (1 + gamma_{k+2})``),
    ``||grad F(W)|| <= ||g~|| + e0 + e1 ||W||`` (:func:`gradient_error_bound`),
    so ``nu (1 + gamma_{k+2}) + e0 + e1 ||W|| (1 + gamma_{k+2}) <= gamma``
    implies the bound. The coefficient ``e1`` includes ``e_lam = 4 u lam``; the rest
    is the margins' worst case ``c R'^2 gamma_{d+4}``. When ``e1 ||W||`` is too
    coarse, the margins' part is replaced by
    :func:`margin_error` read from the rows at ``W`` (``margins``: a callable
    of ``W``; one more pass). ``exact=True`` (``e0 = e1 = 0``, no factor) is
    the exact-arithmetic test (the warm start on a row subset, tests).
    """

    def __init__(self, gamma, e0=0.0, e1=0.0, k=0, exact=True, e_lam=0.0, margins=None):
        self.gamma = float(gamma)
        self.e0, self.e1, self.e_lam = float(e0), float(e1), float(e_lam)
        self.exact = bool(exact)
        self.f = 1.0 if exact else 1.0 + rounding_gamma(int(k) + 2)
        self.margins = margins
        self._last = (None, None)  # (W, margin bound): the final tests repeat the last point

    def __call__(self, w, gnorm):
        if self.exact:
            return gnorm <= self.gamma
        nw = float(np.linalg.norm(w)) * self.f
        top = gnorm * self.f + self.e0
        base = top + self.e_lam * nw
        if not base <= self.gamma:
            return False
        if top + self.e1 * nw <= self.gamma:
            return True
        if self.margins is None:
            return False
        last_w, last_m = self._last
        if last_w is None or not np.array_equal(last_w, w):
            last_w, last_m = np.array(w, copy=True), self.margins(w)
            self._last = (last_w, last_m)
        return base + last_m <= self.gamma


def _newton(best, U, Y, loss, lam, B, ok, max_steps, fast, sw=None, rows=None):
    """Newton steps from ``best`` with a backtracking line search.

    ``fast=False`` (stage 2): pure Armijo backtracking on F, which makes the
    method globally convergent. ``fast=True`` (stage 1, the committed fast
    path): a step with the last factorised Hessian is tried first and kept if
    it halves the gradient norm without increasing F, and a backtracking step
    is also accepted when it only lowers the gradient norm; this is quicker
    on most problems but has no convergence guarantee, which stages 2 and 3
    provide.
    """
    wflat, f, g, gnorm = best.w, best.f, best.g, best.gnorm
    factors = None
    for _ in range(max_steps):
        if ok(wflat, gnorm):
            break
        if fast and factors is not None:
            wnew = wflat + _newton_direction(factors, g, B.shape)
            fnew, gnew = _obj_grad(wnew, U, Y, loss, lam, B, sw)
            gnew_norm = np.linalg.norm(gnew)
            best.offer(wnew, fnew, gnew)
            if ok(best.w, best.gnorm):
                break
            if np.isfinite(fnew) and gnew_norm <= 0.5 * gnorm and fnew <= f:
                wflat, f, g, gnorm = wnew, fnew, gnew, gnew_norm
                continue
            rows = None  # the subset's curvature did not halve the gradient: exact from now on
        factors = _hessian_factors(wflat, U, Y, loss, lam, B.shape, sw, rows)
        if factors is None:
            break
        step = _newton_direction(factors, g, B.shape)
        slope = float(np.dot(g, step))
        if not (np.all(np.isfinite(step)) and slope < 0):
            break
        t = 1.0
        while t >= 1e-12:
            wnew = wflat + t * step
            fnew, gnew = _obj_grad(wnew, U, Y, loss, lam, B, sw)
            if np.isfinite(fnew) and (fnew <= f + _ARMIJO * t * slope
                                      or (fast and np.linalg.norm(gnew) < gnorm)):
                break
            t *= 0.5
        else:
            if not fast:
                break  # no decrease representable in floating point: leave it to stage 3
        if not np.isfinite(fnew):
            break
        wflat, f, g, gnorm = wnew, fnew, gnew, float(np.linalg.norm(gnew))
        best.offer(wflat, f, g)


def _subsampled_newton(best, U, Y, loss, lam, B, ok, max_steps, sw=None):
    """Quasi-Newton steps preconditioned by the curvature of a public row subset.

    When the subset is a proper one, the problem on the subset alone is
    first solved to ``_WARM_REL`` times its first gradient norm (this same
    function on the subset, where all its rows are used) and its solution
    offered as the start. At every iterate the Hessian of the rows of
    :func:`_hessian_rows` (``max(20000, 100 p)`` evenly strided rows, chosen
    from ``n`` and ``p`` alone, rescaled to ``n``) is factorised; the direction
    is the L-BFGS two-loop recursion over the last ``_MEMORY`` secant pairs ``(s, y)`` of the *full* gradients, with
    that factorisation as its initial inverse Hessian (so the pairs correct
    the subset's error in the directions the iterates explore). A step is
    halved until it satisfies Armijo's condition on ``F`` or lowers the
    gradient norm. Each trial costs one fused pass over all rows (which also
    gives the gradient at the next iterate); the subset Hessian ``m p^2``
    flops. No convergence guarantee is claimed (stages 2 and 3 give it).
    """
    U = as_operator(U)
    n, p = U.shape
    rows = _hessian_rows(n, p)
    if rows is not None and _WARM_REL > 0:
        # warm start: the same problem on the public row subset alone, solved coarsely
        sub, Ys = U.take(rows), Y[rows]
        sws = None if sw is None else sw[rows]
        wb = _Best(best.w, *_obj_grad(best.w, sub, Ys, loss, lam, B, sws))
        _subsampled_newton(wb, sub, Ys, loss, lam, B, _Certificate(_WARM_REL * wb.gnorm),
                           max_steps, sws)
        best.offer(wb.w, *_obj_grad(wb.w, U, Y, loss, lam, B, sw))
    wflat, f, g, gnorm = best.w, best.f, best.g, best.gnorm
    mem = []
    for _ in range(max_steps):
        if ok(wflat, gnorm):
            break
        factors = _hessian_factors(wflat, U, Y, loss, lam, B.shape, sw, rows)
        if factors is None:
            break
        q = g.copy()
        alphas = []
        for sv, yv, rho in reversed(mem):
            a = rho * float(np.dot(sv, q))
            q -= a * yv
            alphas.append(a)
        r = -_newton_direction(factors, q, B.shape)
        for (sv, yv, rho), a in zip(mem, reversed(alphas)):
            r += (a - rho * float(np.dot(yv, r))) * sv
        step = -r
        slope = float(np.dot(g, step))
        if not (np.all(np.isfinite(step)) and slope < 0):
            if not mem:
                break
            mem = []  # a stale memory: restart from the subset Newton direction
            continue
        t = 1.0
        while t >= 1e-6:
            wnew = wflat + t * step
            fnew, gnew = _obj_grad(wnew, U, Y, loss, lam, B, sw)
            gnew_norm = float(np.linalg.norm(gnew))
            if np.isfinite(fnew) and (fnew <= f + _ARMIJO * t * slope or gnew_norm < gnorm):
                break
            t *= 0.5
        else:
            break
        sv, yv = wnew - wflat, gnew - g
        sy = float(np.dot(sv, yv))
        if sy > 0 and np.isfinite(sy):
            mem = (mem + [(sv, yv, 1.0 / sy)])[-_MEMORY:]
        wflat, f, g, gnorm = wnew, fnew, gnew, gnew_norm
        best.offer(wflat, f, g)


def accelerated_iteration_cap(kappa, g0, gamma):
    """Steps after which Nesterov's method guarantees ``||grad F|| <= gamma`` (module docstring).

    ``T_max = ceil(log(2 kappa g0^2 / gamma^2) / -log(1 - 1/sqrt(kappa)))``
    for a start point with gradient norm ``g0`` (0 if ``g0 <= gamma``).
    """
    kappa, g0, gamma = float(kappa), float(g0), float(gamma)
    if g0 <= gamma:
        return 0
    if kappa <= 1.0:  # F is a quadratic with identity curvature: one gradient step is exact
        return 1
    rate = -math.log1p(-1.0 / math.sqrt(kappa))
    return int(math.ceil((math.log(2.0 * kappa) + 2.0 * (math.log(g0) - math.log(gamma))) / rate))


def _accelerated(best, U, Y, loss, lam, B, ok, L, sw=None):
    """Nesterov's constant-momentum method from ``best`` until the public bound holds."""
    kappa = L / lam
    # the cap for half the tolerance: room for the floating-point allowance of the certificate
    T = accelerated_iteration_cap(kappa, best.gnorm, 0.5 * ok.gamma)
    sq = math.sqrt(kappa)
    beta = (sq - 1.0) / (sq + 1.0)
    x = best.w.copy()
    y = x.copy()
    for _ in range(T):
        fy, gy = _obj_grad(y, U, Y, loss, lam, B, sw)
        if ok(y, float(np.linalg.norm(gy))):
            return y
        x_new = y - gy / L
        y = x_new + beta * (x_new - x)
        x = x_new
    return x  # ||grad F(x_T)|| <= gamma / 2 by Nesterov (2004), Thm 2.2.3 (exact arithmetic)


def minimize(U, Y, loss, lam, B, gamma, max_iter, R, sample_weight=None):
    """Minimise ``F(W) = J(W) + <B, W>`` to ``||grad F|| <= gamma``; never fails.

    Parameters
    ----------
    U : RowOperator or ndarray of shape (n, p)
        Clipped (augmented) rows, ``||u_i|| <= R`` (:class:`~skdp.linear_model._rows.RowOperator`,
        or a plain array).
    Y : ndarray of shape (n, K)
        Labels in {-1, +1} of the K one-vs-rest problems.
    loss : LogisticLoss or HuberLoss
    lam : float
        Strong convexity (the L2 penalty), public.
    B : ndarray of shape (K, p)
        Linear term (objective noise; zeros for output perturbation).
    gamma : float
        Public gradient-norm tolerance.
    max_iter : int
        Iterations of the fast path (stage 1): subset-preconditioned
        quasi-Newton steps (logistic loss, ``p`` up to :func:`_dense_hessian_max`)
        or L-BFGS iterations (otherwise).
    R : float
        Public bound on the row norms. The smoothness ``L = c R'^2 + lam`` uses
        the bound ``R'`` on the rows as computed
        (:func:`skdp._stats.computed_row_bound`), which may exceed ``R`` by a
        few ulps.
    sample_weight : ndarray of shape (n,) or None
        Per-record weights in [0, 1] multiplying the loss terms (``None``: all 1);
        the smoothness bound ``L`` holds as well since every weight is at most 1.

    Returns
    -------
    W : ndarray of shape (K, p)
        A point with ``||grad F(W)|| <= gamma`` (module docstring).
    """
    K, p = B.shape
    U = as_operator(U)
    sw = sample_weight
    L = loss.curvature * computed_row_bound(R, U.d) ** 2 + lam
    # the stopping test, made rigorous in floating point (gradient_error_bound, _Certificate)
    e0, e1 = gradient_error_bound(U, loss, lam, B, R)
    ok = _Certificate(gamma, e0, e1, k=K * p, exact=False, e_lam=_lambda_error(lam),
                      margins=lambda w: margin_error(U, w, Y, loss, R, sw))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        x0 = np.zeros(K * p)
        memo = _Memo(U, Y, loss, lam, B, sw)
        f0, g0 = memo(x0)
        best = _Best(x0, f0, g0)
        # stage 1: fast path
        if not ok(best.w, best.gnorm):
            if loss.name == "logistic" and p <= _dense_hessian_max(U):
                # curvature positive on every row: a row subset estimates it well
                _subsampled_newton(best, U, Y, loss, lam, B, ok, max_iter, sw)
            else:
                _lbfgs_newton(best, memo, U, Y, loss, lam, B, ok, max_iter, sw)
        # stage 2: globally convergent damped Newton
        if not ok(best.w, best.gnorm):
            _newton(best, U, Y, loss, lam, B, ok, max_steps=_NEWTON_STEPS, fast=False, sw=sw)
        if ok(best.w, best.gnorm):
            return best.w.reshape(K, p)
        # stage 3: the proven backstop
        return _accelerated(best, U, Y, loss, lam, B, ok, L, sw).reshape(K, p)


def _lbfgs_newton(best, memo, U, Y, loss, lam, B, ok, max_iter, sw):
    """Stage 1 for the Huber hinge and high ``p``: L-BFGS to a coarse gradient, then fast
    Newton steps (:func:`_newton` with ``fast=True``)."""
    K, p = B.shape
    coarse = max(ok.gamma, _COARSE_REL * best.gnorm)
    res = optimize.minimize(
        memo, best.w, jac=True, method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": coarse / np.sqrt(K * p), "ftol": 0.0, "maxcor": 20},
    )
    if np.all(np.isfinite(res.x)):
        best.offer(res.x, *memo(res.x))
    if not ok(best.w, best.gnorm):
        # a row subset estimates a curvature that is positive on every row (logistic);
        # the Huber hinge's lives on the rows of its band: exact Hessian (band rows only)
        rows = _hessian_rows(U.shape[0], p) if loss.name == "logistic" else None
        _newton(best, U, Y, loss, lam, B, ok, max_steps=50, fast=True, sw=sw, rows=rows)
