"""``calibrate --apply`` on one table from two runs at once: serialised, never a lost row; a CRLF
table stays CRLF."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from helmdeck_dspy.budgets import load_budget_table
from helmdeck_dspy.calibration.apply import apply_calibration
from helmdeck_dspy.calibration.calibrate import calibrate
from helmdeck_dspy.engines.profile import load_profile
from helmdeck_dspy.evaluation.output import write_outputs
from helmdeck_dspy.evaluation.runner import evaluate
from helmdeck_dspy.io.resources import default_budgets_path
from helmdeck_dspy.recording.trace_sets import simulate
from helmdeck_dspy.tasks import load_tasks
from tests.reliability.conftest import assert_one_line, read_only

MODELS = ("vendor-a/new-frontier", "vendor-b/new-frontier")


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    """One eval report per model, each proposing a change to that model's row (simulated records)."""
    root = tmp_path_factory.mktemp("calibration")
    out = {}
    for model in MODELS:
        traces = root / f"{model.split('/')[0]}.jsonl"
        simulate([load_profile("frontier-like")], load_tasks("train"), traces, n=100, model=model)
        folder = root / model.split("/")[0]
        write_outputs(evaluate([traces], progress=False), folder)
        out[model] = folder / "report.json"
    return out


def fresh_table(path: Path, crlf: bool = False) -> Path:
    text = default_budgets_path().read_text(encoding="utf-8")
    path.write_bytes((text.replace("\n", "\r\n") if crlf else text).encode("utf-8"))
    return path


def _calibration(report: Path, table: Path):
    from helmdeck_dspy.calibration.calibrate import load_report

    return calibrate(load_report(report), load_budget_table(table))


def test_two_applies_in_threads_keep_both_rows(tmp_path, reports, monkeypatch):
    """Each apply is slowed between its read and its write, so without the lock the second would
    write over the first's row."""
    import tomlkit

    table = fresh_table(tmp_path / "budgets.toml")
    cals = [_calibration(reports[m], table) for m in MODELS]
    real_dumps = tomlkit.dumps

    def slow_dumps(doc, *a, **kw):
        time.sleep(0.5)
        return real_dumps(doc, *a, **kw)

    monkeypatch.setattr(tomlkit, "dumps", slow_dumps)
    errors: list[BaseException] = []

    def apply(cal) -> None:
        try:
            apply_calibration(cal, table, allow_simulated=True)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=apply, args=(c,)) for c in cals]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    rows = {r.match for r in load_budget_table(table).rows}
    assert set(MODELS) <= rows


def test_two_cli_applies_at_once_keep_both_rows_and_crlf(cli, reports):
    table = fresh_table(cli.cwd / "budgets.toml", crlf=True)
    procs = [cli.spawn("calibrate", "--report", str(reports[m]), "--budgets", "budgets.toml", "--apply",
                       "--allow-simulated") for m in MODELS]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0 and b"Traceback" not in err, err
    data = table.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n")  # every line ending still CRLF
    rows = {r.match for r in load_budget_table(table).rows}
    assert set(MODELS) <= rows


def test_an_apply_to_a_table_in_a_read_only_directory_is_one_line_naming_it(cli, reports):
    folder = cli.cwd / "tables"
    folder.mkdir()
    table = fresh_table(folder / "budgets.toml")
    before = table.read_bytes()
    with read_only(folder):
        run = cli("calibrate", "--report", str(reports[MODELS[0]]), "--budgets", str(table), "--apply",
                  "--allow-simulated")
    line = assert_one_line(run, 1, "cannot write --budgets", str(table))
    assert ".tmp-" not in line and run.out == ""  # named before any proposal was printed
    assert table.read_bytes() == before and sorted(p.name for p in folder.iterdir()) == ["budgets.toml"]
