"""The ``helmdeck-dspy`` click group, its console-script entry point and its exit codes.

Each command group lives in its own module and is registered here; those modules import
:mod:`helmdeck_dspy.cli.options`, never this one. Heavy libraries (dspy, litellm, mlflow, datasets)
load only inside the commands that need them, so ``--help`` and ``budgets lookup`` start fast.
Exit codes: 0 success, 1 error (bad data, a failed run), 2 usage; every error is one stderr line.
"""

from __future__ import annotations

import sys

import click

from helmdeck_dspy.cli.bench import bench
from helmdeck_dspy.cli.budgets import budgets
from helmdeck_dspy.cli.calibrate import calibrate_cmd
from helmdeck_dspy.cli.catalog import catalog
from helmdeck_dspy.cli.compile import compile_cmd
from helmdeck_dspy.cli.eval import eval_cmd
from helmdeck_dspy.cli.models import models
from helmdeck_dspy.cli.parse import parse_cmd
from helmdeck_dspy.cli.plan import plan_cmd
from helmdeck_dspy.cli.run import run_cmd
from helmdeck_dspy.cli.serve import serve_cmd
from helmdeck_dspy.cli.traces import traces
from helmdeck_dspy.errors import HelmdeckError
from helmdeck_dspy.io.offline import apply_offline_defaults


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="helmdeck-dspy")
def cli() -> None:
    """Tier-aware planning for MCP tool catalogs, compiled with DSPy.

    Budgets per model, tolerant decoding of completions, budget-fitted catalog selection,
    planning, replay evaluation of trace sets and calibration of the budget table.
    """


for _command in (budgets, parse_cmd, catalog, plan_cmd, traces, eval_cmd, calibrate_cmd, compile_cmd, bench,
                 models, serve_cmd, run_cmd):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI on ``argv`` (default: ``sys.argv[1:]``); return when the command succeeds.

    Args:
        argv: The arguments after the program name.

    Raises:
        SystemExit: 1 for bad data, a failed run or a file that cannot be read or written (one
            ``error: ...`` line on stderr naming the path), 2 for bad usage (one
            ``Error: ... (see '... --help')`` line) or an unusable value (one ``error: ...`` line);
            0 after ``--help`` or ``--version``.
    """
    apply_offline_defaults()
    try:
        cli.main(args=argv, prog_name="helmdeck-dspy", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.UsageError as exc:
        # One line, not click's usage block: the message and where to look for the right form.
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        click.echo(f"Error: {safe_line(exc.format_message())}{hint}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"Error: {safe_line(exc.format_message())}", err=True)
        sys.exit(exc.exit_code)
    except HelmdeckError as exc:
        click.echo(f"error: {safe_line(str(exc))}", err=True)
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(1)
    except OSError as exc:
        click.echo(f"error: {safe_line(os_error_line(exc))}", err=True)
        sys.exit(1)
    except UnicodeDecodeError as exc:
        click.echo(f"error: input is not UTF-8 text ({exc.reason} at byte {exc.start})", err=True)
        sys.exit(1)


def safe_line(text: str) -> str:
    """An error as one line that quotes no credential: every secret this process knows masked (an
    LM's key, a URL's password or token), every URL through
    :func:`~helmdeck_dspy.io.redaction.redact_url`, and line breaks (a choice list, a value that
    held one) folded into spaces. (The credential-shaped patterns of ``redact`` are for what
    servers answer, where they already apply: here they would mask prose like "bearer tokens".)"""
    from helmdeck_dspy.io.redaction import known_secrets, redact, redact_url

    return " ".join(redact_url(redact(text, known_secrets(), patterns=False) or "").split())


def os_error_line(exc: OSError) -> str:
    """One line for a failed file operation: the path(s) and the system's reason."""
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"{' -> '.join(paths)}: {reason}" if paths else reason
