"""Block-wise statistics of dask arrays: the kernel runs on the workers, only sums travel.

``PrivatePCA``, ``PrivateOLS`` and ``PrivateRandomProjection`` release a
noisy function of one sum over rows (a clipped Gram matrix). On a
``dask.array`` that sum is computed where the blocks
live: every row block is reduced to its ``(k, k)`` partial sum by
:func:`skdp._stats.clipped_gram` on a worker, the partial sums are added in
a binary tree on the workers, and only the final ``(k, k)`` matrix (and one
flag saying whether every value was finite) reaches the client. The noise
is added once, on the client, by the estimator, exactly as for a numpy
array; the release is the same function of the same statistic, so the
privacy analysis is unchanged (the sum is exact up to floating-point
reassociation, which the grid releases already cover).

The number of rows is public (replace-one relation): a dask array with
unknown chunk sizes is refused rather than counted, and so is a dask
DataFrame or Series (its length is never known without running its
partitions; ``X.to_dask_array(lengths=True)`` converts it where the user
chooses). dask is an optional dependency (``pip install
'skdp[dask]'``); nothing here imports it unless a dask collection is passed.
"""

import numpy as np

__all__ = ["is_dask_collection", "check_dask_input", "as_dask_rows", "blockwise_sum",
           "scale_labels", "dask_clipped_gram", "dask_max_row_norm", "validate_fit_data",
           "check_dask_weights"]


