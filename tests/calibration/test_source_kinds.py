"""Calibration per source kind: evidence names its kind, rows say it, simulated evidence is not
applied unless asked, and a measured kind decides over a simulated one."""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.budgets import load_budget_table
from helmdeck_dspy.calibration.apply import apply_calibration, select_proposals
from helmdeck_dspy.calibration.calibrate import calibrate
from helmdeck_dspy.evaluation.runner import evaluate
from tests.calibration.test_calibrate import row, table_with

PLAN = json.dumps({"steps": [{"order": 1, "tool": "web.scrape", "args": {}}]})


def rows(model: str, source: str, *, reasoning: bool, n: int = 40) -> list[dict]:
    """``n`` clean single_pick answers; with reasoning in half of them when ``reasoning``
    (the hybrid-reasoning rule then proposes ``is_hybrid_reasoning = true``)."""
    return [{"source": source, "model": model, "prompt_variant": "single_pick", "tier": "C", "content": PLAN,
             "finish_reason": "stop", "reasoning_content": "thinking" if reasoning and i % 2 else None}
            for i in range(n)]


def report_of(tmp_path, records):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"id": f"r{i}", **r}) + "\n" for i, r in enumerate(records)))
    return evaluate([path], progress=False)


def test_simulated_evidence_is_held_back_unless_allowed(tmp_path):
    budgets = table_with(tmp_path, row("acme/sim-only", "C", 1500))
    before = budgets.read_text()
    cal = calibrate(report_of(tmp_path, rows("acme/sim-only", "sim:x", reasoning=True)), load_budget_table(budgets))
    (p,) = cal.proposals
    assert (p.kind, p.field, p.evidence["kind"]) == ("sim:x", "is_hybrid_reasoning", "sim:x")
    sel = select_proposals(cal)
    assert sel.chosen == [] and sel.held_back == [p]
    assert apply_calibration(cal, budgets) == [] and budgets.read_text() == before
    assert apply_calibration(cal, budgets, allow_simulated=True) == ["acme/sim-only"]
    new = load_budget_table(budgets).lookup("acme/sim-only")
    assert new.is_hybrid_reasoning and new.source == "calibrated:sim:x"


def test_live_evidence_is_applied_and_named(tmp_path):
    budgets = table_with(tmp_path, row("acme/real", "C", 1500))
    cal = calibrate(report_of(tmp_path, rows("acme/real", "live", reasoning=True)), load_budget_table(budgets))
    assert [(p.kind, p.field) for p in cal.proposals] == [("live", "is_hybrid_reasoning")]
    assert apply_calibration(cal, budgets) == ["acme/real"]
    assert load_budget_table(budgets).lookup("acme/real").source == "calibrated:live"


def test_a_measured_kind_decides_over_a_simulated_one(tmp_path):
    # live: no reasoning, nothing to change; simulated: reasoning everywhere, a proposal
    budgets = table_with(tmp_path, row("acme/both", "C", 1500))
    records = rows("acme/both", "live", reasoning=False) + rows("acme/both", "sim:x", reasoning=True)
    cal = calibrate(report_of(tmp_path, records), load_budget_table(budgets))
    assert [(u.model, u.kind) for u in cal.unchanged] == [("acme/both", "live")]
    assert [p.kind for p in cal.proposals] == ["sim:x"]
    sel = select_proposals(cal, allow_simulated=True)
    assert sel.chosen == [] and [p.kind for p in sel.superseded] == ["sim:x"]
    assert [(u.model, u.kind) for u in sel.confirmed] == [("acme/both", "live")]
    assert apply_calibration(cal, budgets, allow_simulated=True) == ["acme/both"]  # confirmed: stamped, not changed
    row_now = load_budget_table(budgets).lookup("acme/both")
    assert not row_now.is_hybrid_reasoning and row_now.source == "calibrated:live"
    assert row_now.n is None and row_now.rate is None  # single_pick records only: no tier rate to stamp


