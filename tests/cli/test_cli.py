"""The CLI as a user runs it: exit codes, JSON shapes, errors, and start-up imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from helmdeck_dspy.cli.app import cli, main
from tests.conftest import PROJECT_ROOT


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def test_budgets_lookup_json_done_when_figures():
    r = run("budgets", "lookup", "openrouter/nvidia/nemotron-3-super-120b-a12b:free", "--json")
    assert r.exit_code == 0
    d = json.loads(r.output)
    required = {
        "model", "tier", "prompt_variant", "input_tokens", "output_tokens", "max_catalog_bytes", "allows_llm_filter",
        "is_hybrid_reasoning", "wants_strict_json", "supports_prefix_cache", "matched",
    }
    assert required <= set(d)
    assert (d["tier"], d["prompt_variant"], d["output_tokens"], d["max_catalog_bytes"]) == ("C", "single_pick", 1500, 10000)
    d = json.loads(run("budgets", "lookup", "anthropic/claude-sonnet-4-6", "--json").output)
    assert (d["tier"], d["prompt_variant"], d["max_catalog_bytes"]) == ("A", "full_steps", 0)
    d = json.loads(run("budgets", "lookup", "who/knows", "--json").output)
    assert d["matched"] == "fallback"


def test_budgets_lookup_several_models_prints_a_table():
    r = run("budgets", "lookup", "anthropic/claude-sonnet-4-6", "who/knows")
    assert r.exit_code == 0
    assert "anthropic/claude-sonnet-" in r.output and "fallback" in r.output


def test_budgets_lookup_names_the_study_behind_each_chosen_field():
    lines = run("budgets", "lookup", "local/qwen2.5-coder-0.5b-instruct").output.splitlines()
    assert "decided_by max_catalog_entries   experiments/catalog-size/qwen2.5-coder-0.5b" in lines
    assert not any(line.startswith("decided_by ") for line in run("budgets", "lookup", "who/knows").output.splitlines())


def test_budgets_show_lists_every_row():
    r = run("budgets", "show")
    assert r.exit_code == 0
    assert "35 rows" in r.output and "(fallback)" in r.output
    rows = json.loads(run("budgets", "show", "--json").output)["rows"]
    assert len(rows) == 35


def test_bad_budget_table_is_exit_1_with_the_row(tmp_path, capsys):
    p = tmp_path / "b.toml"
    p.write_text('[fallback]\ntier="C"\ninput_tokens=1\noutput_tokens=1\nmax_catalog_bytes=0\n'
                 '[[model]]\nmatch="x/"\ntier="Z"\ninput_tokens=1\noutput_tokens=1\nmax_catalog_bytes=0\n')
    with pytest.raises(SystemExit) as exit_info:
        main(["budgets", "lookup", "x/1", "--budgets", str(p)])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert f"{p}:6:" in err and "match = 'x/'" in err and "tier" in err


def test_usage_error_is_exit_2():
    with pytest.raises(SystemExit) as exit_info:
        main(["budgets", "lookup"])
    assert exit_info.value.code == 2


def test_parse_stdin_json():
    content = '<think>x</think>```json\n{"steps":[{"tool":"a","args":{}}]}\n```'
    r = run("parse", "--json", "--finish-reason", "stop", input=content)
    assert r.exit_code == 0
    d = json.loads(r.output)
    assert d["outcome"] == "strict" and d["cause"] is None and d["value"]["steps"][0]["tool"] == "a"


def test_parse_file_failure_json(tmp_path):
    f = tmp_path / "c.txt"
    f.write_text('{"steps":[{"tool":"a","args":{')
    d = json.loads(run("parse", str(f), "--finish-reason", "MAX_TOKENS", "--json").output)
    assert (d["outcome"], d["cause"], d["value"]) == ("failed", "length_truncated", None)
    assert d["finish_reason_raw"] == "MAX_TOKENS"


def test_parse_reasoning_content_option():
    d = json.loads(run("parse", "--json", "--reasoning-content", "thought", input="").output)
    assert d["cause"] == "reasoning_only"


def test_parse_human_output():
    r = run("parse", input='{"steps":[{"tool":"web.scrape","args":{"url":"u"}}]}')
    assert "outcome        strict" in r.output and "web.scrape" in r.output


def test_parse_batch_bundled_examples():
    path = PROJECT_ROOT / "eval" / "examples" / "completions.jsonl"
    rows = json.loads(run("parse", "--batch", "--json", str(path)).output)
    by_id = {r["id"]: r for r in rows}
    assert by_id["clean-full-steps"]["outcome"] == "strict"
    assert by_id["trailing-comma"]["outcome"] == "repaired"
    assert by_id["truncated-at-cap"]["cause"] == "length_truncated"
    assert by_id["near-empty-reasoning-leak"]["cause"] == "reasoning_only"


def test_parse_batch_bad_line_names_file_and_line(tmp_path, capsys):
    f = tmp_path / "b.jsonl"
    f.write_text('{"content": "{}"}\nnot json\n')
    with pytest.raises(SystemExit) as exit_info:
        main(["parse", "--batch", str(f)])
    assert exit_info.value.code == 1
    assert f"{f}:2:" in capsys.readouterr().err


def test_catalog_select_json_shape():
    r = run("catalog", "select", "--model", "openrouter/nvidia/nemotron-3-super-120b-a12b:free",
            "--intent", "make a slide deck from my notes", "--json")
    d = json.loads(r.output)
    assert set(d) >= {"catalog", "trim"}
    assert "bm25.top_n" in d["trim"]["dropped"]
    # The cut keeps at least the tier C floor (12) and fills the 10,000-byte cap (catalog.select).
    assert len(d["catalog"]["packs"]) + len(d["catalog"]["pipelines"]) >= 12
    assert d["trim"]["after_bytes"] <= 10000
    assert d["trim"]["after_bytes"] <= 10000


def test_catalog_select_tier_a_keeps_everything():
    d = json.loads(run("catalog", "select", "-m", "anthropic/claude-sonnet-4-6", "--json").output)
    assert d["trim"]["dropped"] == []
    assert len(d["catalog"]["packs"]) == 65 and len(d["catalog"]["pipelines"]) == 23


def test_catalog_select_bad_catalog_file(tmp_path, capsys):
    f = tmp_path / "cat.json"
    f.write_text('{"packs": [{"description": "no name"}], "pipelines": []}')
    with pytest.raises(SystemExit) as exit_info:
        main(["catalog", "select", str(f), "-m", "x"])
    assert exit_info.value.code == 1
    assert str(f) in capsys.readouterr().err


@pytest.mark.parametrize("args", [["--help"], ["budgets", "lookup", "openrouter/auto"]])
def test_fast_paths_import_no_heavy_libraries(args):
    code = (
        "import sys\n"
        "from helmdeck_dspy.cli import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in ('dspy', 'litellm', 'mlflow', 'datasets', 'json_repair') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in out


def _replay(tmp_path, content):
    path = tmp_path / "replay.jsonl"
    path.write_text(json.dumps({"id": "r1", "content": content, "finish_reason": "stop"}) + "\n")
    return path


PLAN3 = json.dumps({
    "steps": [
        {"order": 1, "tool": "helmdeck.memory_store", "args": {}, "rationale": "save"},
        {"order": 2, "tool": "blog.rewrite_for_audience", "args": {}, "rationale": "write"},
        {"order": 3, "tool": "image.generate", "args": {}, "rationale": "draw"},
    ],
    "complexity": "pack-chain", "more_steps_likely": True, "reasoning": "three packs",
})
INTENT = "remember this launch, write a blog about it and make an illustration"


def test_plan_done_when_nemotron_single_pick(tmp_path):
    path = _replay(tmp_path, PLAN3)
    r = run("plan", INTENT, "--model", "openrouter/nvidia/nemotron-3-super-120b-a12b:free",
            "--lm", f"replay:{path}", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["prompt_variant_used"] == "single_pick" and d["tier"] == "C"
    assert [s["tool"] for s in d["steps"]] == ["helmdeck.memory_store"]
    assert len(d["dropped_steps"]) == 2 and d["more_steps_likely"] is True
    assert d["failure_cause"] is None and d["catalog_in"] == "user"
    assert {"complexity", "reasoning", "rewritten_prompt", "model", "compaction"} <= set(d)


def test_plan_done_when_sonnet_full_steps_catalog_in_system(tmp_path):
    path = _replay(tmp_path, PLAN3)
    d = json.loads(run("plan", INTENT, "--model", "anthropic/claude-sonnet-4-6", "--lm", f"replay:{path}", "--json").stdout)
    assert d["prompt_variant_used"] == "full_steps" and d["catalog_in"] == "system"
    assert len(d["steps"]) == 3 and d["complexity"] == "pack-chain" and d["compaction"] is None


def test_plan_failure_exits_1_with_the_cause(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"id": "r1", "content": '{"steps": [', "finish_reason": "length"}) + "\n")
    r = run("plan", INTENT, "--model", "anthropic/claude-sonnet-4-6", "--lm", f"replay:{path}")
    assert r.exit_code == 1 and "length_truncated" in r.output


def test_plan_record_then_replay(tmp_path):
    path = _replay(tmp_path, PLAN3)
    rec = tmp_path / "rec.jsonl"
    run("plan", INTENT, "-m", "anthropic/claude-sonnet-4-6", "--lm", f"replay:{path}", "--record", str(rec))
    first = json.loads(rec.read_text().splitlines()[0])
    assert first["content"] == PLAN3 and first["call"] == "plan"
    d = json.loads(run("plan", INTENT, "-m", "anthropic/claude-sonnet-4-6", "--lm", f"replay:{rec}", "--json").stdout)
    assert len(d["steps"]) == 3


def test_plan_missing_replay_file_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["plan", "x", "-m", "anthropic/claude-sonnet-4-6", "--lm", f"replay:{tmp_path / 'nope.jsonl'}"])
    assert exit_info.value.code == 2  # a name on the command line that names nothing (issue 52, item 7)
    assert "replay file not found" in capsys.readouterr().err


def test_traces_import_then_eval_with_outputs(tmp_path):
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps({
        "id": f"c{i}", "model": "openrouter/nvidia/nemotron-3-super-120b-a12b:free",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": PLAN3 if i % 2 else ""},
                     "finish_reason": "stop" if i % 2 else "length"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 50 + i}}) + "\n" for i in range(10)))
    out = tmp_path / "t.parquet"
    r = run("traces", "import", "openai", str(src), "--out", str(out))
    assert r.exit_code == 0 and "wrote 10 records" in r.output
    rep_dir = tmp_path / "rep"
    r = run("eval", str(out), "--out", str(rep_dir), "--no-progress")
    assert r.exit_code == 0, r.output
    report = json.loads((rep_dir / "report.json").read_text())
    assert report["schema_version"] == 2
    (g,) = report["groups"]
    assert g["kind"] == "imported" and report["kinds"] == {"imported": 10}
    assert {"model", "prompt_variant", "n", "strict_rate", "tolerant_rate", "finish_reason_counts",
            "failure_cause_counts"} <= set(g)
    assert g["n"] == 10 and g["strict_rate"] == 0.5 and g["failure_cause_counts"] == {"length_truncated": 5}
    md = (rep_dir / "report.md").read_text()
    assert "parse_success.png" in md and "| openrouter/nvidia/nemotron-3-super-120b-a12b:free · imported |" in md
    assert all((rep_dir / name).stat().st_size > 1000 for name in ("parse_success.png", "finish_reasons.png", "completion_tokens.png"))


def test_eval_defaults_to_the_bundled_traces_and_prints_json():
    d = json.loads(run("eval", "--json", "--no-progress").stdout)
    published = [g for g in d["groups"] if "published:adr-053" in g["sources"]]
    assert published and published[0]["strict"] >= 3


def test_eval_skip_reports_bad_lines(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"id": "a", "model": "m/a", "content": "{}"}\nnope\n')
    r = run("eval", str(p), "--on-error", "skip", "--json", "--no-progress")
    d = json.loads(r.stdout)
    assert d["n_skipped"] == 1 and f"{p}:2:" in d["errors"][0]
