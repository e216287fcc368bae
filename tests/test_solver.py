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
    cap = accelerated_iteration_cap(L / lam, best.gnorm, gamma)
    calls = {"n": 0}
    import skdp.linear_model._solver as solver

    real = solver._obj_grad

    def counting(*args):
        calls["n"] += 1
        return real(*args)

    solver._obj_grad = counting
    try:
        W = _accelerated(best, U, Y, loss, lam, B, gamma, L)
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
    _newton(best, U, Y, loss, lam, B, gamma, max_steps=200, fast=False)
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
    _subsampled_newton(best, U, Y, loss, lam, B, gamma, 1000)
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
