"""Exit code 2 for every usage error on every command (issue 52, item 7).

The walk takes every command and subcommand from click's command tree and gives each a usage
error: an unknown option, nothing for a required parameter, a value its type cannot read, a
number out of its range, and a path that must exist but does not. Then the values each command
used to answer with exit 1 (an unknown name: a simulator profile, a split, a program; a missing
file an option names; a malformed tool source) or to accept with exit 0 (an empty URL, a seed or
a temperature out of range, ``--only`` naming nothing, an option the transport ignores). Every
case must exit 2 with one stderr line and no traceback.

The commands run in this process through ``main()``, as the console script calls it (a
subprocess per case would take minutes); nothing is served, recorded or run: where a wrong
answer would start work, the work is replaced by a stub that fails the case.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
import pytest

from helmdeck_dspy.cli import main
from helmdeck_dspy.cli.app import cli

MODEL = "local/qwen2.5-coder-1.5b-instruct"


def _leaves(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    out = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            out += _leaves(command, (*path, name))
        else:
            out.append(((*path, name), command))
    return out


COMMANDS = _leaves(cli)


def _options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and not p.is_flag and not p.count
            and p.name not in ("help",)]


def _invoke(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out, captured.err
    return code, [line for line in captured.err.splitlines() if line.strip()]


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    code, lines = _invoke(argv, capsys)
    assert code == 2, (argv, code, lines)
    assert len(lines) == 1, lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def test_the_walk_sees_every_command():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"plan", "run", "serve", "traces record", "bench study", "bench e2e", "budgets lookup"} <= names
    assert len(names) >= 24


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_an_unknown_option(path, command, capsys):
    _usage_error([*path, "--no-such-option"], capsys, "No such option", "--no-such-option")


REQUIRED = [(path, command) for path, command in COMMANDS if any(p.required for p in command.params)]


@pytest.mark.parametrize(("path", "command"), REQUIRED, ids=[" ".join(p) for p, _ in REQUIRED])
def test_a_missing_required_parameter(path, command, capsys):
    _usage_error(list(path), capsys, "Missing")


def _bad_value(option: click.Option) -> str | None:
    """A value ``option``'s type refuses, or None when its type takes any text."""
    kind = option.type
    if isinstance(kind, (click.IntRange, click.FloatRange)) or kind in (click.INT, click.FLOAT):
        return "not-a-number"
    if isinstance(kind, click.Choice) or kind.name == "strategy":
        return "no-such-choice"
    if isinstance(kind, click.Path) and kind.exists:
        return "/no/such/path/helmdeck"
    return None


TYPED = [(path, option.opts[0], bad) for path, command in COMMANDS for option in _options(command)
         if (bad := _bad_value(option)) is not None]


@pytest.mark.parametrize(("path", "option", "bad"), TYPED, ids=[f"{' '.join(p)} {o}" for p, o, _ in TYPED])
def test_a_value_the_option_type_cannot_read(path, option, bad, capsys):
    _usage_error([*path, option, bad], capsys, option)


def _out_of_range(option: click.Option) -> list[str]:
    kind = option.type
    if not isinstance(kind, (click.IntRange, click.FloatRange)):
        return []
    step = 1 if isinstance(kind, click.IntRange) else 0.5
    out = []
    if kind.min is not None:
        out.append(str(kind.min if getattr(kind, "min_open", False) else kind.min - step))
    if kind.max is not None:
        out.append(str(kind.max + step))
    return out


RANGED = [(path, option.opts[0], value) for path, command in COMMANDS for option in _options(command)
          for value in _out_of_range(option)]


@pytest.mark.parametrize(("path", "option", "value"), RANGED, ids=[f"{' '.join(p)} {o} {v}" for p, o, v in RANGED])
def test_a_number_out_of_range(path, option, value, capsys):
    _usage_error([*path, f"{option}={value}"], capsys, option)


# ------------------------------------------------------------------ values a command used to take


@pytest.fixture
def no_work(monkeypatch):
    """Every long-running entry point a wrong answer would reach fails the case instead."""
    from helmdeck_dspy.bench.study import flow
    from helmdeck_dspy.recording import trace_sets
    from helmdeck_dspy.serve import server

    def started(*_, **__):
        raise AssertionError("a command that should have been refused started its work")

    monkeypatch.setattr(server, "PlanService", started)  # serve's own checks (tokens, bind) still run
    monkeypatch.setattr(server, "listen_socket", started)
    monkeypatch.setattr(trace_sets, "record", started)
    monkeypatch.setattr(flow, "run_study", started)
    monkeypatch.delenv("HELMDECK_DSPY_TOKENS", raising=False)
    monkeypatch.delenv("HELMDECK_DSPY_TOKENS_FILE", raising=False)


