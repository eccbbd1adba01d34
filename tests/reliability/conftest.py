"""Helpers for the reliability suite: the real CLI in a subprocess with a fresh home directory,
snapshots of the files a case must leave intact, and paths no process can write (not even root).

Every case asserts what a user would see: the exit code, that stderr holds no traceback and at
most one error line, and that every file that was there before is there afterwards, unchanged.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def cli_command() -> list[str]:
    """The console script beside this interpreter, else the entry point through ``-c``."""
    script = Path(sys.executable).with_name("helmdeck-dspy")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from helmdeck_dspy.cli import main; main()"]


@dataclass
class Run:
    code: int
    out: str
    err: str

    def error_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """A subprocess environment: user data under ``home``, the suite's DSPy cache, nothing else of the caller's."""
    keep = {k: os.environ[k] for k in ("PATH", "LANG", "HELMDECK_DSPY_CACHE", "DSPY_CACHEDIR", "XDG_CACHE_HOME")
            if k in os.environ}
    return {**keep, "HOME": str(home.parent), "HELMDECK_DSPY_HOME": str(home), "HF_HUB_OFFLINE": "1",
            "NO_COLOR": "1", **extra}


@dataclass
class Cli:
    """Runs ``helmdeck-dspy ARGS`` in ``cwd`` with a fresh home."""

    cwd: Path
    home: Path

    def __call__(self, *args: str, env: dict[str, str] | None = None, timeout: float = 180,
                 stdin: bytes | None = None) -> Run:
        proc = subprocess.run([*cli_command(), *args], cwd=self.cwd, env={**clean_env(self.home), **(env or {})},
                              input=stdin, capture_output=True, timeout=timeout)
        return Run(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))

    def spawn(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        """The CLI as a child process that Ctrl-C reaches: SIGINT back to its default even when this
        process inherited it ignored (a job started in the background by a shell, where an
        interrupt test would otherwise wait for the command to finish)."""
        return subprocess.Popen([*cli_command(), *args], cwd=self.cwd, env={**clean_env(self.home), **(env or {})},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_default_sigint)


def _default_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    work = tmp_path / "work"
    work.mkdir()
    return Cli(cwd=work, home=tmp_path / "home")


def assert_one_line(run: Run, code: int, *needles: str) -> str:
    """The run exited ``code`` with exactly one stderr line, no traceback, holding every needle."""
    assert "Traceback" not in run.err and "Traceback" not in run.out, run.err
    lines = run.error_lines()
    assert run.code == code, (run.code, run.err, run.out[-500:])
    assert len(lines) == 1, lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file and directory under ``root``: file bytes, None for a directory."""
    out: dict[str, bytes | None] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = None if p.is_dir() else p.read_bytes()
    return out


def unwritable_targets(tmp_path: Path) -> dict[str, Path]:
    """Output parents no process can write, root included: a virtual file system and a regular file."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    return {"proc": Path("/proc/helmdeck-no-such-dir"), "under-a-file": blocker}


@contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """``directory`` made unwritable while the block runs: mode 0555 for an ordinary user; for
    root, whom modes do not stop, the immutable attribute (``chattr +i``), else the case is skipped."""
    if not IS_ROOT:
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(0o755)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(directory)], capture_output=True).returncode != 0:
        pytest.skip("running as root, and this file system cannot make a directory immutable: nothing stops root")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(directory)], check=True)
