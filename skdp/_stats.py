"""One chunked kernel for the clipped, augmented second-moment statistics.

PrivatePCA, PrivateOLS (every method) and PrivateRandomProjection release
functions of one statistic, the (unnormalised) Gram matrix

    G = sum_i z_i z_i^T,   z_i = sqrt(w_i) [clip_R(x_i), c, clip_B(y_i)],

where ``clip_R`` scales a row down to Euclidean norm ``R`` (rows inside the
bound are untouched), ``c`` is an optional public constant column (the
intercept or PCA's mean weight), ``clip_B`` clips a label into ``[-B, B]`` and
``w_i in [0, 1]`` is an optional per-record weight. This module computes it
in one pass over row chunks: every chunk is clipped and augmented in one
reused float64 buffer (float32 input is upcast one chunk at a time, never as
a whole) and accumulated with one symmetric rank-k update (BLAS ``dsyrk``).
Memory beyond the input is one chunk plus ``O(k^2)``. ``scipy.sparse``
input (CSR; CSC is converted to CSR, memory proportional to ``nnz``) is
clipped by scaling the stored values of each row and multiplied sparsely, so
``X`` is never densified; only the ``k x k`` result is dense.

The per-chunk statistic is additive: the sum of :func:`clipped_gram` over a
partition of the rows is the statistic of the whole (this is what a
distributed caller uses per block).
"""

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas

from ._dask import is_dask_collection

__all__ = ["AugmentedRows", "clipped_gram", "max_row_norm", "default_chunk_rows", "check_unit_sample_weight",
           "computed_row_bound", "gram_rounding_bound", "rounding_gamma", "chunked_sum_depth",
           "has_duplicate_entries", "canonical_sparse", "check_weight_structure"]

#: matrix entries of the float64 chunk buffer held at once (2 MiB: the chunk stays in cache;
#: measured fastest of 2^17..2^20 for d = 100 with one BLAS thread)
CHUNK_ELEMENTS = 2**18

#: stored values of a sparse chunk (its scaled copy is proportional to them)
SPARSE_CHUNK_NNZ = 2**20

#: most rows of a sparse chunk by default (public: the rounding bound depends on it)
SPARSE_MAX_ROWS = 2**16

#: stored values per block when a sparse matrix is searched for duplicate entries
_DUPLICATE_BLOCK = 1 << 18

#: unit roundoff of float64
UNIT_ROUNDOFF = 2.0**-53

#: smallest normal float64: a clip factor below it (a row beyond about ``4.5e307`` times the
#: bound) would be subnormal, with a relative error above ``u`` that :func:`computed_row_bound`
#: does not allow for; it is set to 0 instead, so that row enters as the zero row. A fixed rule
#: applied to each record alone (the zero row is within the bound and depends on nothing else).
NORMAL_MIN = float(np.finfo(np.float64).tiny)

#: additions after the chunk sums (merging the in-place and copied parts, symmetrising,
#: the dask tree over blocks: depth log2(blocks) <= 63): an upper bound
_MERGE_DEPTH = 72


def rounding_gamma(j):
    """``gamma_j = j u / (1 - j u)`` (Higham 2002, Lemma 3.1); ``inf`` when ``j u >= 1/2``."""
    ju = int(j) * UNIT_ROUNDOFF
    return float("inf") if ju >= 0.5 else ju / (1.0 - ju)


