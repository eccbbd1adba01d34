"""The ``helmdeck-dspy`` command line: argument parsing and printing over the library.

:func:`main` is the console-script entry point; the click group is :data:`helmdeck_dspy.cli.app.cli`.
"""

from helmdeck_dspy.cli.app import main

__all__ = ["main"]
