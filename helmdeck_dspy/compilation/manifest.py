"""``compiled/manifest.json``: one entry per compiled program (a tier's, or one model's), derived
from the program files.

An entry (:class:`CompileResult`) records the target, the optimizer and its settings, the task
and teacher LMs, hashes of the train and valset tasks, the valset score before and after, the
demos, the prompt size, the estimated and actual LM calls (live and cached apart) and tokens,
the time taken, two hashes that make resuming safe: ``inputs_sha256`` (everything the compile
depended on) and ``program_sha256`` (the saved file), and for a model program scored in a
held-out comparison its test scores (:class:`HeldOut`).

Each program file carries its own entry, but for its path and hash, as ``metadata.helmdeck.compile``
(written with it: ``compilation.compiler.save_program``). What varies from one run to the next
with the same inputs (:data:`RUN_FACTS`: when, how long, calls live or cached, tokens, cost) sits
beside it in ``V.run.json``, so compiling the same inputs again writes the same program bytes;
held-out test scores, measured after the program was saved, in ``V.test.json`` (:func:`record_test`),
so scoring a program never changes its bytes either. The
manifest is an index derived from those files under a compiled root (:func:`derive_manifest`),
rewritten atomically whenever one of them is written, so a program and its entry cannot disagree
and copying a program file carries its record with it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from helmdeck_dspy.domain import VARIANTS
from helmdeck_dspy.errors import CompiledProgramError
from helmdeck_dspy.io.atomic import atomic_write_text
from helmdeck_dspy.io.datafiles import file_sha256, read_json
from helmdeck_dspy.io.resources import compiled_dir
from helmdeck_dspy.program.store import ABOUT_KEY, manifest_path, model_key, program_about, read_manifest, tier_key

RECORD_KEY = "compile"
"""The key under a program file's ``metadata.helmdeck`` that holds its manifest entry."""
RUN_FACTS = ("compiled_at", "seconds", "lm_calls", "cached_calls", "teacher_calls", "prompt_tokens_used",
             "completion_tokens_used", "cost_usd")
"""Entry fields of the compile run rather than of its inputs, kept in ``V.run.json``."""
DERIVED = frozenset({"path", "program_sha256", "test", *RUN_FACTS})
"""Entry fields never stored in the program file: read off the file itself, or from beside it."""


class HeldOutScore(BaseModel):
    """One program's scores on the held-out test split (95% intervals)."""

    program: str = Field(description="Which program: a manifest key, or `bare` for the instructions alone.")
    n: int
    strict_rate: float
    strict_ci: tuple[float, float]
    plan_score: float
    plan_score_ci: tuple[float, float]


class HeldOut(BaseModel):
    """A model program's test-split scores: ``before`` is the comparison's baseline (in the bundled
    comparison, the program ``for_model`` uses without it), ``after`` the program's own, both
    measured on the live model; ``diff`` is after − before in plan score, paired by task."""

    split: str
    tasks_sha256: str
    lm: str
    traces: list[str] = Field(description="The scoring runs' trace files, which `eval` re-scores without the model.")
    before: HeldOutScore
    after: HeldOutScore
    diff: float
    diff_ci: tuple[float, float]


class CompileResult(BaseModel):
    """A manifest entry."""

    tier: str
    variant: str
    model: str | None = Field(default=None, description="The model id a model program was compiled for (None: a tier program).")
    optimizer: str
    optimizer_settings: dict[str, Any] = Field(default_factory=dict, description="The optimizer's settings (settings.py).")
    lm: str | None
    teacher_lm: str | None = Field(default=None, description="The teacher / prompt / reflection LM, when not the task LM.")
    temperature: float | None = Field(default=None, description="The task LM's sampling temperature, when one was set.")
    budget_model: str
    train_sha256: str
    dev_sha256: str
    train_n: int
    dev_n: int
    dev_score_before: float | None
    dev_score_after: float | None
    demos: int
    knn_demos: int = Field(default=0, description="Demos drawn per request from the program's demo pool (0: no pool).")
    decline_slot: bool = Field(default=False, description="The pool keeps one demo that declines among each request's.")
    decline_below: float | None = Field(default=None, description="The decline slot's gate (compile --decline-gate): "
                                        "it opens for requests whose best catalog match scores below this.")
    history_demos: int = Field(default=0, description="Pool demos that are accepted plans from plan history "
                               "(compile --history-traces).")
    demo_pool_size: int = Field(default=0, description="Worked examples in the program's demo pool.")
    prompt_tokens: int = Field(description="Tokens of the rendered prompt for the tier's typical intent.")
    estimated_calls: int = Field(default=0, description="The calls estimated before the run (estimate.py).")
    lm_calls: int = Field(description="Calls the models answered in this run (task and teacher).")
    cached_calls: int = Field(default=0, description="Calls answered from DSPy's response cache (a resumed run).")
    teacher_calls: int = Field(default=0, description="Of all calls, the teacher's.")
    prompt_tokens_used: int
    completion_tokens_used: int
    cost_usd: float | None = Field(
        default=None,
        description="Summed from the cost the task LM reports in its history (the teacher's calls and copies an "
        "optimizer makes are not seen); None when it reports none (simulated, replayed, local).",
    )
    seconds: float
    dspy_version: str
    compiled_at: str
    path: str
    inputs_sha256: str | None = Field(default=None, description="Hash of everything the compile depends on.")
    test: HeldOut | None = Field(default=None, description="Held-out test scores, for a model program scored in a held-out comparison.")
    program_sha256: str | None = Field(default=None, description="Hash of the saved program file.")
    _skipped: bool = PrivateAttr(default=False)

    @property
    def skipped(self) -> bool:
        """True when ``compile_program(resume=True)`` found this program already compiled from the same inputs."""
        return self._skipped

    @property
    def key(self) -> str:
        """The manifest key: ``tier_T/V`` or ``models/SLUG/V``."""
        return model_key(self.model, self.variant) if self.model else tier_key(self.tier, self.variant)

    def mark_skipped(self) -> CompileResult:
        """Flag this entry as found already compiled (see :attr:`skipped`); returns it."""
        self._skipped = True
        return self


