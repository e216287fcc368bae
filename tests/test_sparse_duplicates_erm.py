"""Sparse input that stores an entry twice: the ERM routes fit the summed rows.

A record stored as ``(+2^60, x, -2^60)`` in one column has the norm of its
summed row, so its clip factor is 1; products over the stored entries would
let the huge pair swamp the other records' share of ``A^T U`` (review 33: the
first DP-GD step moved by 250x its sensitivity at n = 2000).
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skdp import PrivateHuberSVM, PrivateLogisticRegression

BIG = 2.0**60


def _with_cancelling_pair(X):
    """CSR of ``X`` whose last row stores column 0 as ``BIG, x, -BIG`` (sums to ``x``)."""
    n, d = X.shape
    head = sp.csr_matrix(X[:-1])
    data = np.r_[BIG, X[-1, 0], -BIG, X[-1, 1:]]
    idx = np.r_[0, 0, 0, np.arange(1, d)]
    return sp.csr_matrix((np.r_[head.data, data], np.r_[head.indices, idx],
                          np.r_[head.indptr, head.indptr[-1] + data.size]), shape=(n, d))


@pytest.mark.parametrize("cls", [PrivateLogisticRegression, PrivateHuberSVM])
@pytest.mark.parametrize("perturbation", ["output", "objective", "gradient"])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_duplicates_fit_as_their_sum(cls, perturbation, fmt):
    rng = np.random.default_rng(0)
    n, d = 300, 4
    X = rng.uniform(-0.5, 0.5, (n, d))
    y = (X[:, 0] + 0.1 * rng.standard_normal(n) > 0).astype(int)
    stored = _with_cancelling_pair(X).asformat(fmt)
    assert stored.nnz > n * d - 1  # the pair is kept by the format conversion
    summed = stored.copy()
    summed.sum_duplicates()  # the stored record's own sum (its x is lost to rounding: 0)
    assert summed.nnz == n * d
    kw = dict(perturbation=perturbation, epsilon=1.0, delta=1e-5, data_norm=1.0,
              classes=[0, 1], random_state=7)
    a = cls(**kw).fit(stored, y)
    b = cls(**kw).fit(summed, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