def _paged_server() -> str:
    return f"mcp+stdio:{sys.executable} {Path(__file__).parents[1] / 'catalog' / 'importing' / 'paged_server.py'}"


PLAN = ["plan", "publish my notes", "-m", MODEL, "--no-history"]
RECORD = ["traces", "record", "-m", MODEL, "--lm", "sim:mid-tier", "--n", "1", "--variant", "full_steps",
          "--no-progress", "--out", "{tmp}/r.jsonl"]
RUN = ["run", "read my note", "-m", MODEL, "--dry-run"]
E2E = ["bench", "e2e", "-m", MODEL, "--lm", "sim:mid-tier", "--no-progress", "--out", "{tmp}/e2e"]
STUDY = ["bench", "study", "{tmp}/spec/study.toml"]

VALUES = [
    # plan: unknown names and missing files were exit 1; empty values were taken
    ([*PLAN, "--lm", "sim:no-such-profile"], "--lm"),
    ([*PLAN, "--lm", "bogus"], "--lm"),
    ([*PLAN, "--lm", "replay:/no/such/file.jsonl"], "--lm"),
    ([*PLAN, "--lm", "sim:mid-tier", "--program", "no-such-program"], "--program"),
    ([*PLAN, "--lm", "sim:mid-tier", "--program", "tier:Z"], "--program"),
    ([*PLAN, "--lm", "sim:mid-tier", "--program", ""], "--program"),
    ([*PLAN, "--lm", "sim:mid-tier", "--budgets", "/no/such/budgets.toml"], "--budgets"),
    ([*PLAN, "--lm", "sim:mid-tier", "--context-file", "/no/such/context.txt"], "--context-file"),
    ([*PLAN, "--lm", "sim:mid-tier", "--api-base", ""], "--api-base"),
    ([*PLAN, "--lm", "sim:mid-tier", "--api-base", "localhost:8080"], "--api-base"),
    ([*PLAN, "--lm", "sim:mid-tier", "--fallback", ""], "--fallback"),
    ([*PLAN, "--lm", "sim:mid-tier", "--fallback", "  "], "--fallback"),
    (["plan", "publish my notes", "-m", "m\x07odel", "--lm", "sim:mid-tier", "--no-history"], "--model"),
    # budgets lookup / show
    (["budgets", "lookup", "--budgets", "/no/such/budgets.toml", MODEL], "--budgets"),
    (["budgets", "lookup", "openai/gpt\x1b[31m"], "MODELS"),
    (["budgets", "lookup", "x" * 300], "MODELS"),
    (["budgets", "show", "--budgets", "/no/such/budgets.toml"], "--budgets"),
    # traces record
    ([*RECORD, "--tasks", "no-such-split"], "--tasks"),
    ([*RECORD, "--tasks", ""], "--tasks"),
    ([*RECORD, "--tasks", "/no/such/tasks.jsonl"], "--tasks"),
    ([*RECORD, "--lm", "sim:no-such-profile"], "--lm"),
    ([*RECORD, "--program", "no-such-program"], "--program"),
    ([*RECORD, "--seed", "-5"], "--seed"),
    ([*RECORD, "--seed", "99999999999999999999"], "--seed"),
    ([*RECORD, "--temperature", "50"], "--temperature"),
    ([*RECORD, "--max-tokens", "99999999"], "--max-tokens"),
    ([*RECORD, "--n", "1000000000"], "--n"),
    ([*RECORD, "--budgets", "/no/such/budgets.toml"], "--budgets"),
    ([*RECORD, "--api-base", ""], "--api-base"),
    # run: a source that names nothing runnable, unknown names
    ([*RUN, "--lm", "sim:mid-tier", "--tools", ""], "--tools"),
    ([*RUN, "--lm", "sim:mid-tier", "--tools", "mcp+ws:ws://127.0.0.1/mcp"], "unknown source kind"),
    ([*RUN, "--lm", "sim:mid-tier", "--tools", "/no/such/tools.json"], "no such file"),
    ([*RUN, "--lm", "sim:mid-tier", "--tools", "mcp+stdio:"], "expected a command"),
    ([*RUN, "--lm", "sim:mid-tier", "--tools", "mcp+http:ftp://host/x"], "http"),
    ([*RUN, "--lm", "sim:no-such-profile", "--tools", "{server}"], "--lm"),
    ([*RUN, "--lm", "bogus", "--tools", "{server}"], "--lm"),
    ([*RUN, "--lm", "sim:mid-tier", "--tools", "{server}", "--program", "no-such-program"], "--program"),
    ([*RUN, "--lm", "sim:mid-tier", "--tools", "{server}", "--api-base", ""], "--api-base"),
    ([*RUN, "--lm", "sim:mid-tier", "--tools", "{server}", "--header", "Authorization: Bearer x"], "--header"),
    ([*RUN, "--lm", "sim:mid-tier", "--tools", "mcp+http://127.0.0.1:9/mcp", "--env", "A=b"], "--env"),
    # catalog import: a malformed source is a usage error too
    (["catalog", "import", "mcp+ws:ws://127.0.0.1/mcp", "--out", "{tmp}/c.json"], "unknown source kind"),
    (["catalog", "import", "/no/such/tools.json", "--out", "{tmp}/c.json"], "no such file"),
    # serve: refused configurations, and options stdio has no use for
    (["serve", "--lm", "sim:no-such-profile"], "--lm"),
    (["serve", "--lm", "bogus"], "--lm"),
    (["serve", "--lm", "sim:mid-tier", "--transport", "http", "--host", "0.0.0.0", "--port", "0"],
     "without bearer tokens"),
    (["serve", "--lm", "sim:mid-tier", "--transport", "http", "--host", "", "--port", "0"], "--host"),
    (["serve", "--lm", "sim:mid-tier", "--api-base", ""], "--api-base"),
    (["serve", "--lm", "sim:mid-tier", "--budgets", "/no/such/budgets.toml"], "--budgets"),
    (["serve", "--lm", "sim:mid-tier", "--tokens-file", "{tmp}/tokens.toml"], "--tokens-file"),
    (["serve", "--lm", "sim:mid-tier", "--port", "9999"], "--port"),
    (["serve", "--lm", "sim:mid-tier", "--session-idle", "30"], "--session-idle"),
    (["serve", "--lm", "sim:mid-tier", "--openai", "--transport", "stdio"], "--transport"),
    # bench study / bench e2e
    ([*STUDY, "--only", ""], "--only"),
    ([*STUDY, "--only", ",,"], "--only"),
    ([*STUDY, "--compiled-root", "{tmp}/compiled"], "--compiled-root"),
    ([*E2E, "--only", "no-such-task"], "--only"),
    ([*E2E, "--lm", "sim:no-such-profile"], "--lm"),
    ([*E2E, "--api-base", ""], "--api-base"),
    (["bench", "e2e", "-m", MODEL, "--lm", "sim:mid-tier", "--no-progress", "--out", ""], "--out"),
]


