"""Shared fixtures. The suite never reaches the network."""

from __future__ import annotations

from pathlib import Path

import pytest

from helmdeck_dspy.offline import apply_offline_defaults

apply_offline_defaults()

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED = PROJECT_ROOT.parent / "shared"


@pytest.fixture
def shared_dir() -> Path:
    """``../shared`` beside the project; tests that need it skip when it is absent."""
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent: this test reads the shared reference data")
    return SHARED
