"""``helmdeck-dspy bench bfcl`` end to end, and the study command's old spellings refused."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from helmdeck_dspy.cli.app import cli


def _run(*args: str):
    return CliRunner().invoke(cli, ["bench", "bfcl", *args], catch_exceptions=False)


def test_json_contract_and_report_files(bfcl_dir, tmp_path):
    out = tmp_path / "out"
    result = _run("--data", str(bfcl_dir), "--rankers", "lexical,bm25", "--json", "--out", str(out))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc["rankers"]) == {"lexical", "bm25"}
    for r in doc["rankers"].values():
        assert set(r["tiers"]) == {"A", "B", "C"}
        for t in r["tiers"].values():
            assert {"recall_at_n", "full_plan_recall", "n_questions"} <= set(t) and t["n_questions"] == 2
        assert r["ms_per_query"] >= 0
    assert json.loads((out / "report.json").read_text())["rankers"].keys() == doc["rankers"].keys()
    assert "| lexical | compacted |" in (out / "report.md").read_text()


def test_plans_with_sim_lm_and_scored_traces(bfcl_dir, tmp_path):
    rec = tmp_path / "rec.jsonl"
    result = _run("--data", str(bfcl_dir), "--rankers", "bm25", "--lm", "sim:frontier-like",
                  "--model", "anthropic/claude-sonnet-4-6", "--record", str(rec))
    assert result.exit_code == 0, result.output
    assert "plans sim:frontier-like (full_steps): exact" in result.stdout
    result = _run("--data", str(bfcl_dir), "--rankers", "bm25", "--traces", str(rec), "--json")
    acc = json.loads(result.stdout)["plan_accuracy"]
    assert acc[0]["summary"]["n"] == 2 and "scores" not in acc[0]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--categories", "simple"], 1, "no question file for category 'simple'"),
        (["--rankers", "tfidf"], 2, "unknown ranker 'tfidf'"),
    ],
)
def test_bad_arguments_give_one_clear_line(bfcl_dir, args, code, message, capsys):
    from helmdeck_dspy.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "bfcl", "--data", str(bfcl_dir), *args])
    assert exit_info.value.code == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_categories_take_several_values(bfcl_dir):
    from tests.bench.conftest import write_bfcl

    write_bfcl(bfcl_dir, category="simple")
    for args in (["--categories", "parallel", "simple"], ["--categories", "parallel,simple"],
                 ["--categories", "simple", "--categories", "parallel"]):
        doc = json.loads(_run("--data", str(bfcl_dir), *args, "--rankers", "bm25", "--json").stdout)
        assert sorted(doc["categories"]) == ["parallel", "simple"] and doc["n_questions"] == 4
    result = CliRunner().invoke(cli, ["bench", "bfcl", "--data", str(bfcl_dir), "stray"])
    assert result.exit_code == 2 and "unexpected argument 'stray'" in result.output


def test_pooled_recall_on_the_shared_data(shared_dir):
    result = _run("--data", str(shared_dir / "data" / "bfcl"), "--categories", "parallel", "--pool",
                  "--rankers", "lexical,bm25", "--limit", "40", "--json")
    doc = json.loads(result.stdout)
    assert doc["pool"] is True and doc["n_questions"] == 40 and doc["catalog_entries"] > 30
    assert doc["rankers"]["bm25"]["tiers"]["A"]["full_plan_recall"] == 1.0


def test_baseline_plain_scores_the_lm_alone_and_its_records_rescore_the_same(bfcl_dir, tmp_path):
    """Replayed answers in the order the rows ask (the planner's two, then the model alone's: one right,
    one a prose refusal): the model alone scores 1 of 2 exact, its records re-score to the same, and a
    second run with the same record file asks nothing again."""
    right = json.dumps([{"name": "money.convert", "arguments": {"amount": a, "source": "EUR", "target": "JPY"}}
                        for a in (10, 25)])
    replay = tmp_path / "answers.jsonl"
    replay.write_text("".join(json.dumps({"id": f"a{i}", "content": c, "finish_reason": "stop"}) + "\n"
                              for i, c in enumerate([right, "Sorry, I cannot look that up."] * 2)), encoding="utf-8")
    rec = tmp_path / "rec.jsonl"
    result = _run("--data", str(bfcl_dir), "--rankers", "bm25", "--lm", f"replay:{replay}", "--model", "m",
                  "--baseline", "plain", "--record", str(rec), "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["plan_accuracy"]
    assert [r["variant"] for r in rows] == ["full_steps", "plain"]
    assert rows[1]["summary"]["exact"] == 1 and rows[1]["failures"] == {"no_json": 1}
    plain_only = tmp_path / "rec.plain.jsonl"  # the model alone's exchanges, beside the planner's
    rescored = json.loads(_run("--data", str(bfcl_dir), "--rankers", "bm25", "--traces", str(plain_only), "--json").stdout)
    assert rescored["plan_accuracy"][0]["summary"] == rows[1]["summary"]
    again = _run("--data", str(bfcl_dir), "--rankers", "bm25", "--lm", f"replay:{replay}", "--model", "m",
                 "--baseline", "plain", "--record", str(rec), "--json")  # every question answered: no call made
    assert json.loads(again.stdout)["plan_accuracy"] == rows and len(plain_only.read_text().splitlines()) == 2
    assert _run("--data", str(bfcl_dir), "--baseline", "plain").exit_code != 0


@pytest.mark.parametrize(("name", "row", "message"), [
    ("levers.toml", "", "levers.toml is a study spec's old name; rename the file study.toml"),
    ("study.toml", "constrained = true\n", 'config planner: constrained = true is the old spelling of the answer '
                                           'strategy; write strategy = "schema"'),
])
def test_a_study_spec_in_an_old_spelling_exits_2_naming_the_new_one(bfcl_dir, tmp_path, capsys, name, row, message):
    from helmdeck_dspy.cli import main

    spec = tmp_path / name
    spec.write_text(f'model = "m"\nlm = "sim:mid-tier"\ndata = ["{bfcl_dir}"]\ncategories = ["parallel"]\n'
                    f'[[config]]\nname = "plain"\nplain = true\n[[config]]\nname = "planner"\n{row}', encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "study", "--dry-run", str(spec)])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == f"error: {spec}: {message}\n"


def test_the_old_command_name_exits_2_naming_the_new_one(tmp_path, capsys):
    from helmdeck_dspy.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "levers", str(tmp_path / "study.toml")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "'bench levers' is the old name of 'bench study'" in err and "Traceback" not in err
    assert "levers" not in CliRunner().invoke(cli, ["bench", "--help"]).output
