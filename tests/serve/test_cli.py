"""``helmdeck-dspy serve`` on the command line: a light ``--help`` and clear start-up errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helmdeck_dspy.cli import main
from tests.serve.conftest import NO_SDK

pytest.importorskip("mcp", reason=NO_SDK)

HEAVY = ("mcp", "uvicorn", "starlette", "dspy", "litellm")


@pytest.mark.parametrize("args", [["--help"], ["serve", "--help"]])
def test_help_imports_neither_the_sdk_nor_the_planner(args):
    code = (f"import sys\nfrom helmdeck_dspy.cli import main\ntry:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
            f"print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert "HEAVY []" in out.stdout
    assert "serve" in out.stdout


def test_a_missing_replay_file_is_one_error_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["serve", "--lm", f"replay:{tmp_path / 'nope.jsonl'}", "--no-history"])
    assert info.value.code == 2  # a usage error (issue 52, item 7)
    assert capsys.readouterr().err.strip().splitlines() == [
        f"Error: Invalid value for '--lm': replay file not found: {tmp_path / 'nope.jsonl'} "
        "(see 'helmdeck-dspy serve --help')"]


def test_a_malformed_token_file_is_refused_before_binding(tmp_path, capsys):
    bad = tmp_path / "tokens.toml"
    bad.write_text('[tokens]\nalice = "short"\n')
    with pytest.raises(SystemExit):
        main(["serve", "--transport", "http", "--port", "0", "--tokens-file", str(bad)])
    assert "at least 16 characters" in capsys.readouterr().err


def test_a_port_in_use_is_one_error_line(capsys):
    from helmdeck_dspy.serve.server import listen_socket

    taken = listen_socket("127.0.0.1", 0)
    try:
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as info:
            main(["serve", "--transport", "http", "--port", str(port), "--no-history"])
    finally:
        taken.close()
    assert info.value.code == 1
    assert capsys.readouterr().err.startswith(f"error: cannot listen on 127.0.0.1:{port}: ")
