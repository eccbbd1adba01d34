"""Defaults a study chose name it, and the study's table was made under the budget row in force.

A budget-row field or a planner option default with ``decided_by`` points at study folders. Each
must hold a ``table.json`` that records the rows its runs were made under (``budget_rows``, from
the folder's ``budget-rows.json``), and each of those rows must agree with today's row on every
plan field that no study decided: a changed output cap or tier, say, makes the evidence stale. A
lowered ``answer_caps`` is judged by its effect: it leaves a study standing when no answer the study
recorded is longer than the new cap (``_caps_keep_answers``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helmdeck_dspy.bench.provenance import ROWS_FILE, note_row, recorded_rows
from helmdeck_dspy.budgets import PLAN_FIELDS, BudgetRow, load_budget_table, row_sha
from helmdeck_dspy.planning.options import PlannerOptions

ROOT = Path(__file__).resolve().parents[1]
TABLE = load_budget_table(None)
ROW_LINKS = [(row.match, field, folder) for row in TABLE.rows for field, folders in row.decided_by.items()
             for folder in folders]
OPTION_LINKS = [(name, folder) for name, info in PlannerOptions.model_fields.items()
                for folder in ((info.json_schema_extra or {}).get("decided_by") or [])]  # type: ignore[union-attr]


def _caps_keep_answers(folder: str, model: str, today: BudgetRow, ran: dict) -> bool:
    """Whether today's ``answer_caps`` change no answer the study recorded for ``model``: each cap is
    no higher than the cap the study ran with, and no finished planner answer in its traces is longer
    than the cap of its strategy today (an answer with no strategy stamp: the smallest cap). At
    temperature 0 a lower cap changes only the answers that reach it, and an answer that ran to the
    old cap fails either way."""
    if any(cap > ran.get("output_tokens", today.output_tokens) for cap in today.answer_caps.values()):
        return False
    smallest = min(today.answer_caps.values(), default=today.output_tokens)
    for path in (ROOT / folder).rglob("*.jsonl"):
        for line in path.open(encoding="utf-8"):
            record = json.loads(line) if line.strip().startswith("{") else None
            if (not isinstance(record, dict) or record.get("model") != model or record.get("source") != "live"
                    or record.get("finish_reason") != "stop" or record.get("prompt_variant") == "plain"):
                continue  # the model alone's answers are sent output_tokens, unchanged
            strategy = ((record.get("run") or {}).get("prompt") or {}).get("strategy")
            cap = today.cap_for(strategy) if strategy else smallest
            if (record.get("completion_tokens") or 0) > cap:
                return False
    return True


def _stale(folder: str, models: list[str] | None = None) -> list[str]:
    """What in ``folder``'s table disagrees with today's rows (``models``: those; None: all it ran)."""
    table = json.loads((ROOT / folder / "table.json").read_text(encoding="utf-8"))
    recorded = table.get("budget_rows") or {}
    assert recorded == recorded_rows(ROOT / folder), f"{folder}/table.json was not written from its {ROWS_FILE}"
    problems = []
    for model in models or list(recorded):
        entries = recorded.get(model) or []
        if not entries:
            problems.append(f"no row recorded for {model}")
        today = TABLE.lookup(model)
        free = [f for f in PLAN_FIELDS if f not in today.decided_by]
        for entry in entries:
            if entry["sha"] != row_sha(entry["fields"]):
                problems.append(f"{model}: sha {entry['sha']} is not its fields' hash")
            ran = {f: entry["fields"].get(f, BudgetRow.model_fields[f].get_default(call_default_factory=True))
                   for f in free}  # a field added since the row was recorded was unset then (budgets.LATER_PLAN_FIELDS)
            changed = {f: (ran[f], getattr(today, f)) for f in free if ran[f] != getattr(today, f)
                       and not (f == "answer_caps" and _caps_keep_answers(folder, model, today, entry["fields"]))}
            if changed:
                problems.append(f"{model} ran under {entry['sha']}, which differs from today's row in {changed}")
    return problems


def test_there_are_links_to_check():
    assert len(ROW_LINKS) >= 4 and len(OPTION_LINKS) >= 2


@pytest.mark.parametrize(("match", "field", "folder"), ROW_LINKS, ids=[f"{m}:{f}" for m, f, _ in ROW_LINKS])
def test_a_budget_field_a_study_chose_names_a_table_made_under_the_same_row(match, field, folder):
    assert (ROOT / folder / "table.json").exists(), f"{match}: {field} names {folder}, which has no table.json"
    assert _stale(folder, [match]) == []


@pytest.mark.parametrize(("name", "folder"), OPTION_LINKS, ids=[f"{n}:{f}" for n, f in OPTION_LINKS])
def test_an_option_default_a_study_chose_names_a_table_made_under_todays_rows(name, folder):
    assert (ROOT / folder / "table.json").exists(), f"PlannerOptions.{name} names {folder}, which has no table.json"
    assert _stale(folder) == []


def test_a_row_is_recorded_once_and_a_changed_row_beside_it(tmp_path):
    budget = TABLE.lookup("local/qwen2.5-coder-1.5b-instruct")
    first = note_row(tmp_path, budget)
    assert note_row(tmp_path, budget) == first
    changed = TABLE.changed_for(budget.model, {"output_tokens": 700}).lookup(budget.model)
    second = note_row(tmp_path, changed)
    rows = recorded_rows(tmp_path)[budget.model]
    assert [r["sha"] for r in rows] == [first["sha"], second["sha"]] and rows[1]["fields"]["output_tokens"] == 700
    assert first["sha"] == row_sha(budget.plan_row()) != second["sha"]


def test_a_stale_table_is_caught(tmp_path, monkeypatch):
    budget = TABLE.lookup("local/qwen2.5-coder-0.5b-instruct")
    study = tmp_path / "study"
    note_row(study, TABLE.changed_for(budget.model, {"output_tokens": 700}).lookup(budget.model))
    (study / "table.json").write_text(json.dumps({"budget_rows": recorded_rows(study)}))
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert _stale("study") == [f"{budget.model} ran under {recorded_rows(study)[budget.model][0]['sha']}, which "
                               "differs from today's row in {'output_tokens': (700, 1500)}"]


def _study_with_answer(tmp_path, budget, tokens: int, strategy: str | None) -> None:
    """A study folder whose table was made under ``budget`` without caps, holding one finished answer."""
    study = tmp_path / "study"
    note_row(study, TABLE.changed_for(budget.model, {"answer_caps": {}}).lookup(budget.model))
    (study / "table.json").write_text(json.dumps({"budget_rows": recorded_rows(study)}))
    record = {"model": budget.model, "source": "live", "call": "plan", "finish_reason": "stop",
              "prompt_variant": "full_steps", "completion_tokens": tokens,
              "run": {"prompt": {"strategy": strategy}} if strategy else {}}
    (study / "traces.jsonl").write_text(json.dumps(record) + "\n")


@pytest.mark.parametrize(("tokens", "strategy", "stale"), [
    (500, "plain", False),  # under today's plain cap of 512: the answer is unchanged
    (600, "plain", True),  # the cap would have cut it
    (600, "schema", False),  # schema's cap is 640
    (600, None, True),  # no stamp: held to the smallest cap
])
def test_a_lowered_answer_cap_is_stale_only_where_a_recorded_answer_reaches_it(tmp_path, monkeypatch, tokens,
                                                                                strategy, stale):
    budget = TABLE.lookup("local/qwen2.5-coder-1.5b-instruct")
    assert budget.answer_caps == {"plain": 512, "schema": 640}
    _study_with_answer(tmp_path, budget, tokens, strategy)
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert bool(_stale("study")) is stale


def test_decided_by_names_only_plan_fields():
    fields = {"match": "m", "tier": "C", "input_tokens": 1, "output_tokens": 1, "max_catalog_bytes": 0}
    assert BudgetRow.model_validate({**fields, "decided_by": {"tier": ["experiments/x"]}}).decided_by == {
        "tier": ("experiments/x",)}
    with pytest.raises(ValueError, match="not a field that shapes a plan call"):
        BudgetRow.model_validate({**fields, "decided_by": {"source": ["experiments/x"]}})
    with pytest.raises(ValueError, match="at least one study folder"):
        BudgetRow.model_validate({**fields, "decided_by": {"tier": []}})
