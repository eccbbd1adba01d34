"""``bench heldout``: the spec, running a comparison (compile + scoring runs, resumable), the
table's statistics, test scores in the compiled programs' manifests, and shipping a winner as
the model's own program. The LMs are simulated."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from helmdeck_dspy.cli.app import cli
from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.bench.heldout.runs import pending_steps
from helmdeck_dspy.bench.heldout.ship import ship, winners
from helmdeck_dspy.bench.heldout.spec import load_spec
from helmdeck_dspy.bench.heldout.table import score_spec
from helmdeck_dspy.io.resources import compiled_dir
from helmdeck_dspy.planning.planner import Planner
from helmdeck_dspy.program.store import manifest_path, model_key, read_manifest

MODEL = "local/qwen2.5-coder-0.5b-instruct"
SPEC = f'''
model = "{MODEL}"
lm = "sim:mid-tier"
teacher = "sim:frontier-like"
split = "test"
variants = ["single_pick"]
baseline = "b"
valset = 3

[[config]]
id = "b"
label = "tier program"
program = "tier"

[[config]]
id = "b2"
label = "tier program again"
program = "tier"

[[config]]
id = "c"
label = "bootstrap"
optimizer = "bootstrap"
'''


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> Path:
    """A comparison run once through the CLI; returns its spec file."""
    folder = tmp_path_factory.mktemp("heldout")
    spec = folder / "heldout.toml"
    spec.write_text(SPEC)
    result = CliRunner().invoke(cli, ["bench", "heldout", str(spec), "--no-progress"])
    assert result.exit_code == 0, result.output
    return spec


def test_a_run_compiles_records_and_writes_the_table(ran):
    folder = ran.parent
    assert (folder / "b.jsonl").is_file() and (folder / "b2.jsonl").is_file() and (folder / "c-single_pick.jsonl").is_file()
    assert model_key(MODEL, "single_pick") in read_manifest(folder / "programs" / "c")["programs"]
    table = json.loads((folder / "table.json").read_text())
    rows = {r["config"]: r for r in table["rows"]}
    assert {r["n"] for r in rows.values()} == {49}
    assert rows["b"]["diff"] is None and rows["c"]["paired_n"] == 49
    assert rows["c"]["compile"]["calls"] > 0 and rows["b"]["compile"] is None
    assert rows["c"]["program"].endswith("models/local-qwen2.5-coder-0.5b-instruct/single_pick.json")
    md = (folder / "table.md").read_text()
    assert "SIMULATED" in md and "| (c) bootstrap |" in md


def test_each_compiled_program_gets_its_test_scores_whether_it_wins_or_not(ran):
    rows = {r.config: r for r in score_spec(load_spec(ran))}
    test = read_manifest(ran.parent / "programs" / "c")["programs"][model_key(MODEL, "single_pick")]["test"]
    assert test["after"]["plan_score"] == rows["c"].score and test["before"]["plan_score"] == rows["b"].score
    assert test["diff"] == rows["c"].diff and test["after"]["n"] == 49
    assert test["traces"] == ["../../b.jsonl", "../../c-single_pick.jsonl"]  # beside the spec, from programs/c/


def test_the_same_program_scored_twice_differs_by_exactly_nothing(ran):
    rows = {r.config: r for r in score_spec(load_spec(ran))}
    same = rows["b2"]
    assert same.diff == 0 and same.diff_ci == (0.0, 0.0) and same.strict_diff == 0
    assert same.score == rows["b"].score and not same.beats_baseline
    lo, hi = rows["c"].score_ci
    assert lo <= rows["c"].score <= hi and 0 <= lo <= hi <= 1


def test_a_finished_comparison_has_nothing_left_to_run(ran):
    assert pending_steps(load_spec(ran)) == []
    again = CliRunner().invoke(cli, ["bench", "heldout", str(ran), "--no-progress", "--json"])
    assert again.exit_code == 0
    assert "[1/" not in again.output  # no step announced: nothing compiled or recorded again
    assert json.loads(again.stdout)["rows"] == json.loads((ran.parent / "table.json").read_text())["rows"]


def test_a_scoring_run_cut_off_is_pending_again(ran, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(ran.parent, copy)
    (copy / "b2.jsonl").rename(copy / "b2.jsonl.partial.jsonl")
    assert pending_steps(load_spec(copy / "heldout.toml")) == [("record", "b2", "single_pick")]


def test_a_scoring_run_by_another_program_is_stale(ran, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(ran.parent, copy)
    trace = copy / "c-single_pick.jsonl"
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert {r["run"]["program"]["kind"] for r in records} == {"file"}
    for r in records:
        r["run"]["program"]["sha256"] = "0" * 64
    trace.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert pending_steps(load_spec(copy / "heldout.toml")) == [("record", "c", "single_pick")]


def test_a_changed_compile_input_compiles_and_scores_again(ran, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(ran.parent, copy)
    spec = copy / "heldout.toml"
    spec.write_text(spec.read_text().replace("valset = 3", "valset = 2"))
    assert pending_steps(load_spec(spec)) == [("compile", "c", "single_pick"), ("record", "c", "single_pick")]
    assert pending_steps(load_spec(spec), variants=["full_steps"]) == []  # not a variant of this spec


def test_shipping_copies_only_a_program_that_beats_the_baseline(ran, tmp_path):
    spec = load_spec(ran)
    rows = score_spec(spec)
    root = tmp_path / "compiled"
    shutil.copytree(compiled_dir() / "tier_B", root / "tier_B")
    shutil.copy(manifest_path(compiled_dir()), manifest_path(root))
    c = next(r for r in rows if r.config == "c")
    c.diff, c.diff_ci = 0.05, (-0.01, 0.11)  # inside its interval: not a winner
    assert winners(spec, rows) == {} and ship(spec, rows, root) == []
    c.diff, c.diff_ci = 0.05, (0.01, 0.09)
    assert ship(spec, rows, root) == [model_key(MODEL, "single_pick")]
    entry = read_manifest(root)["programs"][model_key(MODEL, "single_pick")]
    assert entry["test"]["after"]["plan_score"] == c.score and entry["test"]["diff_ci"] == [0.01, 0.09]
    assert entry["test"]["before"]["program"] == "tier_B/single_pick.json"
    planner = Planner.for_model(MODEL, lm="sim:mid-tier", compiled_root=root, variant="single_pick")
    assert planner.program_ref.kind == "model" and planner.program_ref.sha256 == entry["program_sha256"]


@pytest.mark.parametrize(("text", "says"), [
    (SPEC.replace('baseline = "b"', 'baseline = "z"'), "baseline 'z' is not a config id"),
    (SPEC.replace('program = "tier"\n\n[[config]]\nid = "b2"', 'program = "tier"\noptimizer = "mipro"\n\n[[config]]\nid = "b2"'),
     "give program or optimizer"),
    (SPEC.replace('split = "test"', 'split = "test"\nsplitt = 1'), "splitt"),
    (SPEC.replace('variants = ["single_pick"]', 'variants = ["one_step"]'), "variants must be among"),
])
def test_a_bad_spec_names_the_file_and_the_field(tmp_path, text, says):
    path = tmp_path / "heldout.toml"
    path.write_text(text)
    with pytest.raises(DataFileError, match=says) as info:
        load_spec(path)
    assert str(path) in str(info.value)


def test_run_heldout_from_python_returns_the_table_it_writes(ran):
    from helmdeck_dspy.bench.heldout.flow import HeldoutReport, run_heldout

    messages: list[str] = []
    report = run_heldout(ran, score_only=True, notify=messages.append)
    assert isinstance(report, HeldoutReport)
    assert report.steps == [] and report.shipped is None and report.tested == ["c/single_pick"]
    assert report.written == [ran.parent / "table.md", ran.parent / "table.json"]
    assert report.table() == json.loads((ran.parent / "table.json").read_text())
    assert report.markdown() == (ran.parent / "table.md").read_text()
    assert {r.config for r in report.rows} == {"b", "b2", "c"}
    assert messages[0] == f"wrote {ran.parent / 'table.md'} and table.json"


def test_run_heldout_refuses_an_unknown_config_before_running_anything(ran):
    from helmdeck_dspy.bench.heldout.flow import run_heldout
    from helmdeck_dspy.errors import UsageValueError

    before = (ran.parent / "table.json").stat().st_mtime_ns
    with pytest.raises(UsageValueError, match="no config zz in"):
        run_heldout(ran, only=["zz"])
    assert (ran.parent / "table.json").stat().st_mtime_ns == before