def test_cli_applies_measured_evidence_and_says_in_one_line_what_it_held_back(tmp_path, capsys):
    from helmdeck_dspy.cli.app import main
    from helmdeck_dspy.evaluation.output import write_outputs

    budgets = table_with(tmp_path, row("acme/real", "C", 1500) + row("acme/sim-only", "C", 1500))
    report = report_of(tmp_path, rows("acme/real", "live", reasoning=True) + rows("acme/sim-only", "sim:x", reasoning=True))
    write_outputs(report, tmp_path / "rep")
    args = ["calibrate", "--report", str(tmp_path / "rep" / "report.json"), "--budgets", str(budgets), "--apply"]
    main(args)  # returns: something was applied
    out, err = capsys.readouterr()
    assert "acme/real · live" in out and "acme/sim-only · sim:x" in out
    (line,) = err.splitlines()
    assert line.startswith("not applied: 1 proposal(s) for 1 model(s)") and "(sim:x)" in line and "--allow-simulated" in line
    table = load_budget_table(budgets)
    assert table.lookup("acme/real").is_hybrid_reasoning and not table.lookup("acme/sim-only").is_hybrid_reasoning
    main([*args, "--allow-simulated"])
    assert capsys.readouterr().err == ""
    assert load_budget_table(budgets).lookup("acme/sim-only").source == "calibrated:sim:x"


def test_a_report_of_an_older_schema_is_named_as_such(tmp_path):
    from helmdeck_dspy.calibration.calibrate import load_report
    from helmdeck_dspy.errors import DataFileError

    p = tmp_path / "r.json"
    p.write_text(json.dumps({"schema_version": 1, "groups": []}))
    with pytest.raises(DataFileError, match="schema_version 1.*eval --out"):
        load_report(p)


def full_steps_rows(model: str, n: int, bad: int) -> list[dict]:
    """``n`` live full_steps answers, the first ``bad`` of them prose (a strict-parse failure)."""
    return [{"source": "live", "model": model, "prompt_variant": "full_steps", "tier": "C",
             "content": "no plan here" if i < bad else PLAN, "finish_reason": "stop"} for i in range(n)]


def test_a_confirmed_row_gets_the_tier_rules_provenance_and_says_what_it_could_not_assess(tmp_path):
    budgets = table_with(tmp_path, row("acme/local", "C", 1500))
    records = full_steps_rows("acme/local", 40, bad=8) + rows("acme/local", "live", reasoning=False, n=5)
    cal = calibrate(report_of(tmp_path, records), load_budget_table(budgets))
    assert cal.proposals == [] and [(u.model, u.kind) for u in cal.unchanged] == [("acme/local", "live")]
    # Tier C runs single_pick: 5 records are too few for its cap, and for the variant comparison.
    assert {(i.field, i.n_full_steps, i.n_single_pick) for i in cal.insufficient} == {
        ("prompt_variant", 40, 5), ("output_tokens", 40, 5)}
    assert apply_calibration(cal, budgets) == ["acme/local"]
    stamped = load_budget_table(budgets).lookup("acme/local")
    assert (stamped.tier, stamped.output_tokens, stamped.prompt_variant) == ("C", 1500, "")  # values kept
    assert (stamped.source, stamped.n, stamped.rate) == ("calibrated:live", 40, 0.8)
    assert stamped.interval_low == pytest.approx(0.6524, abs=1e-4) and stamped.interval_high == pytest.approx(0.8950, abs=1e-4)
    assert stamped.trace_set_sha == cal.report_trace_set_sha256[:16]


def test_a_new_stamp_replaces_an_old_one_it_cannot_repeat(tmp_path):
    budgets = table_with(tmp_path, row("acme/local", "C", 1500) + "n = 99\nrate = 0.5\ninterval_low = 0.4\n"
                                                                   "interval_high = 0.6\n")
    cal = calibrate(report_of(tmp_path, rows("acme/local", "live", reasoning=False)), load_budget_table(budgets))
    assert apply_calibration(cal, budgets) == ["acme/local"]
    stamped = load_budget_table(budgets).lookup("acme/local")
    assert stamped.source == "calibrated:live"
    assert (stamped.n, stamped.rate, stamped.interval_low, stamped.interval_high) == (None, None, None, None)
