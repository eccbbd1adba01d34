"""Compiled programs on disk: where each program lives, the manifest that indexes them, and which
program a model gets.

Layout under a compiled root (the bundled ``compiled/`` by default):

- ``tier_T/V.json`` — the tier program for tier T, variant V (the default for every model of the tier);
- ``models/SLUG/V.json`` — a program compiled for one model id (:func:`model_slug` names its folder);
- ``manifest.json`` — one entry per program, keyed ``tier_T/V`` or ``models/SLUG/V``; a model
  program's entry names its exact ``model`` id, which is what :func:`resolve_program` matches.

Loading checks the file's shape first, so a corrupt or foreign file is a
:class:`~helmdeck_dspy.errors.CompiledProgramError` naming the file and the field, not an error
from deep inside DSPy.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from helmdeck_dspy.domain import TIERS, VARIANTS
from helmdeck_dspy.errors import CompiledProgramError
from helmdeck_dspy.io.datafiles import file_sha256, read_json
from helmdeck_dspy.io.resources import compiled_dir

ProgramKind = Literal["model", "tier", "bare", "file"]
PROGRAM_CHOICES = ("auto", "tier", "bare")
"""What ``program=`` may name besides a file: the model's own program when one exists, else the
tier's (``auto``); the tier program (``tier``, or another tier's: ``tier:C``); the uncompiled
module, instructions only (``bare``)."""


class ProgramRef(BaseModel):
    """Which program a planner uses: what ``PlanResult.program`` and trace records report.

    Attributes:
        kind: ``model`` (compiled for this model id), ``tier`` (the tier's), ``bare`` (uncompiled:
            instructions, no demos) or ``file`` (a program file given explicitly).
        path: The program file (relative to the compiled root for ``model`` and ``tier``); None for ``bare``.
        sha256: The file's SHA-256 (the manifest entry's ``program_sha256`` unless the file was
            changed after compiling, which warns).
        optimizer: The optimizer that made it, from the manifest.
    """

    kind: ProgramKind
    path: str | None = None
    sha256: str | None = None
    optimizer: str | None = None

    def stamp(self) -> dict[str, Any]:
        """The reference as a trace record's ``run.program`` (None fields left out)."""
        return self.model_dump(exclude_none=True)


def tier_key(tier: str, variant: str) -> str:
    """The manifest key of a tier program: ``tier_T/V``."""
    return f"tier_{tier}/{variant}"


def model_slug(model_id: str) -> str:
    """The folder name of a model's programs: the id lower-cased, runs of other characters than
    letters, digits, ``.``, ``_`` and ``-`` made one ``-`` (``local/qwen2.5-coder-0.5b-instruct`` →
    ``local-qwen2.5-coder-0.5b-instruct``)."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", model_id.strip().lower()).strip("-.")
    if not slug:
        raise CompiledProgramError(model_id, "a model id needs a letter or digit to name its program folder")
    return slug


def model_key(model_id: str, variant: str) -> str:
    """The manifest key of a model's program: ``models/SLUG/V``."""
    return f"models/{model_slug(model_id)}/{variant}"


def program_path(tier: str, variant: str, root: Path | None = None) -> Path:
    """Where the compiled program for (tier, variant) lives."""
    return (root or compiled_dir()) / f"tier_{tier}" / f"{variant}.json"


def model_program_path(model_id: str, variant: str, root: Path | None = None) -> Path:
    """Where the program compiled for ``model_id`` and ``variant`` lives."""
    return (root or compiled_dir()) / f"{model_key(model_id, variant)}.json"


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


def load_program(tier: str, variant: str, root: Path | None = None) -> Any:
    """The compiled module for (tier, variant), or the uncompiled one (with a warning) if none exists."""
    return resolve_program(None, tier, variant, root, "tier")[0]


def resolve_program(
    model_id: str | None, tier: str, variant: str, root: Path | None = None, choice: str | None = None,
) -> tuple[Any, ProgramRef]:
    """The module a model plans with, and which program it is.

    Args:
        model_id: The model (its own program is looked up by this exact id).
        tier / variant: The tier program used when the model has none.
        root: The compiled root (default: the bundled ``compiled/``).
        choice: ``auto`` or None (the model's program for this exact id and variant when the
            manifest lists one and its file exists, else the tier's), ``tier`` (``tier:T``: tier
            T's instead of the model's tier's), ``bare``, or a path to a program file.

    The module comes back read-only (:meth:`~helmdeck_dspy.program.modules.PlanModule.freeze`): it
    is shared by every request its planner serves.

    Raises:
        CompiledProgramError: the chosen file is missing, corrupt, or compiled for another variant
            than ``variant`` (:func:`check_variant`).
    """
    module, ref = _resolve(model_id, tier, variant, root, choice)
    return module.freeze(), ref


