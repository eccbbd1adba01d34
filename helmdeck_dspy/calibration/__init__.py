"""Calibrating the budget table from evaluation reports."""
