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


def _transformers_and_predictors():
    from skdp import PrivateOLS, PrivatePCA, PrivateRandomProjection
    from skdp.preprocessing import PrivateRowNormScaler, PrivateStandardScaler

    return [
        (PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], random_state=0), "decision_function"),
        (PrivateOLS(data_norm=1.0, label_bound=1.0, random_state=0), "predict"),
        (PrivatePCA(n_components=2, data_norm=1.0, random_state=0), "transform"),
        (PrivateRandomProjection(n_components=2, data_norm=1.0, random_state=0), "transform"),
        (PrivateRowNormScaler(norm_range=(0.01, 10.0), random_state=0), "transform"),
        (PrivateStandardScaler(bounds=(-0.5, 0.5), with_mean=False, random_state=0), "transform"),
    ]


@pytest.mark.parametrize("case", range(6))
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_predict_and_transform_read_duplicates_as_their_sum(case, fmt):
    # review 34, F1-F3: clipping, scaling or multiplying the stored entries one by one
    # applied to each copy what is meant for their sum (wrong outputs, beyond the bounds)
    est, method = _transformers_and_predictors()[case]
    rng = np.random.default_rng(1)
    X = rng.uniform(-0.5, 0.5, (200, 4))
    y = (X[:, 0] > 0).astype(int)
    est.fit(X, y)
    stored = sp.csr_matrix(X[:5]).asformat(fmt)
    stored = sp.csr_matrix((np.r_[stored.tocsr().data, 0.3, 0.3, 0.3],
                            np.r_[stored.tocsr().indices, 1, 1, 1],
                            np.r_[stored.tocsr().indptr[:-1], stored.nnz + 3]),
                           shape=(5, 4)).asformat(fmt)  # the last row stores column 1 four times
    summed = stored.copy()
    summed.sum_duplicates()
    a = getattr(est, method)(stored)
    b = getattr(est, method)(summed)
    a = a.toarray() if sp.issparse(a) else np.asarray(a)
    b = b.toarray() if sp.issparse(b) else np.asarray(b)
    np.testing.assert_array_equal(a, b)


def test_unsigned_sparse_indices_are_refused_before_the_charge():
    from skdp import BudgetLedger

    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.uniform(-0.5, 0.5, (50, 3)))
    X.indices = X.indices.astype(np.uint64)
    X.indptr = X.indptr.astype(np.uint64)
    ledger = BudgetLedger(10.0, 1e-3)
    with pytest.raises(ValueError, match="not integers that fit"):
        PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], accountant=ledger).fit(
            X, np.arange(50) % 2)
    assert ledger.spends == []


def test_values_beyond_the_stored_entries_are_ignored():
    # scipy ignores data past indptr[-1]; a NaN there was refused after the charge
    from skdp import PrivatePCA

    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.uniform(-0.5, 0.5, (60, 3)))
    spare = sp.csr_matrix((np.r_[X.data, np.nan], np.r_[X.indices, 0], X.indptr), shape=X.shape)
    a = PrivatePCA(n_components=2, data_norm=1.0, random_state=3).fit(spare)
    b = PrivatePCA(n_components=2, data_norm=1.0, random_state=3).fit(X)
    np.testing.assert_array_equal(a.components_, b.components_)


def test_sparse_weights_are_refused_before_the_charge_and_scores_name_no_count():
    # review 36, F3-F4: a 1-D sparse sample_weight was refused after the charge; score()
    # with a sparse y quoted scikit-learn's count of stored (non-zero) labels
    from skdp import BudgetLedger, PrivateOLS

    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (40, 3))
    y = X[:, 0]
    w = sp.coo_array(np.r_[np.ones(20), np.zeros(20)])
    ledger = BudgetLedger(10.0, 1e-3)
    with pytest.raises(ValueError, match="must be dense"):
        PrivateOLS(data_norm=1.0, label_bound=1.0, accountant=ledger).fit(X, y, sample_weight=w)
    assert ledger.spends == []
    reg = PrivateOLS(data_norm=1.0, label_bound=1.0, random_state=0).fit(X, y)
    for kwargs in ({"y": sp.csr_matrix(y[:, None])}, {"y": y, "sample_weight": w}):
        with pytest.raises(ValueError) as err:
            reg.score(X, **kwargs)
        assert "must be dense" in str(err.value) and "stored" not in str(err.value)


def test_a_dataframe_column_named_format_is_data():
    # review 36, F1: the sparse checks read X.format, a column of such a DataFrame
    pd = pytest.importorskip("pandas")
    from skdp import PrivatePCA

    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.uniform(-0.5, 0.5, (30, 2)), columns=["format", "other"])
    assert PrivatePCA(n_components=1, data_norm=1.0, random_state=0).fit(df).n_components_ == 1
