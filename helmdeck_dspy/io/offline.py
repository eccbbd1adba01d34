"""Offline defaults, applied where the program starts (the CLI, the test suite)."""

from __future__ import annotations

import os
from pathlib import Path

OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
}


def project_cache_dir() -> Path:
    """DSPy's cache for this project: ``$HELMDECK_DSPY_CACHE`` or ``./.helmdeck/dspy-cache``."""
    return Path(os.environ.get("HELMDECK_DSPY_CACHE") or Path.cwd() / ".helmdeck" / "dspy-cache")


def apply_offline_defaults() -> None:
    """Set the variables that keep LiteLLM and Hugging Face from reaching the network, and put
    DSPy's cache in the project directory (it must be set before dspy is imported).

    Values the user already set are left alone.
    """
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("DSPY_CACHEDIR", str(project_cache_dir()))
