"""Run every benchmark: prints the utility and speed tables, writes CSVs.

Each benchmark compares skdp against non-private scikit-learn run in the same
process (ratios, not absolute timings) and writes its table to
``benchmarks/results/<name>.csv`` so results can be compared over time.

Run: ``python3 benchmarks/run_all.py`` (tens of minutes on two cores).
"""

import runpy
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = ["bench_calibrate.py", "bench_pca.py", "bench_ols.py", "bench_classifiers.py"]


def main():
    for name in BENCHMARKS:
        print(f"\n==== {name} " + "=" * (60 - len(name)), flush=True)
        t0 = time.perf_counter()
        saved = sys.argv
        sys.argv = [str(HERE / name)]
        try:
            runpy.run_path(str(HERE / name), run_name="__main__")
        finally:
            sys.argv = saved
        print(f"---- {name} took {time.perf_counter() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
