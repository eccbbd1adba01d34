"""Fitting a simulator profile to a trace set (fitting/fit.py): a known mix of answers in, the
rates out; the documented TOML; the check; ``traces fit``."""

from __future__ import annotations

import json
import math
import random
import re

import pytest
from click.testing import CliRunner

from helmdeck_dspy.cli.app import cli
from helmdeck_dspy.engines.profile import SimProfile, load_profile
from helmdeck_dspy.errors import InputError
from helmdeck_dspy.fitting.check import check_profile
from helmdeck_dspy.fitting.fit import fit_profile
from helmdeck_dspy.fitting.render import render_profile, write_profile
from helmdeck_dspy.io.datafiles import file_sha256
from helmdeck_dspy.tasks import load_tasks
from helmdeck_dspy.traces.record import TraceRecord, write_jsonl_traces

MODEL = "local/qwen2.5-coder-0.5b-instruct"
DEV = load_tasks("dev")
CAP = 1500
TTFT, TPS = 3000.0, 40.0
PROSE = "I would look at the request first and then pick the right tools for each part of it"


def _plan(task, variant: str, invented: bool = False, broken: bool = False) -> str:
    gold = task.steps[:1] if variant == "single_pick" else task.steps
    steps = [{"order": i, "tool": g.tool, "args": dict(g.args), "rationale": "fits"} for i, g in enumerate(gold, 1)]
    if invented:
        steps.append({"order": len(steps) + 1, "tool": "made.up", "args": {}, "rationale": "a tool I imagine"})
    text = json.dumps({"steps": steps, "complexity": "single-action", "reasoning": "short"})
    return text[:-1] + ",}" if broken else text


def _prose(tokens: int) -> str:
    words = PROSE.split()
    return " ".join(words[i % len(words)] for i in range(tokens))


# Per variant: (kind, how many). 40 answers each; the variants differ in how often they answer in prose.
MIX = {
    "full_steps": [("plan", 12), ("invented", 4), ("repaired", 4), ("prose", 6), ("prose_cut", 4), ("empty", 4),
                   ("not_plan", 4), ("garbled", 2)],
    "single_pick": [("plan", 34), ("prose", 2), ("empty", 2), ("not_plan", 2)],
}


def synthetic_records() -> list[TraceRecord]:
    rng = random.Random(1)
    out = []
    for variant, mix in MIX.items():
        kinds = [k for k, n in mix for _ in range(n)]
        for i, (task, kind) in enumerate(zip(DEV, kinds)):
            finish, tokens = "stop", {"full_steps": 80, "single_pick": 40}[variant] + rng.randrange(-10, 11)
            if kind in ("plan", "invented", "repaired"):
                content = _plan(task, variant, invented=kind == "invented", broken=kind == "repaired")
            elif kind == "prose":
                tokens = rng.choice([200, 260, 320, 400, 500, 650])
                content = _prose(tokens)
            elif kind == "prose_cut":
                content, finish, tokens = _prose(CAP), "length", CAP
            elif kind == "empty":
                content, tokens = "", 0
            elif kind == "not_plan":
                content = json.dumps({"tool": task.steps[0].tool if task.steps else "x", "args": {}})
            else:
                content = "{ I would use the browser and then the email tool }"
            latency = (TTFT + 1000 * tokens / TPS) * math.exp(rng.gauss(0, 0.05))
            out.append(TraceRecord(
                id=f"{variant}-{i}", source="live", model=MODEL, tier="C", prompt_variant=variant, task_id=task.id,
                intent=task.intent, max_tokens=CAP, content=content, finish_reason=finish, completion_tokens=tokens,
                latency_ms=round(latency, 1), call="plan",
            ))
    # two calls that failed before any answer: left out of the fit
    out += [TraceRecord(id=f"down-{i}", model=MODEL, prompt_variant="full_steps", task_id=DEV[i].id, max_tokens=CAP,
                        error="ConnectionError: connection refused", call="plan") for i in range(2)]
    return out


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("fit") / "local-synthetic.jsonl"
    write_jsonl_traces(synthetic_records(), path)
    return path


