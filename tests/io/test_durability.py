"""Nothing lost: appended traces survive a kill, and every rewritten file is replaced atomically.

- Trace records are appended as one complete line per write; a writer killed with SIGKILL
  leaves every complete line readable and at most one torn last line, which every reader
  (``read_jsonl_traces``, ``load_traces``, ``evaluate`` on one or two workers) reports and never accepts.
- Reports, plots, compiled programs, the manifest, the budget table and Parquet/JSONL trace
  outputs are written to a temporary file and renamed: a failure part-way through a write
  leaves the previous file byte for byte, and no temporary file behind.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.io import atomic as fileio
from helmdeck_dspy.traces.io import read_jsonl_traces
from helmdeck_dspy.traces.record import (
    TraceRecord,
    append_trace,
    write_jsonl_traces,
)
from tests.conftest import PROJECT_ROOT

PLAN = json.dumps({"steps": [{"order": 1, "tool": "web.scrape", "args": {"url": "https://example.org"}}]})

WRITER = textwrap.dedent("""
    import sys
    from helmdeck_dspy.traces.record import TraceRecord, append_trace
    path, pad = sys.argv[1], int(sys.argv[2])
    i = 0
    while True:
        append_trace(TraceRecord(id=f"r{i:07d}", model="m/x", prompt_variant="full_steps", tier="C",
                                 content=PLAN_TEXT, finish_reason="stop", reasoning_content="x" * pad), path)
        i += 1
