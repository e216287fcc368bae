"""Sphinx configuration for skdp."""

import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "skdp"
author = "skdp developers"
copyright = "2026, skdp developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
]

autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
autodoc_default_options = {"members": False, "inherited-members": False}
exclude_patterns = ["_build"]
html_theme = "alabaster"
# git does not keep empty folders: only use _static when it exists
html_static_path = ["_static"] if os.path.isdir(os.path.join(os.path.dirname(__file__), "_static")) else []
suppress_warnings = ["autosummary.import_cycle"]
