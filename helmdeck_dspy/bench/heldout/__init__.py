"""Held-out comparisons: compile per-model programs and score them on a split the compile never saw (``bench heldout``)."""