def is_dask_collection(X):
    """True for a dask array, DataFrame or Series (without importing dask)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "__dask_graph__")


def _as_array(X, name):
    import dask.array as da

    from ._validation import check_known_chunks

    check_known_chunks(X, name)  # a DataFrame or Series: refused (its length is not known)
    if not isinstance(X, da.Array):
        raise TypeError(f"{name} must be a dask array, got {type(X).__name__}.")
    return X


def check_dask_input(estimator, X, y=None, *, reset=True):
    """Validate the structure of dask inputs (no values read) and align ``y`` with ``X``.

    Sets ``n_features_in_`` (and removes ``feature_names_in_``: a dask
    array has no column names) when ``reset``. Returns ``(X, y, n, d)`` with ``X``
    re-chunked to whole rows (one chunk along the columns) and ``y`` (a dask
    array, or None) chunked like ``X``'s rows. Value checks (finiteness)
    happen inside the block reduction.
    """
    X = _as_array(X, "X")  # (unknown chunk sizes and DataFrames are refused there)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D dask array for X, got {X.ndim} dimension(s).")
    if not (np.issubdtype(X.dtype, np.floating) or np.issubdtype(X.dtype, np.integer)
            or X.dtype == bool):
        from ._validation import _dtype_name

        raise ValueError(f"X must be numeric, got dtype {_dtype_name(X.dtype)}.")
    n, d = int(X.shape[0]), int(X.shape[1])
    if n < 1 or d < 1:
        raise ValueError(f"Found array with shape {(n, d)}; a non-empty 2-D array is required.")
    if reset:
        estimator.n_features_in_ = d
        if hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
    elif getattr(estimator, "n_features_in_", d) != d:
        raise ValueError(f"X has {d} features, but {type(estimator).__name__} is expecting "
                         f"{estimator.n_features_in_} features as input.")
    X, y, _ = as_dask_rows(X, y)
    return X, y, n, d


def as_dask_rows(X, y=None, sample_weight=None):
    """``(X, y, w)`` as dask arrays chunked alike (rows), for a dask-backed ``AugmentedRows``.

    ``X`` gets one chunk along the columns; ``y`` and ``w`` (numpy or dask)
    follow ``X``'s row chunks. ``w`` is kept as the weights themselves (the
    block function takes their square roots).
    """
    import dask.array as da

    X = _as_array(X, "X").rechunk({1: -1})
    rows = (X.chunks[0],)

    def align(v, name):
        if v is None:
            return None
        if is_dask_collection(v):
            v = _as_array(v, name)
            if np.issubdtype(v.dtype, np.complexfloating):  # its dtype: public, like numpy's check
                raise ValueError(f"Complex data not supported: {name} must be real-valued.")
        else:  # a cell that is not a number: the error names no value (numpy's would quote it)
            from ._validation import call_without_values

            v = da.from_array(call_without_values(np.asarray, v, dtype=np.float64, name=name)
                              .reshape(-1), chunks=rows)
        if v.ndim == 2 and v.shape[1] == 1:
            v = v[:, 0]
        if v.ndim != 1 or v.shape[0] != X.shape[0]:
            raise ValueError(f"{name} must be 1-D with one entry per row of X.")
        return v.rechunk(rows)

    return X, align(y, "y"), align(sample_weight, "sample_weight")


class _BlockError(ValueError):
    """A block that failed conversion, raised on a worker with a value-free message.

    Its message is made by :func:`skdp._validation.call_without_values`
    (no value of the data), so the client may show it
    (:func:`_compute_without_values`); every other worker exception is
    replaced there by a message without its text.
    """


def _as_float_rows(block):
    """A block as a float array: float32 and float64 as held, anything else as float64 (not
    the collection's declared dtype, which a block need not match: an int64 declaration
    would truncate floats)."""
    arr = np.asarray(block)
    return arr if arr.dtype in (np.float32, np.float64) else arr.astype(np.float64)


def _convert_block(block, name, dtype=None):
    """One block as an ndarray of ``dtype`` (``None``: :func:`_as_float_rows`), on a worker;
    a failed conversion raises :class:`_BlockError` with a message that quotes no value
    (numpy's would quote the cell)."""
    from ._validation import call_without_values

    try:
        if dtype is None:
            return call_without_values(_as_float_rows, block, name=name)
        return call_without_values(np.asarray, block, dtype=dtype, name=name)
    except (ValueError, TypeError) as exc:
        err = _BlockError(str(exc))
    raise err from None  # outside the handler: no __context__


def _compute_without_values(*collections, name):
    """``dask.compute(*collections)``, with any worker exception re-raised without values.

    A dask collection may declare a float dtype and hold anything: the
    exception a worker raises on its values (numpy's conversion errors quote
    the offending cell) would otherwise reach the caller verbatim. A
    :class:`_BlockError` (already value-free) keeps its message; any other
    exception is replaced by one naming only its type and ``name``. The
    original is neither chained (``__cause__``) nor kept as ``__context__``.
    """
    from dask import compute

    return _run_without_values(lambda: compute(*collections), name)


def _run_without_values(fn, name):
    """``fn()``, a computation on the dask workers, with its exceptions re-raised without values
    (:func:`_compute_without_values`)."""
    try:
        return fn()
    except _BlockError as exc:
        err = ValueError(str(exc))
    except Exception as exc:
        err = ValueError(
            f"Computing {name} on the dask workers failed ({type(exc).__name__}); the original "
            "message is withheld because it may quote private values. The blocks must hold "
            "finite real numbers.")
    raise err from None  # outside the handlers: the original is not kept as __context__


def _block_apply(fn, xb, yb, wb, params, kwargs):
    """``fn`` of one block's ``AugmentedRows``, and whether its values were finite (on a worker).

    The blocks are converted by :func:`_convert_block` (X to float as it is
    held, ``y`` and the weights to float64): a block that holds something
    other than numbers raises without values.
    """
    from ._stats import AugmentedRows

    with np.errstate(all="ignore"):  # a worker's error state decides nothing (skdp.base)
        xb = _convert_block(xb, "X")
        ok = bool(np.all(np.isfinite(xb)))
        if yb is not None:
            yb = _convert_block(yb, "y", np.float64)
            ok = ok and bool(np.all(np.isfinite(yb)))
        if wb is not None:
            wb = _convert_block(wb, "sample_weight", np.float64)
        if not ok:
            return None, False
        rows = AugmentedRows(xb, params["data_norm"], y=yb, label_bound=params["label_bound"],
                             intercept=params["intercept"], sample_weight=wb)
        return fn(rows, **kwargs), True


def _scale_label_block(block, bound, scale):
    """One block of labels in float64, clipped to ``bound`` and times ``scale`` (on a worker);
    a value that is not finite is kept, for the finiteness check of :func:`_block_apply`."""
    yb = _convert_block(block, "y", np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(yb), np.clip(yb, -bound, bound) * scale, yb)


def scale_labels(y, bound, scale):
    """``clip(y, -bound, bound) * scale`` of a dask ``y``, block-wise in float64.

    Converted before the scaling: in the labels' own dtype (float16, float32) a label
    inside the public bound could overflow to inf and fail the fit after its charge.
    """
    return y.map_blocks(_scale_label_block, float(bound), float(scale), dtype=np.float64)


def _add(a, b):
    if not (a[1] and b[1]):
        return None, False
    return a[0] + b[0], True


def _tree_sum(parts):
    from dask import delayed

    while len(parts) > 1:
        nxt = [delayed(_add)(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            nxt.append(parts[-1])
        parts = nxt
    return parts[0]


def blockwise_sum(rows, fn, **kwargs):
    """``sum_b fn(rows of block b, **kwargs)`` for a dask-backed ``AugmentedRows``, on the workers.

    ``fn`` must be additive over row blocks (a sum over rows: the Gram
    kernel, the grid sketch's integer Gram) and picklable. The partial
    results are added in a binary tree of tasks on the workers; only the
    final sum reaches the client. Raises ``ValueError`` (without values) if
    X or y holds NaN or infinity, or if a block does not hold numbers
    (:func:`_compute_without_values`).
    """
    from dask import delayed

    xblocks = rows.X.to_delayed()[:, 0]
    nb = len(xblocks)
    yblocks = list(rows.y.to_delayed()) if rows.y is not None else [None] * nb
    wblocks = list(rows.sqrt_w.to_delayed()) if rows.sqrt_w is not None else [None] * nb
    params = dict(data_norm=rows.data_norm, label_bound=rows.label_bound, intercept=rows.intercept)
    parts = [delayed(_block_apply)(fn, xb, yb, wb, params, kwargs)
             for xb, yb, wb in zip(xblocks, yblocks, wblocks)]
    (total, ok), = _compute_without_values(_tree_sum(parts), name="X, y or sample_weight")
    if not ok:
        raise ValueError("Input contains NaN or infinity.")
    return total


def dask_clipped_gram(X, data_norm, *, y=None, label_bound=None, intercept=None,
                      sample_weight=None, chunk_rows=None):
    """:func:`skdp._stats.clipped_gram` of a dask array, reduced block-wise on the workers."""
    from ._stats import AugmentedRows, clipped_gram

    rows = AugmentedRows(X, data_norm, y=y, label_bound=label_bound, intercept=intercept,
                         sample_weight=sample_weight)
    return clipped_gram(rows, None, chunk_rows=chunk_rows)


def _block_max_norm(xb):
    from ._stats import max_row_norm

    xb = _convert_block(xb, "X")
    return max_row_norm(xb) if np.all(np.isfinite(xb)) else np.inf


def dask_max_row_norm(X):
    """The largest row norm of a dask array, one float per block to the client.

    Only for the documented, warned inference of an omitted ``data_norm``
    (:class:`~skdp.PrivacyLeakWarning`). ``inf`` if a value is not finite.
    """
    from dask import delayed

    X = _as_array(X, "X").rechunk({1: -1})
    parts = [delayed(_block_max_norm)(xb) for xb in X.to_delayed()[:, 0]]
    return float(max(_compute_without_values(*parts, name="X"))) if parts else 0.0


def validate_fit_data(estimator, X, y=None, *, requires_y=False, **validate_kwargs):
    """``validate_data`` for numpy/pandas/sparse input, :func:`check_dask_input` for dask.

    Returns ``X`` (and ``y`` when ``requires_y``) like ``validate_data``;
    its errors carry no value of the data
    (:func:`skdp._validation.validate_private_data`). For dask input the values are not read here: they are checked for
    finiteness inside the block reduction.
    """
    if is_dask_collection(X):
        Xd, yd, _, _ = check_dask_input(estimator, X, y if requires_y else None)
        if requires_y:
            if yd is None:
                raise ValueError("requires y to be passed, but the target y is None.")
            if not (np.issubdtype(yd.dtype, np.number) or yd.dtype == bool):
                from ._validation import _dtype_name

                raise ValueError(f"y must be numeric, got dtype {_dtype_name(yd.dtype)}.")
            return Xd, yd
        return Xd
    from ._validation import validate_private_data

    if requires_y:
        return validate_private_data(estimator, X, y, **validate_kwargs)
    return validate_private_data(estimator, X, **validate_kwargs)


def check_dask_finite(X):
    """Raise, naming no value, unless every entry of the dask array ``X`` is a finite number.

    For routes that never read the features (``PrivateOLS(method="mean")``):
    they reject NaN and infinity like the numpy path's validation does. Each
    block is converted (:func:`_convert_block`) and checked on its worker;
    one boolean reaches the client.
    """
    import dask.array as da

    X = _as_array(X, "X")
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    Xf = X.map_blocks(_convert_block, "X", dtype=dtype)
    (ok,) = _compute_without_values(da.all(da.isfinite(Xf)), name="X")
    if not ok:
        raise ValueError("Input X contains NaN or infinity.")


def check_dask_weights(sample_weight, n):
    """Validate dask weights against ``[0, 1]`` on the workers (one boolean to the client).

    Every block is converted to float64 there (:func:`_convert_block`); errors carry no value.
    """
    import dask.array as da

    w = _as_array(sample_weight, "sample_weight")
    if w.ndim != 1 or w.shape[0] != n:
        raise ValueError(f"sample_weight.shape == {w.shape}, expected ({n},)!")
    wf = w.map_blocks(_convert_block, "sample_weight", np.float64, dtype=np.float64)
    (ok,) = _compute_without_values(da.all(da.isfinite(wf) & (wf >= 0) & (wf <= 1)),
                                    name="sample_weight")
    return w, bool(ok)
