"""Option definitions and output helpers shared by the command modules.

Each option several commands take is declared once here; a command passes only the help text
that says what the option means to it. Command modules import this module, never the app module.
Nothing here imports a heavy library at module level: ``--help`` loads every command module.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from helmdeck_dspy.cli.values import (  # noqa: F401 - re-exported: the commands import them from here
    check_source_options,
    endpoint_url,
    lm_spec_value,
    model_id,
    not_empty,
    pairs,
    program_choice,
    shown,
    task_split,
    tool_sources,
)
from helmdeck_dspy.domain import DEFAULT_RANK_SOURCE, DEFAULT_RANKER, MAX_TIMEOUT_S, TIERS, VARIANTS

F = TypeVar("F", bound=Callable[..., Any])

LM_HELP = "LiteLLM model string, replay:PATH or sim:PROFILE (default: --model)."
API_BASE_HELP = "API base URL for an OpenAI-compatible endpoint."
MAX_TOKENS_HELP = "Override the budget's output_tokens."
BOTH = "both"
"""The ``--variant`` choice meaning every prompt variant, for commands that take it."""


# ----------------------------------------------------------------------------- options


def lm_option(help: str = LM_HELP) -> Callable[[F], F]:
    """``--lm SPEC`` (into ``lm_spec``): a LiteLLM model string, ``replay:PATH``, ``sim:PROFILE`` or
    ``local:NAME``, checked when parsed (:func:`lm_spec_value`).

    Args:
        help: What the LM is for in this command.
    """
    return click.option("--lm", "lm_spec", default=None, callback=lm_spec_value, help=help)


def api_base_option(help: str = API_BASE_HELP) -> Callable[[F], F]:
    """``--api-base URL``: the base URL of an OpenAI-compatible endpoint (http or https, with a host).

    Args:
        help: The help text (which endpoints, which other option it goes with).
    """
    return click.option("--api-base", default=None, callback=endpoint_url, metavar="URL", help=help)


def max_tokens_option(help: str = MAX_TOKENS_HELP) -> Callable[[F], F]:
    """``--max-tokens N`` (N >= 1): overrides the budget's ``output_tokens``.

    Args:
        help: The help text.
    """
    return click.option("--max-tokens", type=click.IntRange(1), default=None, help=help)


class FiniteFloat(click.FloatRange):
    """A float option in a range that also refuses ``nan``, ``inf`` and ``-inf`` (a usage error, exit 2)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)  # a float, its range not checked yet
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return super().convert(number, param, ctx)


class StrategyChoice(click.ParamType):
    """An answer strategy's name, checked against the registry (``program.strategies``) when used."""

    name = "strategy"

    @staticmethod
    def names() -> list[str]:
        from helmdeck_dspy.program.strategies import STRATEGIES
        return sorted(STRATEGIES)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[" + "|".join(self.names()) + "]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if value not in self.names():
            self.fail(f"{value!r} is not one of {', '.join(map(repr, self.names()))}.", param, ctx)
        return str(value)


strategy_option = click.option(
    "--strategy", "strategy", type=StrategyChoice(), default=None,
    help="How the model answers: free JSON text, JSON text decoded under the selected catalog's schema, or the "
         "model-alone prompt with the planner's checks after it (default: the budget row's tool_list_strategy over a "
         "plain list of tools, else schema on llama.cpp servers and free elsewhere).")

timeout_option = click.option(
    "--timeout", "timeout_s", type=FiniteFloat(min=0, min_open=True, max=MAX_TIMEOUT_S), default=None,
    help="Seconds one attempt may take (default 120). A local model finishes an abandoned answer before "
         "it serves the next request, so give a slow one room rather than retries.")
"""``--timeout S`` (into ``timeout_s``): the per-attempt deadline of the retry policy."""

retries_option = click.option(
    "--retries", type=click.IntRange(0, 19), default=None,
    help="Retries per model after a rate limit, 5xx, reset or timeout (default 2).")
"""``--retries N``: retries per model (``max_attempts = N + 1``)."""


def json_option(help: str) -> Callable[[F], F]:
    """``--json`` (into ``as_json``): print machine-readable output instead of text.

    Args:
        help: The shape of the JSON this command prints.
    """
    return click.option("--json", "as_json", is_flag=True, help=help)


