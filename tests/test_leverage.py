"""Leverage scores, the RP leverage threshold and regularization bounds.

Oracles: shared/research/seed003_ndis.md section 4.3 (lbar table), section 10,
the hat-matrix definition recomputed with numpy in this file, and Prop. 4.
"""

import numpy as np
import pytest

from skdp.leverage import (
    _solve_safe,
    leverage_scores,
    regularization_sigma,
    regularize,
    residual_scores,
    rp_leverage_threshold,
)
from skdp.mechanisms.ndis import rp_delta

# note section 4.3: lbar(eps, delta, r)
LBAR_TABLE = {
    (0.5, 1e-5): [0.0694948, 0.0400019, 0.0170386, 0.0105261, 0.00602205, 0.00355709],
    (0.5, 1e-6): [0.0546307, 0.0330907, 0.0145635, 0.00907188, 0.00521861, 0.00309152],
    (1.0, 1e-5): [0.121366, 0.0723628, 0.0315846, 0.0196399, 0.0112857, 0.00668204],
    (1.0, 1e-6): [0.0978197, 0.0609036, 0.0273671, 0.0171456, 0.00990183, 0.00587838],
    (2.0, 1e-5): [0.204832, 0.12771, 0.0576652, 0.0361977, 0.0209356, 0.0124395],
    (2.0, 1e-6): [0.169859, 0.109593, 0.0507047, 0.0320349, 0.0186088, 0.0110828],
}
RS = [1, 10, 100, 300, 1000, 3000]


@pytest.mark.parametrize("key", list(LBAR_TABLE))
def test_lbar_table(key):
    eps, delta = key
    for r, expected in zip(RS, LBAR_TABLE[key]):
        assert rp_leverage_threshold(eps, delta, r) == pytest.approx(expected, rel=2e-5)


@pytest.mark.parametrize(
    "eps, delta, r, expected",
    [(1, 1 / 2809, 300, 0.0261370), (1, 1e-5, 100, 0.0315846), (1, 1 / 327346, 1200, 0.00965101),
     (1, 1 / 515345, 3000, 0.00608293), (1, 1 / 515345, 20000, 0.00241092)],
)
def test_lbar_oracles(eps, delta, r, expected):
    lbar = rp_leverage_threshold(eps, delta, r)
    assert lbar == pytest.approx(expected, rel=2e-5)
    assert rp_delta(eps, lbar, r) <= delta  # safe end


def test_leverage_scores_match_hat_matrix():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 4))
    H = X @ np.linalg.inv(X.T @ X) @ X.T
    np.testing.assert_allclose(leverage_scores(X), np.diag(H), atol=1e-12)
    np.testing.assert_allclose(leverage_scores(X, chunk_size=7), np.diag(H), atol=1e-10)
    sigma = 1.7
    Hs = np.einsum("ij,ji->i", X, np.linalg.inv(X.T @ X + sigma**2 * np.eye(4)) @ X.T)
    np.testing.assert_allclose(leverage_scores(X, sigma=sigma), Hs, atol=1e-12)
    np.testing.assert_allclose(leverage_scores(X, sigma=sigma, chunk_size=5), Hs, atol=1e-10)
    Xr = regularize(X, sigma)
    assert Xr.shape == (44, 4)
    np.testing.assert_allclose(Xr.T @ Xr, X.T @ X + sigma**2 * np.eye(4))


def test_rank_deficient_leverage_is_one_for_isolated_row():
    X = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 3.0]])
    np.testing.assert_allclose(leverage_scores(X)[2], 1.0)


def test_chunked_leverage_of_a_rank_deficient_matrix():
    """The chunked path (Cholesky of the Gram matrix) falls back to the projection when the
    unregularised Gram matrix is singular (it raised LAPACK's LinAlgError)."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((50, 3))
    X[:, 2] = X[:, 1]
    np.testing.assert_allclose(leverage_scores(X, chunk_size=7), leverage_scores(X), atol=1e-12)
    assert leverage_scores(X, chunk_size=7).sum() == pytest.approx(2.0)  # rank 2


def test_residual_scores_prop4():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 3))
    y = X @ [1.0, -2.0, 0.5] + rng.standard_normal(30)
    lev = leverage_scores(X)
    rho = residual_scores(X, y)
    q = leverage_scores(np.column_stack([X, y]))
    np.testing.assert_allclose(lev + rho, q, atol=1e-10)


def test_tight_bound_add_remove_and_its_failure_under_replace_one():
    lbar, l = 0.05, 2.0
    s_tight = regularization_sigma(l, lbar, bound="tight")
    s_paper = regularization_sigma(l, lbar)
    assert s_paper == pytest.approx(l / np.sqrt(lbar))
    assert s_tight < s_paper
    rng = np.random.default_rng(2)
    # add/remove: leverage of a record inside its own regularized dataset <= lbar (tight bound)
    for n in (1, 2, 5):
        D = rng.standard_normal((n, 3))
        D *= l / np.linalg.norm(D, axis=1, keepdims=True)
        assert leverage_scores(D, sigma=s_tight).max() <= lbar + 1e-12
    # D = {v}, |v| = l attains it
    v = np.array([[l, 0.0, 0.0]])
    assert leverage_scores(v, sigma=s_tight)[0] == pytest.approx(lbar)
    # replace-one: the relevant quantity v^T (D0^T D0 + s^2 I)^{-1} v with D0 = 0 is l^2/s^2 > lbar
    assert (l / s_tight) ** 2 == pytest.approx(lbar / (1 - lbar))
    assert (l / s_tight) ** 2 > lbar


def test_solve_safe_is_safe():
    x = _solve_safe(lambda t: t**3 - 0.2, 0.0, 1.0, xtol=1e-14)
    assert x**3 <= 0.2
    assert x == pytest.approx(0.2 ** (1 / 3), abs=1e-12)
    with pytest.raises(ValueError):
        _solve_safe(lambda t: t + 1.0, 0.0, 1.0)
