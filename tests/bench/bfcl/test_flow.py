"""The BFCL and lever benchmarks called from Python: ``run_bfcl`` and ``run_study`` return
report models, say what they do through ``notify`` and count their stages through ``bars``."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import pytest

from helmdeck_dspy.bench.bfcl.flow import run_bfcl
from helmdeck_dspy.bench.study.flow import StudyReport, run_study
from helmdeck_dspy.bench.bfcl.report import BfclReport
from helmdeck_dspy.errors import InputError, UsageValueError


class CountingBars:
    """Bars that keep each stage's total and the steps reported against it."""

    def __init__(self) -> None:
        self.stages: dict[str, list[int]] = {}

    @contextmanager
    def stage(self, label: str, total: int, unit: str = " plan"):
        counts = self.stages[label] = [total, 0]

        def step(n: int = 1) -> None:
            counts[1] += n

        yield step

    @contextmanager
    def calls(self):
        yield lambda _meter: None


def test_run_bfcl_returns_the_report_and_counts_every_stage(bfcl_dir, tmp_path):
    right = json.dumps([{"name": "money.convert", "arguments": {"amount": a, "source": "EUR", "target": "JPY"}}
                        for a in (10, 25)])
    replay = tmp_path / "answers.jsonl"
    replay.write_text("".join(json.dumps({"id": f"a{i}", "content": c, "finish_reason": "stop"}) + "\n"
                              for i, c in enumerate([right, "no idea"] * 2)), encoding="utf-8")
    messages: list[str] = []
    bars = CountingBars()
    report = run_bfcl(bfcl_dir, rankers=["bm25", "lexical"], lm_spec=f"replay:{replay}", model="m", baseline="plain",
                      out_dir=tmp_path / "out", notify=messages.append, bars=bars)
    assert isinstance(report, BfclReport)
    assert list(report.rankers) == ["bm25", "lexical"] and report.n_questions == 2
    assert [a.variant for a in report.plan_accuracy] == ["full_steps", "plain"]
    assert report.plan_accuracy[1].summary.exact == 1
    assert bars.stages == {"selection recall": [12, 12], f"planning (replay:{replay})": [2, 2],
                           f"the model alone (replay:{replay})": [2, 2]}
    assert messages == [f"wrote {tmp_path / 'out' / 'report.json'}, {tmp_path / 'out' / 'report.md'}"]
    assert json.loads((tmp_path / "out" / "report.json").read_text())["n_questions"] == 2


def test_run_bfcl_refuses_bad_arguments_before_loading_anything(tmp_path):
    missing = tmp_path / "no-such-folder"
    with pytest.raises(UsageValueError, match="unknown ranker 'bm2'") as info:
        run_bfcl(missing, rankers=["bm2"])
    assert info.value.argument == "--rankers"
    with pytest.raises(InputError, match="baseline needs an LM"):
        run_bfcl(missing, rankers=["bm25"], baseline="plain")


def _lever_spec(tmp_path: Path, bfcl_dir: Path) -> Path:
    path = tmp_path / "study.toml"
    path.write_text(f'model = "m"\nlm = "sim:mid-tier"\ndata = ["{bfcl_dir}"]\ncategories = ["parallel"]\nlimit = 5\n'
                    '[[config]]\nname = "plain"\nplain = true\n[[config]]\nname = "planner"\n', encoding="utf-8")
    return path


def test_run_study_answers_scores_writes_and_then_has_nothing_left(tmp_path, bfcl_dir):
    spec = _lever_spec(tmp_path, bfcl_dir)
    messages: list[str] = []
    bars = CountingBars()
    report = run_study(spec, notify=messages.append, bars=bars)
    assert isinstance(report, StudyReport)
    assert report.made == {"plain": 2, "planner": 2} and bars.stages == {"calls": [4, 4]}
    assert {(r.config, r.scope) for r in report.rows} == {(c, s) for c in ("plain", "planner") for s in ("all", "parallel")}
    assert [p.name for p in report.written] == ["table.md", "table.json", "exact.png"]
    assert all(p.is_file() for p in report.written)
    assert messages[:2] == ["study: 4 calls to make (sim:mid-tier)", "made plain 2, planner 2"]
    again = run_study(spec, only=["planner"])
    assert again.made == {"planner": 0} and len(again.rows) == len(report.rows)


def test_run_study_with_nothing_answered_writes_nothing(tmp_path, bfcl_dir):
    messages: list[str] = []
    report = run_study(_lever_spec(tmp_path, bfcl_dir), score_only=True, notify=messages.append)
    assert report.rows == [] and report.written == [] and report.made == {}
    assert messages == [f"study: no answered question yet in {tmp_path}; nothing written"]
    assert not (tmp_path / "table.md").exists()


def test_run_study_refuses_an_unknown_config(tmp_path, bfcl_dir):
    with pytest.raises(UsageValueError, match="no config 'nope'") as info:
        run_study(_lever_spec(tmp_path, bfcl_dir), only=["nope"])
    assert info.value.argument == "--only"
