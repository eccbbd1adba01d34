"""Shared fixtures. The suite never reaches the network."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from helmdeck_dspy.io.offline import apply_offline_defaults

# Keep user data and DSPy's cache out of the user's home for the whole session.
_SESSION_HOME = tempfile.mkdtemp(prefix="helmdeck-dspy-tests-")
os.environ["HELMDECK_DSPY_HOME"] = os.path.join(_SESSION_HOME, "home")
os.environ["HELMDECK_DSPY_CACHE"] = os.path.join(_SESSION_HOME, "dspy-cache")
os.environ["DSPY_CACHEDIR"] = os.environ["HELMDECK_DSPY_CACHE"]
apply_offline_defaults()

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED = PROJECT_ROOT.parent / "shared"


@pytest.fixture
def shared_dir() -> Path:
    """``../shared`` beside the project; tests that need it skip when it is absent."""
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent: this test reads the shared reference data")
    return SHARED
