"""dask inputs: the Gram kernel runs block-wise on the workers, the client sees (k, k) sums only."""

import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")

from skdp import BudgetLedger, PrivacyLeakWarning  # noqa: E402
from skdp._dask import check_dask_input, dask_clipped_gram, dask_max_row_norm  # noqa: E402
from skdp._stats import clipped_gram  # noqa: E402
from skdp.decomposition import PrivatePCA  # noqa: E402
from skdp.linear_model import PrivateOLS  # noqa: E402
from skdp.random_projection import PrivateRandomProjection  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


def _data(n=5003, d=7, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / 2.5  # some rows above norm 1: clipped
    y = np.clip(X @ rng.standard_normal(d) / 2.0, -1.5, 1.5)
    return X, y


def _naive(X, R, y=None, B=None, c=None, w=None):
    norms = np.linalg.norm(X, axis=1)
    Z = X * np.minimum(1.0, R / np.maximum(norms, 1e-300))[:, None]
    cols = [Z]
    if c is not None:
        cols.append(np.full((len(X), 1), c))
    if y is not None:
        cols.append(np.clip(y, -B, B)[:, None])
    Z = np.hstack(cols)
    if w is not None:
        Z = Z * np.sqrt(w)[:, None]
    return Z.T @ Z


@pytest.mark.parametrize("with_y, c, weights", [(False, None, False), (True, 1.0, False),
                                                (True, 0.5, True), (False, 0.7, True)])
def test_blockwise_gram_matches_numpy_before_noise(client, with_y, c, weights):
    X, y = _data()
    w = np.random.default_rng(3).uniform(0, 1, len(X)) if weights else None
    Xd = da.from_array(X, chunks=(611, 3))  # uneven row blocks, split columns
    _, yd, n, d = check_dask_input(type("E", (), {})(), Xd, y if with_y else None)
    Xd = Xd.rechunk({1: -1})
    G = dask_clipped_gram(Xd, 1.0, y=yd, label_bound=1.0 if with_y else None, intercept=c,
                          sample_weight=w)
    ref = _naive(X, 1.0, y if with_y else None, 1.0, c, w)
    np.testing.assert_allclose(G, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
    np.testing.assert_allclose(clipped_gram(X, 1.0, y=y if with_y else None,
                                            label_bound=1.0 if with_y else None, intercept=c,
                                            sample_weight=w), ref, rtol=1e-10,
                               atol=1e-10 * np.abs(ref).max())


def test_nan_raises_without_values(client):
    X, _ = _data()
    X[4000, 2] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        dask_clipped_gram(da.from_array(X, chunks=(1000, 7)), 1.0)
    assert dask_max_row_norm(da.from_array(X, chunks=(1000, 7))) == np.inf


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_ols_mean_rejects_nonfinite_features_like_numpy(client, bad):
    """The mean route never reads the features' values, but on dask as on numpy a NaN or an
    infinity in X is refused (it was fitted on dask and refused on numpy), naming no value."""
    X, y = _data(3000, 4)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    X[2100, 1] = bad
    make = lambda: PrivateOLS(method="mean", label_bound=1.0, random_state=0)  # noqa: E731
    with pytest.raises(ValueError, match="Input X contains"):
        make().fit(X, y)
    est = make()
    with pytest.raises(ValueError, match="Input X contains NaN or infinity") as err:
        est.fit(da.from_array(X, chunks=(700, 4)), da.from_array(y, chunks=700))
    assert "2100" not in str(err.value)
    assert not hasattr(est, "intercept_")
    X[2100, 1] = 0.25  # finite again: fits
    assert np.isfinite(make().fit(da.from_array(X, chunks=(700, 4)),
                                  da.from_array(y, chunks=700)).intercept_)


def test_unknown_chunks_refused():
    X, _ = _data(200, 3)
    Xd = da.from_array(X, chunks=(50, 3))
    Xd = Xd[Xd[:, 0] > -10]  # boolean mask: unknown row counts
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        PrivatePCA(data_norm=1.0, random_state=0).fit(Xd)


def _forbid_materialising(monkeypatch):
    """Fail the test if the estimator pulls the dask array into the client."""
    def boom(*a, **k):
        raise AssertionError("the dask array was materialised on the client")

    monkeypatch.setattr(da.Array, "__array__", boom)
    monkeypatch.setattr(da.Array, "compute", boom)


@pytest.mark.parametrize("make", [
    lambda: PrivatePCA(n_components=3, data_norm=1.0, random_state=5),
    lambda: PrivatePCA(n_components=3, data_norm=1.0, centered=True, random_state=5),
    lambda: PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0, random_state=5),
    lambda: PrivateOLS(method="adassp", data_norm=1.0, label_bound=1.0, random_state=5),
    lambda: PrivateOLS(method="sketch", data_norm=1.0, label_bound=1.0, random_state=5),
    lambda: PrivateOLS(method="mean", data_norm=1.0, label_bound=1.0, random_state=5),
    lambda: PrivateRandomProjection(n_components=3, data_norm=1.0, random_state=5),
], ids=["pca", "pca-centered", "ols-ssp", "ols-adassp", "ols-sketch", "ols-mean", "rp"])
def test_estimators_fit_dask_like_numpy(client, monkeypatch, make):
    """Same seed, same statistic -> the same release (up to one grid step), no client pull."""
    X, y = _data(4000, 6)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = np.clip(y, -1, 1)
    needs_y = isinstance(make(), PrivateOLS)
    ref = make().fit(X, y) if needs_y else make().fit(X)
    Xd = da.from_array(X, chunks=(700, 6))
    yd = da.from_array(y, chunks=700)
    with monkeypatch.context() as m:
        _forbid_materialising(m)
        est = make().fit(Xd, yd) if needs_y else make().fit(Xd)
    assert est.n_features_in_ == 6
    for attr in ("components_", "mean_", "coef_", "intercept_", "sketch_"):
        if hasattr(ref, attr):
            a, b = np.asarray(getattr(ref, attr)), np.asarray(getattr(est, attr))
            assert a.shape == b.shape
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
    # prediction / transform on in-memory data as usual
    if needs_y:
        assert np.all(np.isfinite(est.predict(X[:10])))
    else:
        assert est.transform(X[:10]).shape == (10, est.n_components_ if hasattr(est, "n_components_")
                                               else 3)


class _LazyFrame:
    """Looks like a dask DataFrame to skdp (a dask type with a graph, columns and
    ``to_dask_array``); every way of reading its rows or counting them is recorded."""

    __module__ = "dask.dataframe.stand_in"
    columns = ["a", "b", "c"]
    ndim = 2
    reads = []

    def __dask_graph__(self):
        return {}

    def __len__(self):
        self.reads.append("len")
        return 100

    def to_dask_array(self, lengths=None):
        self.reads.append("to_dask_array")
        return da.zeros((100, 3), chunks=50)

    def compute(self):
        self.reads.append("compute")

    def __array__(self, dtype=None, copy=None):
        self.reads.append("array")
        return np.zeros((100, 3))


def test_dask_dataframes_are_refused_before_their_rows_are_counted():
    """Review 23, F2: a dask DataFrame's length is known only by running its partitions, which
    fits and ledger.accepts did before the budget check (a refused fit read the data, and a
    worker's log quoted a cell that failed to convert). Refused from its type, like a dask
    array of unknown chunk sizes; nothing read, nothing spent."""
    y = np.zeros(100)
    for est in (PrivatePCA(n_components=2, data_norm=1.0),
                PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0),
                PrivateRandomProjection(n_components=2, data_norm=1.0)):
        ledger = BudgetLedger(0.01, 1e-9)  # too little: the refusal must not read first
        est.set_params(accountant=ledger)
        frame = _LazyFrame()
        with pytest.raises(ValueError, match="to_dask_array"):
            est.fit(frame, y)
        with pytest.raises(ValueError, match="to_dask_array"):
            ledger.accepts(est, frame, y)
        if isinstance(est, PrivateOLS):  # a dask Series as y, next to a dask array X
            with pytest.raises(ValueError, match="to_dask_array"):
                est.fit(da.zeros((100, 3), chunks=50), frame)
        assert _LazyFrame.reads == [] and ledger.spends == []
        assert not hasattr(est, "n_features_in_")


