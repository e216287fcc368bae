r"""The rows of the private ERM problems as a linear operator (no copy of ``X``).

The routes of :mod:`skdp.linear_model._erm` work with the clipped, augmented
rows ``u_i = [a_i x_i, s]`` where ``a_i = min(1, B / ||x_i||)`` clips row ``i``
to the public bound ``B = data_norm`` and ``s = intercept_scaling * B`` is the
public intercept column. :class:`RowOperator` never forms ``U``: it keeps
``X`` as given (dense float64 or float32, memmaps included, or
``scipy.sparse`` CSR/CSC), the length-``n`` vector ``a`` and the scalar ``s``,
and applies them inside the products

    U @ W^T   = a * (X @ W[:, :d]^T) + s * W[:, d],
    A^T @ U   = [ (a * A)^T @ X ,  s * sum_i A_i ],
    U^T diag(c) U  (the Newton Hessian)  accumulated over row chunks.

Precision. Dense float32 input is read in row chunks of at most
``_CHUNK_BYTES`` that are converted to float64 before each product, so every
product and every reduction runs in float64 (the solver's stopping test
``||grad|| <= gamma`` with ``gamma = tol R / n`` is far below what float32
arithmetic resolves) while no float64 copy of ``X`` is ever held. Sparse input
is kept sparse; float32 sparse data get one float64 copy of the ``nnz`` stored
values (the index arrays are shared), i.e. memory proportional to ``nnz``; CSC
input is read as CSR (one copy of the same size); a matrix that stores an entry
twice is read with its duplicates summed (one copy of the same size), so that
the products run on the rows whose norms gave the clip factors. Sparse passes run over CSR
row blocks of ``_SPARSE_ROWS`` rows (views of ``X``'s arrays), so margins,
coefficients and the Hessian's sparse products exist block by block, and
each block's sum is formed fresh and then added: the summation depth of every
row sum is public (:meth:`RowOperator.sum_depth`), as the solver's
floating-point certificate needs.

Row norms are computed once (:func:`row_norms_any`), in float64, from the
dense chunks or from the sparse structure, with the overflow-safe rescaling of
:func:`skdp._validation.row_norms`.

Huge rows. The clip factor is applied after the product ``X @ W``, so a
finite row of norm near the float64 limit would overflow there. Rows whose
clip factor is 0 (the estimators set it for rows beyond ``2^400`` times the
bound, :data:`CLIP_FLOOR`: a fixed rule applied to each record alone, so the
clipped row, the zero row, is still a function of its own record within the
bound) enter every product as exact zeros (their margins, ``|U| |W|`` and
norms are set to the intercept's part), never as ``inf * 0``. Every other row
has ``||x|| <= 2^400 B``: ``X @ W`` stays finite while ``B ||W|| < 2^623``.
"""

import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas

from .._stats import canonical_sparse, chunked_sum_depth
from .._validation import row_norms

__all__ = ["RowOperator", "row_norms_any", "as_operator", "safe_matmul", "CLIP_FLOOR"]

#: the ERM routes set clip factors below this to 0 (rows beyond 2^400 times the bound enter as
#: the zero row): it keeps ``X @ W`` finite before the factor is applied (module docstring) and
#: every factor a normal number (skdp._stats.NORMAL_MIN)
CLIP_FLOOR = 2.0**-400

_CHUNK_BYTES = 1 << 21  # float64 bytes of one row chunk (2 MiB)
_SPARSE_BLOCK = 1 << 18  # stored values per block of the sparse row norms
_FUSED_BYTES = 1 << 21  # row chunk of the fused loss-and-gradient pass (stays in cache)
_SPARSE_ROWS = 1 << 16  # row chunk of the sparse A^T @ X (bounds its summation depth)


