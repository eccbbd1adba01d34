"""Bad input everywhere gives one clear error line and exit 1 (data) or 2 (usage), never a traceback.

Each case writes one bad file (catalog, trace file, budget table, compiled program or manifest,
task file) or passes bad arguments, runs the real CLI entry point (``helmdeck_dspy.cli.main``)
and checks: the exit code; that stderr holds exactly one error line (``error: ...`` for data
errors, ``Error: ... (see '... --help')`` for usage errors; either is the whole of stderr); that
the line names the file and the line or field; and that no traceback appears anywhere.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from helmdeck_dspy.cli import main
from helmdeck_dspy.io.resources import default_catalog_path
from tests.conftest import PROJECT_ROOT

GOOD_RECORD = {"id": "r0", "model": "m/x", "prompt_variant": "full_steps", "tier": "C",
               "content": '{"steps": []}', "finish_reason": "stop"}
GOOD_TASK = json.loads((PROJECT_ROOT / "eval" / "tasks" / "dev.jsonl").read_text(encoding="utf-8").splitlines()[0])
BUDGET_OK = """\
[fallback]
tier = "C"
input_tokens = 8000
output_tokens = 600
max_catalog_bytes = 4000

[[model]]
match = "m/x"
tier = "B"
input_tokens = 32000
output_tokens = 1200
max_catalog_bytes = 0
"""


def jl(*objs: object) -> str:
    return "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs)


def catalog_with(edit: Callable[[dict], None]) -> str:
    data = json.loads(default_catalog_path().read_text(encoding="utf-8"))
    edit(data)
    return json.dumps(data, indent=1)


def _dup(d: dict) -> None:
    d["packs"].append(dict(d["packs"][0]))


def _no_name(d: dict) -> None:
    del d["packs"][1]["name"]


def _manifest_root(tmp: Path, text: str) -> Path:
    root = tmp / "compiled"
    root.mkdir()
    (root / "manifest.json").write_text(text, encoding="utf-8")
    return root


@dataclass
class Case:
    id: str
    files: dict[str, str | bytes]  # name -> content, written under tmp_path
    argv: list[str]  # "{tmp}" is replaced by tmp_path
    code: int
    says: tuple[str, ...]  # substrings of the error line ("{tmp}" replaced)


T = "{tmp}"
CASES = [
    # --------------------------------------------------------------- catalogs
    Case("catalog-not-json", {"c.json": '{"packs": [\n  {"name": "a",,}\n'}, ["catalog", "select", "-m", "m/x", f"{T}/c.json"],
         1, (f"{T}/c.json:2:", "not valid JSON")),
    Case("catalog-wrong-shape", {"c.json": "[1, 2]"}, ["catalog", "select", "-m", "m/x", f"{T}/c.json"],
         1, (f"{T}/c.json:", "expected a JSON object")),
    Case("catalog-packs-not-list", {"c.json": '{"packs": 3, "pipelines": []}'},
         ["catalog", "select", "-m", "m/x", f"{T}/c.json"], 1, (f"{T}/c.json:", "packs")),
    Case("catalog-duplicate-id", {"c.json": catalog_with(_dup)}, ["catalog", "select", "-m", "m/x", f"{T}/c.json"],
         1, (f"{T}/c.json:", "duplicate id")),
    Case("catalog-missing-name", {"c.json": catalog_with(_no_name)}, ["catalog", "select", "-m", "m/x", f"{T}/c.json"],
         1, (f"{T}/c.json:", "packs.1", "name")),
    Case("catalog-not-utf8", {"c.json": b'{"packs": [{"name": "\xff\xfe"}]}'},
         ["catalog", "select", "-m", "m/x", f"{T}/c.json"], 1, (f"{T}/c.json:1:", "not UTF-8")),
    Case("catalog-empty", {"c.json": ""}, ["catalog", "select", "-m", "m/x", f"{T}/c.json"],
         1, (f"{T}/c.json:", "not valid JSON")),
    Case("catalog-for-eval", {"c.json": "nope", "t.jsonl": jl(GOOD_RECORD)},
         ["eval", f"{T}/t.jsonl", "--catalog", f"{T}/c.json"], 1, (f"{T}/c.json:1:", "not valid JSON")),
    # --------------------------------------------------------------- trace files
    Case("trace-malformed-line", {"t.jsonl": jl(GOOD_RECORD, '{"id": "r1", "content": ', GOOD_RECORD)},
         ["eval", f"{T}/t.jsonl"], 1, (f"{T}/t.jsonl:2:", "expected one JSON object per line")),
    Case("trace-torn-last-line", {"t.jsonl": jl(GOOD_RECORD) + '{"id": "r1", "model": "m/x", "cont'},
         ["eval", f"{T}/t.jsonl"], 1, (f"{T}/t.jsonl:2:", "torn last line")),
    Case("trace-wrong-field-type", {"t.jsonl": jl(GOOD_RECORD, {**GOOD_RECORD, "id": "r1", "max_tokens": "lots"})},
         ["eval", f"{T}/t.jsonl"], 1, (f"{T}/t.jsonl:2:", "max_tokens", "integer")),
    Case("trace-not-an-object", {"t.jsonl": jl(GOOD_RECORD, "[1, 2]")},
         ["eval", f"{T}/t.jsonl"], 1, (f"{T}/t.jsonl:2:", "expected a JSON object")),
    Case("trace-missing-id", {"t.jsonl": jl({k: v for k, v in GOOD_RECORD.items() if k != "id"})},
         ["eval", f"{T}/t.jsonl"], 1, (f"{T}/t.jsonl:1:", "id", "Field required")),
    Case("trace-not-utf8", {"t.jsonl": jl(GOOD_RECORD).encode() + b'{"id": "\xff"}\n'},
         ["eval", f"{T}/t.jsonl"], 1, (f"{T}/t.jsonl:2:", "not UTF-8")),
    Case("trace-unknown-extension", {"t.csv": "id,content\nr0,{}\n"}, ["eval", f"{T}/t.csv"],
         1, (f"{T}/t.csv:", "unknown trace format extension '.csv'")),
    Case("trace-empty", {"t.jsonl": ""}, ["eval", f"{T}/t.jsonl"], 1, (f"{T}/t.jsonl:", "empty")),
    Case("trace-blank-lines-only", {"t.jsonl": "\n  \n"}, ["eval", f"{T}/t.jsonl"], 1, (f"{T}/t.jsonl:", "empty")),
    Case("trace-directory-not-dataset", {"d/x.txt": "x"}, ["eval", f"{T}/d"],
         1, (f"{T}/d:", "not a saved datasets Dataset")),
    Case("trace-bad-parquet", {"t.parquet": b"PAR1 this is not parquet"}, ["eval", f"{T}/t.parquet"],
         1, (f"{T}/t.parquet:", "Parquet")),
    Case("trace-convert-malformed", {"t.jsonl": jl(GOOD_RECORD, "{oops")},
         ["traces", "convert", f"{T}/t.jsonl", f"{T}/o.jsonl"], 1, (f"{T}/t.jsonl:2:", "expected one JSON object")),
    Case("trace-replay-torn", {"r.jsonl": jl(GOOD_RECORD) + '{"id": "r1", "cont'},
         ["traces", "record", "-m", "m/x", "--lm", f"replay:{T}/r.jsonl", "--n", "1", "--out", f"{T}/o.jsonl"],
         1, (f"{T}/r.jsonl:2:", "torn last line")),
    # --------------------------------------------------------------- budget tables
    Case("budget-toml-syntax", {"b.toml": BUDGET_OK.replace('tier = "B"', 'tier = "B')},
         ["budgets", "show", "--budgets", f"{T}/b.toml"], 1, (f"{T}/b.toml:9:", "not valid TOML")),
    Case("profile-toml-syntax", {"p.toml": 'name = "x"\nmodel = "m/x\n'},
         ["traces", "simulate", "-p", f"{T}/p.toml", "--out", f"{T}/o.jsonl"], 1, (f"{T}/p.toml:2:", "not valid TOML")),
    Case("resilience-bad-value", {"r.toml": "[retry]\nmax_attempts = 0\n"},
         ["plan", "x", "-m", "m/x", "--lm", "sim:nemotron-like", "--resilience", f"{T}/r.toml"], 1,
         (f"{T}/r.toml:", "retry.max_attempts", "greater than or equal to 1")),
    Case("resilience-toml-syntax", {"r.toml": "[retry\n"},
         ["plan", "x", "-m", "m/x", "--lm", "sim:nemotron-like", "--resilience", f"{T}/r.toml"], 1,
         (f"{T}/r.toml:1:", "not valid TOML")),
    Case("budget-bad-tier", {"b.toml": BUDGET_OK.replace('tier = "B"', 'tier = "D"')},
         ["budgets", "show", "--budgets", f"{T}/b.toml"], 1, (f"{T}/b.toml:7:", "match = 'm/x'", "tier")),
    Case("budget-negative-tokens", {"b.toml": BUDGET_OK.replace("output_tokens = 1200", "output_tokens = -5")},
         ["budgets", "lookup", "m/x", "--budgets", f"{T}/b.toml"], 1, (f"{T}/b.toml:7:", "output_tokens")),
    Case("budget-fallback-keys-at-top", {"b.toml": BUDGET_OK.split("[[model]]")[0].replace("[fallback]", "")},
         ["budgets", "show", "--budgets", f"{T}/b.toml"], 1, (f"{T}/b.toml:", "unknown top-level key", "expected [fallback]")),
    Case("budget-missing-fallback", {"b.toml": "[[model]]" + BUDGET_OK.split("[[model]]")[1]},
         ["budgets", "show", "--budgets", f"{T}/b.toml"], 1, (f"{T}/b.toml:", "missing the [fallback] table")),
    Case("budget-unknown-field", {"b.toml": BUDGET_OK + "colour = \"red\"\n"},
         ["budgets", "show", "--budgets", f"{T}/b.toml"], 1, (f"{T}/b.toml:7:", "colour", "Extra inputs")),
    Case("budget-not-utf8", {"b.toml": BUDGET_OK.encode() + b'source = "\xff"\n'},
         ["budgets", "show", "--budgets", f"{T}/b.toml"], 1, (f"{T}/b.toml:13:", "not UTF-8")),
    Case("calibrate-report-wrong-shape", {"r.json": "{}"}, ["calibrate", "--report", f"{T}/r.json", "--apply"],
         1, (f"{T}/r.json:", "not an eval report.json", "created_at: Field required")),
    Case("calibrate-report-not-json", {"r.json": "{nope"}, ["calibrate", "--report", f"{T}/r.json"],
         1, (f"{T}/r.json:", "not an eval report.json")),
    # --------------------------------------------------------------- compiled programs / manifest
    Case("manifest-corrupt", {"compiled/manifest.json": '{"programs": {'},
         ["compile", "--tier", "C", "--variant", "single_pick", "--out", f"{T}/compiled"],
         1, (f"{T}/compiled/manifest.json:", "not valid JSON")),
    Case("manifest-wrong-shape", {"compiled/manifest.json": '{"programs": []}'},
         ["compile", "--tier", "C", "--variant", "single_pick", "--out", f"{T}/compiled"],
         1, (f"{T}/compiled/manifest.json:", "expected")),
    # --------------------------------------------------------------- task files
    Case("tasks-malformed-line", {"t.jsonl": jl(GOOD_RECORD), "tasks.jsonl": jl(GOOD_TASK, "{broken")},
         ["eval", f"{T}/t.jsonl", "--tasks", f"{T}/tasks.jsonl"], 1, (f"{T}/tasks.jsonl:2:", "expected one JSON object")),
    Case("tasks-missing-intent",
         {"t.jsonl": jl(GOOD_RECORD), "tasks.jsonl": jl({k: v for k, v in GOOD_TASK.items() if k != "intent"})},
         ["eval", f"{T}/t.jsonl", "--tasks", f"{T}/tasks.jsonl"], 1, (f"{T}/tasks.jsonl:1:", "intent", "missing")),
    Case("tasks-for-simulate", {"tasks.jsonl": jl({**GOOD_TASK, "complexity": "huge"})},
         ["traces", "simulate", "-p", "nemotron-like", "--tasks", f"{T}/tasks.jsonl", "--out", f"{T}/o.jsonl"],
         1, (f"{T}/tasks.jsonl:1:", "complexity")),
    Case("tasks-for-compile", {"tasks.jsonl": jl(GOOD_TASK, GOOD_TASK)},
         ["compile", "--tier", "C", "--variant", "single_pick", "--train", f"{T}/tasks.jsonl", "--out", f"{T}/c"],
         1, (f"{T}/tasks.jsonl:2:", "duplicate task id")),
    # --------------------------------------------------------------- CLI arguments (usage: exit 2)
    Case("arg-unknown-option", {}, ["eval", "--bogus"], 2, ("No such option '--bogus'",)),
    Case("arg-workers-not-int", {}, ["eval", "--workers", "many"], 2, ("--workers", "'many' is not a valid integer")),
    Case("arg-workers-zero", {}, ["eval", "--workers", "0"], 2, ("--workers", "0 is not in the range 1<=x<=64")),
    Case("arg-missing-report", {}, ["calibrate"], 2, ("give --report, or --decisions",)),
    Case("arg-missing-out", {}, ["traces", "simulate", "-p", "nemotron-like"], 2, ("Missing option '--out'",)),
    Case("arg-compile-no-target", {}, ["compile"], 2, ("give --tier and --variant, or --all",)),
    Case("arg-nonexistent-trace", {}, ["eval", f"{T}/nope.jsonl"], 2, (f"{T}/nope.jsonl", "does not exist")),
    Case("arg-nonexistent-catalog", {}, ["catalog", "select", "-m", "m/x", f"{T}/nope.json"],
         2, (f"{T}/nope.json", "does not exist")),
    Case("arg-directory-for-report", {"d/x": "x"}, ["calibrate", "--report", f"{T}/d"], 2, (f"{T}/d", "is a directory")),
    Case("arg-directory-for-budgets", {"d/x": "x"}, ["budgets", "show", "--budgets", f"{T}/d"],
         2, (f"{T}/d", "is a directory")),
    Case("arg-file-for-out-dir", {"t.jsonl": jl(GOOD_RECORD), "f": "x"}, ["eval", f"{T}/t.jsonl", "--out", f"{T}/f"],
         2, (f"{T}/f", "is a file")),
    Case("arg-resume-without-out", {"t.jsonl": jl(GOOD_RECORD)}, ["eval", f"{T}/t.jsonl", "--resume"],
         2, ("--resume needs --out",)),
]


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
        raise SystemExit(0)
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


def check_error(code: int, err: str, want_code: int, says: tuple[str, ...]) -> str:
    """Assert the one-error-line contract; return that line."""
    assert "Traceback" not in err
    assert code == want_code, err
    lines = [line for line in err.splitlines() if line.strip()]
    if want_code == 1:
        assert len(lines) == 1, err  # the whole of stderr is one line
        (line,) = lines
        assert line.startswith("error: ")
    else:
        assert len(lines) == 1, err  # usage errors too: one line, no usage block
        (line,) = lines
        assert line.startswith("Error: ") and line.endswith("--help')"), line
    for s in says:
        assert s in line, line
    return line


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_gives_one_error_line(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, content in case.files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    argv = [a.replace(T, str(tmp_path)) for a in case.argv]
    code, _, err = run_cli(argv, capsys)
    line = check_error(code, err, case.code, tuple(s.replace(T, str(tmp_path)) for s in case.says))
    print(f"{case.id}\t{code}\t{line}")


def test_skip_mode_reports_each_bad_line_and_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--on-error skip: each bad line (a torn last one included) is one ``skipped:`` line; the rest is read."""
    src = tmp_path / "t.jsonl"
    src.write_text(jl(GOOD_RECORD, "{oops", {**GOOD_RECORD, "id": "r2"}) + '{"id": "r3", "cont', encoding="utf-8")
    code, out, err = run_cli(["traces", "convert", str(src), str(tmp_path / "o.jsonl"), "--on-error", "skip"], capsys)
    assert code == 0 and "Traceback" not in err
    assert err.splitlines() == [
        (f"skipped: {src}:2: expected one JSON object per line: Expecting property name enclosed in double quotes "
         "(column 2)"),
        (f"skipped: {src}:4: torn last line (no newline at the end and not valid JSON: the writer was probably "
         "interrupted)"),
    ]
    assert "wrote 2 records" in out


