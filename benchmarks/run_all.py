"""Run every benchmark: prints the utility and speed tables, writes CSVs.

Each benchmark compares skdp against non-private scikit-learn run in the same
process (ratios, not absolute timings) and writes its table to
``benchmarks/results/<name>.csv`` so results can be compared over time
(the CSV files are git-ignored). ``bench_diffprivlib.py`` compares against
IBM's diffprivlib where it is importable and otherwise prints why it is
skipped (see ``benchmarks/README.md`` for the environment it needs).

Run: ``python3 benchmarks/run_all.py`` (tens of minutes on two cores);
``--quick`` (passed on to every benchmark; small sizes, one seed; scripts
without that option ignore it) for a smoke run; ``--only bench_pca.py ...`` to run a subset. Exits 1 if any
benchmark raised (the others still run).
"""

import argparse
import os
import runpy
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = ["bench_calibrate.py", "bench_samplers.py", "bench_grid.py", "bench_pca.py",
              "bench_ols.py", "bench_classifiers.py", "bench_multiclass.py", "bench_row_norm.py", "bench_filter.py", "bench_gridsearch.py",
              "bench_dpsgd_accounting.py",
              "bench_diffprivlib.py", "bench_scale.py"]


def run_one(name, extra_args):
    """Run one benchmark script as ``__main__``; return True if it finished."""
    saved = sys.argv
    sys.argv = [str(HERE / name), *extra_args]
    try:
        runpy.run_path(str(HERE / name), run_name="__main__")
    except SystemExit as e:  # argparse or an explicit exit inside a benchmark
        return e.code in (None, 0)
    except Exception:
        traceback.print_exc()
        return False
    finally:
        sys.argv = saved
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description="Run the skdp benchmarks.")
    parser.add_argument("--quick", action="store_true",
                        help="pass --quick to every benchmark (small sizes, one seed)")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, metavar="BENCH",
                        help=f"run only these ({', '.join(BENCHMARKS)})")
    args = parser.parse_args(argv)
    # the scripts import benchmarks/_common.py, which puts the checkout's skdp on sys.path
    sys.path.insert(0, str(HERE))
    import _common
    extra = ["--quick"] if args.quick else []
    failed = []
    for name in args.only or BENCHMARKS:
        print(f"\n==== {name} " + "=" * (60 - len(name)), flush=True)
        t0 = time.perf_counter()
        if not run_one(name, extra):
            failed.append(name)
        print(f"---- {name} took {time.perf_counter() - t0:.1f} s", flush=True)
    results = Path(_common.RESULTS)
    if results.is_dir():
        print("\nCSV files in " + os.path.relpath(results) + ": "
              + ", ".join(sorted(p.name for p in results.glob("*.csv"))))
    if failed:
        print("FAILED: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