def test_inferred_data_norm_warns(client):
    X, _ = _data(1000, 4)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est = PrivatePCA(n_components=2, random_state=0).fit(da.from_array(X, chunks=(300, 4)))
    assert any(issubclass(r.category, PrivacyLeakWarning) for r in rec)
    assert est.data_norm is None and est.data_norm_ > 0


def test_classifiers_refuse_dask_before_the_charge():
    from skdp import BudgetLedger
    from skdp.linear_model import PrivateLogisticRegression

    X, y = _data(500, 4)
    led = BudgetLedger(epsilon=5.0, delta=1e-4)
    clf = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], accountant=led)
    with pytest.raises(TypeError, match="in memory"):
        clf.fit(da.from_array(X, chunks=(100, 4)), (y > 0).astype(int))
    assert led.spent.epsilon == 0.0 and not hasattr(clf, "coef_")


_SECRET = "SSN 123-45-6789"


def _lying_block(cells):
    return np.asarray(cells, dtype=object)


def _declared_float(cells, shape):
    """A dask array that declares float64 but whose one block holds ``cells`` (strings)."""
    from dask import delayed

    return da.from_delayed(delayed(_lying_block)(cells), shape=shape, dtype=np.float64)


def _raising_block(n):
    raise KeyError(f"no record for {_SECRET}")


