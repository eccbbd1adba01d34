"""Which budget row a study ran under: ``budget-rows.json`` beside its results, copied into its table.

A study's runner calls :func:`note_row` before it plans anything: the model's row (the fields that
shape a plan call, :data:`~helmdeck_dspy.budgets.PLAN_FIELDS`) is added to the folder's file when
the file does not hold it yet, so a study that ran under two rows (a field it decided changed
mid-way) lists both. Its table writer puts :func:`recorded_rows` into ``table.json``, and a default
that names the study in ``decided_by`` is checked against it (``tests/test_decided_by.py``).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from helmdeck_dspy.budgets import Budget, row_sha
from helmdeck_dspy.io.atomic import atomic_write_text, locked

ROWS_FILE = "budget-rows.json"


def recorded_rows(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """The rows the study in ``folder`` ran under, by model (``{}`` when none was recorded)."""
    path = folder / ROWS_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def note_row(folder: Path, budget: Budget) -> dict[str, Any]:
    """Add ``budget``'s plan row to ``folder``'s record unless it is there; return its entry."""
    fields = budget.plan_row()
    sha = row_sha(fields)
    path = folder / ROWS_FILE
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("x", encoding="utf-8") as new:  # the lock needs the file; only one process creates it
            new.write("{}\n")
    except FileExistsError:
        pass
    with locked(path):
        rows = recorded_rows(folder)
        entries = rows.setdefault(budget.model, [])
        for entry in entries:
            if entry["sha"] == sha:
                return entry
        entry = {"sha": sha, "fields": fields, "first_run": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        entries.append(entry)
        atomic_write_text(path, json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
    return entry
