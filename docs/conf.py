"""Sphinx configuration for the pynamodb-autoinc documentation (built by .ci/docs)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pynamodb_autoinc._version import __version__  # noqa: E402

project = "pynamodb-autoinc"
author = "the pynamodb-autoinc authors"
copyright = "2026, the pynamodb-autoinc authors"  # noqa: A001
release = __version__
version = ".".join(__version__.split(".")[:2])

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.intersphinx",
    "sphinx.ext.viewcode",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
myst_heading_anchors = 3
myst_enable_extensions = ["deflist"]

html_theme = "furo"
html_title = f"pynamodb-autoinc {release}"

autodoc_member_order = "bysource"
autodoc_typehints = "description"
# Defaults as written in the source (``counter=NextId``), not their repr (``<class '...NextId'>``).
autodoc_preserve_defaults = True
# No "members" here: api.rst names each directive's members, and Sphinx 9 lets a default ``members: True``
# override a directive's own ``:members: main`` (which then listed every name of the module).
autodoc_default_options = {"show-inheritance": True}
# No sphinx.ext.napoleon: the docstrings are plain reST with no Google or NumPy sections, and napoleon read
# the first line of an attribute's docstring as "type: description" wherever it held a colon
# ("Type: How many times a save may retry ...").

# intersphinx needs the network to fetch the inventories. Read the Docs sets READTHEDOCS=True, and anyone
# can set PYNAMODB_AUTOINC_DOCS_ONLINE=1; offline (CI here, a laptop on a train) the mapping is empty, so the
# build neither fetches nor warns, and the references fall back to plain text.
ONLINE = bool(os.environ.get("READTHEDOCS") or os.environ.get("PYNAMODB_AUTOINC_DOCS_ONLINE"))
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "pynamodb": ("https://pynamodb.readthedocs.io/en/stable/", None),
    "blinker": ("https://blinker.readthedocs.io/en/stable/", None),
} if ONLINE else {}

# Offline, a cross-reference to pynamodb, blinker or the standard library has no target; without the
# inventories that is expected, not a defect, so only then are such references left unresolved quietly.
nitpicky = False
