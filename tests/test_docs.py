"""The documentation builds without a single warning (``sphinx-build -W``)."""

import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "doc"

# Public names that the API reference must document (an HTML anchor with
# the fully qualified name must exist), besides everything in skdp.__all__.
CORE_NAMES = [
    "skdp.audit.audit_spec",
    "skdp.audit.audit_samples",
    "skdp.audit.AuditResult",
    "skdp.audit.clopper_pearson",
    "skdp.model_selection.PrivateGridSearchCV",
    "skdp.preprocessing.PrivateStandardScaler",
    "skdp.preprocessing.data_norm_from_bounds",
    "skdp.preprocessing.scale_by_bounds",
]
# Exported estimators left out of doc/api.rst until their docstrings build
# under -W (see the PENDING note at the end of doc/api.rst). Keep it empty.
PENDING = set()


def test_docs_build_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    import skdp
    import skdp.mechanisms

    out = tmp_path / "html"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q",
         "-d", str(tmp_path / "doctrees"), str(DOC), str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    for page in ("index", "getting_started", "privacy_model", "mechanisms", "estimators", "seed_claims",
                 "api"):
        assert (out / f"{page}.html").is_file(), page
    # one page per mechanism and per estimator
    import skdp.mechanisms as mech

    for name in mech.available_mechanisms():
        assert (out / "mechanisms" / f"{name}.html").is_file(), name
    for page in ("logistic_regression", "huber_svm", "ols", "pca", "random_projection", "grid_search",
                 "ledgers"):
        assert (out / "estimators" / f"{page}.html").is_file(), page
    pages = [out / "api.html", out / "mechanisms.html", *sorted((out / "mechanisms").glob("*.html"))]
    html = "".join(p.read_text(encoding="utf-8") for p in pages)
    names = CORE_NAMES + [f"skdp.mechanisms.{n}" for n in skdp.mechanisms.__all__]
    missing = [n for n in names if f'id="{n}"' not in html]
    assert not missing, f"not documented in doc/api.rst or doc/mechanisms.rst: {missing}"
    # everything exported by skdp, under skdp.<name> or its public module
    anchors = set(re.findall(r'id="(skdp\.[\w.]+)"', html))
    for name in skdp.__all__:
        if isinstance(getattr(skdp, name), types.ModuleType) or name in PENDING:
            continue
        assert any(a == f"skdp.{name}" or a.endswith(f".{name}") for a in anchors), name
    # every registered mechanism class is documented with its derivation
    for name in skdp.mechanisms.available_mechanisms():
        cls = type(skdp.mechanisms.get_mechanism(name))
        assert f'id="{cls.__module__}.{cls.__qualname__}"' in html, cls


def test_getting_started_snippets_run():
    """Every ``code-block:: python`` of doc/getting_started.rst runs, in order, in one namespace.

    The snippets carry their own assertions (warning emitted, shapes); here we
    also check the facts the text states about them.
    """
    text = (DOC / "getting_started.rst").read_text(encoding="utf-8")
    blocks = re.findall(r"\.\. code-block:: python\n\n((?:(?:    .*)?\n)+)", text)
    assert len(blocks) >= 7
    ns = {}
    for block in blocks:
        code = "\n".join(line[4:] for line in block.splitlines())
        exec(compile(code, "getting_started.rst", "exec"), ns)  # noqa: S102
    # the inferred bound is in the fitted attribute, not the parameter
    import skdp

    assert ns["clf"].data_norm == 1.0 and isinstance(ns["clf"].privacy_spent_, skdp.PrivacyBudget)
    # 2 candidates x 2 folds + 1 refit, two private steps each; the 100-eps fit was refused
    assert len(ns["ledger"].spends) == 10
    assert ns["ledger"].composition == "basic"
    assert ns["ledger"].spent.epsilon == pytest.approx(5.0)
    assert ns["ledger"].spent.delta == pytest.approx(1e-5)
    assert ns["spec"].verified  # "auto" picks a verified, floating-point-safe mechanism


def test_submodules_reachable_from_the_package():
    """``import skdp`` is enough for ``skdp.preprocessing.*``, ``skdp.model_selection.*`` and
    ``skdp.audit.*`` (the API page documents them under ``skdp``)."""
    import subprocess
    import sys

    code = ("import skdp; skdp.preprocessing.PrivateStandardScaler; "
            "skdp.model_selection.PrivateGridSearchCV; skdp.audit.float_attack")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(DOC.parent))
