"""The ERM solver always returns a point within the public tolerance (skdp.linear_model._solver).

The gradient is recomputed here from the losses' derivatives written out
again (not the module's ``_obj_grad``), and the iteration cap of the
accelerated backstop is checked against a direct search for the smallest
step count that the rate of Nesterov (2004, Thm 2.2.3) certifies.
"""

import math

import numpy as np
import pytest
from scipy.special import expit

from skdp.linear_model._erm import HuberLoss, LogisticLoss
from skdp.linear_model._solver import (
    _accelerated,
    _Best,
    _Certificate,
    _newton,
    _obj_grad,
    _subsampled_newton,
    accelerated_iteration_cap,
    minimize,
)


def _loss_d1(loss, z):
    if isinstance(loss, LogisticLoss):
        return -expit(-z)
    h, m = loss.h, 1.0 - z
    return np.where(m > h, -1.0, np.where(m < -h, 0.0, -(m / (2 * h) + 0.5)))


def _grad(W, U, Y, loss, lam, B):
    """grad of (1/n) sum_ik loss(y_ik <w_k, u_i>) + lam/2 ||W||^2 + <B, W>, written out."""
    n = U.shape[0]
    G = np.zeros_like(W)
    for k in range(W.shape[0]):
        z = Y[:, k] * (U @ W[k])
        G[k] = (U * (_loss_d1(loss, z) * Y[:, k])[:, None]).sum(axis=0) / n
    return G + lam * W + B


def _problem(n, d, K, seed, intercept=True):
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(n, d))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    if intercept:
        U = np.hstack([U, np.ones((n, 1))])
    labels = rng.integers(0, K if K > 1 else 2, size=n)
    if K == 1:
        Y = np.where(labels == 1, 1.0, -1.0)[:, None]
    else:
        Y = np.where(labels[:, None] == np.arange(K)[None, :], 1.0, -1.0)
    return U, Y, float(np.sqrt(2.0) if intercept else 1.0)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.1), HuberLoss(1e-3)],
                         ids=["logistic", "huber0.1", "huber1e-3"])
@pytest.mark.parametrize("K", [1, 3])
@pytest.mark.parametrize("b_scale", [0.0, 1.0, 100.0])
def test_minimize_meets_the_public_tolerance(loss, K, b_scale):
    n = 400
    U, Y, R = _problem(n, 3, K, seed=K + int(b_scale))
    lam = 1.0 / (n * 50.0)
    gamma = 1e-6 * R / n
    B = b_scale * np.random.default_rng(7).normal(size=(K, U.shape[1])) / n
    W = minimize(U, Y, loss, lam, B, gamma, 1000, R)
    assert W.shape == (K, U.shape[1])
    assert np.linalg.norm(_grad(W, U, Y, loss, lam, B)) <= gamma * (1 + 1e-6)


