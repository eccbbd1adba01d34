"""Gold planning tasks (``eval/tasks/*.jsonl``): intents over the bundled catalog with the plan
a good planner should produce.

Each split is one JSONL file (``train.jsonl``, ``dev.jsonl``, ``test.jsonl``), one
:class:`PlanTask` per line, loadable with :func:`load_tasks` or with ``datasets``
(:func:`load_tasks_dataset`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from helmdeck_dspy.domain import PIPELINE_RUN_TOOL, Complexity, complexity_for
from helmdeck_dspy.errors import DataFileError, TaskFileError, validation_message
from helmdeck_dspy.io.jsonl import iter_jsonl
from helmdeck_dspy.io.resources import bundled_dir

Split = Literal["train", "dev", "test"]
SPLITS: tuple[Split, ...] = ("train", "dev", "test")
Category = Literal[
    "single-action",  # one pack call
    "pipeline-direct",  # one pipeline covers the request
    "supersedes",  # the user names packs that a pipeline supersedes; the pipeline should win
    "pack-chain",  # 2-6 pack (or pack + pipeline) steps, no single pipeline fits
    "long-context",  # a long pasted text plus several asks
    "gap",  # nothing in the catalog fits: an empty plan (or only demoted steps) is right
    "adversarial",  # asks to call the planner itself, or names invented tools
]


class GoldStep(BaseModel):
    """One expected call. ``args`` lists the key arguments: a value must match exactly
    (case-insensitive for strings); ``null`` means the key must be present with any value."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1, description="Pack name, or helmdeck__pipeline-run.")
    args: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _pipeline_needs_id(self) -> GoldStep:
        if self.tool == PIPELINE_RUN_TOOL and not isinstance(self.args.get("id"), str):
            raise ValueError("a helmdeck__pipeline-run gold step needs args.id (the pipeline id)")
        return self

    @property
    def key(self) -> str:
        """The step's identity for sequence comparison: the pipeline id for pipeline runs."""
        return f"pipeline:{self.args['id']}" if self.tool == PIPELINE_RUN_TOOL else self.tool


class PlanTask(BaseModel):
    """One gold planning task."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Stable id, e.g. 'chain-017'.")
    split: Split
    category: Category
    intent: str = Field(min_length=1)
    context: str | None = Field(default=None, description="Optional pasted material the intent refers to.")
    steps: list[GoldStep] = Field(description="The expected plan; empty for a gap.")
    alternatives: list[list[GoldStep]] = Field(
        default_factory=list, description="Other plans that are equally right."
    )
    complexity: Complexity
    notes: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> PlanTask:
        n = len(self.steps)
        if self.category == "gap" and n:
            raise ValueError("a gap task expects no steps")
        if n > 6:
            raise ValueError("at most 6 gold steps")
        expected = complexity_for([step.tool for step in self.steps])
        if self.complexity != expected:
            raise ValueError(f"complexity should be {expected!r} for these steps, not {self.complexity!r}")
        return self


_REQUIRED = tuple(name for name, f in PlanTask.model_fields.items() if f.is_required())
_MISSING = f"missing required field (a task needs {', '.join(_REQUIRED)})"


def tasks_dir() -> Path:
    """The bundled gold tasks' directory (one JSONL file per split)."""
    return bundled_dir() / "tasks"


def load_tasks(split: Split | str | None = None, path: str | Path | None = None) -> list[PlanTask]:
    """Load gold tasks: one split of the bundled set, every split (``None``), or a JSONL file.

    Raises:
        DataFileError: a line is not a valid task (``file:line: field: problem``), a split is
            unknown, or ids repeat.
    """
    if path is not None:
        files = [Path(path)]
    elif split is None:
        files = [tasks_dir() / f"{s}.jsonl" for s in SPLITS]
    elif split in SPLITS:
        files = [tasks_dir() / f"{split}.jsonl"]
    else:
        raise DataFileError(str(tasks_dir()), f"unknown split {split!r}; expected one of {list(SPLITS)}")
    tasks: list[PlanTask] = []
    seen: set[str] = set()
    for f in files:
        for line_no, obj in iter_jsonl(f, error_type=TaskFileError):
            try:
                task = PlanTask.model_validate(obj)
            except ValidationError as exc:
                detail = validation_message(exc, subject="task", missing=_MISSING)
                raise TaskFileError(str(f), detail, line=line_no) from None
            if task.id in seen:
                raise TaskFileError(str(f), f"duplicate task id {task.id!r}", line=line_no)
            seen.add(task.id)
            tasks.append(task)
    return tasks


def tasks_sha256(tasks: list[PlanTask]) -> str:
    """A hash of tasks, in order: what a compile was trained or validated on, what a test split holds."""
    return hashlib.sha256("\n".join(t.model_dump_json() for t in tasks).encode()).hexdigest()


def load_tasks_dataset(split: Split | None = None) -> Any:
    """The bundled tasks as a Hugging Face ``datasets`` DatasetDict (or one Dataset for a split)."""
    import datasets  # deferred: heavy

    files = {s: str(tasks_dir() / f"{s}.jsonl") for s in SPLITS}
    ds = datasets.load_dataset("json", data_files=files)
    return ds[split] if split is not None else ds
