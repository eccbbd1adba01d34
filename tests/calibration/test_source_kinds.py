"""Calibration per source kind: evidence names its kind, rows say it, simulated evidence is not
applied unless asked, and a measured kind decides over a simulated one."""

from __future__ import annotations

import json

import pytest

from helmdeck_dspy.budgets import load_budget_table
from helmdeck_dspy.calibration.calibrate import (
    apply_calibration,
    calibrate,
    select_proposals,
)
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
    assert apply_calibration(cal, budgets, allow_simulated=True) == []
    assert not load_budget_table(budgets).lookup("acme/both").is_hybrid_reasoning


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
