"""An interrupted eval or compile resumes instead of starting over, and ends where an
uninterrupted run ends.

eval: the running totals are checkpointed (``OUT/.eval-checkpoint.json``) after folded chunks;
a re-run with the same trace files and options replays only the records after the checkpoint.
compile: a (tier, variant) already compiled from the same inputs is skipped when resuming.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from helmdeck_dspy.cli import main
from helmdeck_dspy.compilation.manifest import program_files
from helmdeck_dspy.evaluation import runner
from helmdeck_dspy.evaluation.aggregate import GroupAgg, agg_from_state, agg_to_state
from helmdeck_dspy.evaluation.checkpoint import checkpoint_path
from helmdeck_dspy.evaluation.runner import evaluate
from helmdeck_dspy.evaluation.stats import Reservoir
from helmdeck_dspy.traces.record import TraceRecord, write_jsonl_traces

PLAN = json.dumps({"steps": [{"order": 1, "tool": "web.scrape", "args": {"url": "https://example.org"}}]})
VOLATILE = {"created_at", "seconds"}


def make_traces(path: Path, n: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    recs = []
    for i in range(n):
        ok = rng.random() < 0.6
        recs.append(TraceRecord(
            id=f"r{i}", model=rng.choice(["m/a", "m/b"]), prompt_variant=rng.choice(["full_steps", "single_pick"]),
            tier="C", content=PLAN if ok else PLAN[: rng.randrange(5, 40)], finish_reason="stop" if ok else "length",
            completion_tokens=rng.randrange(50, 900), latency_ms=rng.uniform(100, 9000), max_tokens=600,
            prompt_tokens=rng.randrange(500, 6000),
            # two kinds, and requests that recur (calls per plan): both states must survive a resume
            source="live" if i % 3 else "sim:x", task_id=f"t{i % 37}", intent=f"intent {i % 37}",
        ))
    write_jsonl_traces(recs, path)
    return path


def stable(report) -> dict:
    return report.model_dump(mode="json", exclude=VOLATILE)


@pytest.fixture
def small_chunks(monkeypatch):
    """50-record chunks and a checkpoint after every one, so a few hundred records make many chunks."""
    monkeypatch.setattr(runner, "CHUNK_RECORDS", 50)
    monkeypatch.setattr(runner, "CHECKPOINT_SECONDS", 0.0)


class Interrupt:
    """Raise KeyboardInterrupt at the ``after``-th fold of a chunk (as Ctrl-C or a kill would)."""

    def __init__(self, monkeypatch, after: int) -> None:
        self.calls = 0
        real = runner.merge_groups

        def merge(into, other):
            self.calls += 1
            if self.calls == after:
                raise KeyboardInterrupt
            real(into, other)

        monkeypatch.setattr(runner, "merge_groups", merge)


class CountReplays:
    def __init__(self, monkeypatch) -> None:
        self.n = 0
        real = runner.replay_record

        def replay(rec, ctx):
            self.n += 1
            return real(rec, ctx)

        monkeypatch.setattr(runner, "replay_record", replay)


def test_group_state_round_trips_losslessly_beyond_reservoir_capacity():
    """A checkpointed aggregate continues exactly like one never saved, sampling included."""
    from helmdeck_dspy.evaluation.replay import RecordOutcome  # noqa: F401  (the type add() takes)

    def fill(agg: GroupAgg, values: list[float]) -> None:
        for v in values:
            agg.tokens.add(v)
            agg.latency.merge(Reservoir(values=[v * 2], weights=[1.0], count=1, total=v * 2, maximum=v * 2))

    rng = random.Random(1)
    first, second = [rng.random() for _ in range(300)], [rng.random() for _ in range(300)]
    a = GroupAgg(tokens=Reservoir(capacity=50), latency=Reservoir(capacity=50))
    fill(a, first)
    b = agg_from_state(json.loads(json.dumps(agg_to_state(a))))
    fill(a, second)
    fill(b, second)
    assert a.tokens.values == b.tokens.values and a.latency.values == b.latency.values
    assert a.tokens.summary() == b.tokens.summary() and a.latency.summary() == b.latency.summary()


@pytest.mark.parametrize("workers", [1, 2])
def test_interrupted_eval_resumes_and_matches_an_uninterrupted_run(tmp_path, monkeypatch, small_chunks, workers):
    traces = make_traces(tmp_path / "t.jsonl", 400)
    full = evaluate([traces], progress=False, workers=workers)
    ckpt = tmp_path / "out" / ".eval-checkpoint.json"

    with monkeypatch.context() as m:
        Interrupt(m, after=4)  # three chunks (150 records) folded and checkpointed, then Ctrl-C
        with pytest.raises(KeyboardInterrupt):
            evaluate([traces], progress=False, workers=workers, checkpoint=ckpt)
    state = json.loads(ckpt.read_text())
    assert state["file_records"] == 150 and state["next_line"] == 151

    said: list[str] = []
    counter = CountReplays(monkeypatch)
    resumed = evaluate([traces], progress=False, workers=workers, checkpoint=ckpt, notify=said.append)
    assert said == [(f"resumed from {ckpt}: 150 records and 0 skipped already counted (0 of 1 files done); "
                     f"continuing at {traces} line 151")]
    if workers == 1:
        assert counter.n == 250  # only the records after the checkpoint were replayed
    assert stable(resumed) == stable(full)
    assert {g.kind for g in full.groups} == {"live", "sim:x"}
    assert sum(g.calls_per_plan.repeated for g in full.groups) > 0


def test_resume_across_files_with_skipped_lines(tmp_path, monkeypatch, small_chunks):
    a = make_traces(tmp_path / "a.jsonl", 120, seed=1)
    b = tmp_path / "b.jsonl"
    make_traces(b, 180, seed=2)
    lines = b.read_text().splitlines(keepends=True)
    lines[130] = "{not json\n"  # a bad line after the interruption point, skipped in both runs
    lines[20] = "[1]\n"  # and one before it
    b.write_text("".join(lines))
    full = evaluate([a, b], progress=False, on_error="skip")
    ckpt = tmp_path / "ck.json"
    with monkeypatch.context() as m:
        Interrupt(m, after=6)  # a.jsonl's 3 chunks, b.jsonl's first 2, then stop
        with pytest.raises(KeyboardInterrupt):
            evaluate([a, b], progress=False, on_error="skip", checkpoint=ckpt)
    counter = CountReplays(monkeypatch)
    said: list[str] = []
    resumed = evaluate([a, b], progress=False, on_error="skip", checkpoint=ckpt, notify=said.append)
    assert "(1 of 2 files done)" in said[0] and f"continuing at {b} line 101" in said[0]
    assert counter.n == 80 - 1  # b.jsonl lines 101-180, one of them bad
    assert stable(resumed) == stable(full)
    assert resumed.n_skipped == 2 and len(resumed.errors) == 2


def test_a_checkpoint_for_other_inputs_or_options_is_not_used(tmp_path, monkeypatch, small_chunks):
    traces = make_traces(tmp_path / "t.jsonl", 200)
    ckpt = tmp_path / "ck.json"
    with monkeypatch.context() as m:
        Interrupt(m, after=2)
        with pytest.raises(KeyboardInterrupt):
            evaluate([traces], progress=False, checkpoint=ckpt)
    said: list[str] = []
    counter = CountReplays(monkeypatch)
    evaluate([traces], progress=False, checkpoint=ckpt, on_error="skip", notify=said.append)  # another option
    assert said == [f"ignoring {ckpt}: made for other trace files or options; starting over"] and counter.n == 200
    ckpt.write_text("{torn")
    said.clear()
    evaluate([traces], progress=False, checkpoint=ckpt, notify=said.append)
    assert said[0].startswith(f"ignoring {ckpt}: unreadable checkpoint")
    counter.n = 0
    evaluate([traces], progress=False, checkpoint=ckpt, resume=False)
    assert counter.n == 200


def test_cli_eval_resumes_by_default_and_no_resume_starts_over(tmp_path, monkeypatch, small_chunks, capsys):
    traces = make_traces(tmp_path / "t.jsonl", 300)
    ref, out = tmp_path / "ref", tmp_path / "out"

    def run(*argv: str) -> tuple[int, str]:
        with pytest.raises(SystemExit) as exc:
            main(["eval", str(traces), "--no-progress", *argv])
            raise SystemExit(0)
        return int(exc.value.code or 0), capsys.readouterr().err

    assert run("--out", str(ref))[0] == 0
    with monkeypatch.context() as m:
        Interrupt(m, after=3)
        code, err = run("--out", str(out))
    assert code == 1 and [line for line in err.splitlines() if line] == [
        f"interrupted: progress is saved in {checkpoint_path(out)}; run the same command again to resume", "aborted"]
    assert checkpoint_path(out).is_file() and not (out / "report.json").exists()

    counter = CountReplays(monkeypatch)
    code, err = run("--out", str(out))
    assert code == 0 and "resumed from" in err and "100 records" in err and counter.n == 200
    assert not checkpoint_path(out).exists()  # removed once the report is written
    mine, theirs = (json.loads((d / "report.json").read_text()) for d in (out, ref))
    for r in (mine, theirs):
        for k in VOLATILE:
            r.pop(k)
    assert mine == theirs

    code, err = run("--out", str(out))  # a finished report is never replaced without --force
    assert code == 2 and "pass --force" in err and (out / "report.json").is_file()
    with monkeypatch.context() as m:
        Interrupt(m, after=3)
        run("--out", str(out), "--force")
    counter.n = 0
    code, err = run("--out", str(out), "--no-resume", "--force")
    assert code == 0 and "resumed" not in err and counter.n == 300


# ----------------------------------------------------------------------------- compile


def _compile(root: Path, capsys, *extra: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(["compile", "--all", "--out", str(root), *extra])
        raise SystemExit(0)
    return int(exc.value.code or 0), capsys.readouterr().err


def _entries(root: Path) -> dict:
    programs = json.loads((root / "manifest.json").read_text())["programs"]
    return {k: {f: v for f, v in e.items() if f not in ("seconds", "compiled_at")} for k, e in programs.items()}


def test_interrupted_compile_all_skips_programs_already_compiled(tmp_path, monkeypatch, capsys):
    from helmdeck_dspy.compilation import compiler

    ref, root = tmp_path / "ref", tmp_path / "root"
    assert _compile(ref, capsys)[0] == 0

    fits = {"n": 0, "stop_at": 3}
    real_fit = compiler.fit_demos

    def fit(*args, **kwargs):
        fits["n"] += 1
        if fits["n"] == fits["stop_at"]:
            raise KeyboardInterrupt  # killed while compiling the third program
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(compiler, "fit_demos", fit)
    code, err = _compile(root, capsys)
    assert code == 1 and len(_entries(root)) == 2

    fits.update(n=0, stop_at=0)
    code, err = _compile(root, capsys)
    assert code == 0 and fits["n"] == 4  # only the four programs not yet compiled
    assert "resuming an interrupted compile" in err
    assert err.count(": skipped, already compiled from the same inputs") == 2
    assert _entries(root) == _entries(ref)
    for f in program_files(ref):  # the programs, byte for byte (their run facts sit beside them)
        assert (root / f.relative_to(ref)).read_bytes() == f.read_bytes()
    assert not (root / ".compile-run.json").exists()

    # a finished run is not "interrupted": by default everything compiles again; --resume skips
    fits["n"] = 0
    assert _compile(root, capsys)[0] == 0 and fits["n"] == 6
    fits["n"] = 0
    code, err = _compile(root, capsys, "--resume")
    assert code == 0 and fits["n"] == 0 and err.count("skipped") == 6
    # a changed input (the seed) is not the same compile: --resume recompiles it
    fits["n"] = 0
    assert _compile(root, capsys, "--resume", "--seed", "1")[0] == 0 and fits["n"] == 6
    # a damaged program file is recompiled even with --resume
    (root / "tier_C" / "single_pick.json").write_text("{")
    fits["n"] = 0
    code, err = _compile(root, capsys, "--resume", "--seed", "1")
    assert code == 0 and fits["n"] == 1 and err.count("skipped") == 5