def _chunks(n, d, nbytes=_CHUNK_BYTES):
    step = max(1, nbytes // (8 * max(int(d), 1)))
    for start in range(0, n, step):
        yield start, min(n, start + step)


def sum_depth(n, d, sparse):
    """Additions a row's term meets in the sums over rows of :meth:`RowOperator.fused` (a
    public number: ``n``, ``d`` and the input kind).

    Dense ``X``: products over row chunks of ``m = _FUSED_BYTES / (8 d)`` rows (any
    order inside a chunk), added chunk by chunk. Sparse ``X``: ``A^T @ X`` over CSR row
    blocks of ``_SPARSE_ROWS`` rows, likewise.
    """
    n = max(int(n), 1)
    m = _SPARSE_ROWS if sparse else max(1, _FUSED_BYTES // (8 * max(int(d), 1)))
    m = min(n, m)
    return chunked_sum_depth(n, m, m)


def _as_float64_sparse(X, sum_duplicates=True):
    """``X`` as a float64 CSR/CSC matrix; float32 data get one copy of the values only.

    ``sum_duplicates``: a matrix that stores an entry twice is copied with them
    summed (row norms need it; products do not, they add duplicates anyway).
    """
    if X.format not in ("csr", "csc"):
        X = X.tocsr()
    if sum_duplicates:  # a copy proportional to nnz if some entry is stored twice
        X = canonical_sparse(X)
    if X.dtype == np.float64:
        return X
    cls = sp.csr_matrix if X.format == "csr" else sp.csc_matrix
    return cls((np.asarray(X.data, dtype=np.float64), X.indices, X.indptr), shape=X.shape)


def row_norms_any(X):
    """Euclidean norm of every row, in float64, for dense (any float dtype) or sparse X.

    Never copies ``X`` as a whole: dense rows are read in chunks, sparse rows
    from the stored values. Rows whose squared norm overflows are recomputed
    with scaling (finite result for every finite row).
    """
    n, d = X.shape
    if sp.issparse(X):
        Xs = _as_float64_sparse(X)
        ptr = Xs.indptr
        with np.errstate(over="ignore", invalid="ignore"):
            if Xs.format == "csr":  # blocks of rows holding about _SPARSE_BLOCK values each
                norms = np.zeros(n)
                starts = np.searchsorted(ptr, np.arange(0, ptr[-1], _SPARSE_BLOCK), "right") - 1
                bounds = np.unique(np.concatenate([starts, [n]]))
                for i, j in zip(bounds[:-1], bounds[1:]):
                    seg = Xs.data[ptr[i]:ptr[j]]
                    # reduceat over the squares and a final 0 (every start is a valid index);
                    # its value for an empty row is not a sum: masked
                    sums = np.add.reduceat(np.append(seg * seg, 0.0), ptr[i:j] - ptr[i])
                    norms[i:j] = np.where(ptr[i + 1:j + 1] > ptr[i:j], sums, 0.0)
                np.sqrt(norms, out=norms)
            else:  # CSC: blocks of columns
                acc = np.zeros(n)
                starts = np.searchsorted(ptr, np.arange(0, ptr[-1], _SPARSE_BLOCK), "right") - 1
                bounds = np.unique(np.concatenate([starts, [X.shape[1]]]))
                for i, j in zip(bounds[:-1], bounds[1:]):
                    seg = Xs.data[ptr[i]:ptr[j]]
                    acc += np.bincount(Xs.indices[ptr[i]:ptr[j]], weights=seg * seg, minlength=n)
                norms = np.sqrt(acc)
        bad = ~np.isfinite(norms)
        if np.any(bad):
            norms[bad] = row_norms(Xs[np.flatnonzero(bad)].toarray())
        return norms
    if X.dtype == np.float64:
        return row_norms(X)
    norms = np.empty(n)
    for i, j in _chunks(n, d):
        norms[i:j] = row_norms(np.asarray(X[i:j], dtype=np.float64))
    return norms


def safe_matmul(X, M):
    """``X @ M`` in float64 for dense float32/float64 or sparse X (no full copy of X)."""
    M = np.asarray(M, dtype=np.float64)
    if sp.issparse(X):
        return np.asarray(_as_float64_sparse(X, sum_duplicates=False) @ M)
    if X.dtype == np.float64:
        return X @ M
    n, d = X.shape
    out = np.empty((n,) + M.shape[1:])
    for i, j in _chunks(n, d):
        out[i:j] = np.asarray(X[i:j], dtype=np.float64) @ M
    return out


class RowOperator:
    """``U = [diag(a) X, s 1]`` applied without forming it (module docstring).

    Parameters
    ----------
    X : ndarray of shape (n, d) (float64 or float32) or scipy.sparse CSR/CSC
    scale : ndarray of shape (n,) or None
        Clip factors ``a_i`` (``None``: all 1).
    intercept : float or None
        The intercept column's constant ``s`` (``None``: no intercept column).
    """

    def __init__(self, X, scale=None, intercept=None):
        self.sparse = sp.issparse(X)
        # CSC is read as CSR (one copy, proportional to nnz): the row chunks of A^T @ X
        # keep the depth of its sums public (:meth:`sum_depth`). Duplicate entries are
        # summed first (a copy only if some entry is stored twice): the norms, and so the
        # clip factors, are those of the summed rows, and a product over the stored
        # entries would let a record's huge pair that cancels in its own norm (+2^60,
        # -2^60) swamp the other rows' share of the sums in A^T @ X
        self.X = _as_float64_sparse(X).tocsr() if self.sparse else X
        self.a = None if scale is None else np.asarray(scale, dtype=np.float64)
        # rows with a zero clip factor (huge rows: module docstring), sorted; None if none
        zero = None if self.a is None else np.flatnonzero(self.a == 0.0)
        self._zero = zero if zero is not None and zero.size else None
        self.s = None if intercept is None else float(intercept)
        self.n, self.d = X.shape
        self.p = self.d + (0 if self.s is None else 1)

    @property
    def shape(self):
        return (self.n, self.p)

    def take(self, idx):
        """The operator of the rows ``idx`` (a copy of those rows, or a view for a slice)."""
        return RowOperator(self.X[idx], None if self.a is None else self.a[idx], self.s)

    def row_norms(self):
        """``||u_i||`` (float64), from the norms of ``X`` computed once."""
        nx = row_norms_any(self.X)
        if self.a is not None:
            with np.errstate(invalid="ignore", over="ignore"):  # a row whose norm overflows has
                nx = nx * self.a  # factor 0 (inf * 0 = NaN): zeroed next, without a warning
            self._zero_rows(nx[:, None], 0, self.n)
        return nx if self.s is None else np.hypot(nx, self.s)

    def _zero_rows(self, Z, i, j):
        """Set the rows of ``Z`` (rows ``i:j`` of the data) whose clip factor is 0 to 0."""
        if self._zero is not None:
            lo, hi = np.searchsorted(self._zero, (i, j))
            if hi > lo:
                Z[self._zero[lo:hi] - i] = 0.0

    def _row_blocks(self):
        """``[(i, j, rows i:j)]``: CSR views of ``_SPARSE_ROWS`` rows each, built once.

        The blocks share ``X``'s ``data`` and ``indices`` (only their ``indptr``
        is new, ``m + 1`` integers). They are assembled by setting the three
        arrays of an empty matrix: scipy's constructor would copy a slice that is
        less than half of its base array (``prune``), i.e. copy all of ``X``.
        """
        if getattr(self, "_blocks", None) is None:
            X, ptr, m = self.X, self.X.indptr, _SPARSE_ROWS
            # the blocks' index dtype holds their pointers: int8 / int16 indices (valid for
            # scipy) had wrapped a block's pointers and crashed the products (review 25)
            idt = np.result_type(X.indices.dtype, np.int32)
            blocks = []
            for i in range(0, self.n, m):
                j = min(self.n, i + m)
                blk = sp.csr_matrix((j - i, self.d), dtype=np.float64)
                blk.data = X.data[ptr[i]:ptr[j]]
                blk.indices = X.indices[ptr[i]:ptr[j]].astype(idt, copy=False)
                blk.indptr = (ptr[i:j + 1] - ptr[i]).astype(idt, copy=False)
                blocks.append((i, j, blk))
            self._blocks = blocks
        return self._blocks

    def sum_depth(self):
        """The summation depth of this operator's row sums (:func:`sum_depth`)."""
        return sum_depth(self.n, self.d, self.sparse)

    def _row_chunks(self):
        """``(i, j, rows)`` over the passes' chunks: dense ``_FUSED_BYTES`` row chunks
        (converted to float64) or the sparse CSR blocks of :meth:`_row_blocks`."""
        if self.sparse:
            yield from self._row_blocks()
            return
        for i, j in _chunks(self.n, self.d, _FUSED_BYTES):
            yield i, j, np.asarray(self.X[i:j], dtype=np.float64)

    def _margins(self, Xc, Wd, W, Y, i, j):
        """The margins ``Y * (U W^T)`` of the rows ``i:j`` (``Xc`` their chunk, ``Wd`` the
        contiguous ``W[:, :d]^T``; ``Y=None``: the products ``U W^T`` alone)."""
        with np.errstate(over="ignore", invalid="ignore"):  # only rows with a zero factor
            Z = np.asarray(Xc @ Wd)
            if self.a is not None:
                Z *= self.a[i:j, None]
        self._zero_rows(Z, i, j)
        if self.s is not None:
            Z += self.s * W[:, self.d]
        if Y is not None:
            Z *= Y[i:j]
        return Z

    def margin_chunks(self, W, Y):
        """Yield ``(i, j, Z, T)`` for row chunks: the computed margins ``Z = Y * (U W^T)`` of
        rows ``i:j`` and ``T = |U| |W|^T`` (the sums ``sum_j |u_ij w_kj|``), both in float64
        (the certificate of :mod:`~skdp.linear_model._solver`; no copy of ``X``)."""
        W = np.asarray(W, dtype=np.float64)
        d, s, a = self.d, self.s, self.a
        Wd = np.ascontiguousarray(W[:, :d].T)
        Wa = np.abs(Wd)
        for i, j, Xc in self._row_chunks():
            Z = self._margins(Xc, Wd, W, Y, i, j)
            with np.errstate(over="ignore", invalid="ignore"):
                T = np.asarray(abs(Xc) @ Wa)
                if a is not None:
                    T *= a[i:j, None]
            self._zero_rows(T, i, j)
            if s is not None:
                T += abs(s) * np.abs(W[:, d])
            yield i, j, Z, T

    def map_margins(self, W, Y, fn):
        """``fn(Z, Yc, i, j)`` of the margins ``Z = Yc * (U W^T)`` of each row chunk, stacked
        into one (n, K) array (the chunk's margins are its only temporaries; ``Y=None``:
        ``Z = U W^T`` and ``Yc = None``)."""
        W = np.asarray(W, dtype=np.float64)
        Wd = np.ascontiguousarray(W[:, :self.d].T)
        out = np.empty((self.n, W.shape[0]))
        for i, j, Xc in self._row_chunks():
            out[i:j] = fn(self._margins(Xc, Wd, W, Y, i, j), None if Y is None else Y[i:j], i, j)
        return out

    def curvature_dot(self, c, v):
        """``U^T diag(c) U v`` for ``c`` of shape (n,) and ``v`` of shape (p,), chunk by chunk
        (the Hessian-vector product of the conjugate-gradient Newton steps; no length-``n``
        temporary)."""
        d, s, a = self.d, self.s, self.a
        v = np.asarray(v, dtype=np.float64).reshape(1, -1)
        vd = np.ascontiguousarray(v[:, :d].T)
        out = np.zeros(d)
        tail = 0.0
        for i, j, Xc in self._row_chunks():
            z = self._margins(Xc, vd, v, None, i, j)[:, 0]
            z *= c[i:j]
            if s is not None:
                tail += z.sum()
            if a is not None:
                z *= a[i:j]
            out += np.asarray(Xc.T @ z).ravel()
        if s is None:
            return out
        return np.concatenate([out, [s * tail]])

    def dot(self, W):
        """``U @ W^T`` for ``W`` of shape (K, p): shape (n, K)."""
        return self.map_margins(W, None, lambda Z, Yc, i, j: Z)

    def rdot(self, A):
        """``A^T @ U`` for ``A`` of shape (n, K): shape (K, p), over the row chunks."""
        Gd = np.zeros((A.shape[1], self.d))
        for i, j, Xc in self._row_chunks():
            Ac = A[i:j] * self.a[i:j, None] if self.a is not None else A[i:j]
            Gd += np.asarray(Xc.T @ Ac).T
        if self.s is None:
            return Gd
        G = np.empty((A.shape[1], self.p))
        G[:, :self.d] = Gd
        G[:, self.d] = self.s * A.sum(axis=0)
        return G

    def fused(self, W, Y, fn):
        """``(sum of fn's values, A^T U)`` where ``fn(Z, Yc, i, j) -> (value, A)`` gets the
        margins ``Z = Yc * (U W^T)`` of rows ``i:j`` and returns their coefficients ``A``.

        One pass over the row chunks (:meth:`_row_chunks`: cache-sized dense
        chunks, float32 ones converted to float64, or CSR row blocks of
        ``_SPARSE_ROWS`` rows), each read once for both products; the margins
        and coefficients exist chunk by chunk, and each chunk's sum is formed
        fresh and then added (the depth of :meth:`sum_depth`).
        """
        W = np.asarray(W, dtype=np.float64)
        d, s, a = self.d, self.s, self.a
        Wd = np.ascontiguousarray(W[:, :d].T)
        K = W.shape[0]
        Gd = np.zeros((K, d))
        gs = np.zeros(K)
        fsum = 0.0
        for i, j, Xc in self._row_chunks():
            Yc = Y[i:j]
            part, A = fn(self._margins(Xc, Wd, W, Y, i, j), Yc, i, j)
            fsum += part
            if s is not None:
                gs += A.sum(axis=0)
            if a is not None:
                A *= a[i:j, None]
            Gd += np.asarray(Xc.T @ A).T
        if s is None:
            return fsum, Gd
        G = np.empty((K, self.p))
        G[:, :d] = Gd
        G[:, d] = s * gs
        return fsum, G

    def loss_grad(self, W, Y, loss, sw=None):
        """``(sum_ik w_i loss(z_ik), A^T U)`` with ``z = Y * (U W^T)``, ``A = w * loss'(z) * Y``."""

        def fn(Z, Yc, i, j):
            val, der = loss.value_deriv(Z)
            if sw is not None:
                val *= sw[i:j, None]
                der *= sw[i:j, None]
            der *= Yc
            return float(val.sum()), der

        return self.fused(W, Y, fn)

    def grams(self, W, Y, fn):
        """``[U^T diag(c_k) U for k]`` with ``c = fn(Z, Yc, i, j)`` of the margins of each chunk.

        One pass over the row chunks (:meth:`_row_chunks`); the margins, the
        curvatures and the scaled chunk exist only chunk by chunk. Dense rows
        enter through BLAS ``syrk`` (rows of zero curvature skipped), sparse
        blocks as the sparse product ``X_b^T diag(c) X_b`` added to a dense
        ``d x d``. The upper triangle is filled. ``Y=None``: ``fn`` gets ``Z = U W^T``
        and ``Yc = None``.
        """
        W = np.asarray(W, dtype=np.float64)
        K = W.shape[0]
        d, s, a = self.d, self.s, self.a
        Wd = np.ascontiguousarray(W[:, :d].T)
        Hd = [np.zeros((d, d), order="F") for _ in range(K)]
        cross = np.zeros((K, d))
        csum = np.zeros(K)
        buf = None
        for i, j, Xc in self._row_chunks():
            C = fn(self._margins(Xc, Wd, W, Y, i, j), None if Y is None else Y[i:j], i, j)
            if s is not None:
                csum += C.sum(axis=0)
                Ca = C * a[i:j, None] if a is not None else C
                cross += np.asarray(Xc.T @ Ca).T
            if a is not None:
                C = C * (a[i:j, None] * a[i:j, None])
            if self.sparse:
                for k in range(K):
                    if np.any(C[:, k]):
                        Hd[k] += (Xc.T @ sp.diags(C[:, k]) @ Xc).toarray()
                continue
            if buf is None:
                buf = np.empty((j - i, d))
            root = np.sqrt(C)
            for k in range(K):
                live = np.flatnonzero(root[:, k])  # rows of zero curvature add nothing
                if live.size == 0:
                    continue
                if 2 * live.size < j - i:  # e.g. the Huber hinge outside its band
                    Xs = np.multiply(Xc[live], root[live, k:k + 1], out=buf[:live.size])
                else:
                    Xs = np.multiply(Xc, root[:, k:k + 1], out=buf[:j - i])
                Hd[k] = blas.dsyrk(1.0, Xs.T, beta=1.0, c=Hd[k], trans=0, lower=0,
                                   overwrite_c=1)
        out = []
        for k in range(K):
            H = np.zeros((self.p, self.p), order="F")
            H[:d, :d] = np.triu(Hd[k]) if self.sparse else Hd[k]
            if s is not None:
                H[:d, d] = s * cross[k]
                H[d, d] = s * s * csum[k]
            out.append(H)
        return out

    def gram(self, c):
        """``U^T diag(c) U`` (upper triangle filled; shape (p, p)) for ``c >= 0`` of shape (n,):
        :meth:`grams` with the curvature ``c`` itself (chunk by chunk, never a copy of X)."""
        c = np.asarray(c, dtype=np.float64)
        return self.grams(np.zeros((1, self.p)), None, lambda Z, Yc, i, j: c[i:j, None])[0]


def as_operator(U):
    """``U`` itself if it is a :class:`RowOperator`, else the operator of the plain rows."""
    return U if isinstance(U, RowOperator) else RowOperator(np.asarray(U, dtype=np.float64)
                                                            if not sp.issparse(U) else U)