def _resolve(model_id: str | None, tier: str, variant: str, root: Path | None, choice: str | None) -> tuple[Any, ProgramRef]:
    from helmdeck_dspy.program.modules import MODULES  # imports dspy

    module = MODULES[variant]()
    choice = choice or "auto"
    if choice == "bare":
        return module, ProgramRef(kind="bare")
    if choice.startswith("tier:") and choice[5:] in TIERS:
        choice, tier = "tier", choice[5:]
    if choice not in PROGRAM_CHOICES:
        path = Path(choice)
        if not path.is_file():
            raise CompiledProgramError(str(path), "no such program file")
        load_compiled_state(module, path)
        return module, ProgramRef(kind="file", path=str(path), sha256=file_sha256(path))
    entries = read_manifest(root)["programs"]
    if choice == "auto" and model_id:
        key = model_key(model_id, variant)
        entry = entries.get(key)
        path = model_program_path(model_id, variant, root)
        if isinstance(entry, dict) and entry.get("model") == model_id and path.is_file():
            return module, _load_listed(module, path, key, entry)
    key, path = tier_key(tier, variant), program_path(tier, variant, root)
    if not path.is_file():
        warnings.warn(f"no compiled program for tier {tier} {variant} ({path}); using the uncompiled module", stacklevel=2)
        return module, ProgramRef(kind="bare")
    entry = entries.get(key)
    return module, _load_listed(module, path, key, entry if isinstance(entry, dict) else {})


def _load_listed(module: Any, path: Path, key: str, entry: dict[str, Any]) -> ProgramRef:
    """Load a program the manifest lists under ``key``; warn when the file is not the one it lists."""
    load_compiled_state(module, path)
    sha = file_sha256(path)
    if entry.get("program_sha256") not in (None, sha):
        warnings.warn(f"{path} differs from the file its manifest entry {key} was compiled to", stacklevel=3)
    kind: ProgramKind = "model" if key.startswith("models/") else "tier"
    return ProgramRef(kind=kind, path=f"{key}.json", sha256=sha, optimizer=entry.get("optimizer"))


ABOUT_KEY = "helmdeck"
"""The key of a program file's ``metadata`` that says what it is (:func:`program_about`)."""


def program_about(state: dict[str, Any]) -> dict[str, Any]:
    """What a program file says it is: ``metadata.helmdeck`` (variant, tier, model, optimizer,
    inputs hash, pool), or ``{}`` for a file from before programs described themselves."""
    about = (state.get("metadata") or {}).get(ABOUT_KEY)
    return about if isinstance(about, dict) else {}


def stated_variant(state: dict[str, Any]) -> str | None:
    """The prompt variant a program state was compiled for: as its file says, else as its
    instructions tell (each variant's are its own), else None."""
    declared = program_about(state).get("variant")
    if declared in VARIANTS:
        return str(declared)
    from helmdeck_dspy.signatures.plan import variant_instructions  # imports dspy

    instructions = ((state.get("plan") or {}).get("signature") or {}).get("instructions")
    for variant in VARIANTS:
        if instructions in (variant_instructions(variant), variant_instructions(variant, tools_only=True)):
            return variant
    return None


def check_variant(state: dict[str, Any], variant: str | None, path: Path) -> None:
    """Refuse a program compiled for another prompt variant than the module it is loaded into.

    Raises:
        CompiledProgramError: naming both variants and how to get the right one.
    """
    compiled_for = stated_variant(state)
    if variant is not None and compiled_for is not None and compiled_for != variant:
        raise CompiledProgramError(str(path), f"a {compiled_for} program, but this planner plans {variant}: compile "
                                              f"one for {variant}, or plan with --variant {compiled_for}")


def load_compiled_state(module: Any, path: str | Path) -> Any:
    """Load a compiled program file into ``module``, or raise :class:`CompiledProgramError`
    naming the file and what is wrong (not JSON, not a program state, a field of the wrong shape).
    """
    p = Path(path)
    state = read_json(p, CompiledProgramError)
    if not isinstance(state, dict):
        raise CompiledProgramError(str(p), f"expected a JSON object (a saved program state), got {type(state).__name__}")
    expected = {name for name, _ in module.named_parameters()}
    missing = sorted(expected - set(state))
    if missing:
        raise CompiledProgramError(str(p), f"missing predictor state {missing}; expected keys {sorted(expected)}")
    for name in sorted(expected):
        pred = state[name]
        if not isinstance(pred, dict):
            raise CompiledProgramError(str(p), f"{name}: expected an object, got {type(pred).__name__}")
        for key in ("demos", "traces", "train"):
            if key in pred and not isinstance(pred[key], list):
                raise CompiledProgramError(str(p), f"{name}.{key}: expected a list, got {type(pred[key]).__name__}")
        for i, demo in enumerate(pred.get("demos", [])):
            if not isinstance(demo, dict):
                raise CompiledProgramError(str(p), f"{name}.demos[{i}]: expected an object, got {type(demo).__name__}")
        sig = pred.get("signature")
        if sig is not None and (not isinstance(sig, dict) or not isinstance(sig.get("fields", []), list)):
            raise CompiledProgramError(str(p), f"{name}.signature: expected an object with a 'fields' list")
    if not isinstance(state.get("metadata", {}), dict):
        raise CompiledProgramError(str(p), "metadata: expected an object")
    check_variant(state, getattr(module, "variant", None), p)
    state.setdefault("metadata", {}).setdefault("dependency_versions", {})
    try:
        module.load_state(state)
    except Exception as exc:  # noqa: BLE001  (dspy raises assorted types for a state of the wrong shape)
        raise CompiledProgramError(str(p), f"not a program state for this module ({type(exc).__name__}: {exc})") from None
    return module
