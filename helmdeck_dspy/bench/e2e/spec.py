"""One run of the end-to-end study as a file (``*.e2e.toml``), which a study plan runs in its place.

A spec names the model and its LM, the arms, the half of the tasks (or some of them) and where the
results go (``out``, relative to the spec); ``helmdeck-dspy bench e2e`` builds the same spec from its
options. :func:`run_e2e_spec` runs what the results file does not hold yet and writes the table.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from helmdeck_dspy.bench.e2e.arms import ARMS, LEVER_ARMS
from helmdeck_dspy.bench.e2e.checks import E2ETask, load_e2e_tasks, task_split
from helmdeck_dspy.errors import DataFileError, validation_message
from helmdeck_dspy.io.datafiles import parse_toml, read_text


class E2ESpec(BaseModel):
    """One run: which model, arms and tasks, and where the results go."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1, description="Budget lookup id.")
    lm: str = Field(min_length=1, description="LM spec (local:NAME, llamacpp/..., sim:, replay:).")
    arms: tuple[str, ...] = Field(default=ARMS, min_length=1)
    split: Literal["all", "dev", "test"] = "all"
    only: tuple[str, ...] = Field(default=(), description="Task ids or types (empty: every task of the split).")
    tasks: str | None = Field(default=None, description="A tasks file (None: the bundled eval/e2e/tasks.jsonl).")
    out: str = Field(default=".", description="Where results.jsonl, traces/ and the table go.")
    max_steps: int = Field(default=8, ge=1, le=100)
    time_cap_s: float = Field(default=600.0, gt=0)
    api_base: str | None = None
    npm_dir: Path = Field(default=Path(".mcp-servers"), description="The npm servers' folder.")
    sqlite_command: Path = Field(default=Path(".mcp-servers/sqlite/bin/mcp-server-sqlite"))
    path: Path = Field(default=Path("e2e.toml"), exclude=True)

    @field_validator("arms")
    @classmethod
    def _known_arms(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [a for a in value if a not in (*ARMS, *LEVER_ARMS)]
        if unknown:
            raise ValueError(f"unknown arm {unknown[0]!r}; expected one of {', '.join((*ARMS, *LEVER_ARMS))}")
        return value

    @property
    def out_dir(self) -> Path:
        return self.path.parent / self.out

    def selected(self) -> tuple[list[E2ETask], str]:
        """The tasks this run covers, and the tasks file's SHA-256."""
        from helmdeck_dspy.io.resources import bundled_dir

        path = self.path.parent / self.tasks if self.tasks else bundled_dir() / "e2e" / "tasks.jsonl"
        tasks, digest = load_e2e_tasks(path)
        if self.only:
            tasks = [t for t in tasks if t.id in self.only or t.type in self.only]
        if self.split != "all":
            tasks = [t for t in tasks if task_split(t.id) == self.split]
        return tasks, digest

    def pending(self) -> int:
        """The (arm, task) runs the results file does not hold yet."""
        from helmdeck_dspy.bench.e2e.study import done_keys

        done = done_keys(self.out_dir / "results.jsonl")
        return sum((self.model, arm, t.id) not in done for arm in self.arms for t in self.selected()[0])


def load_e2e_spec(path: str | Path) -> E2ESpec:
    """Read an ``*.e2e.toml``.

    Raises:
        DataFileError: Unreadable, not TOML, or a field that does not validate (an unknown arm).
    """
    path = Path(path)
    try:
        return E2ESpec.model_validate({**parse_toml(read_text(path), str(path)), "path": path})
    except ValidationError as exc:
        raise DataFileError(str(path), validation_message(exc)) from None


def run_e2e_spec(spec: E2ESpec, progress: Callable[..., None] | None = None) -> dict:
    """Run what ``spec``'s results do not hold yet (resumable), then write the table; returns it.

    Raises:
        ToolSourceError: A server that cannot start.
    """
    from helmdeck_dspy.bench.e2e.report import write_table
    from helmdeck_dspy.bench.e2e.study import StudySetup, run_e2e

    tasks, _ = spec.selected()
    setup = StudySetup(npm_dir=spec.npm_dir.absolute(), sqlite_command=spec.sqlite_command.absolute())
    results = run_e2e(tasks, model=spec.model, lm_spec=spec.lm, out_dir=spec.out_dir, setup=setup, arms=spec.arms,
                      api_base=spec.api_base, max_steps=spec.max_steps, time_cap_s=spec.time_cap_s, progress=progress)
    return write_table(results, spec.out_dir)
