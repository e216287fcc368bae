"""Benchmark: fit time and extra peak memory of every estimator at scale, per input kind.

For each input kind and estimator route, a fresh Python process (1 BLAS
thread through ``threadpoolctl``) builds the input, times the physical floor
in the same process, then times one fit and measures the peak memory of a
second fit under ``tracemalloc`` (``--one-fit``: one traced fit gives both,
for runs of many minutes; its time is then an upper bound, as tracing slows
every allocation):

* ``x_floor``: fit time divided by the floor's time. The floor is one
  ``X.T @ X`` computed in float64 (float32 and memmapped rows converted
  slice by slice; for sparse input the sparse product ``X.T @ X``) for
  PrivatePCA, PrivateOLS and PrivateRandomProjection, and
  scikit-learn's ``LogisticRegression(solver="lbfgs")`` (default settings,
  float32 input kept float32) on the same data for the classifiers; on the
  memmap only when twice the file fits in the available memory (scikit-learn
  reads it whole), else one ``X.T @ X``, marked ``xtx``.
* ``x_xtx32`` (float32 inputs): fit time divided by one ``X.T @ X`` in
  float32 (``sgemm``, half the work). The estimators accumulate in float64
  on purpose: the statistic's rounding error must stay far below its
  sensitivity, and float32 sums over a million rows would not.
* Each fit is timed after a warm-up fit of the same estimator on the first
  2000 rows (imports and calibration caches are one-time costs).
* ``mem_x_input``: the peak of the memory traced during ``fit`` (numpy and
  scipy register their buffers with ``tracemalloc``) divided by the bytes of
  the input (``nbytes`` of the array, of ``data + indices + indptr`` for CSR,
  of the file for the memmap). Inputs are built before tracing starts. For
  the dask rows the input lives on the workers and the figure is the client's
  peak divided by the array's bytes (target: independent of n).
* ``status``: ``ok``, the exception's class name, or ``timeout``. Warnings
  raised during a fit (e.g. the sketch routes' floating-point release above
  ``d = 256``, which the estimators refuse unless ``allow_float_sketch=True``,
  set here so that their cost is measured) are printed under the table.

Targets of issue 14: PCA / OLS / RP fit <= 1.3 x_floor and extra memory <=
0.1x input (+ O(d^2)); ERM output/objective <= 1.0x scikit-learn
``LogisticRegression``, gradient route (default steps) <= 10x, ERM memory <=
0.3x input; the 10M x 100 float32 memmap fits for every estimator; CSR 1M x
10 000 at 0.1% density fits in memory proportional to nnz; dask client memory
independent of n.

Inputs (``--quick``: every size divided so that the whole run takes about a
minute): dense 1M x 100 float64, dense 1M x 100 float32, a 10M x 100 float32
``np.memmap`` (4 GB file in a temporary directory, read through the page
cache), CSR 1M x 10 000 at 0.1% density, and a dask array 2M x 50 on a
``dask.distributed.LocalCluster`` (2 worker processes; skipped when dask is
not installed: ``pip install 'skdp[dask]'``). Rows have norm at most 1 and
``data_norm=1``, ``label_bound=1`` and ``classes`` are given (public bounds).

Measured (2 shared cores, one BLAS thread; single timings swing by about 30%):

=============================  ======  =========  ==========  ==========  ==========
input                          PCA     OLS ssp    OLS adassp  OLS sketch  RP
=============================  ======  =========  ==========  ==========  ==========
memmap 10M x 100 f32 (x_floor) 1.23    0.62       0.93        0.96        0.80
CSR 1M x 10 000 0.1% (s)       130     232        614         649         312
CSR ... mem / nnz bytes        26      39         45          39          26
CSR Zipf columns (s)           38
=============================  ======  =========  ==========  ==========  ==========

(PCA on CSR: 130 s since the selection skips calibrations its bounds rule out, 146 s
before; on the opt-in ``csrzipf`` input, whose leading eigenvalues stand out of the noise,
Lanczos finds the kept pairs: 38 s, 153 s before; 204 s before only the kept eigenvectors were
computed;
364 s and 46x before the in-place calibration and post-processing. memmap: extra memory 0.001-0.002 of the file. CSR, ``--one-fit``: the
sparse ``X.T @ X`` takes 9 s; the time is the ``O(d^3)`` algebra on the
dense 10 000 x 10 000 result and the memory a few such matrices, 800 MB =
6.3x the nnz bytes each; above ``d = 256`` the OLS sketch and RP have no
floating-point-safe release and refuse unless ``allow_float_sketch=True``,
which the benchmark sets: a floating-point sketch, with a warning. RP on this CSR input: a sketch of
``r = max(300, d) = 10 000`` rows, then its right singular vectors; it hit
the 1400 s timeout in LAPACK's SVD of the 10 000 x 10 000 sketch until the
components came from the eigenvectors of the sketch's ``d x d`` Gram matrix
above 1 000 features: 312 s.)

==========================  ==========  ==========  ==============  ==========
classifier, x sklearn       output      objective   gradient        mem/input
==========================  ==========  ==========  ==============  ==========
dense 1M x 100 f64          0.42        0.57        4.39            0.04
dense 1M x 100 f32          0.67        0.86        6.49            0.08
memmap 10M x 100 f32        0.64        0.91        6.30 (68 s)     0.06-0.08
CSR 1M x 10 000 0.1%        0.75        1.06        1.39            1.4-1.7
==========================  ==========  ==========  ==============  ==========

(CSR: memory as a multiple of the nnz bytes; 1.0x of it is the one
canonical copy of ``X`` made because this input's indices are unsorted
(scipy's product output): with ``X.sum_duplicates()`` first the output
route's peak is 0.69x. ``p = 10 001``: the classifiers take the L-BFGS /
conjugate-gradient path of the solver.)

Before the subset-preconditioned solver (same script, untraced timing):
output 0.97 / objective 0.94 (dense f64), 1.11 / 1.20 (dense f32). The
gradient route's public step rule grows like ``n^0.4`` up to its cap of 112
steps (logistic loss; from ``n = 10^6``); uncapped it took 284 steps at 10M,
14.35x scikit-learn (249 s).

Writes ``benchmarks/results/scale.csv`` with columns ``input, estimator,
n, d, fit_s, floor_s, floor, x_floor, x_xtx32, mem_x_input, status``.

Run: ``python3 benchmarks/bench_scale.py [--quick] [--only KIND ...]
[--estimators NAME ...] [--timeout S] [--one-fit]``. The full sizes of the memmap
(a 4 GB file) and of the CSR input (``d = 10 000``: the d x d eigendecompositions
take minutes) run only when named with ``--only memmap32`` / ``--only csr`` or in
a full run; ``--quick`` shrinks them.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import _common  # noqa: E402  (puts the checkout's skdp on sys.path)

ESTIMATORS = ["PCA", "OLS ssp", "OLS adassp", "OLS sketch", "RandomProjection",
              "LR output", "LR objective", "LR gradient"]
#: estimators that accept dask arrays (the ERM routes need an in-memory or memmapped array)
DASK_ESTIMATORS = ["PCA", "OLS ssp", "OLS adassp", "OLS sketch", "RandomProjection"]


def kinds(quick):
    """``{name: (kind, n, d, extra)}`` of the inputs measured."""
    s = 50 if quick else 1
    return {
        f"dense {1_000_000 // s} x 100 f64": ("dense64", 1_000_000 // s, 100, None),
        f"dense {1_000_000 // s} x 100 f32": ("dense32", 1_000_000 // s, 100, None),
        f"memmap {10_000_000 // (250 if quick else 1)} x 100 f32": (
            "memmap32", 10_000_000 // (250 if quick else 1), 100, None),
        f"CSR {1_000_000 // s} x {10_000 // (10 if quick else 1)} 0.1%": (
            "csr", 1_000_000 // s, 10_000 // (10 if quick else 1), 0.001 if not quick else 0.01),
        f"dask {2_000_000 // s} x 50": ("dask", 2_000_000 // s, 50, None),
        f"CSR {1_000_000 // s} x {10_000 // (10 if quick else 1)} 0.1% Zipf columns": (
            "csrzipf", 1_000_000 // s, 10_000 // (10 if quick else 1),
            0.001 if not quick else 0.01),
    }


#: input kinds measured only when named with ``--only``
OPT_IN = {"csrzipf"}


# ---------------------------------------------------------------------------
# child process: one (input, estimator) measurement
# ---------------------------------------------------------------------------
def _labels(X, rng):
    import numpy as np

    w = rng.standard_normal(X.shape[1])
    z = X @ w.astype(X.dtype) if not hasattr(X, "tocsr") else X @ w
    z = np.asarray(z, dtype=float).ravel()
    y_cls = (z + 0.1 * rng.standard_normal(z.size) > 0).astype(int)
    y_reg = np.clip(z / max(np.abs(z).max(), 1e-12), -1.0, 1.0)
    return y_cls, y_reg


def _dense(n, d, dtype, rng, out=None):
    import numpy as np

    X = np.empty((n, d), dtype=dtype) if out is None else out
    step = 100_000
    for i in range(0, n, step):
        blk = rng.standard_normal((min(step, n - i), d))
        blk /= np.sqrt(d) * 1.2  # norms about 0.83; a few rows above 1 get clipped
        X[i:i + len(blk)] = blk
    return X


def _build(kind, n, d, extra):
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    if kind == "dense64":
        X = _dense(n, d, np.float64, rng)
        return X, X.nbytes
    if kind == "dense32":
        X = _dense(n, d, np.float32, rng)
        return X, X.nbytes
    if kind == "memmap32":
        path = extra  # written once by the parent (make_memmap), shared by every child
        X = np.memmap(path, dtype=np.float32, mode="r", shape=(n, d))
        return X, os.path.getsize(path)
    if kind == "csr":
        X = sp.random(n, d, density=extra, format="csr", random_state=rng, dtype=np.float64)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        X = sp.diags(1.0 / np.maximum(norms, 1.0)) @ X
        X = X.tocsr()
        return X, X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    if kind == "csrzipf":
        # column j non-zero with probability proportional to 1 / (j + 10), as in one-hot
        # or bag-of-words tables: the covariance has leading eigenvalues that stand out
        nnz = int(n * d * extra)
        p = 1.0 / (np.arange(d) + 10.0)
        rows = rng.integers(0, n, nnz)
        cols = rng.choice(d, size=nnz, p=p / p.sum())
        X = sp.csr_matrix((rng.random(nnz), (rows, cols)), shape=(n, d))
        X.sum_duplicates()
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        X = (sp.diags(1.0 / np.maximum(norms, 1.0)) @ X).tocsr()
        return X, X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    raise ValueError(kind)


def make_memmap(path, n, d):
    """Write the memmap input once (rows of norm about 0.83, as ``_dense``)."""
    import numpy as np

    X = np.memmap(path, dtype=np.float32, mode="w+", shape=(n, d))
    _dense(n, d, np.float32, np.random.default_rng(0), out=X)
    X.flush()
    del X
    return path


def _estimator(name):
    import numpy as np

    from skdp import PrivateLogisticRegression, PrivateOLS, PrivatePCA, PrivateRandomProjection

    common = dict(epsilon=1.0, delta=1e-8, data_norm=1.0, random_state=0)
    if name == "PCA":
        return PrivatePCA(n_components=5, **common), False
    # the sketch routes above 256 columns at these n have no grid release: allowed in floating
    # point (with the warning printed under the table) so that their cost is still measured
    if name.startswith("OLS"):
        method = name.split()[1]
        extra = {"allow_float_sketch": True} if method == "sketch" else {}
        return PrivateOLS(method=method, label_bound=1.0, **extra, **common), "reg"
    if name == "RandomProjection":
        return PrivateRandomProjection(n_components=10, allow_float_sketch=True, **common), False
    route = name.split()[1]
    return PrivateLogisticRegression(perturbation=route, classes=np.array([0, 1]), **common), "cls"


def _xtx(X, dtype):
    """One ``X.T @ X`` in ``dtype`` (memmaps read in slices; sparse: the sparse product)."""
    import numpy as np

    if hasattr(X, "tocsr"):
        return X.T @ X
    step = 200_000
    G = np.zeros((X.shape[1], X.shape[1]), dtype=dtype)
    for i in range(0, X.shape[0], step):  # memmaps larger than RAM stay possible
        b = np.asarray(X[i:i + step], dtype=dtype)
        G += b.T @ b
    return G


def _available_bytes():
    """``MemAvailable`` of ``/proc/meminfo`` (0 where unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _sklearn_fits(X):
    """scikit-learn's ``LogisticRegression`` as the classifiers' floor on this input?

    Always for in-memory inputs; for the memmap only when twice its bytes are
    available (scikit-learn reads it whole; float32 stays float32 in lbfgs).
    """
    import numpy as np

    if not isinstance(X, np.memmap):
        return True
    return _available_bytes() > 2 * X.nbytes


def _floor(name, X, y_cls):
    """(seconds, label, seconds of the float32 product or None) of the floor for ``name``."""
    import numpy as np

    if name.startswith("LR") and _sklearn_fits(X):
        from sklearn.linear_model import LogisticRegression

        t0 = time.perf_counter()
        LogisticRegression(solver="lbfgs").fit(X, y_cls)
        return time.perf_counter() - t0, "sklearn LR", None
    t0 = time.perf_counter()
    _xtx(X, np.float64)
    t64 = time.perf_counter() - t0
    t32 = None
    if getattr(X, "dtype", None) == np.float32 and not hasattr(X, "tocsr"):
        t0 = time.perf_counter()
        _xtx(X, np.float32)
        t32 = time.perf_counter() - t0
    return t64, "xtx", t32


def child(spec):
    """Measure one (input, estimator) pair; print one JSON line."""
    import warnings

    import numpy as np
    from threadpoolctl import threadpool_limits

    kind, n, d, extra, name = spec["kind"], spec["n"], spec["d"], spec["extra"], spec["estimator"]
    warnings.simplefilter("ignore")
    out = dict(fit_s=None, floor_s=None, floor="", xtx32_s=None, mem_x_input=None, status="ok",
               warnings=[])
    with threadpool_limits(1):
        if kind == "dask":
            return _child_dask(spec, out)
        X, nbytes = _build(kind, n, d, extra)
        y_cls, y_reg = _labels(X, np.random.default_rng(1))
        est, target = _estimator(name)
        y = {"reg": y_reg, "cls": y_cls}.get(target)
        out["floor_s"], out["floor"], out["xtx32_s"] = _floor(name, X, y_cls)
        warm, _ = _estimator(name)  # one-time costs (imports, calibration caches) off the clock
        m = min(2000, n)
        warm.fit(X[:m], y[:m]) if y is not None else warm.fit(X[:m])
        _timed_fit(est, X, y, nbytes, out, spec.get("one_fit", False))
    return out


def _timed_fit(est, X, y, nbytes, out, one_fit=False):
    """Fill ``fit_s``, ``mem_x_input``, ``status`` and ``warnings`` of ``out``.

    The fit is timed without tracing (``tracemalloc`` slows every allocation,
    scikit-learn's floor is timed untraced too); a second fit of a clone under
    ``tracemalloc`` gives the peak. ``one_fit``: a single traced fit gives both
    (for the runs of many minutes; its time is then an upper bound).
    """
    import tracemalloc
    import warnings

    from sklearn.base import clone

    def run(e):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                e.fit(X, y) if y is not None else e.fit(X)
            except Exception as exc:  # reported in the table
                out["status"] = type(exc).__name__ + ": " + str(exc)[:60]
        for w in caught:
            msg = f"{w.category.__name__}: {str(w.message)[:90]}"
            if msg not in out["warnings"]:
                out["warnings"].append(msg)

    out.setdefault("warnings", [])
    mem_est = est if one_fit else clone(est)
    if not one_fit:
        t0 = time.perf_counter()
        run(est)
        out["fit_s"] = time.perf_counter() - t0
        if out["status"] != "ok":
            return
    tracemalloc.start()
    t0 = time.perf_counter()
    run(mem_est)
    if one_fit:
        out["fit_s"] = time.perf_counter() - t0
    out["mem_x_input"] = tracemalloc.get_traced_memory()[1] / nbytes
    tracemalloc.stop()


def _child_dask(spec, out):
    import dask.array as da
    import numpy as np
    from dask.distributed import Client, LocalCluster

    n, d, name = spec["n"], spec["d"], spec["estimator"]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        rng = da.random.default_rng(0)
        X = rng.standard_normal((n, d), chunks=(100_000, d))
        X = X / (np.sqrt(d) * 1.2)
        X = da.clip(X, -1.0 / np.sqrt(d), 1.0 / np.sqrt(d))  # rows of norm <= 1
        y = da.clip(X[:, 0] * 10.0, -1.0, 1.0)
        X, y = X.persist(), y.persist()
        nbytes = n * d * 8
        t0 = time.perf_counter()
        (X.T @ X).compute()
        out["floor_s"], out["floor"] = time.perf_counter() - t0, "dask xtx"
        est, target = _estimator(name)
        _timed_fit(est, X, y if target == "reg" else None, nbytes, out, spec.get("one_fit", False))
    return out


# ---------------------------------------------------------------------------
# parent: one fresh process per measurement
# ---------------------------------------------------------------------------
def run_child(spec, timeout):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_common.ROOT, env.get("PYTHONPATH")]))
    env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = env["MKL_NUM_THREADS"] = "1"
    try:
        res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)],
                             env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(fit_s=None, floor_s=None, floor="", xtx32_s=None, mem_x_input=None,
                    status="timeout")
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    if res.returncode != 0 or not lines:
        tail = (res.stderr.strip().splitlines() or ["killed"])[-1]
        return dict(fit_s=None, floor_s=None, floor="", xtx32_s=None, mem_x_input=None,
                    status=f"crashed ({res.returncode}): {tail[:60]}")
    return json.loads(lines[-1])


