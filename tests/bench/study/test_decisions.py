"""``calibrate --decisions`` on a committed dev row (issue 38, item 2): the decision points read
back from its trace file, and the fit the command prints is the library's on them."""

from __future__ import annotations

import json

from click.testing import CliRunner

from helmdeck_dspy.bench.study.decisions import decision_points
from helmdeck_dspy.bench.bfcl.plans import request_records
from helmdeck_dspy.calibration.threshold import fit_threshold
from helmdeck_dspy.cli.app import cli
from tests.conftest import PROJECT_ROOT

ROW = PROJECT_ROOT / "experiments/bfcl/qwen2.5-coder-0.5b/study.toml"


def test_the_fit_on_a_committed_row_is_the_librarys_on_its_points(shared_dir, tmp_path):
    model, strategies, points = decision_points(ROW, "draft")
    assert model == "local/qwen2.5-coder-0.5b-instruct" and strategies == {"draft"} and len(points) == 120
    assert sum(p.unserved for p in points) == 30  # irrelevance: no function serves the question
    first = {tid: calls[0].content for tid, calls in request_records(ROW.parent / "draft.jsonl").items()}
    assert all(p.declined == (first[p.task_id].strip() == "[]") for p in points)  # the first answers as written
    plot = tmp_path / "reliability.png"
    done = CliRunner().invoke(cli, ["calibrate", "--decisions", f"{ROW}:draft", "--plot", str(plot), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == fit_threshold(points).model_dump(mode="json")
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_a_row_without_probabilities_is_a_usage_error(shared_dir):
    done = CliRunner().invoke(cli, ["calibrate", "--decisions", f"{ROW}:plain"])
    assert done.exit_code == 2 and "recorded a decline probability" in done.output


def test_apply_refuses_rows_of_a_retired_strategy(shared_dir):
    done = CliRunner().invoke(cli, ["calibrate", "--decisions", f"{ROW}:draft", "--apply"])
    assert done.exit_code == 2 and "one answer strategy the planner has" in done.output