def variant_option(*, default: str | None = None, both: bool = False, help: str | None = None) -> Callable[[F], F]:
    """``--variant``: a prompt variant from :data:`helmdeck_dspy.domain.VARIANTS`.

    Args:
        default: The variant used when the option is absent (``None``: no default).
        both: Also accept ``both``, meaning every variant.
        help: The help text.
    """
    choices = [*VARIANTS, BOTH] if both else list(VARIANTS)
    return click.option("--variant", type=click.Choice(choices), default=default,
                        show_default=default is not None, help=help)


def tier_option() -> Callable[[F], F]:
    """``--tier``: a tier from :data:`helmdeck_dspy.domain.TIERS`, no default."""
    return click.option("--tier", type=click.Choice(list(TIERS)), default=None)


def resume_option(help: str) -> Callable[[F], F]:
    """``--resume/--no-resume`` (``None`` when neither is given: the library decides).

    Args:
        help: When this command resumes by default, and from what.
    """
    return click.option("--resume/--no-resume", default=None, help=help)


def mlflow_options(help: str) -> Callable[[F], F]:
    """``--mlflow`` (into ``use_mlflow``) and ``--tracking-uri URI``.

    Args:
        help: What ``--mlflow`` logs in this command.
    """
    mlflow = click.option("--mlflow", "use_mlflow", is_flag=True, help=help)
    tracking = click.option("--tracking-uri", default=None, help="MLflow tracking URI (with --mlflow).")

    def decorate(f: F) -> F:
        return mlflow(tracking(f))

    return decorate


def force_option(what: str = "the output") -> Callable[[F], F]:
    """``--force``: replace an existing output (a file, or a directory and everything in it).

    Args:
        what: The output this command writes, for the help text.
    """
    return click.option("--force", is_flag=True,
                        help=f"Replace {what} when it exists (without it an existing file or non-empty directory "
                             "is never replaced).")


budgets_option = click.option(
    "--budgets", "budgets_path", type=click.Path(dir_okay=False, exists=True), default=None,
    help="Budget table to read (default: the bundled compiled/budgets.toml).",
)

catalog_option = click.option("--catalog", "catalog_path", type=click.Path(dir_okay=False, exists=True), default=None)

class RegistryChoice(click.Choice):
    """A choice among the keys of a registry that is imported only when the choices are needed
    (parsing the option or its command's ``--help``), so the CLI's start-up stays light."""

    def __init__(self, load: Callable[[], Any]) -> None:
        self._load = load
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(self._load())


def _ranker_names() -> list[str]:
    from helmdeck_dspy.catalog.ranking import RANKERS

    return list(RANKERS)


ranker_option = click.option(
    "--ranker", type=RegistryChoice(_ranker_names), default=DEFAULT_RANKER, show_default=True,
    help="bm25, lexical (helmdeck's scorer) or embedding (needs the 'embed' extra).",
)

rank_source_option = click.option(
    "--rank-source", type=click.Choice(["compacted", "full"]), default=DEFAULT_RANK_SOURCE, show_default=True,
    help="Rank the full entries, or the compacted ones (helmdeck).",
)

on_error_option = click.option(
    "--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True,
    help="An invalid record stops the run (fail) or is reported as file:line and skipped.",
)


tasks_split_option = click.option(
    "--tasks", "split", default="dev", show_default=True, callback=task_split,
    help="Gold task split (train, dev, test, all) or a JSONL path.",
)

progress_option = click.option(
    "--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).",
)

seed_option = click.option("--seed", type=int, default=0, show_default=True)

temperature_option = click.option(
    "--temperature", type=FiniteFloat(0), default=None,
    help="Sampling temperature sent with every call of the model (default: the endpoint's).",
)

plan_sampling_options = (
    click.option("--temperature", "temperature", type=FiniteFloat(0, 2), default=None,
                 help="Sampling temperature of every plan call (default: the budget row's, 0)."),
    click.option("--seed", "seed", type=click.IntRange(0, 2**31 - 1), default=None,
                 help="Sampling seed of every plan call, sent where the endpoint takes one (default: 7)."),
)
"""``--temperature`` and ``--seed`` of the commands that plan (``plan``, ``serve``, ``bench bfcl``):
the planner sends both with every call (``planning.request.sampling_for``)."""


