"""Tests of the chunked statistics kernel skdp._stats against a naive numpy computation."""

import tracemalloc

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from skdp._stats import AugmentedRows, clipped_gram, max_row_norm


def _naive(X, R, y=None, B=None, c=None, w=None):
    """Independent reference: dense float64 copy, clip, hstack, weight, one product."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    norms = np.sqrt((X * X).sum(axis=1))
    Xc = X * np.where(norms > R, R / np.where(norms > 0, norms, 1.0), 1.0)[:, None]
    cols = [Xc]
    if c is not None:
        cols.append(np.full((len(X), 1), c))
    if y is not None:
        cols.append(np.clip(np.asarray(y, dtype=np.float64), -B, B)[:, None])
    Z = np.hstack(cols)
    if w is not None:
        Z = Z * np.sqrt(w)[:, None]
    return Z.T @ Z


def _data(n=1013, d=7, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.linspace(2.0, 0.1, d)
    X[::5] *= 0.1  # some rows inside the bound, some clipped
    y = 3 * rng.normal(size=n)
    w = rng.uniform(size=n)
    w[::11] = 0.0
    return X, y, w


def _sparse(n=1013, d=40, seed=1):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.05, format="csr", random_state=seed) * 5.0
    X.data -= 2.5
    X = X.tocsr()
    return X, 3 * rng.normal(size=n), rng.uniform(size=n)


KINDS = ["f64", "f32", "memmap", "csr", "csc", "pandas", "fortran"]


def _as_kind(X, kind, tmp_path):
    if kind == "f64":
        return X
    if kind == "fortran":
        return np.asfortranarray(X)
    if kind == "f32":
        return X.astype(np.float32)
    if kind == "memmap":
        mm = np.memmap(tmp_path / "x.dat", dtype=np.float32, mode="w+", shape=X.shape)
        mm[:] = X
        mm.flush()
        return np.memmap(tmp_path / "x.dat", dtype=np.float32, mode="r", shape=X.shape)
    if kind == "csr":
        return sp.csr_matrix(X)
    if kind == "csc":
        return sp.csc_matrix(X)
    if kind == "pandas":
        return pd.DataFrame(X)
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("extras", ["none", "intercept", "y", "all", "weights_only"])
@pytest.mark.parametrize("chunk_rows", [None, 1, 97])
def test_matches_naive(kind, extras, chunk_rows, tmp_path):
    if chunk_rows == 1 and kind not in ("f64", "csr"):
        pytest.skip("row-by-row chunks: checked on two kinds only (slow)")
    X, y, w = _data()
    if kind in ("csr", "csc"):
        X, y, w = _sparse()
    Xk = _as_kind(X, kind, tmp_path)
    Xref = X.astype(np.float32) if kind in ("f32", "memmap") else X  # the values the kernel sees
    kw = dict(
        none={},
        intercept=dict(intercept=0.7),
        y=dict(y=y, label_bound=2.0),
        all=dict(y=y, label_bound=2.0, intercept=0.7, sample_weight=w),
        weights_only=dict(sample_weight=w),
    )[extras]
    R = 1.5
    G = clipped_gram(Xk, R, chunk_rows=chunk_rows, **kw)
    ref = _naive(Xref, R, y=kw.get("y"), B=kw.get("label_bound"), c=kw.get("intercept"),
                 w=kw.get("sample_weight"))
    assert G.dtype == np.float64
    assert G.shape == ref.shape
    np.testing.assert_allclose(G, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    assert np.array_equal(G, G.T)


def test_blocks_add_up_to_the_whole():
    X, y, w = _data()
    whole = clipped_gram(X, 1.0, y=y, label_bound=1.0, intercept=0.5, sample_weight=w)
    parts = sum(clipped_gram(X[s:s + 300], 1.0, y=y[s:s + 300], label_bound=1.0, intercept=0.5,
                             sample_weight=w[s:s + 300]) for s in range(0, len(X), 300))
    np.testing.assert_allclose(whole, parts, rtol=1e-12, atol=1e-12)


def test_no_clipping_and_empty():
    X, _, _ = _data(n=50)
    np.testing.assert_allclose(clipped_gram(X, None), X.T @ X, rtol=1e-13)
    assert np.array_equal(clipped_gram(np.zeros((0, 3)), 1.0), np.zeros((3, 3)))


def test_clipped_rows_have_norm_at_most_the_bound():
    X, _, _ = _data()
    rows = AugmentedRows(X * 1e3, 1.0)
    for _, Xpart, _ in rows.chunks(100):
        assert np.all(np.linalg.norm(Xpart, axis=1) <= 1.0 * (1 + 1e-15))


def test_overflowing_rows_are_clipped_finitely():
    X = np.array([[1e200, 1e200], [3.0, 4.0]])
    G = clipped_gram(X, 1.0)
    ref = np.array([[0.5 + 0.36, 0.5 + 0.48], [0.5 + 0.48, 0.5 + 0.64]])
    np.testing.assert_allclose(G, ref, rtol=1e-14)
    Xs = sp.csr_matrix(X)
    np.testing.assert_allclose(clipped_gram(Xs, 1.0), ref, rtol=1e-14)


@pytest.mark.parametrize("kind", ["f64", "f32", "csr"])
def test_max_row_norm(kind, tmp_path):
    X, _, _ = _data() if kind != "csr" else _sparse()
    Xk = _as_kind(X, kind, tmp_path)
    Xref = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    if kind == "f32":
        Xref = X.astype(np.float32).astype(np.float64)
    assert max_row_norm(Xk, chunk_rows=77) == pytest.approx(np.linalg.norm(Xref, axis=1).max(),
                                                            rel=1e-14)


def _peak_extra(f, X):
    tracemalloc.start()
    tracemalloc.reset_peak()
    f(X)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / X.nbytes


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_no_copy_of_X(dtype):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200_000, 50)).astype(dtype)
    y = rng.normal(size=200_000)
    w = rng.uniform(size=200_000)
    ratio = _peak_extra(lambda A: clipped_gram(A, 1.0), X)
    assert ratio < 0.1
    # y and weights are n-vectors: sqrt(w) adds n floats (1/d of a float64 X)
    ratio = _peak_extra(lambda A: clipped_gram(A, 1.0, y=y, label_bound=1.0, intercept=1.0,
                                               sample_weight=w), X)
    assert ratio < 0.1 + 8.0 / (50 * X.itemsize)


def test_sparse_memory_proportional_to_nnz():
    X = sp.random(200_000, 1000, density=0.001, format="csr", random_state=0)
    nbytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    tracemalloc.start()
    clipped_gram(X, 1.0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    dense_result = 1000 * 1000 * 8
    assert peak < 0.5 * nbytes + 3 * dense_result
    assert peak < 0.02 * X.shape[0] * X.shape[1] * 8  # far below a dense copy


@pytest.mark.parametrize("R", [100.0, 1.0])
def test_chunks_read_in_place_and_copied_mix(R):
    """Chunks without a row to clip are read in place; mixed with clipped chunks the sum is exact."""
    X, y, _ = _data(n=2000, d=5)
    X[:1000] *= 1e-3  # the first chunks need no clipping at R = 1
    for kw in ({}, dict(intercept=0.3), dict(y=y, label_bound=1.0, intercept=0.3)):
        G = clipped_gram(X, R, chunk_rows=128, **kw)
        ref = _naive(X, R, y=kw.get("y"), B=kw.get("label_bound"), c=kw.get("intercept"))
        np.testing.assert_allclose(G, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
        assert np.array_equal(G, G.T)
    rows = AugmentedRows(X, R)
    used = [rows.buffer_used for _ in rows.chunks(128, allow_view=True)]
    assert not used[0]  # read in place
    if R == 1.0:
        assert used[-1]  # clipped rows: copied and scaled
