"""The trace record (design §4), and writing records as JSON Lines.

A trace record is one planning completion as it came back — content, reasoning, finish_reason,
tokens, latency — with what produced it (source, model, tier, prompt variant, task). Unknown
fields are kept; missing optional fields are null. Reading trace files is
:mod:`helmdeck_dspy.traces.io`'s job (one decoder for every reader).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from helmdeck_dspy.decoding.tool_calls import ToolCall, coerce_tool_calls
from helmdeck_dspy.io.atomic import atomic_writer


def utc_now() -> str:
    """The current UTC time in ISO 8601, to the second (a record's ``recorded_at``)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


_MAX_COUNT = 2**53  # integers beyond ±this are not counts; they overflow float sums and Parquet's int64


class TraceRecord(BaseModel):
    """One planning completion.

    Attributes:
        id: Unique within its trace set.
        source: ``live``, ``replay``, ``sim:<profile>``, ``published:<ref>`` or ``import:<format>``
            (:func:`source_kind` maps it to the kind of evidence the record is).
        model: The model id the call was planned for (budget lookup key).
        served_model: The model the provider says answered, when different.
        tier: The tier the call ran under.
        prompt_variant: ``full_steps`` or ``single_pick``.
        task_id: The gold task this call answered, if any.
        intent: The user request.
        max_tokens: The output cap sent with the call.
        content: The visible message content, as returned.
        reasoning_content: A separate reasoning field, as returned.
        finish_reason: The provider's finish_reason, raw spelling.
        completion_tokens / prompt_tokens: Usage as reported.
        latency_ms: Wall time of the call.
        http_status / error: Transport outcome, when the call failed at the HTTP level.
        outcome_label: For metadata-only rows whose content was not captured: the recorded outcome.
        recorded_at: ISO 8601 time.
        call: ``plan`` (default) or ``filter`` (the LLM filter call that preceded a plan call).
        cache_hit: True when the answer came from DSPy's response cache, not from the model (its
            latency is not the model's and is left out of latency figures).
        temperature / seed: The sampling settings sent with the call, when any were set.
        run: What else makes the record reproducible (for a local model: the model file's
            SHA-256, the llama.cpp version and the server settings).
        tool_calls: Native tool calls the completion carried, normalised to ``{name, arguments,
            id}`` (any provider's shape is accepted and normalised; a bare count, as older imports
            wrote, reads as unknown).
        native_tools: The request offered the catalog as native tools (function calling).
        refusal: A refusal the provider sent apart from the content (OpenAI's ``refusal``).
        answer_cut: The client stopped the stream where the answer's JSON closed (the content is
            the answer up to there; ``engines.streaming``); with finish_reason ``length``, where a
            list answer ran away by repeating one call (cut before the cap, as the cap would have).
    """

    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1)
    source: str = "live"
    model: str = ""
    served_model: str | None = None
    tier: str | None = None
    prompt_variant: str | None = None
    task_id: str | None = None
    intent: str | None = None
    max_tokens: int | None = Field(default=None, ge=0, le=_MAX_COUNT)
    content: str | None = None
    reasoning_content: str | None = None
    finish_reason: str | None = None
    completion_tokens: int | None = Field(default=None, ge=0, le=_MAX_COUNT)
    prompt_tokens: int | None = Field(default=None, ge=0, le=_MAX_COUNT)
    latency_ms: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    http_status: int | None = Field(default=None, ge=-_MAX_COUNT, le=_MAX_COUNT)
    error: str | None = None
    outcome_label: str | None = None
    recorded_at: str | None = None
    call: str = Field(default="plan", description='"plan", or "filter" for the two-pass filter call.')
    cache_hit: bool | None = None
    temperature: float | None = Field(default=None, allow_inf_nan=False)
    seed: int | None = Field(default=None, ge=-_MAX_COUNT, le=_MAX_COUNT)
    run: dict[str, Any] | None = None
    tool_calls: list[ToolCall] | None = None
    native_tools: bool | None = None
    refusal: str | None = None
    answer_cut: bool | None = None

    @field_validator("max_tokens", "completion_tokens", "prompt_tokens", "latency_ms", mode="before")
    @classmethod
    def _no_boolean_numbers(cls, value: Any) -> Any:
        if isinstance(value, bool):  # JSON true/false is no count or duration (Python would read it as 1/0)
            raise ValueError("expected a number, not a boolean")
        return value

    @field_validator("tool_calls", mode="before")
    @classmethod
    def _tool_calls(cls, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            return None  # older imports kept only how many calls there were
        if not isinstance(value, list):
            raise ValueError(f"expected a list of tool calls, got {type(value).__name__}")  # noqa: TRY004 - pydantic reports ValueError
        calls, problems = coerce_tool_calls(value)
        if problems:
            raise ValueError(problems[0])
        return calls


LIVE, REPLAY, IMPORTED, PUBLISHED, UNKNOWN = "live", "replay", "imported", "published", "unknown"
SIM_PREFIX = "sim:"
MEASURED_KINDS = (LIVE, IMPORTED, PUBLISHED)
"""Kinds whose records are a real model's answers: what a budget row may be calibrated from."""


def source_kind(source: str | None) -> str:
    """The kind of evidence a record's ``source`` is: the one rule that keeps simulated output
    from passing as a measurement.

    - ``live`` → ``live``: a model answered this run (a ``local:`` model too);
    - ``import:<format>`` → ``imported``: a real provider's log, converted;
    - ``published:<ref>`` → ``published``: figures from a publication (metadata rows);
    - ``sim:<profile>`` → ``sim:<profile>``: the simulator; the profile stays in the kind, as two
      profiles are two different simulated behaviours (``sim`` alone → ``sim:unnamed``);
    - ``replay`` (or ``replay:<...>``) → ``replay``: answers re-served from a trace file, whose
      origin the record no longer knows, so it is neither a measurement nor simulated;
    - anything else, empty included → ``unknown``.

    Evaluation keeps groups of different kinds apart everywhere (groups, tier roll-ups,
    comparisons, plots, reports, MLflow), and calibration applies only measured kinds
    (:data:`MEASURED_KINDS`) unless told otherwise.
    """
    text = (source or "").strip()
    head, _, rest = text.partition(":")
    if head == "sim":
        return SIM_PREFIX + (rest.strip() or "unnamed")
    return {"live": LIVE, "import": IMPORTED, "published": PUBLISHED, "replay": REPLAY}.get(head, UNKNOWN)


def is_simulated(kind: str) -> bool:
    """Whether a kind (from :func:`source_kind`) is the simulator's output."""
    return kind.startswith(SIM_PREFIX)


def is_measured(kind: str) -> bool:
    """Whether a kind is a real model's answers (live, imported or published)."""
    return kind in MEASURED_KINDS


PARTIAL_KEY = "helmdeck_partial_of"
"""The key of the header line that opens a recording's partial file (readers skip that line)."""


def partial_header(out_name: str) -> str:
    """The first line of the partial file of a recording into ``out_name``: it tells the recorder's
    own file from anything else at that path."""
    return json.dumps({PARTIAL_KEY: out_name, "written_by": "helmdeck-dspy"})


def write_jsonl_traces(records: Iterable[TraceRecord], path: str | Path, *, header: str | None = None) -> int:
    """Write records as JSONL atomically (a temporary file renamed into place), after ``header``
    (one line) when given. Returns the count.

    No output rule: for a flow's own files. A trace set a user names goes through
    :func:`~helmdeck_dspy.traces.io.save_traces`, which checks the target and writes any format."""
    n = 0
    with atomic_writer(path) as out:
        if header is not None:
            out.write(header + "\n")
        for rec in records:
            out.write(json.dumps(rec.model_dump(mode="json"), ensure_ascii=False) + "\n")
            n += 1
    return n


def append_trace(record: TraceRecord, path: str | Path, *, fsync: bool = False) -> None:
    """Append one record to a JSONL file (used when recording live calls one by one).

    The record goes out as one complete line in a single ``write`` on an ``O_APPEND``
    descriptor, so a kill leaves at most one torn last line, which readers report and never
    accept. If the file already ends in a torn line (an earlier writer was killed), the new
    record starts on a fresh line instead of being glued onto it. ``fsync`` also forces it to
    disk (survives a power cut, not just a killed process).
    """
    append_line(json.dumps(record.model_dump(mode="json"), ensure_ascii=False), path, fsync=fsync)


def append_line(text: str, path: str | Path, *, fsync: bool = False) -> None:
    """Append ``text`` plus a newline to ``path`` as one write (see :func:`append_trace`)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = (text + "\n").encode("utf-8")
    try:
        _append(target, data, fsync)
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:  # a failed write names no file: name it
            raise OSError(exc.errno, exc.strerror, str(target)) from None
        raise


def _append(target: Path, data: bytes, fsync: bool) -> None:
    fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data  # never extend a torn line left by an interrupted writer
        view = memoryview(data)
        while view:  # a regular-file write is complete in practice; loop for the rare short write
            view = view[os.write(fd, view):]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def records_from(items: Iterable[dict[str, Any] | TraceRecord]) -> list[TraceRecord]:
    """Records from a mix of records and plain dicts (validated)."""
    return [i if isinstance(i, TraceRecord) else TraceRecord.model_validate(i) for i in items]
