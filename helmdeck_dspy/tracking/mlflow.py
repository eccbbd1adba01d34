"""MLflow logging for evaluation and compile runs, to a local SQLite store by default.

mlflow is imported inside the functions that log (it takes seconds to import), after the
environment that keeps it quiet and offline is set: no telemetry, no progress bars. Only the
tracking store and the artifact store are written; nothing is registered and no model is logged.

The default store is ``sqlite:///<dir>/mlflow.db`` with ``<dir>`` = ``$HELMDECK_DSPY_MLFLOW_DIR`` or
``./.helmdeck/mlflow``; artifacts go in ``<dir>/artifacts/<experiment>/`` (never ``./mlruns``).
Browse it with ``mlflow ui --backend-store-uri sqlite:///<dir>/mlflow.db``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helmdeck_dspy.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from mlflow.tracking import MlflowClient

    from helmdeck_dspy.evaluation.report import EvalReport, GroupReport

log = logging.getLogger(__name__)

MLFLOW_DIR_ENV = "HELMDECK_DSPY_MLFLOW_DIR"
EVAL_EXPERIMENT = "helmdeck-dspy-eval"
COMPILE_EXPERIMENT = "helmdeck-dspy-compile"

MAX_KEY_LENGTH = 250  # MLflow's limit on metric and param names
MAX_PARAM_LENGTH = 6000  # MLflow's limit on a param value
_BATCH = 900  # below MLflow's 1000 metrics / 100 params per log_batch call
_PARAM_BATCH = 90

_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. /]")

# Set before mlflow is imported; MLFLOW_DISABLE_TELEMETRY is forced, the rest are defaults.
QUIET_ENV = {
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
    "DO_NOT_TRACK": "true",
}
_QUIET_LOGGERS = ("mlflow.store.db.utils", "mlflow.store.sqlalchemy", "alembic", "alembic.runtime.migration")


# ------------------------------------------------------------------------ store location


def default_tracking_uri() -> str:
    """``sqlite:///<dir>/mlflow.db``, ``<dir>`` = ``$HELMDECK_DSPY_MLFLOW_DIR`` or ``./.helmdeck/mlflow`` (created)."""
    env = os.environ.get(MLFLOW_DIR_ENV)
    directory = Path(env).expanduser() if env else Path.cwd() / ".helmdeck" / "mlflow"
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{directory.as_posix()}/mlflow.db"


def artifact_root(tracking_uri: str) -> Path | None:
    """The ``artifacts`` directory beside a SQLite store's database file; ``None`` for other stores."""
    if not tracking_uri.startswith("sqlite:///"):
        return None
    db = tracking_uri[len("sqlite:///"):].split("?", 1)[0]
    if not db or db == ":memory:":
        return None
    path = Path(db)
    if not path.is_absolute():
        path = Path.cwd() / path
    return path.resolve().parent / "artifacts"


# ------------------------------------------------------------------------ names and values


def safe_key(key: str) -> str:
    """A valid MLflow metric/param name: alphanumerics, ``_ - . / space``; others become ``_``.

    Slash-separated segments that would make the name resolve to another path (empty, ``.``,
    ``..``) become ``_`` too, and the name is cut to MLflow's 250 characters.
    """
    key = _UNSAFE.sub("_", key)
    segments = ["_" if s in ("", ".", "..") else s for s in key.split("/")]
    key = "/".join(segments)[:MAX_KEY_LENGTH]
    while key.endswith("/"):
        key = key[:-1] + "_"
    return key or "_"