def _fmt(v, f):
    return "" if v is None else format(v, f)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", nargs="*", default=None, help="input kinds: dense64 dense32 memmap32 csr dask csrzipf (the last only when named)")
    p.add_argument("--estimators", nargs="*", default=None)
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--one-fit", action="store_true",
                   help="one traced fit gives time and memory (halves long runs; time is an upper bound)")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(json.loads(args.child))))
        return
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
        have_dask = True
    except ImportError:
        have_dask = False
    rows, notes = [], []
    shared = tempfile.TemporaryDirectory()
    print("| input | estimator | fit_s | floor | x_floor | x_xtx32 | mem_x_input | status |")
    print("|---|---|---|---|---|---|---|---|")
    for label, (kind, n, d, extra) in kinds(args.quick).items():
        if (args.only and kind not in args.only) or (kind in OPT_IN and not args.only):
            continue
        if kind == "dask" and not have_dask:
            print(f"| {label} | (all) | | | | | | skipped: dask not installed (pip install 'skdp[dask]') |")
            continue
        names = DASK_ESTIMATORS if kind == "dask" else ESTIMATORS
        if kind == "memmap32":
            extra = make_memmap(os.path.join(shared.name, "X.f32"), n, d)
        for name in names:
            if args.estimators and name not in args.estimators:
                continue
            spec = dict(kind=kind, n=n, d=d, extra=extra, estimator=name, one_fit=args.one_fit)
            r = run_child(spec, args.timeout)
            ok = r["status"] == "ok" and r["fit_s"]
            x = r["fit_s"] / r["floor_s"] if ok and r["floor_s"] else None
            x32 = r["fit_s"] / r["xtx32_s"] if ok and r.get("xtx32_s") else None
            row = dict(input=label, estimator=name, n=n, d=d, fit_s=_fmt(r["fit_s"], ".3f"),
                       floor_s=_fmt(r["floor_s"], ".3f"), floor=r["floor"], x_floor=_fmt(x, ".2f"),
                       x_xtx32=_fmt(x32, ".2f"), mem_x_input=_fmt(r["mem_x_input"], ".3f"),
                       status=r["status"])
            rows.append(row)
            print(f"| {label} | {name} | {row['fit_s']} | {row['floor']} {row['floor_s']} | "
                  f"{row['x_floor']} | {row['x_xtx32']} | {row['mem_x_input']} | {row['status']} |",
                  flush=True)
            notes += [f"{label} / {name}: {w}" for w in r.get("warnings", [])]
    shared.cleanup()
    for note in notes:  # warnings raised during the fits (e.g. a fallback), not in the CSV
        print(f"warning: {note}")
    path = _common.write_csv("scale.csv", ["input", "estimator", "n", "d", "fit_s", "floor_s", "floor",
                                           "x_floor", "x_xtx32", "mem_x_input", "status"], rows)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
