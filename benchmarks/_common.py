"""What the benchmark scripts share: the checkout's skdp on ``sys.path`` and the results folder.

Importing this module puts the repository root first on ``sys.path`` (so a
script runs against the checkout even where skdp is not installed).
``RESULTS`` is ``benchmarks/results`` unless the environment variable
``SKDP_BENCH_RESULTS`` names another folder (the tests use a temporary one).
"""

import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

RESULTS = os.environ.get("SKDP_BENCH_RESULTS") or os.path.join(HERE, "results")


def best_time(fn, repeat):
    """Seconds of the fastest of ``repeat`` calls of ``fn`` after one warm-up call."""
    import time

    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def write_csv(name, header, rows):
    """Write ``rows`` (dicts keyed by ``header``, or sequences) to ``RESULTS/name``; return the path."""
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, name)
    with open(path, "w", newline="") as f:
        if rows and isinstance(rows[0], dict):
            w = csv.DictWriter(f, fieldnames=header)
            w.writeheader()
            w.writerows(rows)
        else:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)
    return path
