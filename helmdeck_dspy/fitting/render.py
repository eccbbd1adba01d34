"""Writing a fitted profile as a documented TOML file: a header naming the trace set it was fitted
to, and beside every value whether it was fitted (with the evidence) or assumed (with why)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helmdeck_dspy.engines.profile import SimProfile
from helmdeck_dspy.fitting.fit import FitResult, Value
from helmdeck_dspy.io.atomic import atomic_write_text
from helmdeck_dspy.io.datafiles import toml_value

PARTS = ("planning", "shape", "timing")


def _line(name: str, value: Any, note: Value | None) -> str:
    text = f"{name} = {toml_value(value)}"
    if note is None:
        return text
    return f"{text:<34} # {note.how}" + (f": {note.note}" if note.note else "")


def render_profile(result: FitResult, command: str | None = None) -> str:
    """The profile of ``result`` as TOML text, documented (it loads back as the same profile)."""
    p, notes = result.profile, result.notes
    src = p.fitted_to
    assert src is not None, "a fitted profile names its trace set"
    n = sum(src.records.values())
    per = ", ".join(f"{v} {k}" for v, k in src.records.items())
    lines = [
        f"# Simulator profile fitted to a real trace set by `{command or 'helmdeck-dspy traces fit'}`.",
        f"#   trace set:  {src.traces}",
        f"#   sha256:     {src.sha256}",
        f"#   records:    {n} plan records of {src.model} ({per}) at a {src.max_tokens}-token cap"
        + (f"; {src.excluded} left out (transport_error or rate_limited: the call failed, not the model)" if src.excluded else ""),
        f"#   fitted on:  {src.fitted_on}",
        "# Each value says whether it was fitted to those records (and from what) or assumed (and why).",
        "# The check (`helmdeck-dspy traces fit ... --check`, tests/traces/test_fitted_profiles.py) simulates this",
        "# profile on the same tasks and variants and compares every rate with the real one's 95% interval.",
        f"name = {toml_value(p.name)}",
        f"model = {toml_value(p.model)}",
        f"description = {toml_value(p.description)}",
    ]
    for part in PARTS:
        lines += ["", f"[{part}]"]
        obj = getattr(p, part)
        for name in type(obj).model_fields:
            note = notes.get(f"{part}.{name}")
            own = [v for v, over in p.variants.items() if name in getattr(over, part)]
            if note is not None and own:
                note = Value(note.how, f"{note.note}; pooled here, {' and '.join(own)} below")
            lines.append(_line(name, getattr(obj, name), note))
    for variant, over in p.variants.items():
        for part in PARTS:
            values = getattr(over, part)
            if values:
                lines += ["", f"[variants.{variant}.{part}]  # {variant} differs from the values above"]
                lines += [_line(k, v, notes.get(f"variants.{variant}.{part}.{k}")) for k, v in values.items()]
    lines += ["", "[fitted_to]  # the trace set above, for tools"]
    for name, value in src.model_dump().items():
        if value is not None:
            lines.append(f"{name} = {toml_value(value)}")
    return "\n".join(lines) + "\n"


def write_profile(result: FitResult, out: str | Path, command: str | None = None, *, force: bool = False) -> Path:
    """Write the documented profile to ``out`` (atomically) and check it loads back unchanged.

    The output rule of :mod:`helmdeck_dspy.io.outputs` applies: a ``.toml`` path, an existing file
    replaced only with ``force``, a bundled profile never.

    Raises:
        UsageValueError / OutputRefusedError / OutputUnwritableError: ``out`` may not be written.
    """
    from helmdeck_dspy.io.datafiles import read_toml
    from helmdeck_dspy.io.outputs import TOML_FORMATS, check_output

    target = check_output(out, formats=TOML_FORMATS, force=force).path
    text = render_profile(result, command)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, text)
    loaded = SimProfile.model_validate(read_toml(target))
    assert loaded == result.profile, "the written profile does not load back as the fitted one"
    return target
