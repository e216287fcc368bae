"""Smoke tests of the example scripts: they run and write their figures."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _run_example(script, out_dir, timeout=900, **extra_env):
    env = dict(os.environ, **extra_env)
    env["SKDP_EXAMPLES_OUT"] = str(out_dir)
    env["MPLBACKEND"] = "Agg"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", str(EXAMPLES / script)],
        cwd=out_dir, env=env, capture_output=True, text=True, timeout=timeout,
    )


def _assert_png(path):
    assert path.is_file(), f"{path.name} was not written"
    with open(path, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    assert path.stat().st_size > 5_000, f"{path.name} looks empty"


def test_plot_mechanism_comparison(tmp_path):
    pytest.importorskip("matplotlib")
    proc = _run_example("plot_mechanism_comparison.py", tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for name in ("a_dimension", "b_profile", "c_mvg", "d_audit"):
        _assert_png(tmp_path / f"mechanism_comparison_{name}.png")
    out = proc.stdout
    # (a): "auto" switches from pure-epsilon noise (Laplace on the grid: the Gamma-norm
    # mechanism adds floating-point noise and is never auto) to the analytic Gaussian
    assert '"auto" picks laplace for d = 1 ..' in out
    assert '"auto" picks analytic_gaussian for d = ' in out
    # (b): "auto" prefers the non-identical Gaussian on the decaying profile
    assert '"auto" picks inid_gaussian for d = ' in out
    # (d): every unverified case is a certified violation, the control is not
    audit_lines = [ln for ln in out.splitlines() if ln.startswith(("r1smg", "product_noise",
                                                                   "analytic_gaussian "))]
    assert len(audit_lines) == 9
    for ln in audit_lines:
        expected = "no violation found" if ln.startswith("analytic_gaussian") else "CERTIFIED VIOLATION"
        assert ln.endswith(expected), ln


def test_headline_demo(tmp_path):
    """README's main command: the demo prints its table and saves its figure."""
    pytest.importorskip("matplotlib")
    env = dict(os.environ, MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "demo.py"), "--repeats", "1", "--out", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    for name in ("PrivateLogisticRegression", "PrivateHuberSVM", "PrivatePCA", "PrivateOLS"):
        assert out.count(name) == 4, name  # one row per epsilon
    # a progress line per task, and the trivial baselines next to the private results
    assert [ln[:5] for ln in out.splitlines() if ln.startswith("[")] == ["[1/3]", "[2/3]", "[3/3]"]
    assert all("done in" in ln for ln in out.splitlines() if ln.startswith("["))
    assert "trivial" in out and "DummyClassifier" in out and "DummyRegressor" in out
    # the first thing a user runs warns about nothing (an explicit C above what the
    # objective route allows had printed 160 UserWarnings)
    assert "Warning" not in proc.stderr, proc.stderr[-3000:]
    _assert_png(tmp_path / "skdp_demo.png")


def test_private_pipeline_example(tmp_path):
    """The fully private pipeline: one ledger, whose total is the sum of the steps' budgets."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")
    import re

    proc = _run_example("plot_private_pipeline.py", tmp_path, SKDP_EXAMPLES_QUICK="1")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    steps = [float(m) for m in re.findall(r"^step \S+\s+epsilon=([\d.e+-]+)", out, flags=re.M)]
    assert len(steps) == 2
    total = re.search(r"ledger: 2 spends, total epsilon=([\d.e+-]+)", out)
    assert total is not None, out
    assert float(total.group(1)) == pytest.approx(sum(steps), rel=1e-12)
    assert float(total.group(1)) == pytest.approx(1.0)
    acc = float(re.search(r"accuracy at total epsilon=1: ([\d.]+)", out).group(1))
    ref = float(re.search(r"non-private pipeline: ([\d.]+)", out).group(1))
    dummy = float(re.search(r"DummyClassifier \(majority\): ([\d.]+)", out).group(1))
    assert acc > dummy + 0.05  # the private pipeline learns something
    assert acc <= ref + 0.02
    _assert_png(tmp_path / "private_pipeline.png")


def test_gridsearch_ledger_example(tmp_path):
    pytest.importorskip("matplotlib")
    proc = _run_example("plot_gridsearch_ledger.py", tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # its grid differs at every run's epsilon: no candidate's C is lowered (with a warning)
    assert "Warning" not in proc.stderr, proc.stderr[-3000:]
    assert "13 fits recorded" in proc.stdout
    assert "total cost eps=3 delta=0" in proc.stdout
    assert "(each run eps=1.2; Papernot-Steinke, eta=0.5: 2.5 x run)" in proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line.startswith(("| 0.5 |", "| 3 |"))]
    assert len(rows) == 2 and all(row.count("+-") == 2 for row in rows)
    _assert_png(tmp_path / "gridsearch_ledger.png")
