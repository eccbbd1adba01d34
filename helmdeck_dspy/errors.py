"""Typed exceptions shared across helmdeck_dspy.

Every error the library raises on purpose derives from :class:`HelmdeckError`, so callers
(and the CLI, which maps them to exit code 1) can catch one type.
"""

from __future__ import annotations


class HelmdeckError(Exception):
    """Base class for every error helmdeck_dspy raises on purpose."""


class DataFileError(HelmdeckError):
    """A data file (budget table, catalog, tasks, traces) is malformed.

    Attributes:
        path: The file that was read.
        line: 1-based line number when the format has lines, else None.
        detail: What was expected and what was found.
    """

    def __init__(self, path: str, detail: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.detail = detail
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {detail}")

    def __reduce__(self):  # keep the fields across process boundaries (evaluation workers)
        return (type(self), (self.path, self.detail, self.line))


class BudgetTableError(DataFileError):
    """The budget table failed validation; the message names the offending row."""


class CatalogError(DataFileError):
    """A routing-guide catalog failed validation."""


class TraceFileError(DataFileError):
    """A trace file (JSONL, Parquet or a saved dataset) has an unreadable or invalid record."""


class TaskFileError(DataFileError):
    """A gold-task JSONL file has an invalid line."""


class CompiledProgramError(DataFileError):
    """A compiled program (``compiled/tier_T/V.json``) or the manifest cannot be loaded."""
