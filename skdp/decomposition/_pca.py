"""Differentially private principal component analysis (covariance perturbation).

PrivatePCA releases **one** noisy statistic, the augmented second-moment
matrix of the clipped rows, and obtains everything else (mean, covariance,
components, variances) by post-processing, which costs no privacy.

Derivations (replace-one neighbours, n public)
----------------------------------------------
Rows are clipped to the public l2 bound ``R = data_norm``. With a public
constant ``c >= 0`` let ``z_i = (x_i, c)`` and release the symmetric matrix

    G = (1/n) sum_i z_i z_i^T = [[S, c m], [c m^T, c^2]],
    S = X^T X / n (second moment),  m = X^T 1 / n (mean).

``c = 0`` (``centered=True``) reduces ``G`` to ``S`` (d x d); ``centered=False``
uses ``c = R / sqrt(2)`` (justified below) and the (d+1) x (d+1) matrix.

*l2 sensitivity of the released upper triangle (diagonal included).*
Replacing ``x`` by ``x'`` changes ``n G`` by ``D = z z^T - z' z'^T`` whose
corner entry is 0. Its upper triangle satisfies

    ||triu D||^2 = ||triu D_S||^2 + c^2 ||x - x'||^2
                 <= ||D_S||_F^2 + c^2 ||x - x'||^2
                 =  a^4 + b^4 - 2 a^2 b^2 u^2 + c^2 (a^2 + b^2 - 2 a b u),

with ``D_S = x x^T - x' x'^T``, ``a = ||x||``, ``b = ||x'||``, ``u`` the cosine
of their angle (``||triu M||^2 <= ||M||_F^2`` for symmetric ``M`` because the
off-diagonal entries count once instead of twice). Replacing ``x'`` by
``-x'`` keeps the first part and does not decrease the second, so ``u <= 0``
w.l.o.g.; there the bound increases in ``a, b``, so ``a = b = R``. Maximising
``2 R^4 (1 - u^2) + 2 c^2 R^2 (1 - u)`` over ``u`` in [-1, 0] gives
``u* = -c^2 / (2 R^2)`` (valid for ``c^2 <= 2 R^2``) and

    Delta_2 = sqrt(2) (R^2 + c^2 / 2) / n.

It is attained for ``d >= 2`` (x, x' in a coordinate plane with cosine ``u*``
and ``||diag D_S|| = ||D_S||_F``), so it is the exact sensitivity. For
``c = 0`` this is the familiar ``sqrt(2) R^2 / n`` (orthogonal rows of norm
R; also ``||D_S||_F^2 = ||x||^4 + ||x'||^4 - 2 (x.x')^2 <= 2 R^4``), and for
``c = R/sqrt(2)`` it is ``(5 sqrt(2) / 4) R^2 / n``. The Frobenius norm of
the whole change is at most ``sqrt(2) (R^2 + c^2) / n`` by the same argument
with ``c^2`` replaced by ``2 c^2`` (valid for ``c^2 <= R^2``), which is below
``sqrt(2) Delta_2``, the Frobenius bound a matrix mechanism may derive
from the triangle bound.

*Per-entry sensitivity profile* (for ``"inid_gaussian"``, Muthukrishnan & Kalyani 2023):
``|x_i x_j - x'_i x'_j| <= R^2`` for all i, j (``x_i x_j`` lies in
``[-R^2/2, R^2/2]`` off the diagonal and ``x_i^2`` in ``[0, R^2]``, both
attained), ``|c x_i - c x'_i| <= 2 c R``, and the corner is constant. Rows
in an l2 ball make this box much larger than the l2 ball of changes
(``||lambda||_2 ~ d R^2 / sqrt(2)`` against ``Delta_2 ~ R^2``): the coordinates
are coupled (Muthukrishnan & Kalyani 2023, section 9.1), so i.n.i.d. noise is valid but worse
than i.i.d. noise here and ``"auto"`` never picks it.

*Sample weights* (``fit(X, sample_weight=w)``, ``w_i`` in the public
range [0, 1]). A weighted record contributes ``w z z^T`` (its row scaled by
``sqrt(w)``), so replacing ``(x, w)`` by ``(x', w')`` changes ``n G`` by
``D(w, w') = w z z^T - w' z' z'^T``. Every norm of ``D`` (the triangle l2
norm, the Frobenius norm, each entry's absolute value) is a convex
function of ``(w, w')`` (a norm of an affine map), so its maximum over
``[0, 1]^2`` is at a vertex. ``(1, 1)`` is the unweighted case above;
``(0, 0)`` gives 0; ``(1, 0)`` and ``(0, 1)`` give the norms of one term
``z z^T``: ``||triu(z z^T)||^2 = (||z||^4 + sum_j z_j^4) / 2
<= R^4 + R^2 c^2 + c^4`` (``sum_j x_j^4 <= R^4``), which is at most
``Delta_2^2 n^2 = 2 R^4 + 2 R^2 c^2 + c^4 / 2`` whenever
``c^4 <= 2 R^4 + 2 R^2 c^2`` (true for the ``c <= R / sqrt(2)`` used here);
``||z z^T||_F = ||z||^2 <= R^2 + c^2``, below the Frobenius bound above;
and the entries ``|x_i x_j| <= R^2``, ``|c x_i| <= c R`` stay inside the
per-entry profile, **except the corner**: ``w c^2 - w' c^2`` ranges over
``[-c^2, c^2]``, so with weights the corner's profile entry is ``c^2 / n``
(no longer 0; :func:`_gram_query` with ``weighted=True``). The statistic's
Frobenius bound ``(1/n) sum_i w_i ||z_i||^2 <= R^2 + c^2`` holds as well.
With weights the corner estimates the total weight ``W = sum_i w_i`` and
the mean and covariance are normalised by its noisy value (post-processing,
floored at 1); with ``centered=True`` no count is released and the second
moment stays normalised by ``n``. The sensitivities are checked by a
numeric maximisation over the real domain in ``tests/test_pca.py``.

*Floating-point computation.* The bounds above are for exact arithmetic;
what is released is ``fl(G) / n`` as the chunked kernel computes it. Its
computed rows depend on their own record only and have norms at most
``R (1 + gamma_{d+10})`` (:func:`skdp._stats.computed_row_bound`, the same
factor on ``c``), and ``||fl(G) - G||_F <= r = gamma_{h+1} n L^2``
(:func:`skdp._stats.gram_rounding_bound`; ``L^2`` the squared row bound,
``h`` the public depth of the chunked sum, Higham 2002, eq. (3.5)); the
division by ``n`` adds ``u L^2``. Every bound of the query (l2, profile,
Frobenius) is therefore taken at the computed row bound plus twice the
rounding bound of ``fl(G) / n`` (:func:`_gram_query` with ``sparse`` given):
about ``1e-7`` of the sensitivity at a million rows, ``3e-4`` at ``10^8``.

*Frobenius bound of the statistic* (for ``"mvg"``, Chanyaswad et al. 2018):
``||G||_F <= (1/n) sum_i ||z_i||^2 <= R^2 + c^2``.

*Choice of c (the split between mean and second moment).* The Gaussian
mechanism on ``G`` gives the second moment noise ``sigma`` per entry and the
mean noise ``sigma / c`` per entry, with ``sigma`` proportional to
``R^2 + c^2 / 2``. Releasing both jointly is never worse than splitting the
budget by composition, because the sensitivity above accounts for the fact
that one record cannot move ``S`` and ``m`` maximally at the same time.
With worst-case ``||m|| = R`` the spectral error of the estimated
covariance ``S - m m^T`` is about ``sqrt(d) sigma (2 + R / c)`` (Wigner
noise plus the rank-two term ``m e^T + e m^T``); minimising
``(1 + t^2 / 2)(2 + 1 / t)`` over ``t = c / R`` gives ``t = 0.719``; we use
``t = 1/sqrt(2)`` (within 0.1 % of the optimum). Both ``S`` and ``m`` then see
noise as if each alone had been released at separation ``0.8 mu0``. This
is a trade-off, not an optimum for every use: the mean error only perturbs
a rank-two subspace, so the top-k *subspace* alone prefers a smaller ``c``
(measured on unit-norm digits, k = 10, epsilon = 1: captured variance 0.58
at ``c = 0.1 R`` against 0.52 at ``c = R/sqrt(2)``), at the price of a much
noisier ``mean_``, which ``transform`` and ``inverse_transform`` use.

*Noise.* ``"analyze_gauss"`` is the Analyze Gauss algorithm of Dwork, Talwar,
Thakurta & Zhang (2014): i.i.d. Gaussian noise on the upper triangle,
mirrored. Here it is the core mechanism ``"analytic_gaussian"`` (Balle & Wang
2018) with ``sigma = Delta_2 / mu0(epsilon, delta)``, which is exact, instead
of the classic ``sqrt(2 ln(1.25/delta))/epsilon`` calibration of the paper.
Non-symmetric noise (``"mvg"``, ``"r1smg"``) is symmetrised with
``(A + A^T) / 2``; noise that is already symmetric is unchanged by it.
"""

