"""Compiling the plan programs: tier setup, demo fitting, DSPy optimizers, the manifest and compile runs."""
