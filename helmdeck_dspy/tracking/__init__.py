"""Experiment tracking (MLflow) for eval and compile runs."""