def _assert_value_free(exc_info):
    exc = exc_info.value
    assert _SECRET not in str(exc) and "123-45" not in str(exc)
    assert exc.__cause__ is None and exc.__context__ is None and exc.__suppress_context__


@pytest.mark.parametrize("scheduler", ["synchronous", "client"])
@pytest.mark.parametrize("where", ["y", "X", "sample_weight", "X-norm"])
def test_worker_conversion_errors_carry_no_value(request, scheduler, where):
    """A block that holds a non-numeric cell under a declared float dtype: the worker's numpy
    error quotes the cell; the caller gets a value-free message, not chained to it."""
    import dask

    if scheduler == "client":
        request.getfixturevalue("client")
    X = np.random.default_rng(0).normal(size=(4, 2)) / 2
    y = np.array([0.1, 0.2, 0.3, 0.4])
    Xd, yd, wd = da.from_array(X, chunks=(4, 2)), da.from_array(y, chunks=4), None
    if where == "y":
        yd = _declared_float(np.array(["1.0", "2.0", _SECRET, "0.5"], dtype=object), (4,))
    elif where == "sample_weight":
        wd = _declared_float(np.array(["1.0", "0.5", _SECRET, "0.5"], dtype=object), (4,))
    else:
        Xd = _declared_float(np.array([["0.1", "0.2"], [_SECRET, "0.1"], ["0", "0"],
                                       ["0", "0"]], dtype=object), (4, 2))
    est = PrivateOLS(method="ssp", data_norm=None if where == "X-norm" else 1.0,
                     label_bound=1.0, random_state=0)
    ctx = dask.config.set(scheduler="synchronous") if scheduler == "synchronous" else None
    with ctx or warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError, match="cannot be converted to float") as info:
            est.fit(Xd, yd, sample_weight=wd)
    _assert_value_free(info)
    assert ("sample_weight" if where == "sample_weight" else where[0]) in str(info.value)
    assert not hasattr(est, "coef_")


def test_other_worker_exceptions_are_withheld():
    """Any other exception raised while computing the blocks: its text is withheld."""
    import dask
    from dask import delayed

    Xd = da.from_delayed(delayed(_raising_block)(4), shape=(4, 2), dtype=np.float64)
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match=r"failed \(KeyError\); the original message is "
                                             "withheld") as info:
            PrivatePCA(data_norm=1.0, random_state=0).fit(Xd)
        _assert_value_free(info)
        with pytest.raises(ValueError, match="withheld") as info:
            dask_max_row_norm(Xd)
        _assert_value_free(info)