from dataclasses import replace
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy import linalg
from scipy.linalg import lapack
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._filter import release_charge
from ..base import PrivateEstimatorMixin, fixed_float_state, private_fit
from .._dask import validate_fit_data
from .._stats import (UNIT_ROUNDOFF, check_unit_sample_weight, check_weight_structure,
                      clipped_gram, computed_row_bound, gram_rounding_bound)
from .._validation import (call_without_values, check_data_norm, check_epsilon_delta,
                           check_sparse_structure, clip_rows_for_transform, is_sparse_input,
                           saturate, validate_private_data)
from ..mechanisms import Query, calibrate, get_mechanism
from ..mechanisms.selection import applicable_names

__all__ = ["PrivatePCA"]

#: estimator-level mechanism names -> core mechanism names
_MECHANISMS = {
    "auto": "auto",
    "analyze_gauss": "analytic_gaussian",
    "inid_gaussian": "inid_gaussian",
    "mvg": "mvg",
    "r1smg": "r1smg",
}

#: c / R for centered=False (see the module docstring)
_MEAN_WEIGHT = 1.0 / np.sqrt(2.0)


def _gram_query(n_samples, n_features, data_norm, mean_weight, weighted=False, sparse=None):
    """The symmetric query for ``G = Z^T Z / n`` with ``z = (x, c)``.

    ``mean_weight`` is ``c`` (0 means no mean column, ``G = X^T X / n``).
    Sensitivities are derived in the module docstring. ``weighted``: rows
    carry weights in [0, 1], so the corner ``sum_i w_i c^2`` is no longer
    constant and its profile entry is ``c^2 / n`` instead of 0.

    ``sparse`` (bool): the query of the statistic *as computed* by the
    kernel for a dense (False) or sparse (True) input, in floating point
    (module docstring, "Floating-point computation"): the bounds at the
    computed row bound plus twice the rounding bound of ``fl(G / n)``.
    ``None``: the exact-arithmetic query (for the applicability checks).
    """
    R, c, n, d = float(data_norm), float(mean_weight), n_samples, n_features
    size = d + 1 if c > 0 else d
    rounding = 0.0
    if sparse is not None:
        R, c = computed_row_bound(R, d), computed_row_bound(c, d)
        L2 = R**2 + c**2
        # fl(G) / n, then the division's own rounding (|fl(G)| <= n L2 entrywise in l2)
        rounding = (gram_rounding_bound(n, d, size, L2, sparse=bool(sparse)) / n
                    + 1.01 * UNIT_ROUNDOFF * L2)
    l2 = np.sqrt(2.0) * (R**2 + c**2 / 2.0) / n + 2.0 * rounding
    profile = np.full((size, size), R**2 / n + 2.0 * rounding)
    if c > 0:
        profile[:d, d] = profile[d, :d] = 2.0 * c * R / n + 2.0 * rounding
        # the corner is constant only without weights (and in exact arithmetic)
        profile[d, d] = (c**2 / n if weighted else 0.0) + 2.0 * rounding
    return Query(
        shape=(size, size),
        l2_sensitivity=l2,
        sensitivity_profile=profile,
        sup_norm=(R**2 + c**2) + rounding,
        symmetric=True,
    )