def test_hard_huber_case_of_the_review():
    # h = 1e-3, C = 100, 2000 unit rows: the committed solver raised on this data set
    rng = np.random.default_rng(2)
    X = rng.normal(size=(2000, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    r = np.random.default_rng(1)
    y = X @ r.normal(size=2) + 0.3 * r.normal(size=2000) > 0
    U = np.hstack([X, np.ones((2000, 1))])
    Y = np.where(y, 1.0, -1.0)[:, None]
    n, R, loss = 2000, math.sqrt(2.0), HuberLoss(1e-3)
    lam, gamma = 1.0 / (n * 100.0), 1e-6 * math.sqrt(2.0) / n
    for B in (np.zeros((1, 3)), np.random.default_rng(3).normal(size=(1, 3)) * 1e-3):
        W = minimize(U, Y, loss, lam, B, gamma, 1000, R)
        assert np.linalg.norm(_grad(W, U, Y, loss, lam, B)) <= gamma * (1 + 1e-6)


def _cap_by_search(kappa, g0, gamma):
    """Smallest T with 2 kappa g0^2 (1 - 1/sqrt(kappa))^T <= gamma^2 (log space, by counting)."""
    if g0 <= gamma:
        return 0
    target = 2 * math.log(gamma) - math.log(2 * kappa) - 2 * math.log(g0)
    step = math.log(1 - 1 / math.sqrt(kappa))
    lo = 0
    hi = 1
    while hi * step > target:
        hi *= 2
    while lo < hi:  # smallest T with T * step <= target
        mid = (lo + hi) // 2
        if mid * step <= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


@pytest.mark.parametrize("kappa, g0, gamma", [
    (4.0, 1.0, 1e-3), (1e4, 0.3, 1e-9), (2e8, 1e-3, 7e-10), (10.0, 1e-12, 1e-9), (1.5, 5.0, 1e-6),
])
def test_iteration_cap_matches_the_rate(kappa, g0, gamma):
    T = accelerated_iteration_cap(kappa, g0, gamma)
    assert abs(T - _cap_by_search(kappa, g0, gamma)) <= 1  # ceil of the same real number


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.05)], ids=["logistic", "huber"])
def test_accelerated_backstop_alone_reaches_gamma_within_its_cap(loss):
    n = 200
    U, Y, R = _problem(n, 2, 1, seed=5)
    lam = 1.0 / (n * 1.0)
    gamma = 1e-6 * R / n
    B = np.zeros((1, U.shape[1]))
    x0 = np.zeros(U.shape[1])
    best = _Best(x0, *_obj_grad(x0, U, Y, loss, lam, B))
    L = loss.curvature * R**2 + lam
    # the backstop aims at gamma / 2: room for the certificate's floating-point allowance
    cap = accelerated_iteration_cap(L / lam, best.gnorm, gamma / 2)
    calls = {"n": 0}
    import skdp.linear_model._solver as solver

    real = solver._obj_grad

    def counting(*args):
        calls["n"] += 1
        return real(*args)

    solver._obj_grad = counting
    try:
        W = _accelerated(best, U, Y, loss, lam, B, _Certificate(gamma), L)
    finally:
        solver._obj_grad = real
    assert np.linalg.norm(_grad(W.reshape(1, -1), U, Y, loss, lam, B)) <= gamma * (1 + 1e-6)
    assert calls["n"] <= cap


def test_damped_newton_stage_alone_converges_from_zero():
    n = 300
    U, Y, R = _problem(n, 3, 3, seed=11)
    loss, lam = HuberLoss(0.01), 1.0 / (n * 100.0)
    gamma = 1e-6 * R / n
    B = np.zeros((3, U.shape[1]))
    x0 = np.zeros(B.size)
    best = _Best(x0, *_obj_grad(x0, U, Y, loss, lam, B))
    _newton(best, U, Y, loss, lam, B, _Certificate(gamma), max_steps=200, fast=False)
    assert best.gnorm <= gamma
    assert np.linalg.norm(_grad(best.w.reshape(B.shape), U, Y, loss, lam, B)) <= gamma * (1 + 1e-6)


def test_non_finite_fast_path_falls_back(monkeypatch):
    # the L-BFGS fast path (Huber hinge) returning garbage: stages 2-3 still meet gamma
    import skdp.linear_model._solver as solver

    class Broken:
        x = np.full(3, np.nan)

    monkeypatch.setattr(solver.optimize, "minimize", lambda *a, **k: Broken())
    U, Y, R = _problem(100, 2, 1, seed=1)
    loss, lam = HuberLoss(0.1), 1.0 / (100 * 1.0)
    gamma = 1e-6 * R / 100
    W = minimize(U, Y, loss, lam, np.zeros((1, 3)), gamma, 1000, R)
    assert np.all(np.isfinite(W))
    assert np.linalg.norm(_grad(W, U, Y, loss, lam, np.zeros((1, 3)))) <= gamma * (1 + 1e-6)