@pytest.fixture(scope="module")
def fitted(trace_file, tmp_path_factory):
    return fit_profile(trace_file, name="fitted-synthetic", repeats=1, fitted_on="2026-01-02",
                       work_dir=tmp_path_factory.mktemp("fit-work"))


# ----------------------------------------------------------------------------- the mix in, the rates out


def _tail(shape) -> float:
    """The share of prose answers that end on their own the cap still cuts, under the profile."""
    return 0.5 * math.erfc(math.log(CAP / shape.no_json_tokens) / (shape.no_json_sigma * math.sqrt(2)))


def test_cause_mix_comes_out_per_variant_when_the_mixes_differ(fitted):
    p = fitted.profile
    full, single = p.shape_for("full_steps"), p.shape_for("single_pick")
    # full_steps fails 20 of 40, single_pick 6 of 40: the mixes differ, so every rate is per variant
    assert (full.empty_stop_rate, single.empty_stop_rate) == (0.1, 0.05)
    assert (full.not_plan_rate, single.not_plan_rate) == (0.1, 0.05)
    assert (full.garbled_rate, single.garbled_rate) == (0.05, 0.0)
    # prose: 10 of 40 full_steps answers (4 cut by the cap), 2 of 40 single_pick ones
    assert full.no_json_rate + full.runaway_rate == pytest.approx(0.25, abs=2e-4)
    assert single.no_json_rate + single.runaway_rate == pytest.approx(0.05, abs=2e-4)
    # ... of which those that end on their own reproduce the uncut share, and the cut ones the cut share
    assert full.no_json_rate * (1 - _tail(full)) == pytest.approx(6 / 40, abs=2e-4)
    assert full.runaway_rate + full.no_json_rate * _tail(full) == pytest.approx(4 / 40, abs=2e-4)
    # repaired: 4 of the 20 full_steps answers no failure took
    assert full.malformed_rate == pytest.approx(0.2, abs=1e-3) and single.malformed_rate == 0.0
    # the table above the variants holds the pooled values
    assert p.shape.empty_stop_rate == 0.075
    for shape in (full, single):
        assert shape.empty_rate == shape.content_filter_rate == shape.fence_rate == 0.0
        assert shape.reasoning == "none"


def test_prose_length_is_a_log_normal_of_the_prose_that_ended_on_its_own(fitted):
    prose = [r.completion_tokens for r in synthetic_records() if r.finish_reason == "stop" and r.content
             and "{" not in r.content]
    assert len(prose) == 8
    logs = [math.log(t) for t in prose]
    mu = sum(logs) / len(logs)
    sd = math.sqrt(sum((x - mu) ** 2 for x in logs) / (len(logs) - 1))
    shape = fitted.profile.shape
    assert shape.no_json_tokens == pytest.approx(math.exp(mu), rel=1e-3)
    assert shape.no_json_sigma == pytest.approx(sd, rel=1e-3)


def test_rates_are_pooled_unless_the_variants_differ():
    from helmdeck_dspy.fitting.values import Builder, split_rate

    assert split_rate({"full_steps": (4, 40), "single_pick": (2, 40)})[1] == {}
    assert split_rate({"full_steps": (12, 40), "single_pick": (2, 40)})[1] == {"full_steps": 0.3, "single_pick": 0.05}
    b = Builder(SimProfile(name="b", model=MODEL))
    b.rate("shape", "no_json_rate", {"full_steps": (4, 40), "single_pick": (2, 40)}, "prose")
    assert b.values["shape"]["no_json_rate"] == 0.075 and not b.over
    b.rate("shape", "empty_stop_rate", {"full_steps": (4, 40), "single_pick": (2, 40)}, "empty", split=True)
    assert b.over["full_steps"]["shape"]["empty_stop_rate"] == 0.1
    assert b.over["single_pick"]["shape"]["empty_stop_rate"] == 0.05
    assert "per variant" in b.notes["shape.empty_stop_rate"].note