def _case_id(argv: list[str]) -> str:
    """The command and the values that make the case (the shared prefix left out)."""
    for base in (PLAN, RECORD, RUN, E2E, STUDY):
        if argv[:len(base)] == base:
            argv = [*base[:2 if base[0] in ("traces", "bench") else 1], *argv[len(base):]]
            break
    return " ".join(a.replace("{tmp}/", "").replace("{server}", "SERVER") or "''" for a in argv).encode(
        "unicode_escape").decode()[:80]


@pytest.mark.parametrize(("argv", "needle"), VALUES, ids=[_case_id(a) for a, _ in VALUES])
def test_a_value_that_cannot_be_used(argv, needle, tmp_path, capsys, no_work, monkeypatch):
    from helmdeck_dspy.cli.e2e import e2e_spec_text

    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "study.toml").write_text(e2e_spec_text(MODEL, "sim:mid-tier", None, {"split": "dev"}))
    (tmp_path / "tokens.toml").write_text('[tokens]\nalice = "a-token-of-sixteen-chars"\n')
    monkeypatch.chdir(tmp_path)
    args = [a.replace("{tmp}", str(tmp_path)).replace("{server}", _paged_server()) for a in argv]
    _usage_error(args, capsys, needle)
    assert not (tmp_path / "r.jsonl").exists() and not (tmp_path / "c.json").exists()
    assert not (tmp_path / "e2e").exists() and not (tmp_path / "study.toml").exists()