def _clipped_gram(X, data_norm, mean_weight, chunk_elements=None, sample_weight=None):
    """Exact ``G = Z^T Z / n`` of the clipped (weighted) rows, by the chunked kernel.

    :func:`skdp._stats.clipped_gram` with the mean column ``c`` as its
    constant column; memory beyond X is one chunk of about
    ``chunk_elements`` entries (kernel default when None) plus the result.
    """
    n, d = X.shape
    c = float(mean_weight)
    k = d + 1 if c != 0 else d
    rows = None if chunk_elements is None else max(1, int(chunk_elements) // k)
    G = clipped_gram(X, data_norm, intercept=c if c != 0 else None,
                     sample_weight=sample_weight, chunk_rows=rows)
    return G / n


def _symmetrize_inplace(A, block=1024):
    """``A <- (A + A^T) / 2`` in place, one pair of blocks at a time (no ``d x d`` temporary;
    exactly a no-op for a symmetric ``A``)."""
    m = A.shape[0]
    for i in range(0, m, block):
        for j in range(i, m, block):
            avg = (A[i:i + block, j:j + block] + A[j:j + block, i:i + block].T) / 2.0
            A[i:i + block, j:j + block] = avg
            A[j:j + block, i:i + block] = avg.T


def _covariance(noisy, d, mean, row_scale, scale, block=1024):
    """``(noisy[:d, :d] * row_scale - mean mean^T) * scale`` as a new Fortran-ordered array,
    formed block of rows by block (the same operations per entry as the whole-matrix
    expression, without its ``d x d`` temporaries)."""
    cov = np.empty((d, d), order="F")
    for i in range(0, d, block):
        j = min(i + block, d)
        rows = noisy[i:j, :d]
        if row_scale != 1.0:
            rows = rows * row_scale
        cov[i:j] = (rows - np.outer(mean[i:j], mean)) * scale
    return cov


#: :func:`_eigh` computes only the kept vectors from this width on, when at most this
#: share of the axes is kept (measured: 2.9x faster at d = 3000, k = 5)
_PARTIAL_EIGH_MIN_D = 1000
_PARTIAL_EIGH_MAX_SHARE = 0.125
#: :func:`_eigh` first tries Lanczos iterations (ARPACK) from this width on, with at
#: most ``max(_LANCZOS_MIN_MATVECS, d / _LANCZOS_MATVEC_SHARE) + 2 k`` products
#: ``cov @ v``, a few percent of the tridiagonalisation's cost (about 0.12-0.17 d such
#: products at d = 4000-10 000). Measured at d = 4000, one thread: 48-52 products and
#: 0.3 s for 5-10 components above a noise bulk, against 6.4 s for the
#: tridiagonalisation; 480-650 products when the leading eigenvalues sit inside the
#: bulk, where the budget gives up.
_LANCZOS_MIN_D = 1000
_LANCZOS_MIN_MATVECS = 100
_LANCZOS_MATVEC_SHARE = 100


class _OutOfProducts(Exception):
    """Raised by the Lanczos operator when its budget of products is spent."""


def _lanczos(cov, k):
    """The ``k`` largest eigenpairs of the symmetric ``cov`` by implicitly restarted
    Lanczos (ARPACK, ``tol=0``: to machine precision), or None when ARPACK needs more
    products than the budget (then the caller computes them directly).

    The start vector is a fixed public one (not noise; the converged pairs do not
    depend on it beyond rounding), so a fit is reproducible; ``cov`` is only read.
    """
    from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigsh

    d = cov.shape[0]
    budget = max(_LANCZOS_MIN_MATVECS, d // _LANCZOS_MATVEC_SHARE) + 2 * k
    used = [0]

    def product(v):
        used[0] += 1
        if used[0] > budget:
            raise _OutOfProducts
        return cov @ v

    start = np.random.default_rng(0).standard_normal(d)  # public, fixed
    op = LinearOperator((d, d), matvec=product, dtype=np.float64)
    try:
        w, z = eigsh(op, k, which="LA", v0=start, tol=0, ncv=min(d, max(2 * k + 1, 20)))
    except (_OutOfProducts, ArpackNoConvergence, ArpackError):
        return None
    order = np.argsort(w)[::-1]
    return w[order], np.array(z[:, order], order="C")


def _eigh(cov, k=None):
    """Leading eigenvalues (descending) and eigenvectors of the symmetric ``cov``.

    Returns ``(evals, evecs)``: with ``k`` None all ``d`` eigenvalues in
    descending order and all eigenvectors as the columns of ``evecs``;
    otherwise the ``k`` largest eigenvalues and their eigenvectors. ``cov``
    may be overwritten.

    For a wide matrix of which few axes are kept (``d >=``
    ``_PARTIAL_EIGH_MIN_D``, ``k <= _PARTIAL_EIGH_MAX_SHARE * d``), first
    implicitly restarted Lanczos (:func:`_lanczos`; a few dozen products
    ``cov @ v`` when the kept eigenvalues stand out of the noise), and when it
    does not converge within its budget, one Householder tridiagonalisation
    ``cov = Q T Q^T`` (LAPACK ``dsytrd``), the ``k`` vectors of ``T`` (MRRR,
    ``dstemr``) and ``Q`` applied to those ``k`` vectors only: about
    ``(4/3) d^3`` flops, where divide and conquer for all ``d`` vectors adds
    about ``2 d^3`` for applying ``Q`` to them (Golub & Van Loan 2013, sec.
    5.1, 8.3 and 10.1). Otherwise LAPACK's divide and conquer (``evd``). All
    are post-processing of the released matrix: the guarantee does not depend
    on which one runs.
    """
    d = cov.shape[0]
    if k is None or d < _PARTIAL_EIGH_MIN_D or k > _PARTIAL_EIGH_MAX_SHARE * d:
        evals, evecs = linalg.eigh(cov, overwrite_a=True, check_finite=False, driver="evd")
        keep = d if k is None else k
        return evals[::-1][:keep], evecs[:, ::-1][:, :keep]
    if k == 0:
        return np.zeros(0), np.zeros((d, 0))
    if d >= _LANCZOS_MIN_D:
        pairs = _lanczos(cov, k)
        if pairs is not None:
            return pairs
    lwork, _ = lapack.dsytrd_lwork(d, lower=1)
    a, diag, off, tau, info = lapack.dsytrd(cov, lower=1, lwork=int(lwork), overwrite_a=1)
    if info != 0:  # an argument error (a bug): info does not depend on the values
        raise RuntimeError("LAPACK dsytrd failed with info=%d" % info)
    evals, z = linalg.eigh_tridiagonal(diag, off, select="i", select_range=(d - k, d - 1),
                                       check_finite=False, lapack_driver="stemr")
    evals = evals[::-1]
    z = np.array(z[:, ::-1], order="C")  # descending, like evals
    # Q = H(1) ... H(d-1), H(i) = I - tau_i v_i v_i^T, v_i = (0, ..., 0, 1, a[i+2:, i])
    # (1-based, lower storage): Q z = H(1) (H(2) (... H(d-1) z)), on the k columns only
    v = np.empty(d)
    for i in range(d - 2, -1, -1):
        t = tau[i]
        if t == 0.0:
            continue
        m = d - i - 1
        v[:m] = a[i + 1:, i]
        v[0] = 1.0
        zi = z[i + 1:]
        zi -= np.outer(v[:m], t * (v[:m] @ zi))
    return evals, z


def _svd_flip_rows(components):
    """Make the largest-magnitude entry of every row positive (deterministic signs)."""
    idx = np.argmax(np.abs(components), axis=1)
    signs = np.sign(components[np.arange(components.shape[0]), idx])
    signs[signs == 0] = 1.0
    return components * signs[:, None]


class PrivatePCA(PrivateEstimatorMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Differentially private PCA by perturbing the second-moment matrix.

    The estimator clips every row to the public norm bound ``data_norm``,
    forms the (augmented) second-moment matrix in row chunks, adds noise
    calibrated by the mechanism core (:mod:`skdp.mechanisms`) once, and then
    post-processes the noisy matrix: symmetrise, subtract the outer product
    of the noisy mean (``centered=False``), eigendecompose (LAPACK, or
    Lanczos iterations for a few components of a wide matrix) and sort by
    algebraic eigenvalue. One fit is
    (epsilon, delta)-DP under replace-one neighbours with ``n`` public.

    The sensitivity derivation is in the docstring of
    :mod:`skdp.decomposition._pca`; in short the released upper triangle has
    l2 sensitivity ``sqrt(2) (R^2 + c^2/2) / n`` with ``R = data_norm``,
    ``c = R / sqrt(2)`` when the mean is estimated and ``c = 0`` when
    ``centered=True``.

    The statistic is accumulated by the chunked kernel :mod:`skdp._stats`:
    dense float64/float32 input (memmaps included) is read one chunk at a
    time and never copied as a whole, ``scipy.sparse`` CSR/CSC input is
    clipped on its stored values and never densified; ``transform`` accepts
    sparse input and keeps float32. ``fit(X, sample_weight=w)`` accepts
    weights in the public range [0, 1] (derivation in the module docstring:
    the sensitivity is unchanged, the mean column's corner entry is no
    longer constant and its profile entry becomes ``c^2 / n``).

    Parameters
    ----------
    n_components : int, float or None, default=None
        Number of components to keep. An int in ``[1, n_features]``; a float
        in (0, 1) keeps the smallest number of components whose clamped
        eigenvalues reach that share of the total variance (the trace of the
        noisy covariance, see ``explained_variance_ratio_``); None keeps all
        ``n_features`` components.
    epsilon : float, default=1.0
        Privacy parameter epsilon of one fit, > 0.
    delta : float, default=1e-5
        Privacy parameter delta of one fit, in (0, 1) for the Gaussian-type
        mechanisms.
    mechanism : {"auto", "analyze_gauss", "inid_gaussian", "mvg", "r1smg"}, \
            default="auto"
        Noise for the second-moment matrix:

        - ``"analyze_gauss"``: Analyze Gauss (Dwork et al. 2014), i.e. the
          core's ``"analytic_gaussian"`` on the symmetric query (exact
          Balle-Wang calibration, i.i.d. noise on the upper triangle).
        - ``"inid_gaussian"``: optimal non-identical Gaussian scales for the
          per-entry sensitivity profile (Muthukrishnan & Kalyani 2023, Theorem 4). Valid but
          worse than ``"analyze_gauss"`` for rows in an l2 ball.
        - ``"mvg"``: matrix-variate Gaussian (Chanyaswad et al. 2018), symmetrised.
          **Not verified**: its noise is drawn in floating point and the low bits of
          the release tell neighbours apart; warns :class:`~skdp.PrivacyGuaranteeWarning`.
        - ``"r1smg"``: rank-1 singular Gaussian (Ji & Li 2024). **Not DP** at its
          published calibration; warns :class:`~skdp.PrivacyGuaranteeWarning`.
        - ``"auto"``: the verified, floating-point-safe core mechanism of least
          expected squared error for this query (:func:`skdp.mechanisms.select`);
          in low dimension this can be a pure-epsilon one (``"laplace"`` on a grid).
    data_norm : float or None, default=None
        Public bound ``R`` on the Euclidean norm of every row; longer rows
        are scaled down to it. If None it is inferred from the data with a
        :class:`~skdp.PrivacyLeakWarning` (this voids the guarantee) and
        stored in ``data_norm_``.
    centered : bool, default=False
        If False, the mean is estimated privately from the same release
        (no separate budget: the mean column of the augmented matrix) and
        subtracted. If True, the caller asserts that ``X`` was centred using
        **public** information only; no mean is estimated (``mean_`` is 0)
        and the uncentred second moment ``X^T X / n`` is used.
    whiten : bool, default=False
        If True, ``transform`` divides the projections by
        ``sqrt(explained_variance_)`` (floored at machine epsilon).
    random_state : int, Generator, RandomState or None, default=None
        Source of the noise. ``None`` (use it for real releases) draws fresh OS
        entropy for every fit. An int seed is for reproducible experiments:
        whoever knows it can regenerate the noise, so keep it secret and do
        not publish it with the model; charged to a ledger, it is mixed with
        the spend's serial number so that two fits on one ledger never share
        noise (see the privacy model).
    accountant : object with a ``spend`` method or None, default=None
        Optional privacy ledger charged ``(epsilon, delta)`` before any data
        is read.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Principal axes (rows), by decreasing noisy eigenvalue, with the sign
        convention that the largest-magnitude entry is positive.
    explained_variance_ : ndarray of shape (n_components,)
        Noisy eigenvalues of the covariance estimate, clamped at 0
        (post-processing: noise can make eigenvalues negative). When the mean
        is estimated, the covariance uses the ``n - 1`` denominator like
        :class:`sklearn.decomposition.PCA`.
    explained_variance_ratio_ : ndarray of shape (n_components,)
        ``explained_variance_`` divided by the total variance, the trace of
        the noisy covariance (or the sum of the kept clamped eigenvalues when
        that is larger, so the shares add up to at most 1). The trace is an
        unbiased estimate of the data's total variance (the noise has mean
        0); a sum of clamped eigenvalues would add the positive half of the
        noise (on 20 000 x 200 rows at epsilon = 5, ten components: 0.800
        with the trace, 0.625 with that sum, 0.795 without noise).
    singular_values_ : ndarray of shape (n_components,)
        ``sqrt(explained_variance_ * (n - 1))`` (``n`` if ``centered``).
    mean_ : ndarray of shape (n_features,)
        Noisy mean (``centered=False``) or zeros (``centered=True``).
    noise_variance_ : float
        Mean of the eigenvalues not kept, ``(trace - sum of the kept
        eigenvalues) / (n_features - n_components_)``, clamped at 0 (0 if all
        are kept).
    n_components_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in,)
        Defined when X has string feature names.
    data_norm_ : float
        The row-norm bound used (``data_norm`` or the inferred value).
    noise_spec_ : NoiseSpec
        The calibrated noise of the release (mechanism, parameters, budget).
        Its query is described by its bounds (``l2_bound``, ``l1_bound``):
        the per-entry sensitivity profile, ``(d+1)^2`` floats, is used for the
        calibration and not kept.
    privacy_spent_ : PrivacyBudget
        Budget spent by the last fit.

    References
    ----------
    C. Dwork, K. Talwar, A. Thakurta, L. Zhang. "Analyze Gauss: optimal
    bounds for privacy-preserving principal component analysis." STOC 2014.

    B. Balle, Y.-X. Wang. "Improving the Gaussian mechanism for differential
    privacy: analytical calibration and optimal denoising." ICML 2018.

    T. Chanyaswad, A. Dytso, H. V. Poor, P. Mittal. "MVG mechanism:
    differential privacy under matrix-valued query." CCS 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.decomposition import PrivatePCA
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(5000, 3)) * [3.0, 1.0, 0.1]
    >>> X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True) / 10)
    >>> pca = PrivatePCA(n_components=1, epsilon=1.0, data_norm=10.0,
    ...                  mechanism="analyze_gauss", random_state=0).fit(X)
    >>> np.abs(pca.components_[0]).argmax()
    np.int64(0)
    >>> pca.noise_spec_.mechanism
    'analytic_gaussian'
    """

    _parameter_constraints = {
        **PrivateEstimatorMixin._privacy_parameter_constraints,
        "n_components": [
            None,
            Interval(Integral, 1, None, closed="left"),
            Interval(Real, 0, 1, closed="neither"),
        ],
        "mechanism": [StrOptions(set(_MECHANISMS))],
        "centered": ["boolean"],
        "whiten": ["boolean"],
    }

    def __init__(
        self,
        n_components=None,
        *,
        epsilon=1.0,
        delta=1e-5,
        mechanism="auto",
        data_norm=None,
        centered=False,
        whiten=False,
        random_state=None,
        accountant=None,
    ):
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.mechanism = mechanism
        self.data_norm = data_norm
        self.centered = centered
        self.whiten = whiten
        self.random_state = random_state
        self.accountant = accountant

    # ------------------------------------------------------------------
    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Fit the private PCA model on X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            float32 input is read as float32 (one chunk at a time upcast
            for the accumulation); CSR/CSC input is never densified.
        y : ignored
        sample_weight : array-like of shape (n_samples,) or None
            Per-record weights in ``[0, 1]`` (a public bound; the weights are
            private, so one outside it raises ``ValueError`` after the charge,
            like a NaN in X; a wrong length raises before it). A weighted
            record contributes ``w z z^T`` to the statistic; the sensitivity
            is unchanged (module docstring).

        Returns
        -------
        self : PrivatePCA
        """
        self._fit(X, y, sample_weight)
        return self

    def fit_transform(self, X, y=None, sample_weight=None):
        """Fit on X and return its projection (same as ``fit(X).transform(X)``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : ignored
        sample_weight : array-like of shape (n_samples,) or None
            Weights in ``[0, 1]``, see :meth:`fit`.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components_)
        """
        return self.fit(X, y, sample_weight=sample_weight).transform(X)

    def _check_public(self, n_samples, n_features):
        """Errors decided by the parameters and the shape of X alone."""
        super()._check_public(n_samples, n_features)
        if not n_features:  # unknown, or 0 (validate_data reports it)
            return
        if isinstance(self.n_components, Integral) and self.n_components > n_features:
            raise ValueError(
                f"n_components={self.n_components} must be at most n_features={n_features}."
            )
        eps, delta = check_epsilon_delta(self.epsilon, self.delta)
        size = n_features if self.centered else n_features + 1
        query = _gram_query(max(n_samples or 1, 1), n_features, 1.0,
                            0.0 if self.centered else _MEAN_WEIGHT)
        if self.mechanism != "auto":
            reason = get_mechanism(_MECHANISMS[self.mechanism]).applicable(query, eps, delta)
        else:
            reason = (None if applicable_names(query, eps, delta)
                      else "no verified mechanism applies")
        if reason is not None:
            raise ValueError(
                f"PrivatePCA(mechanism={self.mechanism!r}) cannot release the {size} x {size} "
                f"second-moment matrix at epsilon={eps}, delta={delta}: {reason}."
            )

    def _calibrate(self, n, d, R, budget, weighted=False, sparse=False):
        c = 0.0 if self.centered else _MEAN_WEIGHT * R
        query = _gram_query(n, d, R, c, weighted=weighted, sparse=sparse)
        return calibrate(query, budget.epsilon, budget.delta, mechanism=_MECHANISMS[self.mechanism])

    def _fit(self, X, y=None, sample_weight=None):
        n_pub, d_pub = self._public_shape(X, y)  # structure only (y: its length), no values
        weighted = sample_weight is not None  # public: whether weights are passed
        sparse = is_sparse_input(X)  # public: the input's format (it sets the kernel's chunks)
        pre = {}

        def curve():  # the release calibrated from public inputs, before the charge
            if self.data_norm is None or not n_pub or not d_pub:
                return None
            pre["spec"] = self._calibrate(n_pub, d_pub, float(self.data_norm),
                                          self._privacy_budget(), weighted, sparse)
            return release_charge([pre["spec"]])

        if weighted:
            self._check_public(n_pub, d_pub)
            check_weight_structure(sample_weight, n_pub, self)  # the length only
        budget, rng = self._start_fit(n_pub, d_pub, curve=curve)
        sample_weight = check_unit_sample_weight(sample_weight, X, self)  # values: after the charge
        X = validate_fit_data(self, X, accept_sparse=["csr", "csc"],
                              dtype=[np.float64, np.float32], ensure_min_samples=1)
        n, d = X.shape
        n_components = self.n_components
        R = check_data_norm(X, self.data_norm, estimator=self)
        self.data_norm_ = R
        c = 0.0 if self.centered else _MEAN_WEIGHT * R

        spec = pre.get("spec")
        if spec is not None:
            self._check_charged_shape((n_pub, d_pub), (n, d))
        else:  # the bounds were inferred after the charge, or the structure did not tell the shape
            spec = self._calibrate(n, d, R, budget, weighted, sparse)
        noisy = spec.privatize(_clipped_gram(X, R, c, sample_weight=sample_weight),
                               random_state=rng)
        _symmetrize_inplace(noisy)  # post-processing; no-op for symmetric noise
        # the fitted spec keeps the query's bounds, not its (d+1)^2 per-entry profile
        self.noise_spec_ = replace(spec, query=spec.query.without_profile())
        del spec
        pre.clear()  # (the calibration made before the charge: its profile too)

        # ---- post-processing of the single release ----
        # (in place or block by block: with d in the thousands each d x d matrix is large)
        if self.centered:
            mean = np.zeros(d)
            cov = noisy.T  # symmetric: its transpose is itself, in Fortran order (no copy)
            dof = n
        elif weighted:
            # the corner estimates the total weight W / n: normalise by the noisy W
            # (floored at 1 record; post-processing of the release)
            W = max(float(noisy[d, d]) * n / c**2, 1.0)
            mean = noisy[:d, d] * (n / W) / c
            dof = max(W - 1.0, 1.0)
            cov = _covariance(noisy, d, mean, n / W, W / dof)
        else:
            mean = noisy[:d, d] / c
            dof = max(n - 1, 1)
            cov = _covariance(noisy, d, mean, 1.0, n / dof)
        del noisy
        # the total variance is the trace of the noisy covariance (unbiased: the noise has
        # mean 0; a sum of eigenvalues clamped at 0 would add the positive half of the noise)
        trace = float(np.trace(cov))
        # on cov's own storage (no copy of it); only the kept pairs when few are kept
        fixed_k = int(n_components) if isinstance(n_components, Integral) else None
        evals, evecs = _eigh(cov, fixed_k)
        del cov
        clamped = np.maximum(evals, 0.0)  # clamp: post-processing
        if n_components is None:
            k = d
        elif fixed_k is not None:
            k = fixed_k
        else:
            share = np.cumsum(clamped) / trace if trace > 0 else np.zeros(d)
            k = min(int(np.searchsorted(share, n_components, side="right") + 1), d)
        kept = clamped[:k]
        # the kept share is at most 1 (noise can push clamped eigenvalues above the trace)
        total = max(trace, float(kept.sum()))

        self.mean_ = mean
        # only the k kept vectors are copied out (a slice would keep all d alive)
        self.components_ = _svd_flip_rows(evecs[:, :k].T)
        del evecs
        self.explained_variance_ = kept.copy()
        self.explained_variance_ratio_ = kept / total if total > 0 else np.zeros(k)
        self.singular_values_ = np.sqrt(kept * dof)
        # mean of the eigenvalues not kept (trace minus the kept ones), clamped at 0
        self.noise_variance_ = (max((trace - float(evals[:k].sum())) / (d - k), 0.0)
                                if k < d else 0.0)
        self.n_components_ = k
        self.n_samples_ = n
        return self

    # ------------------------------------------------------------------
    def _whiten_scale(self):
        scale = np.sqrt(self.explained_variance_)
        return np.maximum(scale, np.finfo(float).eps)

    @fixed_float_state  # (private rows: no error state may decide what happens)
    def transform(self, X):
        """Project X on the private principal axes.

        Rows of norm above ``data_norm_`` are scaled down to it first, as in
        ``fit`` (values beyond the public bound are never trusted: a finite
        row near the float64 limit would otherwise project to inf).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components_)
        """
        check_is_fitted(self)
        X = validate_private_data(self, X, accept_sparse=["csr", "csc"],
                                  dtype=[np.float64, np.float32], reset=False)
        X = clip_rows_for_transform(X, self.data_norm_)  # rows beyond the bound, as in fit
        V = self.components_.astype(X.dtype, copy=False)
        # X V^T - mean V^T: no centred (dense) copy of a sparse X; the narrow projection is
        # centred and whitened in float64 and saturated to X's dtype (a float32 value inside
        # the public bound would otherwise overflow to inf: skdp._validation.saturate)
        Xt = np.asarray(X @ V.T).astype(np.float64, copy=False)  # (overflow: silent here)
        Xt -= self.mean_ @ self.components_.T
        if self.whiten:
            Xt /= self._whiten_scale()
        return saturate(Xt, X.dtype)

    def inverse_transform(self, X):
        """Map projections back to the input space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components_)

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features_in_)
        """
        check_is_fitted(self)
        if sp.issparse(X):  # projections are narrow: the dense output is larger than this copy
            check_sparse_structure(X)  # (scipy's toarray trusts it)
            X = X.toarray()
        X = np.asarray(X)
        X = call_without_values(  # a cell that is not a number: no value in the message
            X.astype, X.dtype if X.dtype in (np.float32, np.float64) else np.float64, copy=False)
        if X.ndim != 2 or X.shape[1] != self.n_components_:
            raise ValueError(
                f"X must have shape (n_samples, {self.n_components_}), got {X.shape}."
            )
        if self.whiten:
            X = X * self._whiten_scale().astype(X.dtype)
        return X @ self.components_.astype(X.dtype) + self.mean_.astype(X.dtype)

    def get_covariance(self):
        """Covariance of the probabilistic PCA model built from the private fit.

        ``components_.T @ diag(explained_variance_ - noise_variance_) @
        components_ + noise_variance_ * I`` (post-processing only).

        Returns
        -------
        cov : ndarray of shape (n_features, n_features)
        """
        check_is_fitted(self)
        V = self.components_
        ev = np.maximum(self.explained_variance_ - self.noise_variance_, 0.0)
        cov = (V.T * ev) @ V
        cov.flat[:: cov.shape[0] + 1] += self.noise_variance_
        return cov

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.sparse = True
        return tags
