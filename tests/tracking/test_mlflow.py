"""MLflow logging against a real local SQLite store, read back with MlflowClient."""

from __future__ import annotations

import json
import posixpath
import subprocess
import sys
from pathlib import Path

import pytest

from helmdeck_dspy.evaluation.markdown import render_markdown
from helmdeck_dspy.tracking import mlflow as tracking

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "eval" / "traces" / "published-adr053.jsonl"


def test_import_does_not_import_mlflow() -> None:
    code = (
        "import sys\n"
        "import helmdeck_dspy.tracking.mlflow as t\n"
        "assert callable(t.log_eval_run) and callable(t.default_tracking_uri)\n"
        "heavy = [m for m in ('mlflow', 'matplotlib', 'sqlalchemy') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_default_tracking_uri_honours_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "store" / "nested"
    monkeypatch.setenv(tracking.MLFLOW_DIR_ENV, str(target))
    uri = tracking.default_tracking_uri()
    assert uri == f"sqlite:///{target.resolve().as_posix()}/mlflow.db"
    assert target.is_dir()
    assert tracking.artifact_root(uri) == target.resolve() / "artifacts"


def test_default_tracking_uri_defaults_to_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(tracking.MLFLOW_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    uri = tracking.default_tracking_uri()
    expected = (tmp_path / ".helmdeck" / "mlflow").resolve()
    assert uri == f"sqlite:///{expected.as_posix()}/mlflow.db"
    assert expected.is_dir()


def test_artifact_root() -> None:
    assert tracking.artifact_root("sqlite:////data/x/mlflow.db") == Path("/data/x/artifacts")
    assert tracking.artifact_root("sqlite:///rel/mlflow.db") == (Path.cwd() / "rel" / "artifacts").resolve()
    assert tracking.artifact_root("http://localhost:5000") is None
    assert tracking.artifact_root("sqlite:///:memory:") is None


@pytest.mark.parametrize("raw", [
    "strict_rate.openrouter/nvidia/nemotron-3-super-120b-a12b:free.full_steps",
    "a//b", "/lead", "trail/", "x/../y", "./x", "é ü?*<>|", "", "a/./b", "t" * 400,
])
def test_safe_key_is_valid_for_mlflow(raw: str) -> None:
    key = tracking.safe_key(raw)
    assert key and len(key) <= tracking.MAX_KEY_LENGTH
    assert all(c.isascii() and (c.isalnum() or c in "_-. /") for c in key), key
    norm = posixpath.normpath(key)  # MLflow rejects names that resolve to another path
    assert norm == key and not norm.startswith("..") and not norm.startswith("/") and norm != "."


def test_safe_key_keeps_readable_names() -> None:
    assert tracking.safe_key("strict_rate.openrouter/qwen/qwen3:free.single_pick") == \
        "strict_rate.openrouter/qwen/qwen3_free.single_pick"
    assert tracking.safe_key("tier_C.strict_rate") == "tier_C.strict_rate"


# ------------------------------------------------------------------------ against a real store


@pytest.fixture(scope="module")
def report():
    from helmdeck_dspy.evaluation.runner import evaluate

    return evaluate([PUBLISHED], progress=False)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One SQLite store for the module (creating its tables takes a couple of seconds)."""
    base = tmp_path_factory.mktemp("mlflow")
    return f"sqlite:///{base.as_posix()}/mlflow.db"


@pytest.fixture(scope="module")
def client(store: str):
    tracking._import_mlflow()
    from mlflow.tracking import MlflowClient

    return MlflowClient(store)


@pytest.fixture(scope="module")
def eval_run(report, store: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    from helmdeck_dspy.evaluation.plots import write_plots

    out = tmp_path_factory.mktemp("eval-out")
    plots = write_plots(report, out)
    (out / "report.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
    (out / "report.md").write_text(render_markdown(report, plots), encoding="utf-8")
    run_id = tracking.log_eval_run(report, out, plots, tracking_uri=store, run_name="published")
    return run_id, out


def test_eval_run_params(eval_run, client, report) -> None:
    run = client.get_run(eval_run[0])
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "published"
    p = run.data.params
    assert p["n_records"] == str(report.n_records) == "6"
    assert p["n_skipped"] == "0"
    assert p["workers"] == str(report.workers)
    assert p["trace_set_sha256"] == report.trace_set_sha256
    assert p["catalog_fingerprint"] == report.catalog_fingerprint
    assert p["tool_version"] == report.tool_version
    assert p["inputs"] == str(PUBLISHED)
    assert run.data.tags["helmdeck_dspy.kind"] == "eval"
    assert p["kinds"] == "published 6"
    assert run.data.tags["helmdeck_dspy.source_kinds"] == "published"
    assert run.data.tags["helmdeck_dspy.simulated"] == "none"


def test_eval_run_metrics(eval_run, client, report) -> None:
    m = client.get_run(eval_run[0]).data.metrics
    g = report.groups[0]
    key = tracking.safe_key(f"strict_rate.{g.kind}.{g.model}.{g.prompt_variant}")
    assert key == "strict_rate.published.openrouter/nvidia/nemotron-3-super-120b-a12b_free.full_steps"
    assert m[key] == pytest.approx(g.strict_rate) == 0.5
    suffix = key.removeprefix("strict_rate.")
    assert m[f"tolerant_rate.{suffix}"] == pytest.approx(g.tolerant_rate)
    assert m[f"length_rate.{suffix}"] == pytest.approx(g.length_rate)
    assert m[f"reasoning_leak_rate.{suffix}"] == pytest.approx(g.reasoning_leak_rate)
    assert m[f"n.{suffix}"] == g.n == 6
    assert m[f"completion_tokens_p95.{suffix}"] == pytest.approx(g.completion_tokens.p95)
    assert f"plan_score_mean.{suffix}" not in m  # no gold tasks in the published traces
    assert m["tier_C.published.strict_rate"] == pytest.approx(report.tiers[0].strict_rate)
    assert m["tier_C.published.n"] == 6
    assert m["all.published.strict_rate"] == pytest.approx(0.5)
    assert m[f"calls_per_plan_mean.{suffix}"] == 1.0 and m[f"calls_per_plan_repeated.{suffix}"] == 0


def test_eval_run_artifacts(eval_run, client, store: str) -> None:
    run_id, out = eval_run
    names = {a.path for a in client.list_artifacts(run_id)}
    assert {"report.json", "report.md", "parse_success.png", "finish_reasons.png", "completion_tokens.png"} <= names
    # the artifacts live beside the database, not in ./mlruns
    run = client.get_run(run_id)
    root = tracking.artifact_root(store)
    assert run.info.artifact_uri.startswith(root.as_uri())
    stored = Path(run.info.artifact_uri.removeprefix("file://"))
    assert json.loads((stored / "report.json").read_text())["n_records"] == 6
    assert (stored / "parse_success.png").read_bytes() == (out / "parse_success.png").read_bytes()


def test_eval_run_default_store_without_out_dir(report, client, store: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # the default store is the module's store, found through the env var; nothing lands in ./mlruns
    monkeypatch.setenv(tracking.MLFLOW_DIR_ENV, str(tracking.artifact_root(store).parent))
    monkeypatch.chdir(tmp_path)
    assert tracking.default_tracking_uri() == store
    run_id = tracking.log_eval_run(report, None, [])
    assert list(tmp_path.iterdir()) == []
    names = {a.path for a in client.list_artifacts(run_id)}
    assert names == {"report.json"}
    local = client.download_artifacts(run_id, "report.json")
    assert json.loads(Path(local).read_text())["trace_set_sha256"] == report.trace_set_sha256
    # both eval runs share one experiment
    exp = client.get_experiment_by_name(tracking.EVAL_EXPERIMENT)
    assert client.get_run(run_id).info.experiment_id == exp.experiment_id
    assert len(client.search_runs([exp.experiment_id])) >= 2


def test_compile_run(client, store: str, tmp_path: Path) -> None:
    program = tmp_path / "program.json"
    program.write_text(json.dumps({"predict": {"demos": [], "signature": {"instructions": "plan"}}}))
    run_id = tracking.log_compile_run(
        {"tier": "C", "optimizer": "MIPROv2", "max_bootstrapped_demos": 4},
        {"dev_score": 0.8125, "train_score": 0.9, "skipped": None},
        program, tracking_uri=store,
    )
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.params == {"tier": "C", "optimizer": "MIPROv2", "max_bootstrapped_demos": "4"}
    assert run.data.metrics == {"dev_score": 0.8125, "train_score": 0.9}
    assert [a.path for a in client.list_artifacts(run_id)] == ["program.json"]
    exp = client.get_experiment(run.info.experiment_id)
    assert exp.name == tracking.COMPILE_EXPERIMENT
    local = client.download_artifacts(run_id, "program.json")
    assert json.loads(Path(local).read_text())["predict"]["signature"]["instructions"] == "plan"


def test_compile_run_rejects_bad_input(store: str, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        tracking.log_compile_run({}, {}, tmp_path / "missing.json", tracking_uri=store)
    program = tmp_path / "p.json"
    program.write_text("{}")
    with pytest.raises(ValueError, match="dev_score"):
        tracking.log_compile_run({}, {"dev_score": "high"}, program, tracking_uri=store)


def test_metrics_from_a_richer_report() -> None:
    from tests.evaluation.test_plots import mixed_report

    rep = mixed_report(15)
    metrics = tracking.eval_metrics(rep)
    for g in rep.groups:
        key = tracking.safe_key(f"strict_rate.{g.kind}.{g.model}.{g.prompt_variant}")
        assert metrics[key] == pytest.approx(g.strict_rate)
    assert len([k for k in metrics if k.startswith("strict_rate.")]) == 15
    assert sum(1 for k in metrics if k.startswith("completion_tokens_p95.")) == sum(
        1 for g in rep.groups if g.completion_tokens.n)
    assert all(tracking.safe_key(k) == k for k in metrics)