def chunked_sum_depth(n, m_max, m_min):
    """Additions a term meets in a sum of ``n`` terms formed chunk by chunk: at most ``m_max``
    inside its chunk (any order) plus one per chunk, ``ceil(n / m_min)`` chunks."""
    return int(m_max) + -(-max(int(n), 1) // int(m_min))


def computed_row_bound(bound, d):
    """A bound on the norm of a row as the kernel computes it, for the exact bound ``bound``.

    Clipping is computed: the norm ``nu`` (a sum of ``d`` non-negative
    squares, any order: relative error at most ``gamma_d``, then a square
    root), the factor ``fl(R / nu)``, one product per entry, and with weights
    one more product by the computed ``sqrt(w) <= 1 + u``. A clipped row then
    has norm at most ``R (1 + u)^4 / ((1 - u) sqrt(1 - gamma_d))``, a row left
    as it is (``nu <= R``) at most ``R / ((1 - u) sqrt(1 - gamma_d))``; the
    overflow-safe rescaling of a huge row adds three roundings. All of these
    are below ``R (1 + gamma_{d+10})``, the value returned. The same factor
    covers the constant and label columns (at most two roundings each).
    The computed rows depend on their own record only, so the sensitivity
    analyses hold for them with this bound.
    """
    return float(bound) * (1.0 + rounding_gamma(int(d) + 10))


def _chunk_row_limits(n, d, k, sparse, chunk_rows):
    """``(m_max, m_min)``: most and fewest rows of a (non-final) chunk, from public inputs."""
    n = max(int(n), 1)
    if sparse:
        if chunk_rows is not None:
            m = min(max(1, int(chunk_rows)), n)
            return m, m
        lo = max(1, SPARSE_CHUNK_NNZ // max(int(d), 1))  # nnz <= n d
        return min(max(SPARSE_MAX_ROWS, lo), n), min(lo, n)
    m = default_chunk_rows(k) if chunk_rows is None else max(1, min(int(chunk_rows),
                                                                    default_chunk_rows(k)))
    m = min(m, n)
    return m, m


def gram_rounding_bound(n, d, k, row_bound2, *, sparse=False, chunk_rows=None):
    """Frobenius bound on ``fl(G) - G`` for the Gram matrix :func:`clipped_gram` computes.

    ``G = sum_i z_i z_i^T`` of the computed rows, ``||z_i||^2 <= row_bound2``
    (:func:`computed_row_bound`), ``n`` rows, ``d`` features, ``k`` columns.
    Entry ``(j, l)`` is a sum of ``n`` products evaluated in a tree in which
    every term meets at most ``h = m + C + _MERGE_DEPTH`` additions (``m``
    rows per chunk, summed by the BLAS in any order; ``C`` chunk sums added
    one after the other: :class:`_ChunkSum`, the sparse path, and the dask
    tree), so ``|fl(G)_jl - G_jl| <= gamma_{h+1} sum_i |z_ij| |z_il|`` (Higham
    2002, eq. (3.5) and Lemma 3.1: any order, fused multiply-adds included).
    Summing the squares over the entries, ``||fl(G) - G||_F <= gamma_{h+1}
    || sum_i |z_i| |z_i|^T ||_F <= gamma_{h+1} sum_i ||z_i||^2 <= gamma_{h+1}
    n row_bound2``. ``m`` and ``C`` come from the kernel's public chunk rule
    (:func:`_chunk_row_limits`; a sparse chunk's rows depend on ``nnz``, so the
    bound takes the most and the fewest rows that rule can give). The
    returned bound is a function of public inputs only; two neighbouring data
    sets' computed statistics differ by at most the exact sensitivity (at the
    computed row bound) plus twice this.

    References
    ----------
    N. J. Higham. Accuracy and Stability of Numerical Algorithms, 2nd ed.
    SIAM, 2002.
    """
    n = max(int(n), 1)
    m_max, m_min = _chunk_row_limits(n, d, k, sparse, chunk_rows)
    h = chunked_sum_depth(n, m_max, m_min) + _MERGE_DEPTH
    return rounding_gamma(h + 1) * n * float(row_bound2)


def default_chunk_rows(k):
    """Rows per chunk so that a chunk of ``k`` float64 columns holds ``CHUNK_ELEMENTS`` entries."""
    return max(1, CHUNK_ELEMENTS // max(int(k), 1))


def _safe_norms(sq, peak_of_bad):
    """``sqrt(sq)``; rows whose squared norm overflowed are recomputed by ``peak_of_bad(mask)``.

    A norm beyond the float64 range is ``inf`` (its clip factor is then 0), silently: no
    floating-point warning may depend on a record's values.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.sqrt(sq)
        bad = ~np.isfinite(norms)
        if np.any(bad):
            norms[bad] = peak_of_bad(bad)
    return norms


def _dense_norms(B):
    """Row norms of a float 2-D array, accumulated in float64 (no copy; overflow-safe)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if B.dtype == np.float64:
            sq = np.einsum("ij,ij->i", B, B)
        else:  # float32: squares exact in float64, summed in float64
            sq = np.einsum("ij,ij->i", B, B, dtype=np.float64)

    def rescue(bad):
        rows = np.asarray(B[bad], dtype=np.float64)
        peak = np.max(np.abs(rows), axis=1)
        safe = np.where(peak > 0, peak, 1.0)
        return peak * np.linalg.norm(rows / safe[:, None], axis=1)

    return _safe_norms(sq, rescue)


def _sparse_norms(data, indptr, m):
    """Row norms of a CSR chunk given its (float64) ``data`` and ``indptr``."""
    counts = np.diff(indptr)
    rows = np.repeat(np.arange(m), counts)
    with np.errstate(over="ignore", invalid="ignore"):
        sq = np.bincount(rows, weights=data * data, minlength=m).astype(np.float64, copy=False)

    def rescue(bad):
        out = np.empty(int(bad.sum()))
        for j, i in enumerate(np.flatnonzero(bad)):
            v = data[indptr[i]:indptr[i + 1]]
            peak = np.max(np.abs(v))
            out[j] = peak * np.linalg.norm(v / peak)
        return out

    return _safe_norms(sq, rescue)


def has_duplicate_entries(X):
    """Whether a CSR/CSC matrix stores some (row, column) twice, checked without copying it.

    Unsorted indices alone (e.g. the output of a sparse product) are harmless for
    every product and row norm here; duplicates are not (a row norm must see their
    sum: scipy defines duplicates as summed, and a row clipped entry by entry or
    normed from its stored values would keep ``sqrt(m)`` times the bound for
    ``m`` copies of one entry). Rows are checked block by block (about
    ``_DUPLICATE_BLOCK`` stored values at a time): a block whose indices increase
    strictly along each row has none (one comparison per value); the others are
    sorted. scipy's cached ``has_canonical_format`` flag is not trusted: it goes
    stale when ``indices`` is edited in place and anyone can set it, and with it
    one row storing an entry four times had added four times the clipping bound to
    the released statistic (review 24).
    """
    ptr, idx = X.indptr, X.indices
    nnz = int(ptr[-1])
    if nnz == 0:
        return False
    width = int(X.shape[1] if X.format == "csr" else X.shape[0])
    starts = np.searchsorted(ptr, np.arange(0, nnz, _DUPLICATE_BLOCK), "right") - 1
    bounds = np.unique(np.concatenate([starts, [len(ptr) - 1]]))
    for i, j in zip(bounds[:-1], bounds[1:]):
        seg = idx[ptr[i]:ptr[j]].astype(np.int64)
        rows = np.repeat(np.arange(j - i, dtype=np.int64), np.diff(ptr[i:j + 1]))
        keys = rows * width + seg
        if keys.size > 1 and np.all(keys[1:] > keys[:-1]):
            continue  # sorted within each row, no repeat
        keys = np.sort(keys)
        if keys.size > 1 and np.any(keys[1:] == keys[:-1]):
            return True
    return False


def canonical_sparse(X, spent=True):
    """``X``, or a float64 copy with its duplicate entries summed if it stores some (memory
    ~ nnz).

    Summed in float64 (in float32, two finite 3e38 made inf) and refused, like a NaN,
    when a sum leaves the float64 range: the stored values were each finite, and the sum
    had failed later with misleading errors and a warning (after a fit's charge: it is a
    value check, like every finiteness check of the rows; ``spent=False`` for predict and
    transform, whose message then says nothing of a budget).
    """
    if has_duplicate_entries(X):
        X = X.astype(np.float64)  # (a copy)
        X.has_canonical_format = False  # (a stale flag copied along would make scipy skip it)
        with np.errstate(over="ignore", invalid="ignore"):
            X.sum_duplicates()
        if not np.all(np.isfinite(X.data)):
            from ._validation import _SPENT_NOTE

            raise ValueError("Input X contains NaN or infinity: duplicate entries of one "
                             "(row, column) sum beyond the float64 range. The values are not "
                             "shown: they are private data." + (_SPENT_NOTE if spent else ""))
    return X


def _as_2d_input(X):
    """ndarray (memmaps kept, no copy for float arrays), or CSR for scipy.sparse input."""
    if sp.issparse(X):
        if X.format != "csr":
            X = X.tocsr()  # memory proportional to nnz
        X = canonical_sparse(X)  # duplicates are summed before any row is normed or clipped
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        return X
    if not isinstance(X, np.ndarray):
        X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got an array of shape {X.shape}.")
    return X


class AugmentedRows:
    """The rows ``z_i = sqrt(w_i) [clip_R(x_i), c, clip_B(y_i)]``, read chunk by chunk.

    A lazy view: nothing is computed or copied until :meth:`chunks` is
    iterated. ``data_norm=None`` means "no clipping" (rows are taken as
    they are: the caller has clipped them or they are public).

    Parameters
    ----------
    X : ndarray (float32/float64, memmaps included) or scipy.sparse matrix
    data_norm : float or None
        ``R``; rows with a larger norm are scaled down to it.
    y : ndarray of shape (n,) or None
        Appended as the last column after clipping into ``[-B, B]``.
    label_bound : float or None
        ``B`` (required when ``y`` is given and should be clipped; ``None``
        takes ``y`` as it is).
    intercept : float or None
        The constant column ``c`` (placed after the features), or None.
    sample_weight : ndarray of shape (n,) or None
        Weights ``w_i >= 0``; every augmented row is multiplied by ``sqrt(w_i)``.
    """

    def __init__(self, X, data_norm=None, *, y=None, label_bound=None, intercept=None,
                 sample_weight=None):
        self.data_norm = None if data_norm is None else float(data_norm)
        self.label_bound = None if label_bound is None else float(label_bound)
        self.intercept = None if intercept is None else float(intercept)
        self.dask = is_dask_collection(X)
        if self.dask:  # the blocks stay on the workers: see skdp._dask.blockwise_sum
            from ._dask import as_dask_rows

            self.X, self.y, self.sqrt_w = as_dask_rows(X, y, sample_weight)
            self.n, self.d = (int(v) for v in self.X.shape)
            self.n_extra = int(self.intercept is not None) + int(self.y is not None)
            self.k = self.d + self.n_extra
            return
        self.X = _as_2d_input(X)
        self.n, self.d = self.X.shape
        self.y = None if y is None else np.asarray(y).reshape(-1)
        self.sqrt_w = None if sample_weight is None else np.sqrt(
            np.asarray(sample_weight, dtype=np.float64).reshape(-1))
        for name, v in (("y", self.y), ("sample_weight", self.sqrt_w)):
            if v is not None and v.shape[0] != self.n:
                raise ValueError(f"{name} has {v.shape[0]} entries, X has {self.n} rows.")
        self.n_extra = int(self.intercept is not None) + int(self.y is not None)
        self.k = self.d + self.n_extra

    @property
    def shape(self):
        return (self.n, self.k)

    @property
    def sparse(self):
        return sp.issparse(self.X)

    def _row_factor(self, norms, start, stop):
        """Clip factor times ``sqrt(w)`` of the rows ``start:stop`` (None: all ones)."""
        f = None
        if self.data_norm is not None:
            with np.errstate(over="ignore"):  # a zero row: B / NORMAL_MIN = inf, then 1 (a
                # warning would tell that the data has such a row)
                f = np.minimum(1.0, self.data_norm / np.maximum(norms, NORMAL_MIN))
            f[f < NORMAL_MIN] = 0.0  # no subnormal factor: such a row enters as 0 (NORMAL_MIN)
        if self.sqrt_w is not None:
            sw = self.sqrt_w[start:stop]
            f = sw if f is None else f * sw
        return f

    def _fill_extra(self, E, start, stop):
        """The intercept and label columns of rows ``start:stop`` into ``E`` (m x n_extra)."""
        j = 0
        sw = None if self.sqrt_w is None else self.sqrt_w[start:stop]
        if self.intercept is not None:
            if sw is None:
                E[:, j] = self.intercept
            else:
                np.multiply(sw, self.intercept, out=E[:, j])
            j += 1
        if self.y is not None:
            col = E[:, j]
            col[:] = self.y[start:stop]
            if self.label_bound is not None:
                np.clip(col, -self.label_bound, self.label_bound, out=col)
            if sw is not None:
                col *= sw

    def chunks(self, chunk_rows=None, post_scale=None, allow_view=False):
        """Yield ``(start, Xpart, E)`` per chunk of rows, in order.

        Dense input: ``Xpart`` and ``E`` are the two column blocks of one
        reused C-contiguous float64 buffer ``B`` (``B[:, :d]`` and
        ``B[:, d:]``), and ``B`` itself is available as ``self.buffer[:m]``.
        Sparse input: ``Xpart`` is a float64 CSR chunk (stored values
        scaled), ``E`` a small dense ``m x n_extra`` buffer. The yielded
        arrays are overwritten by the next chunk. ``post_scale`` (dense only):
        a public constant multiplied into every augmented row in the same pass
        (the grid sketch's quantisation factor). ``allow_view`` (dense only):
        a float64 C-contiguous chunk that needs no scaling is yielded as a
        read-only view of X itself (``self.buffer_used`` is then False) instead
        of being copied into the buffer.
        """
        if chunk_rows is not None and self.sparse:
            rows = max(1, int(chunk_rows))
        elif chunk_rows is not None:  # an upper bound: larger chunks fall out of cache
            rows = max(1, min(int(chunk_rows), default_chunk_rows(self.k)))
        elif self.sparse:  # about SPARSE_CHUNK_NNZ stored values per chunk, at most SPARSE_MAX_ROWS
            lo = max(1, SPARSE_CHUNK_NNZ // max(self.d, 1))  # (public: nnz <= n d)
            rows = min(max(1, int(SPARSE_CHUNK_NNZ * self.n // max(self.X.nnz, 1))),
                       max(SPARSE_MAX_ROWS, lo))
        else:
            rows = default_chunk_rows(self.k)
        rows = min(rows, max(self.n, 1))
        if self.sparse:
            E_buf = np.empty((rows, self.n_extra))
            for start in range(0, self.n, rows):
                stop = min(start + rows, self.n)
                C = self.X[start:stop]
                m = stop - start
                data = np.asarray(C.data, dtype=np.float64)
                if data is C.data:
                    data = data.copy()
                f = None
                if self.data_norm is not None or self.sqrt_w is not None:
                    norms = _sparse_norms(data, C.indptr, m) if self.data_norm is not None else None
                    f = self._row_factor(norms, start, stop)
                    data *= np.repeat(f, np.diff(C.indptr))
                Xpart = sp.csr_matrix((data, C.indices, C.indptr), shape=(m, self.d))
                E = E_buf[:m]
                self._fill_extra(E, start, stop)
                yield start, Xpart, E
            return
        self.buffer = B_buf = np.empty((rows, self.k))
        for start in range(0, self.n, rows):
            stop = min(start + rows, self.n)
            B = B_buf[:stop - start]
            Xpart = B[:, :self.d]
            src = self.X[start:stop]
            if src.dtype != np.float64:
                # float32: upcast copy first (a plain cast is fast; mixed-dtype ufuncs
                # are not), then norms and scaling on the float64 chunk in cache
                np.copyto(Xpart, src)
                src = Xpart
            f = norms = None
            if self.data_norm is not None or self.sqrt_w is not None:
                # float64: norms read from the source, scaled in the same pass as the copy
                norms = _dense_norms(src) if self.data_norm is not None else None
                if (allow_view and self.sqrt_w is None and post_scale is None
                        and src is not Xpart and src.flags.c_contiguous
                        and np.all(norms <= self.data_norm)):
                    f = "view"
                else:
                    f = self._row_factor(norms, start, stop)
            elif allow_view and post_scale is None and src is not Xpart and src.flags.c_contiguous:
                f = "view"
            self.buffer_used = not (isinstance(f, str))
            if not self.buffer_used:  # no row needs scaling: read the chunk in place
                E = B[:, self.d:]
                self._fill_extra(E, start, stop)
                yield start, src, E
                continue
            if post_scale is not None:
                f = post_scale if f is None else f * post_scale
            # what the grid sketch's quantisation bounds the chunk's row norms with
            self.chunk_norms, self.chunk_scale = norms, f
            if f is None:
                if src is not Xpart:
                    np.copyto(Xpart, src)
            elif np.ndim(f) == 0:
                np.multiply(src, f, out=Xpart)
            else:  # clip (and weight) in the same pass as the upcast copy
                np.multiply(src, f[:, None], out=Xpart)
            E = B[:, self.d:]
            self._fill_extra(E, start, stop)
            if post_scale is not None and E.shape[1]:
                E *= post_scale
            yield start, Xpart, E


def as_rows(X):
    """``X`` itself if it is an :class:`AugmentedRows`, else the unclipped rows of ``X``."""
    return X if isinstance(X, AugmentedRows) else AugmentedRows(X)


def materialize(rows):
    """The augmented rows as one dense float64 array (a full copy: only for routes that need it)."""
    rows = as_rows(rows)
    out = np.empty((rows.n, rows.k))
    for start, Xpart, E in rows.chunks():
        m = Xpart.shape[0]
        out[start:start + m, :rows.d] = Xpart.toarray() if sp.issparse(Xpart) else Xpart
        out[start:start + m, rows.d:] = E
    return out


def _syrk_into(G, B, beta=1.0):
    """``triu(G) = beta triu(G) + triu(B^T B)`` with one BLAS ``dsyrk`` (``B`` C-contiguous
    float64, ``G`` Fortran-ordered; ``beta = 0``: ``G``'s old upper triangle is not read)."""
    if B.shape[0] == 0:
        return G
    # B^T is Fortran-contiguous: dsyrk(trans=0) computes B^T (B^T)^T = B^T B without a copy
    return blas.dsyrk(1.0, B.T, beta=beta, c=G, trans=0, lower=0, overwrite_c=1)


class _ChunkSum:
    """``triu(G) += triu(B^T B)`` per chunk, with a summation depth known in advance.

    Every chunk's product is formed in a zeroed scratch matrix (``dsyrk`` with
    ``beta = 0``: a dot product of at most ``m`` terms per entry, whatever the
    BLAS's order) and then added to the total with one addition. So each term
    ``z_ij z_ik`` of an entry passes through at most ``m + C`` additions
    (``m`` rows per chunk, ``C`` chunks), the depth that
    :func:`gram_rounding_bound` charges; an in-place ``beta = 1`` update would
    leave the order of the whole sum to the BLAS (depth up to ``n``).
    """

    def __init__(self, k):
        self.G = np.zeros((k, k), order="F")
        self.scratch = np.zeros((k, k), order="F")

    def add(self, B):
        if B.shape[0]:
            self.scratch = _syrk_into(self.scratch, B, beta=0.0)
            self.G += self.scratch  # the lower triangle of the scratch stays 0
        return self.G


def _symmetrize_upper(G):
    """Copy the upper triangle onto the lower one (exact symmetry)."""
    il = np.tril_indices(G.shape[0], -1)
    G[il] = G.T[il]
    return G


def _sparse_chunk_gram(G, Xpart, E, d):
    """``G += [Xs E]^T [Xs E]`` for a CSR chunk ``Xs`` and a dense ``E`` (full, symmetric)."""
    XtX = (Xpart.T @ Xpart).tocsr()  # sparse product: memory proportional to its nnz
    XtX.sum_duplicates()
    XtX = XtX.tocoo()
    G[XtX.row, XtX.col] += XtX.data  # canonical: no duplicate coordinates
    if E.shape[1]:
        XtE = np.asarray(Xpart.T @ E)
        G[:d, d:] += XtE
        G[d:, :d] += XtE.T
        G[d:, d:] += E.T @ E


def clipped_gram(X, data_norm, *, y=None, label_bound=None, intercept=None, sample_weight=None,
                 chunk_rows=None):
    """``sum_i z_i z_i^T`` of the clipped, augmented, weighted rows (not normalised).

    ``z_i = sqrt(w_i) [clip_R(x_i), c, clip_B(y_i)]``: the intercept column
    ``c`` only if ``intercept`` is not None, the label only if ``y`` is
    given. See the module docstring for the memory and the computation.

    Parameters
    ----------
    X : ndarray of shape (n, d) (float64 or float32, memmaps included) or \
            scipy.sparse matrix
    data_norm : float or None
        Public row-norm bound ``R`` (None: no clipping).
    y : ndarray of shape (n,) or None
    label_bound : float or None
        ``B``: labels are clipped into ``[-B, B]`` (None: no clipping).
    intercept : float or None
        Constant column ``c``.
    sample_weight : ndarray of shape (n,) or None
        Non-negative weights (validated by the caller).
    chunk_rows : int or None
        Upper bound on the rows per chunk of a dense input (the default and
        the cap: a buffer of about ``2^18`` float64 entries, which stays in
        cache); the rows per chunk of a sparse input (default: about
        ``2^20`` stored values).

    Returns
    -------
    G : ndarray of shape (k, k), float64
        Exactly symmetric, ``k = d + (intercept is not None) + (y is not None)``.
    """
    rows = X if isinstance(X, AugmentedRows) else AugmentedRows(
        X, data_norm, y=y, label_bound=label_bound, intercept=intercept,
        sample_weight=sample_weight)
    if rows.dask:  # one partial Gram per block on the workers, summed there
        from ._dask import blockwise_sum

        return blockwise_sum(rows, _rows_gram, chunk_rows=chunk_rows)
    k, d = rows.k, rows.d
    if rows.sparse:  # per chunk: a sparse product over its m rows, then one addition
        G = np.zeros((k, k), order="F")
        for _, Xpart, E in rows.chunks(chunk_rows):
            _sparse_chunk_gram(G, Xpart, E, d)
        return np.ascontiguousarray((G + G.T) / 2.0)
    # per chunk: a fresh product (depth <= m), then one addition (depth <= C): see _ChunkSum
    total = _ChunkSum(k)
    Gx = None  # X^T X of the chunks read in place (no scaling needed), and their extras
    Gxe = np.zeros((d, k - d))
    for start, Xpart, E in rows.chunks(chunk_rows, allow_view=True):
        m = Xpart.shape[0]
        if rows.buffer_used:
            total.add(rows.buffer[:m])
            continue
        if d:  # (no features: only the extras, PrivateOLS's "mean" route)
            if Gx is None:
                Gx = _ChunkSum(d)
            Gx.add(Xpart)
        if k > d:
            Gxe += Xpart.T @ E
            total.G[d:, d:] += E.T @ E  # (upper triangle used; symmetrised below)
    G = total.G
    if Gx is not None:
        G[:d, :d] += Gx.G
        G[:d, d:] += Gxe
    return np.ascontiguousarray(_symmetrize_upper(G))


def _rows_gram(rows, chunk_rows=None):
    """:func:`clipped_gram` of an :class:`AugmentedRows` (a picklable block function)."""
    return clipped_gram(rows, None, chunk_rows=chunk_rows)


def max_row_norm(X, chunk_rows=None):
    """Largest Euclidean row norm of X, read in chunks (dense, sparse or dask; no copy of X)."""
    if is_dask_collection(X):
        from ._dask import dask_max_row_norm

        return dask_max_row_norm(X)
    rows = AugmentedRows(X)
    best = 0.0
    if rows.sparse:
        Xc = rows.X
        norms = _sparse_norms(np.asarray(Xc.data, dtype=np.float64), Xc.indptr, Xc.shape[0])
        return float(norms.max()) if norms.size else 0.0
    step = default_chunk_rows(rows.d) if chunk_rows is None else max(1, int(chunk_rows))
    for start in range(0, rows.n, step):
        chunk = rows.X[start:start + step]
        if chunk.dtype != np.float64:
            chunk = chunk.astype(np.float64)
        norms = _dense_norms(chunk)
        if norms.size:
            best = max(best, float(norms.max()))
    return best


def _scalar_weight(sample_weight):
    """A 0-d array weight as the scalar it is (one value for every record); others unchanged."""
    if isinstance(sample_weight, np.ndarray) and sample_weight.ndim == 0:
        return sample_weight[()]
    return sample_weight


def check_weight_structure(sample_weight, n, estimator=None):
    """Before the charge: the public structure of ``sample_weight`` (one entry per row).

    Reads its length only (public, like ``n``; a dask array with unknown
    chunk sizes is refused: :func:`skdp._validation.check_known_chunks`),
    never a value: the values
    are private per-record data, checked against their bound after the
    charge by :func:`check_unit_sample_weight`. A scalar weight (one value
    for every record, a setting) is checked against ``[0, 1]`` here.
    """
    from ._validation import _check_public_dtype, _public_ndim, check_known_chunks

    check_known_chunks(sample_weight, "sample_weight")
    who = f"{type(estimator).__name__}: " if estimator is not None else ""
    if sp.issparse(sample_weight):  # its type (review 36, F3: refused after the charge)
        raise ValueError(f"{who}sample_weight must be dense (a 1-D array-like), not a scipy "
                         "sparse matrix or array (decided by its type, before the budget is "
                         "charged).")
    if sample_weight is not None and not np.isscalar(sample_weight):
        # complex, string, date or void weights: refused by their declared dtype
        _check_public_dtype(sample_weight, "sample_weight", "cUSMmV")
    sample_weight = _scalar_weight(sample_weight)
    if sample_weight is not None and np.isscalar(sample_weight):
        # one weight for every record is a setting, not per-record data: checked now
        if not (isinstance(sample_weight, (numbers.Real, np.bool_)) and 0 <= sample_weight <= 1):
            raise ValueError(f"{who}sample_weight must lie in [0, 1] (a scalar weight is one "
                             f"public value for every record); got {sample_weight!r}.")
        return
    if sample_weight is None or n is None:
        return
    from sklearn.utils.validation import _num_samples

    if (_public_ndim(sample_weight) or 1) > 1:
        raise ValueError(f"{who}sample_weight must be 1-D (one weight per row of X).")
    try:
        m = int(_num_samples(sample_weight))
    except TypeError:
        return  # not array-like: check_unit_sample_weight reports it (after the charge)
    if m != int(n):
        raise ValueError(f"{who}sample_weight must have one entry per row of X "
                         f"({m} entries for {int(n)} rows).")


def check_unit_sample_weight(sample_weight, X, estimator=None):
    """Validate per-record weights against their public bound ``[0, 1]``.

    Returns None for ``sample_weight=None``, else a float64 array of shape
    ``(n_samples,)`` (a copy: the caller's array is never modified).
    Weights are per-record data with the public bound ``[0, 1]``: a weight
    outside it (or not finite) is a format error of the data, reported
    without any value in the message and, like a NaN in X, only after the
    budget is charged (the estimators call :func:`check_weight_structure`
    before the charge and this after it: reading the weights before would
    answer "is some weight out of range?" for free). An all-zero weight
    vector is accepted (refusing it would reveal a property of the private
    weights).
    """
    if sample_weight is None:
        return None
    sample_weight = _scalar_weight(sample_weight)  # (a scalar: checked before the charge)
    who = f"{type(estimator).__name__}: " if estimator is not None else ""
    if is_dask_collection(sample_weight):  # checked on the workers: one boolean travels
        from ._dask import check_dask_weights
        from ._validation import public_shape, spent_note

        w, ok = check_dask_weights(sample_weight, public_shape(X)[0])
        if not ok:
            raise ValueError(f"{who}sample_weight must be finite and lie in [0, 1]."
                             + spent_note(None))
        return w
    import inspect

    from sklearn.utils.validation import _check_sample_weight

    kwargs = {"dtype": np.float64, "copy": True}
    params = inspect.signature(_check_sample_weight).parameters
    if "allow_all_zero_weights" in params:
        kwargs["allow_all_zero_weights"] = True
    from ._validation import call_without_values, spent_note

    # errors without any value of the weights (numpy's conversion errors quote the cell); a
    # non-finite weight is reported against the public bound, raised outside the handler so
    # that no other error is attached as its context
    try:
        w = call_without_values(_check_sample_weight, sample_weight, X, name="sample_weight",
                                spent=True, **kwargs)
    except ValueError as exc:
        if "nan or infinity" not in str(exc).lower():
            raise
        w = None
    if w is None:
        raise ValueError(f"{who}sample_weight must be finite and lie in [0, 1]."
                         + spent_note(None))
    inside = np.isfinite(w) & (w >= 0.0) & (w <= 1.0)
    if not np.all(inside):
        raise ValueError(
            f"{who}sample_weight must lie in [0, 1] (the public bound under which a weighted "
            "record moves every statistic by at most what an unweighted one does); rescale the "
            "weights by a public constant, e.g. divide by a public upper bound."
            + spent_note(None))
    return w