def _large_logistic(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = X @ np.array([2.0, -1.0, 0.5]) + 0.5 * rng.normal(size=n) > 0
    U = np.hstack([X, np.ones((n, 1))])
    return U, np.where(y, 1.0, -1.0)[:, None], math.sqrt(2.0)


def test_subset_preconditioned_stage_alone_meets_gamma(monkeypatch):
    # n = 50 000 > 2 * 20 000: the logistic fast path's Hessians use a strided row subset
    import skdp.linear_model._solver as solver

    n = 50_000
    U, Y, R = _large_logistic(n, seed=4)
    loss, lam = LogisticLoss(), 1e-4
    gamma = 1e-6 * R / n
    B = np.random.default_rng(5).normal(size=(1, 4)) * 1e-3
    seen = []
    real = solver._hessian_factors

    def spy(*args, **kwargs):  # rows whose curvature enters each Hessian
        rows = args[-1] if len(args) > 7 else kwargs.get("rows")
        m = args[1].shape[0]
        seen.append(m if rows is None else len(range(m)[rows]))
        return real(*args, **kwargs)

    monkeypatch.setattr(solver, "_hessian_factors", spy)
    x0 = np.zeros(4)
    best = _Best(x0, *_obj_grad(x0, U, Y, loss, lam, B))
    _subsampled_newton(best, U, Y, loss, lam, B, _Certificate(gamma), 1000)
    # every 2nd row (n // 20 000 = 2): 25 000 rows, also in the warm start on the subset alone
    assert seen and all(m == 25_000 for m in seen)
    assert best.gnorm <= gamma
    assert np.linalg.norm(_grad(best.w.reshape(1, 4), U, Y, loss, lam, B)) <= gamma * (1 + 1e-6)


def test_broken_subset_curvature_falls_back(monkeypatch):
    # the subset Hessians giving NaN directions: stage 1 gives up, stages 2-3 meet gamma
    import skdp.linear_model._solver as solver

    n = 50_000
    U, Y, R = _large_logistic(n, seed=6)
    loss, lam = LogisticLoss(), 1e-4
    gamma = 1e-6 * R / n
    real = solver._hessian_factors

    def broken(*args, **kwargs):
        rows = args[-1] if len(args) > 7 else kwargs.get("rows")
        if rows is not None:
            return [(np.full((4, 4), np.nan), False)]
        return real(*args, **kwargs)

    monkeypatch.setattr(solver, "_hessian_factors", broken)
    B = np.zeros((1, 4))
    W = minimize(U, Y, loss, lam, B, gamma, 1000, R)
    assert np.all(np.isfinite(W))
    assert np.linalg.norm(_grad(W, U, Y, loss, lam, B)) <= gamma * (1 + 1e-6)


# ----------------------------------------------------------------------
# the certificate in floating point: gradient_error_bound against exact arithmetic
# ----------------------------------------------------------------------
def _exact_grad(W, op, Y, loss, lam, B, sw):
    """grad F at W in 60-digit decimal arithmetic from the float inputs (each exact as a
    Decimal): the rows u_i = [a_i x_i, s] of the operator, its clip factors a_i as stored."""
    from decimal import Decimal, localcontext

    X = op.X.toarray() if op.sparse else np.asarray(op.X, dtype=np.float64)
    n, d = X.shape
    with localcontext() as ctx:
        ctx.prec = 60
        D = Decimal
        a = [D(1) if op.a is None else D(float(v)) for v in (op.a if op.a is not None else range(n))]
        rows = []
        for i in range(n):
            r = [a[i] * D(float(v)) for v in X[i]]
            if op.s is not None:
                r.append(D(op.s))
            rows.append(r)
        out = np.zeros_like(W)
        for k in range(W.shape[0]):
            w = [D(float(v)) for v in W[k]]
            acc = [D(0)] * len(w)
            for i in range(n):
                yk = D(float(Y[i, k]))
                z = yk * sum(u * v for u, v in zip(rows[i], w))
                if isinstance(loss, LogisticLoss):
                    der = -1 / (1 + z.exp())
                else:
                    h, m = D(loss.h), 1 - z
                    der = D(-1) if m > h else (D(0) if m < -h else -(m / (2 * h) + D("0.5")))
                c = der * yk * (D(1) if sw is None else D(float(sw[i])))
                acc = [s_ + c * u for s_, u in zip(acc, rows[i])]
            lam_d, B_k = D(float(lam)), [D(float(v)) for v in B[k]]
            g = [s_ / n + lam_d * v + b for s_, v, b in zip(acc, w, B_k)]
            out[k] = [float(v) for v in g]  # rounding here is far below the errors compared
        return out


@pytest.mark.parametrize("kind", ["dense", "float32", "csr", "csc"])
@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.05)], ids=["logistic", "huber"])
def test_gradient_error_bound_holds_against_exact_arithmetic(kind, loss):
    import scipy.sparse as sparse

    from skdp.linear_model._rows import RowOperator
    from skdp.linear_model._solver import gradient_error_bound, margin_error

    rng = np.random.default_rng(3)
    n, d, K, B_norm = 300, 5, 2, 1.0
    X = rng.normal(size=(n, d)) * rng.uniform(0.2, 3.0, size=(n, 1))
    X[rng.random((n, d)) < 0.3] = 0.0
    if kind == "float32":
        X = X.astype(np.float32)
    elif kind in ("csr", "csc"):
        X = getattr(sparse, f"{kind}_matrix")(X)
    from skdp.linear_model._rows import row_norms_any

    norms = row_norms_any(X)
    clip = np.minimum(1.0, B_norm / np.maximum(norms, np.finfo(float).tiny))
    s = 0.5
    op = RowOperator(X, clip, s)
    R = float(np.hypot(B_norm, s))
    labels = rng.integers(0, K, size=n)
    Y = np.where(labels[:, None] == np.arange(K)[None, :], 1.0, -1.0)
    sw = rng.uniform(0.0, 1.0, size=n)
    lam = 1e-3
    B = rng.normal(size=(K, d + 1)) * 1e-2
    worst = 0.0
    for scale in (0.3, 30.0, 3000.0):  # margins small, mixed, huge (the ||W|| term)
        W = rng.normal(size=(K, d + 1)) * scale
        _, G = _obj_grad(W.ravel(), op, Y, loss, lam, B, sw)
        err = np.linalg.norm(G.reshape(K, -1) - _exact_grad(W, op, Y, loss, lam, B, sw))
        e0, e1 = gradient_error_bound(op, loss, lam, B, R)
        bound = e0 + e1 * np.linalg.norm(W)
        assert err <= bound
        worst = max(worst, err / bound)
        # the bound read from the rows at W (what the solver uses when the worst case is
        # too coarse) holds as well, and is never above the worst case
        e_lam = 4 * 2.0**-53 * lam
        m = margin_error(op, W, Y, loss, R, sw)
        assert m <= (e1 - e_lam) * np.linalg.norm(W) * (1 + 1e-12)
        assert err <= e0 + e_lam * np.linalg.norm(W) + m
    # the floating-point error is real (the exact-arithmetic test would be wrong) and the
    # bound is not vacuous: below 1e-9 of the gradient scale R on this problem
    assert worst > 0.0
    assert gradient_error_bound(op, loss, lam, B, R)[0] < 1e-9 * R


