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


# ----------------------------------------------------------------------
# floating-point computation of the statistic (skdp._stats.computed_row_bound,
# gram_rounding_bound): exact rational arithmetic on the computed rows as the oracle
# ----------------------------------------------------------------------
def _exact_sq_norm(row):
    from fractions import Fraction

    return sum(Fraction(float(v)) ** 2 for v in row)


@pytest.mark.parametrize("kind", ["dense", "float32", "sparse"])
def test_computed_rows_stay_within_the_computed_row_bound(kind):
    from fractions import Fraction

    from skdp._stats import computed_row_bound

    rng = np.random.default_rng(1)
    n, d, R = 600, 9, 0.3
    X = rng.normal(size=(n, d))
    # rows at the bound up to a few ulps either way (the clip decision is made on a computed norm)
    X[:300] *= R / np.linalg.norm(X[:300], axis=1, keepdims=True)
    X[:300] *= 1.0 + rng.integers(-8, 9, size=(300, 1)) * 2.0**-52
    X[300:320] *= 1e200  # the overflow-safe rescaling path
    if kind == "float32":
        X = np.clip(X, -1e30, 1e30).astype(np.float32)
    elif kind == "sparse":
        X = sp.csr_matrix(X * (rng.uniform(size=X.shape) < 0.6))
    w = rng.uniform(0, 1, n)
    w[:150] = 1.0
    bound2 = Fraction(computed_row_bound(R, d)) ** 2
    worst = Fraction(0)
    for sw in (None, w):
        for _, Xpart, E in AugmentedRows(X, R, sample_weight=sw).chunks():
            A = Xpart.toarray() if sp.issparse(Xpart) else np.asarray(Xpart)
            for row in A:
                worst = max(worst, _exact_sq_norm(row))
    assert worst <= bound2
    assert worst > Fraction(R) ** 2 * (1 - Fraction(1, 10**12))  # rows do reach the bound


@pytest.mark.parametrize("kind,chunk_rows", [("dense", None), ("dense", 7), ("sparse", None),
                                             ("sparse", 5)])
def test_gram_rounding_bound_covers_the_kernel_error(kind, chunk_rows):
    """``||fl(G) - G||_F`` of the kernel, against the exact Gram of the computed rows."""
    from fractions import Fraction

    from skdp._stats import computed_row_bound, gram_rounding_bound

    rng = np.random.default_rng(2)
    n, d, R, B, c = 700, 3, 1.0, 1.0, 0.5
    X = rng.normal(size=(n, d)) * rng.uniform(0.01, 3, size=(n, 1))
    y = rng.uniform(-2, 2, size=n)
    if kind == "sparse":
        X = sp.csr_matrix(X * (rng.uniform(size=X.shape) < 0.7))
    rows = AugmentedRows(X, R, y=y, label_bound=B, intercept=c)
    G = clipped_gram(rows, None, chunk_rows=chunk_rows)
    exact = [[Fraction(0)] * rows.k for _ in range(rows.k)]
    for _, Xpart, E in rows.chunks():
        A = np.hstack([Xpart.toarray() if sp.issparse(Xpart) else np.asarray(Xpart), E])
        for z in A:
            fz = [Fraction(float(v)) for v in z]
            for i in range(rows.k):
                for j in range(rows.k):
                    exact[i][j] += fz[i] * fz[j]
    err2 = sum((Fraction(float(G[i, j])) - exact[i][j]) ** 2
               for i in range(rows.k) for j in range(rows.k))
    L = computed_row_bound(np.sqrt(R**2 + c**2 + B**2), d)
    bound = gram_rounding_bound(n, d, rows.k, L**2, sparse=kind == "sparse", chunk_rows=chunk_rows)
    assert 0 < float(err2) ** 0.5 <= bound
    # the bound grows like (m + C) n u: well below the sensitivity at these sizes
    assert bound < 1e-9


def test_kernel_accumulates_each_chunk_once():
    """The depth the bound charges: a chunk's product is formed fresh and added once.

    With chunks of m rows the total is the sum of the chunk products, each an
    ordinary dot product of m terms: equal to adding the per-chunk Gram matrices
    computed separately, in order (bit for bit).
    """
    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 4))
    G = clipped_gram(X, 2.0, intercept=0.7, chunk_rows=13)
    rows = AugmentedRows(X, 2.0, intercept=0.7)
    parts = []
    for _, Xpart, E in rows.chunks(13):
        A = np.hstack([Xpart, E])
        parts.append(clipped_gram(A, None))
    acc = np.zeros_like(G)
    for P in parts:
        acc += np.triu(P)
    acc = np.triu(acc) + np.triu(acc, 1).T
    np.testing.assert_array_equal(G, acc)


