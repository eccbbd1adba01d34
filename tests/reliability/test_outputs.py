"""The output rule, as a user meets it: nothing that was there is deleted or replaced without
--force, formats come from the suffix, bundled data is never written, an unwritable path is one
line before any work, and multi-file outputs appear whole."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from helmdeck_dspy.io.resources import bundled_dir
from helmdeck_dspy.traces.record import TraceRecord, write_jsonl_traces
from tests.bench.conftest import write_bfcl
from tests.reliability.conftest import assert_one_line, read_only, snapshot, unwritable_targets

PLAN = '{"steps": [{"order": 1, "tool": "blog.rewrite_for_audience", "args": {}}], "complexity": "single-action"}'
OPENAI_ROW = {"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": PLAN}, "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 10, "completion_tokens": 5}}

OPENAI_TOOLS = [{"type": "function", "function": {"name": "notes_search", "description": "Search my notes.",
                                                  "parameters": {"type": "object", "properties": {}}}}]


def traces_file(path: Path, n: int = 3) -> Path:
    write_jsonl_traces([TraceRecord(id=f"r{i}", model="m/x", tier="C", prompt_variant="full_steps", content=PLAN,
                              finish_reason="stop") for i in range(n)], path)
    return path


def a_project(root: Path) -> Path:
    """A directory a user cares about: sources and a README."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hello')\n")
    (root / "README.md").write_text("# my project\n")
    return root


@pytest.mark.parametrize("command", ["convert", "import"])
def test_an_existing_directory_is_never_replaced(cli, command):
    src = traces_file(cli.cwd / "a.jsonl")
    (cli.cwd / "f.jsonl").write_text(json.dumps(OPENAI_ROW) + "\n")
    project = a_project(cli.cwd / "some" / "dir")
    before = snapshot(project)
    args = ["traces", "convert", str(src), "some/dir"] if command == "convert" else \
        ["traces", "import", "openai", "f.jsonl", "--out", "some/dir"]
    assert_one_line(cli(*args), 2, "some/dir", "--force")
    assert snapshot(project) == before


@pytest.mark.parametrize("name", ["notes.ndjson", "NOTES", "notes.jsonl"])
def test_an_existing_file_is_never_replaced_without_force(cli, name):
    src = traces_file(cli.cwd / "a.jsonl")
    target = cli.cwd / name
    target.write_text("my notes\n")
    assert_one_line(cli("traces", "convert", str(src), name), 2, name, "--force")
    assert target.read_text() == "my notes\n"
    if name != "NOTES":  # with --force a trace file of the suffix's format replaces it
        run = cli("traces", "convert", str(src), name, "--force")
        assert run.code == 0 and len([ln for ln in target.read_text().splitlines() if ln]) == 3


def test_an_unknown_suffix_is_a_usage_error_and_creates_nothing(cli):
    src = traces_file(cli.cwd / "a.jsonl")
    assert_one_line(cli("traces", "convert", str(src), "x.csv"), 2, "x.csv", ".csv")
    assert not (cli.cwd / "x.csv").exists()


def test_a_path_without_suffix_is_a_saved_dataset_written_whole(cli):
    src = traces_file(cli.cwd / "a.jsonl")
    run = cli("traces", "convert", str(src), "ds")
    assert run.code == 0, run.err
    assert (cli.cwd / "ds" / "dataset_info.json").is_file()
    assert [p.name for p in cli.cwd.iterdir() if p.name.startswith(".")] == []  # no staging left


def test_import_and_simulate_never_replace_an_output_file(cli):
    (cli.cwd / "f.jsonl").write_text(json.dumps(OPENAI_ROW) + "\n")
    out = cli.cwd / "out.jsonl"
    out.write_text("keep me\n")
    assert_one_line(cli("traces", "import", "openai", "f.jsonl", "--out", "out.jsonl"), 2, "--force")
    assert_one_line(cli("traces", "simulate", "-p", "frontier-like", "--n", "1", "--out", "out.jsonl"), 2, "--force")
    assert out.read_text() == "keep me\n"


def test_importing_an_empty_file_is_an_error_not_zero_records(cli):
    (cli.cwd / "empty.jsonl").write_text("")
    assert_one_line(cli("traces", "import", "openai", "empty.jsonl", "--out", "out.jsonl"), 1, "empty.jsonl", "empty")
    assert not (cli.cwd / "out.jsonl").exists()


def test_bundled_profiles_are_never_written(cli):
    src = traces_file(cli.cwd / "a.jsonl", 30)
    bundled = bundled_dir() / "profiles" / "frontier-like.toml"
    before = bundled.read_bytes()
    for extra in ([], ["--force"]):
        assert_one_line(cli("traces", "fit", str(src), "--name", "frontier-like", *extra), 2, "bundled")
    assert bundled.read_bytes() == before