def plan_sampling(command: Any) -> Any:
    """Add :data:`plan_sampling_options` to a command."""
    for option in reversed(plan_sampling_options):
        command = option(command)
    return command


program_option = click.option(
    "--program", "program", default=None, metavar="auto|tier|tier:T|bare|FILE", callback=program_choice,
    help="The program to plan with: the model's own compiled program when one exists, else the tier's (auto, "
         "default); the tier program (tier; tier:C for tier C's); the instructions alone, no demos (bare); or a "
         "program file.",
)


header_option = click.option("--header", "headers", multiple=True, metavar="'K: V'",
                              help="An HTTP header for the mcp+http: sources (repeatable).")
env_option = click.option("--env", "env", multiple=True, metavar="K=V",
                          help="An environment variable for the mcp+stdio: servers (repeatable).")


# ----------------------------------------------------------------------------- output


def emit_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout (non-ASCII kept as is). A NaN or infinite number
    (a completion may hold one) is printed as ``null``, as JSON has no spelling for it."""
    click.echo(json.dumps(finite_json(obj), indent=2, ensure_ascii=False, allow_nan=False))


def finite_json(obj: Any) -> Any:
    """``obj`` with every NaN or infinite float (at any depth) replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj


def print_table(headers: list[str], rows: list[list[Any]]) -> None:
    """Print a plain left-aligned text table on stdout."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    click.echo("  ".join("-" * w for w in widths))
    for r in cells:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


def to_stderr(message: str) -> None:
    """Print one line on stderr: the ``notify`` callback handed to library functions."""
    click.echo(message, err=True)


def report_skipped(err: Exception) -> None:
    """Print a record skipped under ``--on-error skip`` as ``skipped: file:line: problem``."""
    click.echo(f"skipped: {err}", err=True)


def progress_bar(total: int, desc: str, *, unit: str = " plan", show: bool | None = None) -> Any:
    """A tqdm bar on stderr; ``bar.update`` is the ``progress`` callback of library functions.

    Args:
        total: Steps in the whole run.
        desc: The label in front of the bar.
        unit: The unit after the counts.
        show: Draw the bar (``None``: only when stderr is a terminal).
    """
    from tqdm import tqdm  # deferred: not needed by --help or commands without a bar

    visible = sys.stderr.isatty() if show is None else show
    return tqdm(total=total, unit=unit, desc=desc, disable=not visible, file=sys.stderr)


class CallBar:
    """A progress bar over a compile's LM calls: pass it as ``on_call``; its total is the call
    estimate, and it notes how many calls were live and how many came from the cache."""

    def __init__(self, show: bool | None = None) -> None:
        self.show = show
        self.bar: Any = None

    def __call__(self, meter: Any) -> None:
        if self.bar is None:
            self.bar = progress_bar(meter.estimate, "compile", unit=" call", show=self.show)
        self.bar.total = max(self.bar.total or 0, meter.calls)
        self.bar.set_postfix_str(meter.summary(), refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class TerminalBars:
    """The benchmark flows' progress (``bars``, see :mod:`helmdeck_dspy.bench.progress`) as tqdm
    bars on stderr.

    Args:
        show: Draw the bars (``None``: only when stderr is a terminal).
    """

    def __init__(self, show: bool | None = None) -> None:
        self.show = show

    @contextmanager
    def stage(self, label: str, total: int, unit: str = " plan") -> Iterator[Callable[[int], Any]]:
        with progress_bar(total, label, unit=unit, show=self.show) as bar:
            yield bar.update

    @contextmanager
    def calls(self) -> Iterator[CallBar]:
        bar = CallBar(self.show)
        try:
            yield bar
        finally:
            bar.close()


@contextmanager
def usage_errors() -> Iterator[None]:
    """Turn a library :class:`~helmdeck_dspy.errors.UsageValueError` raised while checking arguments
    into click's usage error: ``Invalid value for ARGUMENT: ...`` when it names its argument."""
    from helmdeck_dspy.errors import UsageValueError

    try:
        yield
    except UsageValueError as exc:
        if exc.argument:
            raise click.BadParameter(str(exc), param_hint=exc.argument) from None
        raise click.UsageError(str(exc)) from None
