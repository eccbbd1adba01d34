"""Locations of the data shipped with the package.

``signatures/``, ``compiled/`` and ``eval/`` live at the repository root and are mapped into the
``helmdeck_dspy`` namespace by setuptools (``helmdeck_dspy.signatures``, ``helmdeck_dspy.compiled``,
``helmdeck_dspy.bundled``), so the same paths resolve from a checkout and from an installed wheel.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def _package_dir(package: str) -> Path:
    return Path(str(resources.files(package)))


def compiled_dir() -> Path:
    """Directory holding ``budgets.toml``, ``manifest.json`` and the compiled programs."""
    return _package_dir("helmdeck_dspy.compiled")


def bundled_dir() -> Path:
    """Directory holding the bundled catalog, gold tasks, trace sets and simulator profiles."""
    return _package_dir("helmdeck_dspy.bundled")


def default_budgets_path() -> Path:
    """The budget table the library uses unless told otherwise."""
    return compiled_dir() / "budgets.toml"


def default_catalog_path() -> Path:
    """The bundled routing-guide catalog."""
    return bundled_dir() / "catalog" / "routing-guide.json"
