"""Files that cannot be written, as a user meets them (issue 40, item 7): the error names the file
the user asked for (never a temporary one), and what a paid call answered is not lost."""

from __future__ import annotations

import os

import pytest

from tests.cli.test_bad_input import run_cli
from tests.reliability.test_calibrate_lock import MODELS, fresh_table, reports  # noqa: F401 (a fixture)

INTENT = "remember this launch, write a blog about it and make an illustration"
NEMOTRON = "openrouter/nvidia/nemotron-3-super-120b-a12b:free"


def test_plan_record_onto_a_full_disk_names_the_file_and_keeps_the_plan(tmp_path, monkeypatch, capsys):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here to stand for a full disk")
    monkeypatch.setenv("HELMDECK_DSPY_HOME", str(tmp_path / "home"))
    record = tmp_path / "calls.jsonl"
    record.symlink_to("/dev/full")  # every write: No space left on device
    code, out, err = run_cli(["plan", INTENT, "--model", NEMOTRON, "--lm", "sim:nemotron-like", "--no-history",
                              "--record", str(record)], capsys)
    assert code == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and str(record) in lines[0] and "No space left" in lines[0], err
    assert "complexity" in out  # the plan the call made is printed all the same


def test_calibrate_apply_onto_a_table_it_cannot_replace_names_the_table(reports, tmp_path, monkeypatch, capsys):  # noqa: F811
    import helmdeck_dspy.io.atomic as atomic

    table = fresh_table(tmp_path / "budgets.toml")
    before = table.read_bytes()

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", str(src), str(dst))

    monkeypatch.setattr(atomic.os, "replace", refuse)
    code, _, err = run_cli(["calibrate", "--report", str(reports[MODELS[0]]), "--apply", "--allow-simulated",
                            "--budgets", str(table)], capsys)
    assert code == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and str(table) in lines[0] and ".tmp-" not in lines[0], err
    assert table.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["budgets.toml"]