def _unknown_rows(a):
    """The same rows with unknown chunk sizes (a boolean mask that keeps every row)."""
    return a[da.ones(a.shape[0], chunks=a.chunks[0], dtype=bool)]


def _dask_structure_cases():
    X, y = _data(400, 3)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    Xd, yd = da.from_array(X, chunks=(100, 3)), da.from_array(y, chunks=100)
    w = da.full(400, 0.5, chunks=100)
    PCA = lambda L: PrivatePCA(n_components=2, data_norm=1.0, delta=1e-6, accountant=L)  # noqa: E731
    RP = lambda L: PrivateRandomProjection(data_norm=1.0, delta=1e-6, accountant=L)  # noqa: E731
    OLS = lambda L: PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0, delta=1e-6,  # noqa: E731
                               accountant=L)
    unknown = "unknown chunk sizes"
    return [
        ("pca-X-unknown", PCA, (_unknown_rows(Xd),), {}, "X has " + unknown),
        ("rp-X-unknown", RP, (_unknown_rows(Xd),), {}, "X has " + unknown),
        ("ols-X-unknown", OLS, (_unknown_rows(Xd), yd), {}, "X has " + unknown),
        ("ols-y-unknown", OLS, (Xd, _unknown_rows(yd)), {}, "y has " + unknown),
        ("ols-numpy-X-y-unknown", OLS, (X, _unknown_rows(yd)), {}, "y has " + unknown),
        ("pca-w-unknown", PCA, (Xd,), {"sample_weight": _unknown_rows(w)},
         "sample_weight has " + unknown),
        ("rp-w-unknown", RP, (Xd,), {"sample_weight": _unknown_rows(w)},
         "sample_weight has " + unknown),
        ("ols-w-unknown", OLS, (Xd, yd), {"sample_weight": _unknown_rows(w)},
         "sample_weight has " + unknown),
        ("ols-y-short", OLS, (Xd, yd[:399]), {}, r"inconsistent numbers of samples: \[400, 399\]"),
        ("ols-y-2-columns", OLS, (Xd, da.zeros((400, 2), chunks=100)), {},
         r"y should be a 1d array, got an array of shape \(400, 2\)"),
        ("ols-w-short", OLS, (Xd, yd), {"sample_weight": w[:399]}, "one entry per row"),
    ]


@pytest.mark.parametrize("name, make, args, kwargs, match", _dask_structure_cases(),
                         ids=[c[0] for c in _dask_structure_cases()])
def test_dask_structure_errors_come_before_the_charge(name, make, args, kwargs, match):
    """Unknown chunk sizes (X, y or weights) and a y of the wrong length or width are decided by
    the structure: refused before anything is charged, nothing left fitted."""
    from skdp import BudgetLedger

    ledger = BudgetLedger(epsilon=10.0, delta=1e-3)
    est = make(ledger)
    with pytest.raises(ValueError, match=match):
        est.fit(*args, **kwargs)
    assert ledger.spends == [] and ledger.spent.epsilon == 0.0 and ledger.spent.delta == 0.0
    assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("__")]


def test_dask_y_column_still_fits(client):
    """A dask y of shape (n, 1) is one target column: accepted, as before."""
    X, y = _data(400, 3)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    est = PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0, random_state=0).fit(
        da.from_array(X, chunks=(100, 3)), da.from_array(y[:, None], chunks=(100, 1)))
    assert est.coef_.shape == (3,)