def test_a_finished_record_calls_nothing(cli):
    """A finished trace file of other settings (here: another model's) is neither sent for nor
    replaced: the run is refused naming the difference (the same settings say "complete": see
    test_record_once.py)."""
    from tests.fault_server import FaultServer, ok

    out = cli.cwd / "rec.jsonl"
    traces_file(out, 2)
    before = out.read_bytes()
    with FaultServer(ok(PLAN)) as server:
        run = cli("traces", "record", "-m", "openai/rec-model", "--lm", "openai/rec-model", "--api-base", server.url,
                  "--n", "1", "--out", "rec.jsonl", env={"OPENAI_API_KEY": "sk-test-0123456789abcdef"})
        sent = len(server.requests)
    assert_one_line(run, 2, "finished recording of other settings", "--model", "--force")
    assert sent == 0 and out.read_bytes() == before


def test_plan_record_to_an_unwritable_path_fails_before_the_call(cli, tmp_path):
    from tests.fault_server import FaultServer, ok

    for name, parent in unwritable_targets(tmp_path).items():
        with FaultServer(ok(PLAN)) as server:
            run = cli("plan", "rewrite my notes as a blog post", "-m", "openai/m", "--lm", "openai/m", "--api-base",
                      server.url, "--no-history", "--record", str(parent / "rec.jsonl"),
                      env={"OPENAI_API_KEY": "sk-test-0123456789abcdef"})
            sent = len(server.requests)
        assert_one_line(run, 1, "cannot write", "rec.jsonl")
        assert sent == 0, name


@pytest.mark.parametrize("which", ["proc", "under-a-file"])
@pytest.mark.parametrize("command", ["convert", "import", "simulate", "eval", "record", "fit", "catalog", "bench"])
def test_unwritable_outputs_are_one_line(cli, tmp_path, which, command):
    parent = unwritable_targets(tmp_path)[which]
    src = traces_file(cli.cwd / "a.jsonl")
    (cli.cwd / "f.jsonl").write_text(json.dumps(OPENAI_ROW) + "\n")
    (cli.cwd / "tools.json").write_text(json.dumps(OPENAI_TOOLS))
    write_bfcl(cli.cwd / "bfcl")
    args = {
        "convert": ["traces", "convert", str(src), str(parent / "o.jsonl")],
        "import": ["traces", "import", "openai", "f.jsonl", "--out", str(parent / "o.parquet")],
        "simulate": ["traces", "simulate", "-p", "frontier-like", "--n", "1", "--out", str(parent / "o.jsonl")],
        "eval": ["eval", str(src), "--out", str(parent / "report")],
        "record": ["traces", "record", "-m", "m/x", "--lm", "sim:frontier-like", "--n", "1", "--out",
                   str(parent / "r.jsonl")],
        "fit": ["traces", "fit", str(src), "--name", "mine", "--out", str(parent / "p.toml")],
        "catalog": ["catalog", "import", "tools.json", "--out", str(parent / "c.json")],
        "bench": ["bench", "bfcl", "--data", "bfcl", "--rankers", "lexical", "--out", str(parent / "rep")],
    }[command]
    assert_one_line(cli(*args), 1, "cannot write", str(parent))


def test_bench_bfcl_keeps_a_report_folder_and_checks_outputs_before_planning(cli, tmp_path):
    from tests.fault_server import FaultServer, ok

    write_bfcl(cli.cwd / "bfcl")
    mine = cli.cwd / "rep"
    mine.mkdir()
    (mine / "report.md").write_text("my own report\n")
    lm = ["--lm", "openai/m", "--api-base"]
    env = {"OPENAI_API_KEY": "sk-test-0123456789abcdef"}
    bench = ["bench", "bfcl", "--data", "bfcl", "--rankers", "lexical"]
    with FaultServer(ok(PLAN)) as server:
        assert_one_line(cli(*bench, *lm, server.url, "--out", "rep", env=env), 2, "rep", "--force")
        assert_one_line(cli(*bench, *lm, server.url, "--record", "r.csv", env=env), 2, "--record", ".csv")
        parent = unwritable_targets(tmp_path)["proc"]
        assert_one_line(cli(*bench, *lm, server.url, "--record", str(parent / "r.jsonl"), env=env), 1, "cannot write")
        sent = len(server.requests)
    assert sent == 0  # every refusal came before the first question was planned
    assert snapshot(mine) == {"report.md": b"my own report\n"} and not (cli.cwd / "r.csv").exists()
    assert cli(*bench, "--out", "rep", "--force").code == 0  # replaced whole: the new set only
    assert sorted(p.name for p in mine.iterdir()) == ["report.json", "report.md"]
    assert (mine / "report.md").read_text() != "my own report\n"