""").replace("PLAN_TEXT", repr(PLAN))


def _kill_writer_mid_run(path: Path, pad: int, min_lines: int) -> None:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(pad)], cwd=PROJECT_ROOT)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if path.exists() and path.read_bytes().count(b"\n") >= min_lines:
                break
            time.sleep(0.02)
        else:
            pytest.fail("the writer never got going")
        os.kill(proc.pid, signal.SIGKILL)  # mid-loop: most likely inside a json.dumps or a write
    finally:
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL


def _complete_lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    return data.split(b"\n")[:-1]  # everything before the last newline


def _check_readers(path: Path, expect_ids: list[str], torn_at: int | None) -> None:
    from helmdeck_dspy.evaluation.runner import evaluate
    from helmdeck_dspy.traces.io import load_traces

    for reader in (read_jsonl_traces, load_traces):
        errors: list[DataFileError] = []
        got = [r.id for r in reader(path, on_error="skip", report=errors.append)]
        assert got == expect_ids
        if torn_at is None:
            assert errors == []
        else:
            (err,) = errors
            assert err.line == torn_at and "torn last line" in err.detail
            with pytest.raises(DataFileError, match=f":{torn_at}: torn last line"):
                list(reader(path))
    for workers in (1, 2):
        report = evaluate([path], on_error="skip", workers=workers, progress=False)
        assert report.n_records == len(expect_ids)
        assert report.n_skipped == (0 if torn_at is None else 1)
        if torn_at is not None:
            assert report.errors == [(f"{path}:{torn_at}: torn last line (no newline at the end and not valid JSON: "
                                      "the writer was probably interrupted)")]


def test_sigkilled_writer_leaves_every_complete_line_readable(tmp_path):
    """SIGKILL a process appending records in a loop; every complete line reads back, in order."""
    path = tmp_path / "live.jsonl"
    _kill_writer_mid_run(path, pad=20_000, min_lines=40)
    lines = _complete_lines(path)
    assert len(lines) >= 40
    ids = [json.loads(line)["id"] for line in lines]
    assert ids == [f"r{i:07d}" for i in range(len(ids))]  # nothing lost or reordered before the kill
    tail = path.read_bytes()[len(b"\n".join(lines)) + 1:] if lines else path.read_bytes()
    # One write per record: a killed process almost never leaves a partial line, but if the kill
    # did land inside a write, the tail is the one torn line and is reported as such.
    _check_readers(path, ids, torn_at=len(lines) + 1 if tail.strip() else None)


def test_a_torn_last_line_is_reported_and_never_accepted(tmp_path):
    """A write cut short (a crash during writeback) leaves a torn line: readers report it; the next
    append starts on a fresh line instead of gluing onto it."""
    path = tmp_path / "live.jsonl"
    _kill_writer_mid_run(path, pad=2_000, min_lines=20)
    lines = _complete_lines(path)
    keep = lines[:10]
    cut = lines[10][: len(lines[10]) // 2]  # half of record 11, no newline
    path.write_bytes(b"\n".join(keep) + b"\n" + cut)
    ids = [f"r{i:07d}" for i in range(10)]
    _check_readers(path, ids, torn_at=11)

    # a cut that happens to be valid JSON cannot occur for a record (it ends with "}"), but a
    # final complete record without its newline is accepted: nothing was lost
    path.write_bytes(b"\n".join(keep))
    _check_readers(path, ids, torn_at=None)

    # appending after a torn line: the torn fragment stays a rejected line of its own
    path.write_bytes(b"\n".join(keep) + b"\n" + cut)
    append_trace(TraceRecord(id="after", model="m/x", content=PLAN, finish_reason="stop"), path, fsync=True)
    errors: list[DataFileError] = []
    assert [r.id for r in read_jsonl_traces(path, on_error="skip", report=errors.append)] == [*ids, "after"]
    (err,) = errors
    assert err.line == 11 and "expected one JSON object per line" in err.detail


def test_append_is_one_write_per_record(tmp_path, monkeypatch):
    """Each record reaches the file in a single os.write of one complete line."""
    writes: list[bytes] = []
    real = os.write

    def spy(fd, data):
        writes.append(bytes(data))
        return real(fd, data)

    monkeypatch.setattr(os, "write", spy)
    path = tmp_path / "t.jsonl"
    for i in range(3):
        append_trace(TraceRecord(id=f"r{i}", content=PLAN), path)
    assert len(writes) == 3 and all(w.endswith(b"\n") and w.count(b"\n") == 1 for w in writes)
    assert [r.id for r in read_jsonl_traces(path)] == ["r0", "r1", "r2"]


# ------------------------------------------------------------------------------ atomic rewrites


class _DiskFull:
    """Patch ``fileio`` so that, after ``skip`` good atomic writes, the next one writes part of its
    data and then fails (ENOSPC), as a full disk or a crash would leave it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, skip: int = 0) -> None:
        self.failed = 0
        self.left = skip
        real_fdopen = os.fdopen
        outer = self

        class Half:
            def __init__(self, handle):
                self.handle = handle

            def write(self, data):
                self.handle.write(data[: max(1, len(data) // 2)])
                self.handle.flush()
                outer.failed += 1
                raise OSError(errno.ENOSPC, "No space left on device")

            def __getattr__(self, name):
                return getattr(self.handle, name)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return self.handle.__exit__(*exc)

        def fdopen(*args, **kwargs):
            handle = real_fdopen(*args, **kwargs)
            if outer.left > 0:
                outer.left -= 1
                return handle
            return Half(handle)

        monkeypatch.setattr(fileio.os, "fdopen", fdopen)


def _no_temp_files(directory: Path) -> None:
    assert [p.name for p in directory.rglob(".*") if p.is_file() and p.name != ".eval-checkpoint.json"] == []


def test_budget_table_survives_a_failed_apply(tmp_path, monkeypatch):
    from helmdeck_dspy.budgets import load_budget_table
    from helmdeck_dspy.calibration.apply import apply_calibration
    from helmdeck_dspy.calibration.calibrate import Calibration, Proposal

    path = tmp_path / "budgets.toml"
    path.write_text((PROJECT_ROOT / "compiled" / "budgets.toml").read_text(encoding="utf-8"), encoding="utf-8")
    before = path.read_bytes()
    cal = Calibration(report_trace_set_sha256="0" * 64, min_n=30, proposals=[
        Proposal(model="acme/new-model", field="output_tokens", current=600, proposed=1400, evidence={"n": 40}),
    ])
    disk = _DiskFull(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        apply_calibration(cal, path)
    assert disk.failed == 1
    assert path.read_bytes() == before
    _no_temp_files(tmp_path)
    monkeypatch.undo()
    assert apply_calibration(cal, path) == ["acme/new-model"]
    assert load_budget_table(path).lookup("acme/new-model").output_tokens == 1400


def test_compiled_program_and_manifest_survive_a_failed_write(tmp_path, monkeypatch):
    from tests.compile_helpers import compile_one
    from helmdeck_dspy.compilation.manifest import manifest_path
    from helmdeck_dspy.program.modules import SinglePick
    from helmdeck_dspy.program.store import program_path

    compile_one("C", "single_pick", out_root=tmp_path)
    program, manifest = program_path("C", "single_pick", tmp_path), manifest_path(tmp_path)
    old_program, old_manifest = program.read_bytes(), manifest.read_bytes()

    def torn_save(self, path, *args, **kwargs):  # the program file is cut off half-way
        Path(path).write_text('{"plan": {"demos": [{"user_intent": "half', encoding="utf-8")
        raise RuntimeError("killed while saving")

    with monkeypatch.context() as m:
        m.setattr(SinglePick, "save", torn_save)
        with pytest.raises(RuntimeError, match="killed while saving"):
            compile_one("C", "single_pick", out_root=tmp_path, resume=False)
    assert program.read_bytes() == old_program and manifest.read_bytes() == old_manifest
    _no_temp_files(tmp_path)

    with monkeypatch.context() as m:  # the program saved, the manifest write fails part-way
        _DiskFull(m)
        with pytest.raises(OSError, match="No space left"):
            compile_one("C", "single_pick", out_root=tmp_path, resume=False)
    assert json.loads(manifest.read_bytes()) == json.loads(old_manifest)
    _no_temp_files(tmp_path)


def test_manifest_survives_a_failed_write_after_the_program_was_saved(tmp_path, monkeypatch):
    """Programs are saved through the atomic writer too, so the first write of a compile is the
    program's: let it through and fail the manifest's."""
    from tests.compile_helpers import compile_one
    from helmdeck_dspy.compilation.manifest import manifest_path

    compile_one("C", "single_pick", out_root=tmp_path)
    manifest = manifest_path(tmp_path)
    old_manifest = manifest.read_bytes()
    with monkeypatch.context() as m:
        disk = _DiskFull(m, skip=1)
        with pytest.raises(OSError, match="No space left"):
            compile_one("C", "single_pick", out_root=tmp_path, resume=False)
    assert disk.failed == 1
    assert manifest.read_bytes() == old_manifest
    _no_temp_files(tmp_path)


def test_eval_report_and_plots_survive_a_failed_rewrite(tmp_path, monkeypatch):
    from helmdeck_dspy.evaluation.output import write_outputs
    from helmdeck_dspy.evaluation.runner import evaluate

    traces = tmp_path / "t.jsonl"
    write_jsonl_traces([TraceRecord(id=f"r{i}", model="m/x", prompt_variant="full_steps", tier="C", content=PLAN,
                              finish_reason="stop") for i in range(5)], traces)
    out = tmp_path / "rep"
    report = evaluate([traces], progress=False)
    plots = write_outputs(report, out)
    assert plots
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    # atomic writes in order: report.json, three plots, report.md; fail each of them in turn
    for skip, name in enumerate(["report.json", *plots, "report.md"]):
        with monkeypatch.context() as m:
            disk = _DiskFull(m, skip=skip)
            with pytest.raises(OSError, match="No space left"):
                write_outputs(report, out, force=True)
            assert disk.failed == 1, name
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before, name
        _no_temp_files(out)


def test_trace_outputs_are_replaced_atomically(tmp_path, monkeypatch):
    from helmdeck_dspy.traces.io import load_traces, save_traces

    recs = [TraceRecord(id=f"r{i}", content=PLAN) for i in range(3)]
    for name in ("t.jsonl", "t.parquet"):
        path = tmp_path / name
        save_traces(recs, path)
        before = path.read_bytes()
        with monkeypatch.context() as m:
            _DiskFull(m)
            with pytest.raises(OSError):
                save_traces([TraceRecord(id="new", content=PLAN)], path, force=True)
        assert path.read_bytes() == before
        assert [r.id for r in load_traces(path)] == ["r0", "r1", "r2"]
    _no_temp_files(tmp_path)


def test_traces_record_keeps_a_partial_file_until_it_finishes(tmp_path, monkeypatch):
    """A recording run interrupted part-way leaves OUT.partial.jsonl with the exchanges so far."""
    from helmdeck_dspy.engines.profile import load_profile
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.recording.trace_sets import partial_path, simulate
    from helmdeck_dspy.tasks import load_tasks

    out = tmp_path / "sim.jsonl"
    calls = {"n": 0}
    real_plan = Planner.plan

    def plan_then_stop(self, *args, **kwargs):
        if calls["n"] == 3:
            raise KeyboardInterrupt
        calls["n"] += 1
        return real_plan(self, *args, **kwargs)

    monkeypatch.setattr(Planner, "plan", plan_then_stop)
    with pytest.raises(KeyboardInterrupt):
        simulate([load_profile("nemotron-like")], load_tasks("dev")[:6], out, variants=["full_steps"])
    assert not out.exists()
    kept = [r for r in read_jsonl_traces(partial_path(out)) if r.call == "plan"]
    assert len(kept) == 3
    monkeypatch.undo()
    assert simulate([load_profile("nemotron-like")], load_tasks("dev")[:6], out, variants=["full_steps"]) == 6
    assert not partial_path(out).exists()