def test_estimators_calibrate_the_computed_statistic():
    """PCA's and OLS's queries carry the rounding bound: negligible at 10^4 rows, visible at 10^9."""
    from skdp import PrivateOLS
    from skdp.decomposition._pca import _gram_query
    from skdp.linear_model._ols import _ssp_sensitivity

    d, R = 50, 1.0
    for n, lo, hi in ((10**4, 0.0, 1e-7), (10**9, 1e-3, 0.2)):
        exact = _gram_query(n, d, R, R / np.sqrt(2)).l2_bound
        for sparse in (False, True):
            computed = _gram_query(n, d, R, R / np.sqrt(2), sparse=sparse).l2_bound
            assert exact * (1 + lo) < computed <= exact * (1 + hi) or (lo == 0 and computed > exact)
        (spec,) = PrivateOLS(method="ssp")._ssp_specs("ssp", n, d + 1, R, 1.0, 1.0, 1e-5)
        ex = _ssp_sensitivity(R, 1.0, R)
        assert ex < spec.query.l2_bound <= ex * (1 + hi)
        if lo:
            assert spec.query.l2_bound > ex * (1 + lo)


def test_duplicate_sparse_entries_are_summed_before_clipping():
    """scipy defines a (row, column) stored twice as the sum of the copies. A record stored as
    m copies of one entry is the row with that entry times m: it must be clipped as such, not
    entry by entry (which would leave it sqrt(m) times the bound, beyond the sensitivity). Every
    estimator sees the same release as for the canonical matrix; the canonical one is not copied."""
    from skdp.decomposition import PrivatePCA
    from skdp.linear_model import PrivateOLS
    from skdp.preprocessing import PrivateStandardScaler
    from skdp.random_projection import PrivateRandomProjection

    n, d, m = 400, 3, 1000
    rng = np.random.default_rng(7)
    base = sp.random(n - 1, d, density=0.5, format="csr", random_state=8) * 0.5
    # record 0 stored as m copies of 1.0 at column 0 (its value is m there), then the rest
    data = np.concatenate([np.ones(m), base.data])
    idx = np.concatenate([np.zeros(m, dtype=base.indices.dtype), base.indices])
    ptr = np.concatenate([[0], m + base.indptr])
    Xd = sp.csr_matrix((data, idx, ptr), shape=(n, d))
    Xc = Xd.copy()
    Xc.sum_duplicates()
    assert Xc[0, 0] == m and Xd.nnz == Xc.nnz + m - 1
    assert AugmentedRows(Xc).X is Xc  # canonical input: used as it is
    y = np.clip(rng.normal(size=n), -1, 1)
    kw = dict(epsilon=1.0, delta=1e-5, random_state=0)
    G = clipped_gram(Xd, 1.0)
    np.testing.assert_allclose(G, clipped_gram(Xc, 1.0), rtol=1e-12)
    assert G[0, 0] <= clipped_gram(Xc[1:], 1.0)[0, 0] + 1.0 + 1e-9  # record 0 clipped to norm 1
    assert max_row_norm(Xd) == pytest.approx(m)
    fits = [
        (lambda: PrivatePCA(data_norm=1.0, **kw), ("explained_variance_", "mean_")),
        (lambda: PrivateOLS(data_norm=1.0, label_bound=1.0, method="ssp", **kw), ("coef_",)),
        (lambda: PrivateRandomProjection(n_components=2, data_norm=1.0, **kw), ("sketch_",)),
        (lambda: PrivateStandardScaler(bounds=(-1.0, 1.0), with_mean=False, **kw), ("var_",)),
    ]
    for make, attrs in fits:
        a, b = make().fit(Xd, y), make().fit(Xc, y)
        for attr in attrs:
            np.testing.assert_allclose(getattr(a, attr), getattr(b, attr), rtol=1e-9, atol=1e-12,
                                       err_msg=f"{type(a).__name__}.{attr}")


def test_a_stale_canonical_flag_does_not_hide_duplicates():
    """Review 24, F2: ``has_canonical_format`` was trusted, and scipy caches it: after an
    in-place edit of ``indices`` (or a flag set by hand) a row storing an entry four times
    was normed entry by entry but summed in the Gram matrix (4x the clipping bound)."""
    import scipy.sparse as sparse

    from skdp._stats import clipped_gram, has_duplicate_entries

    X = sparse.csr_matrix((np.array([0.9, 0.9, 0.9, 0.9, 0.5]), np.array([0, 0, 0, 0, 1]),
                           np.array([0, 4, 5])), shape=(2, 2))
    X.has_canonical_format = True  # a wrong flag
    assert has_duplicate_entries(X)
    np.testing.assert_allclose(clipped_gram(X, 1.0)[0, 0], 1.0 + 0.0, rtol=1e-12)
    Y = sparse.csr_matrix((np.array([0.9, 0.9, 0.5]), np.array([0, 1, 1]), np.array([0, 2, 3])),
                          shape=(2, 2))
    assert Y.has_canonical_format
    Y.indices[1] = 0  # row 0 now stores column 0 twice; the cached flag stays True
    assert has_duplicate_entries(Y)
    assert clipped_gram(Y, 1.0)[0, 0] <= 1.0 + 1e-12