def test_invented_tools_and_plan_noise(fitted):
    p = fitted.profile
    # full_steps: 4 invented steps among the plans' steps; single_pick: none (the guard keeps the first step)
    steps_full = sum(len(t.steps) for t in DEV[12:20]) + sum(len(t.steps) for t in DEV[:12])
    assert steps_full > 0
    rate_full = p.planning_for("full_steps").invented_tool_rate
    assert 0 < rate_full <= 4 / 20 + 1e-9
    assert p.planning_for("single_pick").invented_tool_rate <= rate_full
    assert p.planning.self_call_rate == 0.0
    # every valid step names a gold tool: no wrong picks needed
    assert p.planning_for("full_steps").wrong_tool_rate == 0.0
    assert p.planning.demo_gain == 0.0


def test_timing_from_latency_against_tokens(fitted):
    t = fitted.profile.timing
    assert t.ttft_ms == pytest.approx(TTFT, rel=0.08)
    assert t.tokens_per_s == pytest.approx(TPS, rel=0.08)
    assert t.ttft_sigma < 0.15


def test_failed_calls_are_left_out_and_the_source_is_recorded(fitted, trace_file):
    src = fitted.profile.fitted_to
    assert src.records == {"full_steps": 40, "single_pick": 40}
    assert src.excluded == 2
    assert src.sha256 == file_sha256(trace_file)
    assert (src.model, src.max_tokens, src.fitted_on) == (MODEL, CAP, "2026-01-02")
    assert fitted.profile.model == MODEL


def test_every_value_says_fitted_or_assumed(fitted):
    p, notes = fitted.profile, fitted.notes
    for part in ("planning", "shape", "timing"):
        for name in type(getattr(p, part)).model_fields:
            assert notes[f"{part}.{name}"].how in ("fitted", "assumed"), name
    assert notes["shape.empty_stop_rate"].how == "fitted" and "4/40 full_steps" in notes["shape.empty_stop_rate"].note
    assert notes["variants.full_steps.shape.empty_stop_rate"].how == "fitted"
    assert notes["planning.demo_gain"].how == "assumed"
    assert notes["timing.tokens_per_s"].how == "fitted"


# ----------------------------------------------------------------------------- the TOML


def test_written_profile_is_documented_and_loads_back(fitted, tmp_path):
    out = write_profile(fitted, tmp_path / "fitted-synthetic.toml")
    text = out.read_text()
    src = fitted.profile.fitted_to
    assert src.sha256 in text and "local-synthetic.jsonl" in text and "2026-01-02" in text
    assert "80 plan records" in text and "2 left out" in text
    assert re.search(r"^empty_stop_rate = 0\.075 +# fitted: .*; pooled here, full_steps and single_pick below$", text, re.M)
    assert re.search(r"^empty_stop_rate = 0\.1 +# fitted: ", text, re.M)  # full_steps' own
    assert re.search(r"^demo_gain = 0\.0 +# assumed: ", text, re.M)
    assert "[variants.full_steps.shape]" in text
    assert load_profile(out) == fitted.profile
    assert render_profile(fitted) == text


# ----------------------------------------------------------------------------- the check


def test_check_reproduces_the_synthetic_set(fitted, trace_file, tmp_path):
    report = check_profile(fitted.profile, trace_file, repeats=3, work_dir=tmp_path)
    assert report.ok, report.table()
    measures = {(r.variant, r.measure) for r in report.rows}
    for variant in ("full_steps", "single_pick"):
        assert {(variant, "strict"), (variant, "tolerant"), (variant, "cause:no_json"),
                (variant, "completion_tokens_p50"), (variant, "latency_ms_p50")} <= measures
    assert report.n_real == {"full_steps": 40, "single_pick": 40} and report.excluded == 2
    assert report.n_sim == {"full_steps": 120, "single_pick": 120}
    assert "| full_steps | cause:no_json | 0.150 (6/40) |" in report.table()
    assert "| full_steps | cause:length_truncated | 0.100 (4/40) |" in report.table()


