"""An evaluation's checkpoint: its running totals, where they stop, and the key they belong to.

``evaluate(checkpoint=PATH)`` (``eval --out DIR`` uses ``DIR/.eval-checkpoint.json``) saves an
:class:`EvalState` atomically every few seconds and after each file: the per-group aggregates, the
inputs done, the kept errors, and where the totals stop (file index, next line). The state is
saved with a key over everything that decides the numbers (the trace files' sha256, ``on_error``,
the catalog fingerprint, the gold tasks, the budget table and the tool version); a later run with
the same key folds the saved totals back in and reads on from that line. The aggregates (reservoir
generators included) round-trip losslessly, so a resumed report equals an uninterrupted one except
for ``created_at`` and ``seconds``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helmdeck_dspy.budgets import BudgetTable
from helmdeck_dspy.evaluation.aggregate import (
    GroupAgg,
    GroupKey,
    agg_from_state,
    agg_to_state,
)
from helmdeck_dspy.evaluation.report import InputFile
from helmdeck_dspy.io.atomic import atomic_write_text
from helmdeck_dspy.tasks import PlanTask

CHECKPOINT_NAME = ".eval-checkpoint.json"
CHECKPOINT_SCHEMA = 4  # 2: groups keyed (kind, model, variant); 3: per-request answers for the paired comparison;
# 4: native tool-call answers and per-request-mode counts
_COUNTS = ("file_index", "next_line", "file_records", "file_skipped", "total", "skipped_total")


def checkpoint_path(out_dir: str | Path) -> Path:
    """The checkpoint ``eval --out DIR`` keeps while it runs."""
    return Path(out_dir) / CHECKPOINT_NAME


def clear_checkpoint(path: str | Path) -> None:
    """Remove a checkpoint once its report is safely written."""
    Path(path).unlink(missing_ok=True)


@dataclass
class EvalState:
    """An evaluation's running totals and where they stop."""

    total: int = 0
    """Records counted in the finished files."""
    skipped_total: int = 0
    """Records skipped in the finished files."""
    groups: dict[GroupKey, GroupAgg] = field(default_factory=dict)
    """The per-(kind, model, variant) aggregates so far."""
    inputs: list[InputFile] = field(default_factory=list)
    """The files read to the end, in order."""
    errors: list[str] = field(default_factory=list)
    """The skipped lines' messages kept so far."""
    file_index: int = 0
    """The file being read (``len(files)`` once all are done)."""
    next_line: int = 0
    """The first line of that file not yet counted (0: from the start)."""
    file_records: int = 0
    """Records counted in that file so far."""
    file_skipped: int = 0
    """Records skipped in that file so far."""

    def to_json(self, key: str) -> str:
        """The state as one line of JSON, stamped with the schema and ``key``."""
        state = {
            "schema": CHECKPOINT_SCHEMA, "key": key, "file_index": self.file_index, "next_line": self.next_line,
            "file_records": self.file_records, "file_skipped": self.file_skipped, "total": self.total,
            "skipped_total": self.skipped_total, "inputs": [i.model_dump() for i in self.inputs],
            "errors": self.errors, "groups": [[k, m, v, agg_to_state(a)] for (k, m, v), a in self.groups.items()],
        }
        return json.dumps(state, separators=(",", ":")) + "\n"

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> EvalState:
        """Rebuild a state saved by :meth:`to_json` (its counts already checked to be integers)."""
        return cls(
            groups={(k, m, v): agg_from_state(a) for k, m, v, a in state["groups"]},
            inputs=[InputFile.model_validate(i) for i in state["inputs"]],
            errors=list(state["errors"]),
            **{name: state[name] for name in _COUNTS},
        )


def checkpoint_key(
    files: Iterable[tuple[str, str]], on_error: str, catalog_fingerprint: str, tasks: Mapping[str, PlanTask],
    budgets: BudgetTable, tool_version: str,
) -> str:
    """A hash of everything that decides the numbers (not the worker count: results do not depend on it).

    Args:
        files: ``(format, sha256)`` of each trace file, in order.
        on_error: ``fail`` or ``skip``.
        catalog_fingerprint: The catalog's fingerprint.
        tasks: The gold tasks by id.
        budgets: The budget table.
        tool_version: helmdeck-dspy's version.
    """
    h = hashlib.sha256()
    h.update(json.dumps({
        "schema": CHECKPOINT_SCHEMA, "version": tool_version, "on_error": on_error, "catalog": catalog_fingerprint,
        "files": [[fmt, sha] for fmt, sha in files],
    }, sort_keys=True).encode())
    for task_id in sorted(tasks):
        h.update(tasks[task_id].model_dump_json().encode())
    h.update(budgets.model_dump_json(exclude={"path"}).encode())
    return h.hexdigest()


class Checkpoint:
    """Where an evaluation saves its :class:`EvalState`, for one key.

    Args:
        path: The checkpoint file.
        key: From :func:`checkpoint_key`.
        every: Seconds between two saves unless one is forced.
    """

    def __init__(self, path: str | Path, key: str, every: float) -> None:
        self.path = Path(path)
        self.key = key
        self.every = every
        self._last_save = time.monotonic()

    def load(self, tell: Callable[[str], None]) -> EvalState | None:
        """The saved state when the file exists and matches the key; None otherwise (said via ``tell``).

        A checkpoint is only a cache of work done: a damaged one costs a restart, not the run.
        """
        if not self.path.exists():
            return None
        try:
            state = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(state, dict) or state.get("schema") != CHECKPOINT_SCHEMA:
                raise ValueError("not a checkpoint of this version")
            if state.get("key") != self.key:
                tell(f"ignoring {self.path}: made for other trace files or options; starting over")
                return None
            for name in _COUNTS:
                if not isinstance(state.get(name), int):
                    raise ValueError(f"{name}: expected an integer")
            return EvalState.from_dict(state)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            tell(f"ignoring {self.path}: unreadable checkpoint ({exc}); starting over")
            return None

    def save(self, state: EvalState, force: bool = False) -> None:
        """Write ``state`` atomically, unless the last save was under ``every`` seconds ago (and not ``force``)."""
        if not force and time.monotonic() - self._last_save < self.every:
            return
        atomic_write_text(self.path, state.to_json(self.key))
        self._last_save = time.monotonic()