def test_compiled_program_errors_name_the_file(tmp_path: Path) -> None:
    """A corrupt or wrongly shaped compiled program raises CompiledProgramError naming the file and field."""
    from helmdeck_dspy.errors import CompiledProgramError, DataFileError
    from helmdeck_dspy.program.modules import SinglePick
    from helmdeck_dspy.program.store import load_compiled_state

    good = json.loads((PROJECT_ROOT / "compiled" / "tier_C" / "single_pick.json").read_text(encoding="utf-8"))
    bad = {
        "not-json": ("{\"plan\": {", "not valid JSON"),
        "a-list": ("[]", "expected a JSON object"),
        "no-plan": (json.dumps({"metadata": {}}), "missing predictor state ['plan']"),
        "demos-not-list": (json.dumps({**good, "plan": {**good["plan"], "demos": "x"}}), "plan.demos: expected a list"),
        "demo-not-object": (json.dumps({**good, "plan": {**good["plan"], "demos": [3]}}), "plan.demos[0]: expected an object"),
        "not-utf8": (b"\xff\xfe", "not"),
    }
    for name, (content, says) in bad.items():
        p = tmp_path / f"{name}.json"
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        with pytest.raises(CompiledProgramError) as exc:
            load_compiled_state(SinglePick(), p)
        assert isinstance(exc.value, DataFileError)
        assert str(exc.value).startswith(f"{p}:") and says in str(exc.value), str(exc.value)
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(good), encoding="utf-8")
    assert len(load_compiled_state(SinglePick(), ok).plan.demos) == len(good["plan"]["demos"])


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["eval", "{tmp}/t.jsonl"], 1, "torn last line"),
        (["budgets", "show", "--budgets", "{tmp}/b.toml"], 1, "not valid TOML"),
        (["eval", "--workers", "-3"], 2, "--workers"),
    ],
    ids=["torn-trace", "bad-toml", "bad-workers"],
)
def test_console_script_in_a_subprocess(tmp_path: Path, argv: list[str], code: int, says: str) -> None:
    """The same contract through a real interpreter: exit status and stderr as a user sees them."""
    (tmp_path / "t.jsonl").write_text(jl(GOOD_RECORD) + '{"id": "x", "cont', encoding="utf-8")
    (tmp_path / "b.toml").write_text("[fallback\n", encoding="utf-8")
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from helmdeck_dspy.cli import main; main(sys.argv[1:])", *args],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False,
    )
    check_error(proc.returncode, proc.stderr, code, (says,))


def test_planner_reports_a_corrupt_compiled_program(tmp_path: Path) -> None:
    from helmdeck_dspy.errors import CompiledProgramError
    from helmdeck_dspy.planning.planner import Planner

    bad = tmp_path / "tier_C" / "single_pick.json"
    bad.parent.mkdir()
    bad.write_text('{"plan": {', encoding="utf-8")
    with pytest.raises(CompiledProgramError, match="not valid JSON"):
        Planner.for_model("openrouter/nvidia/nemotron-3-super-120b-a12b:free", lm="sim:nemotron-like",
                          compiled_root=tmp_path)