def test_check_fails_a_profile_that_does_not_fit(fitted, trace_file, tmp_path):
    wrong = fitted.profile.model_copy(update={"variants": {}})  # single_pick now answers in prose 15% of the time
    worse = wrong.model_copy(update={"shape": wrong.shape.model_copy(update={"no_json_rate": 0.6, "empty_stop_rate": 0.0})})
    report = check_profile(worse, trace_file, repeats=2, work_dir=tmp_path)
    assert not report.ok
    assert any(r.measure == "cause:no_json" for r in report.failures)


# ----------------------------------------------------------------------------- bad input


def test_a_set_of_two_models_needs_model(tmp_path, trace_file):
    two = tmp_path / "two.jsonl"
    other = [r.model_copy(update={"model": "local/other", "id": f"o-{r.id}"}) for r in synthetic_records()[:5]]
    write_jsonl_traces(synthetic_records() + other, two)
    with pytest.raises(InputError, match="--model"):
        fit_profile(two, name="x")
    with pytest.raises(InputError, match="no plan records of 'local/none'"):
        fit_profile(two, name="x", model="local/none")


def test_cli_fit_writes_the_profile_and_checks_it(trace_file, tmp_path):
    out = tmp_path / "fitted-cli.toml"
    r = CliRunner().invoke(cli, ["traces", "fit", str(trace_file), "--name", "fitted-cli", "--out", str(out),
                                 "--check"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert f"wrote {out}" in r.output and "reproduces the real set" in r.output
    assert load_profile(out).fitted_to.sha256 == file_sha256(trace_file)


def test_cli_fit_check_outside_the_bounds_is_exit_1(trace_file, tmp_path):
    from helmdeck_dspy.cli.app import main

    with pytest.raises(SystemExit) as info:
        main(["traces", "fit", str(trace_file), "--name", "fitted-cli", "--out", str(tmp_path / "p.toml"), "--check",
              "--repeats", "1", "--tolerance", "0"])
    assert info.value.code == 1


def test_cli_fit_bad_name_is_one_line(trace_file, tmp_path, capsys):
    from helmdeck_dspy.cli.app import main

    with pytest.raises(SystemExit) as info:
        main(["traces", "fit", str(trace_file), "--name", "Bad Name", "--out", str(tmp_path / "p.toml")])
    assert info.value.code == 2  # a usage error (issue 52, item 7)
    assert "--name" in capsys.readouterr().err


def test_a_base_model_that_answers_in_prose_is_fitted_and_reproduced(tmp_path):
    """No plan at all: prose that ends on its own, prose that runs on to the cap, empty answers."""
    rng = random.Random(2)
    records = []
    for variant in ("full_steps", "single_pick"):
        for i, task in enumerate(DEV[:24]):
            roll = rng.random()
            if roll < 0.3:
                content, finish, tokens = _prose(CAP), "length", CAP
            elif roll < 0.8:
                tokens = min(int(rng.lognormvariate(math.log(300), 0.6)), CAP - 100)
                content, finish = _prose(tokens), "stop"
            else:
                content, finish, tokens = "", "stop", 0
            records.append(TraceRecord(
                id=f"{variant}-{i}", model="local/gemma-3-270m", tier="C", prompt_variant=variant, task_id=task.id,
                intent=task.intent, max_tokens=CAP, content=content, finish_reason=finish, completion_tokens=tokens,
                latency_ms=2000 + tokens * 1000 / 60 * rng.uniform(0.9, 1.1), call="plan"))
    path = tmp_path / "local-prose.jsonl"
    write_jsonl_traces(records, path)
    result = fit_profile(path, name="fitted-prose", repeats=1, work_dir=tmp_path / "fit")
    p, notes = result.profile, result.notes
    assert p.model == "local/gemma-3-270m"
    assert p.shape.runaway_rate > 0.15 and p.shape.no_json_rate > 0.5  # prose that ran on, prose that ended
    assert p.timing.tokens_per_s == pytest.approx(60, rel=0.1)
    for name in ("planning.invented_tool_rate", "planning.wrong_tool_rate", "planning.missing_step_rate",
                 "shape.completion_token_scale", "shape.fence_rate"):
        assert notes[name].how == "assumed", name  # no plan to count them on
    report = check_profile(p, path, work_dir=tmp_path / "check")
    assert report.ok, report.table()
