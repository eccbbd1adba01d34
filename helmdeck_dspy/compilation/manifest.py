"""``compiled/manifest.json``: one entry per compiled (tier, variant) program.

An entry (:class:`CompileResult`) records the optimizer, the LM, hashes of the train and dev
tasks, the dev score before and after, the demos, the prompt size, the LM calls and tokens, the
time taken, and two hashes that make resuming safe: ``inputs_sha256`` (everything the compile
depended on) and ``program_sha256`` (the saved file). The manifest is rewritten atomically.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from helmdeck_dspy.errors import CompiledProgramError
from helmdeck_dspy.io.atomic import atomic_write_text
from helmdeck_dspy.io.datafiles import read_json
from helmdeck_dspy.io.resources import compiled_dir


class CompileResult(BaseModel):
    """A manifest entry."""

    tier: str
    variant: str
    optimizer: str
    lm: str | None
    budget_model: str
    train_sha256: str
    dev_sha256: str
    train_n: int
    dev_n: int
    dev_score_before: float | None
    dev_score_after: float | None
    demos: int
    prompt_tokens: int = Field(description="Tokens of the rendered prompt for the tier's typical intent.")
    lm_calls: int
    prompt_tokens_used: int
    completion_tokens_used: int
    cost_usd: float | None = Field(
        default=None,
        description="Summed from the cost the LM reports in its history (copies an optimizer makes are not seen); "
        "None when it reports none (simulated, replayed).",
    )
    seconds: float
    dspy_version: str
    compiled_at: str
    path: str
    inputs_sha256: str | None = Field(default=None, description="Hash of everything the compile depends on.")
    program_sha256: str | None = Field(default=None, description="Hash of the saved program file.")
    _skipped: bool = PrivateAttr(default=False)

    @property
    def skipped(self) -> bool:
        """True when ``compile_program(resume=True)`` found this program already compiled from the same inputs."""
        return self._skipped

    def mark_skipped(self) -> CompileResult:
        """Flag this entry as found already compiled (see :attr:`skipped`); returns it."""
        self._skipped = True
        return self


def entry_key(tier: str, variant: str) -> str:
    """The manifest key of a program: ``tier_T/V``."""
    return f"tier_{tier}/{variant}"


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest_path(root: Path | None = None) -> Path:
    """Where the manifest lives (``root`` or the bundled ``compiled/``)."""
    return (root or compiled_dir()) / "manifest.json"


def read_manifest(root: Path | None = None) -> dict[str, Any]:
    """The manifest (an empty one when absent).

    Raises:
        CompiledProgramError: it is not JSON, or not ``{"programs": {...}}``.
    """
    path = manifest_path(root)
    if not path.exists():
        return {"schema_version": 1, "programs": {}}
    data = read_json(path, CompiledProgramError)
    if not isinstance(data, dict) or not isinstance(data.setdefault("programs", {}), dict):
        raise CompiledProgramError(str(path), 'expected {"schema_version": 1, "programs": {...}}')
    return data


def update_manifest(result: CompileResult, root: Path | None = None) -> None:
    """Put ``result`` in the manifest (replacing the program's previous entry), entries sorted."""
    path = manifest_path(root)
    data = read_manifest(root)
    data["programs"][entry_key(result.tier, result.variant)] = result.model_dump()
    data["programs"] = dict(sorted(data["programs"].items()))
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