def _param_value(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= MAX_PARAM_LENGTH else text[: MAX_PARAM_LENGTH - 1] + "…"


class _Keys:
    """Sanitised keys, kept unique (two names that sanitise alike get ``_2``, ``_3``...)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` under the sanitised ``key``, made unique."""
        k = safe_key(key)
        if k in self.values:
            i = 2
            while f"{k[: MAX_KEY_LENGTH - 6]}_{i}" in self.values:
                i += 1
            k = f"{k[: MAX_KEY_LENGTH - 6]}_{i}"
        self.values[k] = value


def eval_params(report: EvalReport) -> dict[str, str]:
    """The run parameters of an evaluation: sizes and provenance."""
    params = {
        "n_records": report.n_records,
        "n_skipped": report.n_skipped,
        "n_groups": len(report.groups),
        "workers": report.workers,
        "tasks": report.tasks,
        "trace_set_sha256": report.trace_set_sha256,
        "catalog_fingerprint": report.catalog_fingerprint,
        "tool_version": report.tool_version,
        "schema_version": report.schema_version,
        "inputs": ", ".join(i.path for i in report.inputs),
        "kinds": ", ".join(f"{k} {n}" for k, n in report.kinds.items()),
    }
    return {k: _param_value(v) for k, v in params.items()}


def _group_metrics(keys: _Keys, g: GroupReport, key: Callable[[str], str], *, detail: bool = True) -> None:
    """One group's metrics; ``key`` names each metric (group and tier keys differ in shape)."""
    keys.put(key("strict_rate"), g.strict_rate)
    if detail:
        keys.put(key("strict_ci_low"), g.strict_ci[0])
        keys.put(key("strict_ci_high"), g.strict_ci[1])
    keys.put(key("tolerant_rate"), g.tolerant_rate)
    keys.put(key("length_rate"), g.length_rate)
    keys.put(key("reasoning_leak_rate"), g.reasoning_leak_rate)
    keys.put(key("n"), g.n)
    if g.completion_tokens.n and g.completion_tokens.p95 is not None:
        keys.put(key("completion_tokens_p95"), g.completion_tokens.p95)
    if g.gold is not None:
        keys.put(key("plan_score_mean"), g.gold.plan_score_mean)
        if detail:
            keys.put(key("exact_rate"), g.gold.exact_rate)


def eval_metrics(report: EvalReport) -> dict[str, float]:
    """Metrics of an evaluation; every name carries the kind, and kinds are never pooled:
    ``<metric>.<kind>.<model>.<variant>`` per group, ``tier_<T>.<kind>.<metric>`` per tier,
    ``all.<kind>.<metric>`` per kind and ``strict_diff.<kind>.<model>`` (single_pick minus full_steps)."""
    keys = _Keys()
    for kind in report.kinds:
        groups = [g for g in report.groups if g.kind == kind]
        n = sum(g.n for g in groups)
        if n:
            keys.put(f"all.{kind}.n", n)
            keys.put(f"all.{kind}.strict_rate", sum(g.strict for g in groups) / n)
            keys.put(f"all.{kind}.tolerant_rate", sum(g.tolerant for g in groups) / n)
    for g in report.groups:
        _group_metrics(keys, g, lambda m: f"{m}.{g.kind}.{g.model}.{g.prompt_variant}")  # called at once
        c = g.calls_per_plan
        if c is not None and c.mean is not None:
            keys.put(f"calls_per_plan_mean.{g.kind}.{g.model}.{g.prompt_variant}", c.mean)
            keys.put(f"calls_per_plan_repeated.{g.kind}.{g.model}.{g.prompt_variant}", c.repeated)
    for t in report.tiers:
        _group_metrics(keys, t, lambda m: f"tier_{t.tier}.{t.kind}.{m}", detail=False)
    for cmp in report.comparisons:
        keys.put(f"strict_diff.{cmp.kind}.{cmp.model}", cmp.strict_diff)
        keys.put(f"tolerant_diff.{cmp.kind}.{cmp.model}", cmp.tolerant_diff)
        if cmp.plan_score_diff is not None:
            keys.put(f"plan_score_diff.{cmp.kind}.{cmp.model}", cmp.plan_score_diff)
    return {k: float(v) for k, v in keys.values.items()}


def source_kind_tags(report: EvalReport) -> dict[str, str]:
    """Tags saying which source kinds the run holds and whether any of it is simulated
    (``helmdeck_dspy.simulated``: ``none``, ``some`` or ``all``)."""
    from helmdeck_dspy.traces.record import is_simulated

    kinds = list(report.kinds)
    sim = [k for k in kinds if is_simulated(k)]
    share = "none" if not sim else "all" if len(sim) == len(kinds) else "some"
    return {"helmdeck_dspy.source_kinds": _param_value(", ".join(kinds)), "helmdeck_dspy.simulated": share}


# ------------------------------------------------------------------------ mlflow plumbing


def _import_mlflow() -> Any:
    """Import mlflow with telemetry off and progress bars quiet."""
    os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    import mlflow

    with contextlib.suppress(Exception):  # mlflow was imported earlier with telemetry on: drop its client
        from mlflow.telemetry import set_telemetry_client

        set_telemetry_client()
    return mlflow


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Hide the INFO lines and deprecation warnings mlflow prints while it creates or migrates a
    SQLite store and logs to it."""
    saved = []
    for name in _QUIET_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level))
        if logger.getEffectiveLevel() < logging.WARNING:
            logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        for logger, level in saved:
            logger.setLevel(level)


def _client(tracking_uri: str) -> MlflowClient:
    _import_mlflow()
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=tracking_uri)


def _experiment_id(client: MlflowClient, name: str, tracking_uri: str) -> str:
    """The experiment's id, creating it (with its artifacts beside a SQLite store) or restoring it."""
    from mlflow.exceptions import MlflowException

    exp = client.get_experiment_by_name(name)
    if exp is None:
        root = artifact_root(tracking_uri)
        location = (root / safe_key(name).replace("/", "_").replace(" ", "_")).as_uri() if root else None
        try:
            return client.create_experiment(name, artifact_location=location)
        except MlflowException:  # created concurrently
            exp = client.get_experiment_by_name(name)
            if exp is None:
                raise
    if exp.lifecycle_stage == "deleted":
        client.restore_experiment(exp.experiment_id)
    return exp.experiment_id


def _log_values(client: MlflowClient, run_id: str, params: Mapping[str, str], metrics: Mapping[str, float]) -> None:
    from mlflow.entities import Metric, Param

    stamp = int(time.time() * 1000)
    plist = [Param(k, v) for k, v in params.items()]
    mlist = [Metric(k, v, stamp, 0) for k, v in metrics.items()]
    for i in range(0, len(plist), _PARAM_BATCH):
        client.log_batch(run_id, params=plist[i: i + _PARAM_BATCH])
    for i in range(0, len(mlist), _BATCH):
        client.log_batch(run_id, metrics=mlist[i: i + _BATCH])


def _tool_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("helmdeck-dspy")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


@contextlib.contextmanager
def _run(client: MlflowClient, experiment_id: str, run_name: str | None, tags: dict[str, str]) -> Iterator[str]:
    """A run that ends FINISHED, or FAILED if logging raised."""
    run = client.create_run(experiment_id, run_name=run_name, tags=tags)
    run_id = run.info.run_id
    try:
        yield run_id
    except BaseException:
        with contextlib.suppress(Exception):
            client.set_terminated(run_id, status="FAILED")
        raise
    client.set_terminated(run_id, status="FINISHED")


# ------------------------------------------------------------------------ public API


def log_eval_run(
    report: EvalReport,
    out_dir: Path | None,
    plot_files: list[str],
    *,
    tracking_uri: str | None = None,
    experiment: str = EVAL_EXPERIMENT,
    run_name: str | None = None,
) -> str:
    """Log an evaluation (params, per-group and per-tier metrics, report and plots) and return the run id.

    Artifacts: ``report.json`` (``out_dir``'s copy, else written from ``report``), ``report.md``
    when ``out_dir`` holds one, and ``plot_files`` (names relative to ``out_dir``, or paths when
    ``out_dir`` is ``None``) at the same relative places, so the Markdown's image links resolve.
    """
    uri = tracking_uri or default_tracking_uri()
    params = eval_params(report)
    metrics = eval_metrics(report)
    out = Path(out_dir) if out_dir is not None else None
    with _quiet():
        client = _client(uri)
        exp_id = _experiment_id(client, experiment, uri)
        tags = {"helmdeck_dspy.kind": "eval", "helmdeck_dspy.tool_version": report.tool_version,
                **source_kind_tags(report)}
        with _run(client, exp_id, run_name, tags) as run_id, tempfile.TemporaryDirectory(prefix="helmdeck-eval-") as tmp:
            _log_values(client, run_id, params, metrics)
            report_json = out / "report.json" if out is not None else None
            if report_json is None or not report_json.is_file():
                report_json = Path(tmp) / "report.json"
                report_json.write_text(report.model_dump_json(indent=2), encoding="utf-8")
            client.log_artifact(run_id, str(report_json))
            if out is not None and (out / "report.md").is_file():
                client.log_artifact(run_id, str(out / "report.md"))
            for name in plot_files:
                path = out / name if out is not None else Path(name)
                if not path.is_file():
                    log.warning("plot %s is missing; not logged", path)
                    continue
                rel = Path(name).parent if out is not None and not Path(name).is_absolute() else Path()
                client.log_artifact(run_id, str(path), artifact_path=rel.as_posix() if rel.parts else None)
    return run_id


def log_compile_run(
    params: Mapping[str, Any],
    metrics: Mapping[str, Any],
    program_path: Path,
    *,
    tracking_uri: str | None = None,
    experiment: str = COMPILE_EXPERIMENT,
    run_name: str | None = None,
) -> str:
    """Log a compile run: ``params`` and ``metrics`` as given (names made valid, ``None`` metrics
    dropped) and the compiled program (a JSON file, or a directory) as an artifact. Returns the run id.

    Raises:
        FileNotFoundError: ``program_path`` does not exist.
        InputError: a metric is not a finite-or-NaN number.
    """
    program = Path(program_path)
    if not program.exists():
        raise FileNotFoundError(f"{program}: no compiled program to log")
    pkeys = _Keys()
    for k, v in params.items():
        pkeys.put(str(k), _param_value(v))
    mkeys = _Keys()
    for k, v in metrics.items():
        if v is None:
            continue
        try:
            value = float(v)
        except (TypeError, ValueError):
            raise InputError(f"metric {k!r}: expected a number, got {v!r}") from None
        if math.isinf(value):
            raise InputError(f"metric {k!r}: infinite")
        mkeys.put(str(k), value)
    uri = tracking_uri or default_tracking_uri()
    with _quiet():
        client = _client(uri)
        exp_id = _experiment_id(client, experiment, uri)
        tags = {"helmdeck_dspy.kind": "compile", "helmdeck_dspy.tool_version": _tool_version()}
        with _run(client, exp_id, run_name, tags) as run_id:
            _log_values(client, run_id, pkeys.values, mkeys.values)
            if program.is_dir():
                client.log_artifacts(run_id, str(program), artifact_path=program.name)
            else:
                client.log_artifact(run_id, str(program))
    return run_id
