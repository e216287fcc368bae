"""Smoke test of benchmarks/bench_gridsearch.py (``--quick``, in a subprocess).

The per-run budgets in the CSV are checked against the theorems' closed
forms (epsilon / 3, epsilon / (2 + eta), epsilon / 6), written here.
"""

import csv

import pytest

from test_benchmarks import _run


def test_bench_gridsearch_quick(tmp_path):
    out = _run("bench_gridsearch.py", tmp_path, "--quick", timeout=600)
    assert "| negative_binomial (eta=0.5) | eps/2.5 |" in out
    with open(tmp_path / "gridsearch.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 4 * 3  # data sets x strategies x epsilons
    for r in rows:
        eps = float(r["epsilon"])
        share = {"random_stopping": 3.0, "exhaustive": 6.0}.get(r["strategy"])
        if share is None:
            share = 2.0 + float(r["eta"])
        assert float(r["run_epsilon"]) == pytest.approx(eps / share, rel=1e-12)
        assert 0.4 < float(r["accuracy"]) <= 1.0