def test_sum_depth_matches_the_chunks_the_products_use():
    import scipy.sparse as sparse

    from skdp._stats import chunked_sum_depth
    from skdp.linear_model._rows import _FUSED_BYTES, _SPARSE_ROWS, RowOperator, _chunks
    from skdp.linear_model._solver import float_floor, gradient_error_bound

    n, d = 200_000, 7
    X = np.zeros((n, d))
    starts = [i for i, _ in _chunks(n, d, _FUSED_BYTES)]
    m = starts[1] - starts[0]
    assert RowOperator(X).sum_depth() == chunked_sum_depth(n, m, m) == m + len(starts)
    Xs = sparse.csr_matrix((n, d))
    assert RowOperator(Xs).sum_depth() == _SPARSE_ROWS + -(-n // _SPARSE_ROWS)
    assert RowOperator(Xs.tocsc()).X.format == "csr"  # CSC read as CSR: the same depth
    # the public floor of the estimators is the operator's e0 without noise
    for Xk, sp_ in ((X, False), (Xs, True)):
        op = RowOperator(Xk, np.ones(n), 0.5)
        e0, _ = gradient_error_bound(op, LogisticLoss(), 1e-3, np.zeros((3, d + 1)), 1.2)
        assert e0 == float_floor(n, d, 3, 1.2, sp_)


def test_the_certificate_adds_the_allowance():
    c = _Certificate(1e-9, e0=2e-10, e1=1e-12, k=10, exact=False)
    w = np.full(4, 100.0)  # ||w|| = 200: e1 ||w|| = 2e-10
    assert c(w, 5.9e-10)
    assert not c(w, 6.1e-10)  # 6.1e-10 + 4e-10 > 1e-9 although 6.1e-10 <= gamma
    assert _Certificate(1e-9)(w, 1e-9)  # exact arithmetic: the plain test