def test_blocks_are_read_as_held_not_cast_to_the_declared_dtype():
    """A collection may declare int64 and hold floats: the blocks are not truncated to the
    declaration (the kernel read 0 for every |x| < 1)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.9, 0.9, size=(100, 2))
    Xd = da.from_array(X, chunks=(50, 2)).map_blocks(lambda b: b, dtype=np.int64)
    np.testing.assert_allclose(dask_clipped_gram(Xd, 5.0), clipped_gram(X, 5.0), rtol=1e-12)
    assert dask_max_row_norm(Xd) == pytest.approx(np.linalg.norm(X, axis=1).max(), rel=1e-12)


def test_lazy_dataframe_conversion_errors_carry_no_value():
    """A dask DataFrame whose lazy conversion fails on a cell: computing its partition lengths
    ran outside the masking, and numpy's message quoting the cell escaped the fit after the
    charge (review 10, F3). DataFrames are now refused before anything is run (review 23)."""
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(np.random.default_rng(0).uniform(-0.5, 0.5, size=(100, 3)),
                         columns=list("abc")).astype(object)
    frame.loc[37, "b"] = "patient-4242 HIV+"
    ddf = dd.from_pandas(frame, npartitions=4).astype(float)
    y = np.random.default_rng(1).uniform(-0.5, 0.5, 100)
    for est, args in [(PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0, delta=1e-6),
                       (ddf, y)), (PrivatePCA(n_components=2, data_norm=1.0, delta=1e-6), (ddf,))]:
        ledger = BudgetLedger(10.0, 1e-3)
        est.set_params(accountant=ledger)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(ValueError, match="to_dask_array") as err:
                est.fit(*args)
        assert "4242" not in str(err.value) and "HIV" not in str(err.value)
        assert ledger.spends == []


def test_complex_dask_labels_are_refused_like_numpy():
    """A complex dask y was fitted with its imaginary part dropped (review 10, F12)."""
    X, y = _data(500, 3)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    yc = np.clip(y, -1, 1) + 0.5j
    for method in ("mean", "ssp"):
        est = PrivateOLS(method=method, data_norm=1.0, label_bound=1.0, delta=1e-6)
        with pytest.raises(ValueError, match="Complex data not supported"):
            est.fit(da.from_array(X, chunks=(100, 3)), da.from_array(yc, chunks=100))
        with pytest.raises(ValueError, match="Complex data not supported"):
            est.fit(X, yc)


@pytest.mark.parametrize("dtype, data_norm", [(np.float16, 1e5), (np.float32, 2.0**128)])
def test_dask_labels_are_scaled_in_float64_on_the_workers(client, dtype, data_norm):
    # review 19, f2: PrivateOLS scaled a dask y (y * data_norm / label_bound) in its own dtype,
    # so a float16 (or float32) label inside the public bound overflowed to inf and the fit
    # raised after its charge, while the neighbour with a smaller last label fitted
    X, y = _data(2000, 4)
    X = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0) * data_norm
    coefs = []
    for last in (1.0, 2.0):  # both within label_bound = 2
        y[-1] = last
        ledger = BudgetLedger(10.0, 1e-3)
        est = PrivateOLS(method="ssp", data_norm=data_norm, label_bound=2.0, delta=1e-6,
                         accountant=ledger, random_state=0)
        est.fit(da.from_array(X, chunks=(500, 4)), da.from_array(y.astype(dtype), chunks=500))
        assert len(ledger.spends) == 1 and np.all(np.isfinite(est.coef_))
        coefs.append(est.coef_)
    # the scaled labels are the numpy path's (same seed, same release up to one grid step)
    ref = PrivateOLS(method="ssp", data_norm=data_norm, label_bound=2.0, delta=1e-6,
                     accountant=BudgetLedger(10.0, 1e-3), random_state=0).fit(X, y.astype(dtype))
    np.testing.assert_allclose(coefs[-1] * data_norm, ref.coef_ * data_norm, rtol=1e-5,
                               atol=1e-5)  # (at the rows' scale)
    # a label that is not finite is still refused, not clipped into the bound
    y[3] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        PrivateOLS(method="ssp", data_norm=data_norm, label_bound=2.0, delta=1e-6).fit(
            da.from_array(X, chunks=(500, 4)), da.from_array(y.astype(dtype), chunks=500))
