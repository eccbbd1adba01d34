"""Offline defaults, applied where the program starts (the CLI, the test suite)."""

from __future__ import annotations

import os

OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
}


def apply_offline_defaults() -> None:
    """Set the variables that keep LiteLLM and Hugging Face from reaching the network.

    Values the user already set are left alone.
    """
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
