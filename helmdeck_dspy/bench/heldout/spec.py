"""The held-out comparison's spec: ``heldout.toml`` (what to compare, on which model and split).

Everything a comparison produces lives in the spec's folder: ``programs/ID/`` (a compiled
config's compile root), ``ID.jsonl`` (a scoring run over both variants, for a ``program`` config
that names one program for both) or ``ID-VARIANT.jsonl`` (one per variant, for a compiled config
or a ``program`` with ``{variant}`` in it: each variant has its own program file), and
``table.md`` / ``table.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from helmdeck_dspy.domain import VARIANTS
from helmdeck_dspy.errors import DataFileError, validation_message
from helmdeck_dspy.io.datafiles import read_toml

if TYPE_CHECKING:
    from helmdeck_dspy.compilation.manifest import CompileResult


class HeldOutConfig(BaseModel):
    """One row of the comparison: a program given as-is, or one an optimizer compiles for the model."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    label: str
    program: str | None = Field(
        default=None, description="auto, tier, bare or a program file ({variant} in the path: one file per variant).")
    optimizer: Literal["bootstrap", "mipro", "gepa"] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> HeldOutConfig:
        if (self.program is None) == (self.optimizer is None):
            raise ValueError(f"config {self.id}: give program or optimizer (one of them)")
        return self

    @property
    def per_variant(self) -> bool:
        """Each variant plans with its own program file, so each gets its own scoring run."""
        return self.optimizer is not None or "{variant}" in (self.program or "")


class HeldOutSpec(BaseModel):
    """A ``heldout.toml`` file (its header comment documents every field)."""

    model_config = ConfigDict(extra="forbid")

    model: str
    lm: str
    teacher: str | None = None
    split: str = "test"
    variants: list[str] = Field(default_factory=lambda: list[str](VARIANTS))
    baseline: str
    temperature: float | None = 0.0
    seed: int = 7
    valset: int = Field(default=12, ge=0)
    timeout_s: float = Field(default=600.0, gt=0)
    config: list[HeldOutConfig]
    folder: Path = Field(default=Path("."), exclude=True)
    path: Path = Field(default=Path("heldout.toml"), exclude=True, description="The file it was read from.")

    @model_validator(mode="after")
    def _consistent(self) -> HeldOutSpec:
        ids = [c.id for c in self.config]
        if len(set(ids)) != len(ids):
            raise ValueError(f"config ids repeat: {ids}")
        if self.baseline not in ids:
            raise ValueError(f"baseline {self.baseline!r} is not a config id ({', '.join(ids)})")
        bad = [v for v in self.variants if v not in VARIANTS]
        if bad or not self.variants:
            raise ValueError(f"variants must be among {VARIANTS}, got {self.variants}")
        return self

    def get(self, config_id: str) -> HeldOutConfig:
        return next(c for c in self.config if c.id == config_id)

    def compile_root(self, config: HeldOutConfig) -> Path:
        """Where a compiled config's programs and manifest go."""
        return self.folder / "programs" / config.id

    def manifest_entry(self, config: HeldOutConfig, variant: str) -> CompileResult | None:
        """The manifest entry of the program ``config`` compiled for ``variant`` (None: none yet, or
        not a compiled config)."""
        from helmdeck_dspy.compilation.manifest import CompileResult
        from helmdeck_dspy.program.store import model_key, read_manifest

        if config.optimizer is None:
            return None
        entry = read_manifest(self.compile_root(config))["programs"].get(model_key(self.model, variant))
        return CompileResult.model_validate(entry) if isinstance(entry, dict) else None

    def trace_files(self, config: HeldOutConfig) -> dict[str, Path]:
        """The scoring run files of ``config`` by variant (one shared file unless :attr:`~HeldOutConfig.per_variant`)."""
        if not config.per_variant:
            return dict.fromkeys(self.variants, self.folder / f"{config.id}.jsonl")
        return {v: self.folder / f"{config.id}-{v}.jsonl" for v in self.variants}

    def program_for(self, config: HeldOutConfig, variant: str) -> str:
        """What ``config`` plans with under ``variant``: its ``program`` (``{variant}`` filled in), or
        the program its optimizer compiled for the model."""
        if config.program is not None:
            return config.program.replace("{variant}", variant)
        from helmdeck_dspy.program.store import model_program_path

        return str(model_program_path(self.model, variant, self.compile_root(config)))


def load_spec(path: str | Path) -> HeldOutSpec:
    """Read a ``heldout.toml``.

    Raises:
        DataFileError: unreadable, or a field is missing, unknown or wrong (named).
    """
    p = Path(path)
    data = read_toml(p)
    try:
        spec = HeldOutSpec.model_validate(data)
    except ValidationError as exc:
        raise DataFileError(str(p), validation_message(exc, subject="(top level)")) from None
    spec.folder, spec.path = p.parent, p
    return spec