def program_files(root: Path | None = None) -> list[Path]:
    """The program files under a compiled root: ``tier_T/V.json`` and ``models/SLUG/V.json``."""
    base = root or compiled_dir()
    return sorted(p for p in [*base.glob("tier_*/*.json"), *base.glob("models/*/*.json")] if p.stem in VARIANTS)


def beside(path: Path, kind: str) -> Path:
    """A file kept beside program ``V.json``: ``V.run.json`` (``kind`` run) or ``V.test.json`` (test)."""
    return path.with_name(f"{path.stem}.{kind}.json")


def entry_of(path: Path, root: Path | None = None) -> CompileResult | None:
    """The manifest entry a program file carries (its path and hash read off the file), or None
    for a file without one.

    Raises:
        CompiledProgramError: The file is not JSON, or its entry is malformed.
    """
    base = root or compiled_dir()
    record = program_about(read_json(path, CompiledProgramError)).get(RECORD_KEY)
    if not isinstance(record, dict):
        return None
    run, scores = beside(path, "run"), beside(path, "test")
    try:
        return CompileResult.model_validate({
            **record, **(read_json(run, CompiledProgramError) if run.is_file() else {}),
            "path": path.relative_to(base).as_posix(), "program_sha256": file_sha256(path),
            "test": read_json(scores, CompiledProgramError) if scores.is_file() else None})
    except ValueError as exc:
        raise CompiledProgramError(str(path), f"metadata.{ABOUT_KEY}.{RECORD_KEY}: {exc}") from None


def derive_manifest(root: Path | None = None) -> dict[str, Any]:
    """The manifest of ``root`` as its program files say it. A file from before programs carried
    their entries keeps the entry the current manifest lists for it (with the test scores kept
    beside it, when there are any), unless that entry hashes another file; any other file without
    an entry is left out."""
    base = root or compiled_dir()
    listed = read_manifest(base)["programs"]
    programs: dict[str, Any] = {}
    for path in program_files(base):
        entry = entry_of(path, base)
        if entry is not None:
            programs[entry.key] = entry.model_dump()
            continue
        key = path.relative_to(base).with_suffix("").as_posix()
        old = listed.get(key)
        if isinstance(old, dict) and old.get("program_sha256") in (None, file_sha256(path)):  # None: not hashed then
            scores = beside(path, "test")
            programs[key] = {**old, "test": read_json(scores, CompiledProgramError)} if scores.is_file() else old
    return {"schema_version": 1, "programs": dict(sorted(programs.items()))}


def write_manifest(root: Path | None = None) -> None:
    """Derive ``root``'s manifest from its program files and replace ``manifest.json`` atomically."""
    atomic_write_text(manifest_path(root), json.dumps(derive_manifest(root), indent=2, ensure_ascii=False) + "\n")


def entry_record(result: CompileResult) -> dict[str, Any]:
    """What a program file keeps of its entry (everything but :data:`DERIVED`)."""
    return result.model_dump(exclude=set(DERIVED))


def record_run(result: CompileResult, path: Path) -> None:
    """Keep ``result``'s :data:`RUN_FACTS` beside program ``path`` (``V.run.json``)."""
    atomic_write_text(beside(path, "run"), json.dumps(result.model_dump(include=set(RUN_FACTS)), indent=2) + "\n")


def record_test(entry: CompileResult, root: Path | None = None) -> None:
    """Keep ``entry.test`` (held-out scores) beside its program file and derive the manifest again;
    the program's bytes are left as they are."""
    base = root or compiled_dir()
    assert entry.test is not None
    atomic_write_text(beside(base / entry.path, "test"), entry.test.model_dump_json(indent=2) + "\n")
    write_manifest(base)