def test_the_current_directory_is_never_an_output_directory(cli):
    src = traces_file(cli.cwd / "a.jsonl")
    before = snapshot(cli.cwd)
    assert_one_line(cli("eval", str(src), "--out", ".", "--force"), 2, "current directory")
    assert snapshot(cli.cwd) == before


def test_a_read_only_directory_is_one_line(cli):
    src = traces_file(cli.cwd / "a.jsonl")
    locked = cli.cwd / "locked"
    locked.mkdir()
    (locked / "mine.txt").write_text("kept\n")
    with read_only(locked):
        assert_one_line(cli("traces", "convert", str(src), str(locked / "o.jsonl")), 1, "cannot write", "locked")
        assert_one_line(cli("eval", str(src), "--out", str(locked / "rep")), 1, "cannot write", "locked")
    assert snapshot(locked) == {"mine.txt": b"kept\n"}


def test_eval_never_replaces_a_directory_of_other_files(cli):
    src = traces_file(cli.cwd / "a.jsonl")
    project = a_project(cli.cwd / "proj")
    before = snapshot(project)
    assert_one_line(cli("eval", str(src), "--out", "proj"), 2, "--force")
    assert snapshot(project) == before


def test_a_checkpoint_path_that_is_a_directory_is_one_line(cli):
    src = traces_file(cli.cwd / "a.jsonl")
    (cli.cwd / "rep" / ".eval-checkpoint.json").mkdir(parents=True)
    assert_one_line(cli("eval", str(src), "--out", "rep"), 2, ".eval-checkpoint.json")


def test_an_eval_report_is_replaced_as_one_set_even_when_interrupted(cli):
    small = traces_file(cli.cwd / "small.jsonl", 3)
    assert cli("eval", str(small), "--out", "rep").code == 0
    old = snapshot(cli.cwd / "rep")
    big = traces_file(cli.cwd / "big.jsonl", 20000)
    proc = cli.spawn("eval", str(big), "--out", "rep", "--force", "--no-progress")
    time.sleep(4)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert b"Traceback" not in err
    now = snapshot(cli.cwd / "rep")
    reports = {k: v for k, v in now.items() if k in ("report.json", "report.md")}
    # the old set or the new set, never a new report.json beside an old report.md (the signal may
    # land after the new set is in place: the run then still ends by it)
    if reports["report.json"] == old["report.json"]:
        assert reports["report.md"] == old["report.md"]
    else:
        assert b"big.jsonl" in reports["report.json"] and b"big.jsonl" in reports["report.md"]
    assert [p for p in cli.cwd.iterdir() if ".staging-" in p.name] == []


def test_what_a_killed_writer_left_is_swept_by_the_next_run(cli):
    src = traces_file(cli.cwd / "a.jsonl")
    dead = 4_194_304 + 7  # above Linux's largest pid: no such process
    leftover = cli.cwd / f".out.jsonl.{dead}.tmp-abc123"
    leftover.write_text("half a record")
    staging = cli.cwd / f".ds.{dead}.staging-xyz"
    (staging / "new").mkdir(parents=True)
    assert cli("traces", "convert", str(src), "out.jsonl").code == 0
    assert cli("traces", "convert", str(src), "ds").code == 0
    assert not leftover.exists() and not staging.exists()


def test_a_killed_import_leaves_no_output_and_the_next_run_sweeps_its_temporary_file(cli):
    rows = cli.cwd / "big.jsonl"
    with rows.open("w") as handle:
        for i in range(40_000):
            handle.write(json.dumps({**OPENAI_ROW, "id": f"chatcmpl-{i}"}) + "\n")
    proc = cli.spawn("traces", "import", "openai", "big.jsonl", "--out", "imp.jsonl")
    deadline = time.monotonic() + 120
    temporary: list[Path] = []
    while not temporary and proc.poll() is None and time.monotonic() < deadline:
        temporary = [p for p in cli.cwd.iterdir() if p.name.startswith(".imp.jsonl.") and ".tmp-" in p.name]
        time.sleep(0.02)
    assert temporary, "the import finished before its temporary file was seen"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert not (cli.cwd / "imp.jsonl").exists()  # nothing half-written under the real name
    assert all(p.exists() for p in temporary)  # what the killed writer left, until the next run
    run = cli("traces", "import", "openai", "big.jsonl", "--out", "imp.jsonl")
    assert run.code == 0, run.err
    assert [p.name for p in cli.cwd.iterdir() if p.name.startswith(".imp.jsonl.")] == []
    assert sum(1 for _ in (cli.cwd / "imp.jsonl").open()) == 40_000
