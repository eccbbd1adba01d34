"""Worlds for tasks from public MCP end-to-end benchmarks (MCPVerse, MCPMark), built in the sandbox
from the public data beside the project (``../shared/data/public-mcp``; ``HELMDECK_PUBLIC_MCP``
names another folder), and the benchmarks' own check scripts run unchanged against them.

A task's ``world`` says which (:func:`build_world`):

- ``None``: the project's own fixture (:func:`~helmdeck_dspy.bench.e2e.sandbox.build_sandbox`);
- ``mcpverse``: MCPVerse's working folder: ``test_data/filesystem/``, ``test_data/txt_truncated/``
  (without the stray ``snapshots/preview.txt``, docs/results/public-mcp.md), ``test_data/git/``
  with ``git-api-demo`` made by the benchmark's ``generate_repo.sh``, run unchanged, and an empty
  ``outputs/<OUTPUT_SUB_FOLDER>/task_outputs/``; the filesystem server's root is that folder;
- ``mcpmark/<category>``: the category's test folder (:mod:`.mcpmark_states`), the filesystem
  server's root.

Every server starts as the project's end-to-end study starts it (:func:`world_servers`), only the
ones the task's benchmark mounts, in the world's folder; MCPVerse's git server is confined to the
generated repository.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Collection
from pathlib import Path

from helmdeck_dspy.bench.e2e.mcpmark_states import build_category, copy_tree
from helmdeck_dspy.bench.e2e.sandbox import ServerSetup, build_sandbox, server_sources
from helmdeck_dspy.errors import DataFileError

DATA_ENV = "HELMDECK_PUBLIC_MCP"
"""Names the public data folder, when it is not ``../shared/data/public-mcp`` beside the project."""
OUTPUT_SUB_FOLDER = "helmdeck"
"""MCPVerse's run folder name: the runner puts it for ``{OUTPUT_SUB_FOLDER}`` in every task text."""
MCPVERSE = Path("mcpverse/mcpverse")
"""MCPVerse's working folder, under the public data folder."""
DEMO_REPO = "test_data/git/git-api-demo"
"""The repository MCPVerse's git tasks ask about, relative to its working folder."""
STRAY = "test_data/txt_truncated/snapshots/preview.txt"
"""A file in MCPVerse's repository that its references assume absent: left out of the world."""
GIT_DATES = {"GIT_AUTHOR_DATE": "2025-08-01T10:00:00Z", "GIT_COMMITTER_DATE": "2025-08-01T10:00:00Z"}
SCRIPT_TIMEOUT_S = 300.0
"""How long one check script may take (MCPMark's harness gives verify.py 300 s)."""


def data_dir() -> Path:
    """The public data folder (it may not exist: :func:`require_data`)."""
    named = os.environ.get(DATA_ENV)
    if named:
        return Path(named)
    return Path(__file__).resolve().parents[3].parent / "shared" / "data" / "public-mcp"


def require_data() -> Path:
    """The public data folder.

    Raises:
        DataFileError: It is not there.
    """
    data = data_dir()
    if not (data / "tasks.jsonl").is_file():
        raise DataFileError(str(data), "the public MCP benchmarks' data is not there: the tasks of MCPVerse and "
                            f"MCPMark build their worlds and run their checks from it (set {DATA_ENV} to its folder)")
    return data


def build_world(world: str | None, root: Path) -> Path:
    """Lay ``world`` out at ``root`` (created; it must not exist) and return it: the folder the
    servers start in and the filesystem server serves.

    Raises:
        DataFileError: A public world without its data.
        ValueError: An unknown world.
    """
    if world is None:
        return build_sandbox(root)
    data = require_data()
    root.mkdir(parents=True, exist_ok=False)
    if world == "mcpverse":
        source = data / MCPVERSE / "test_data"
        for part in ("filesystem", "txt_truncated"):
            copy_tree(source / part, root / "test_data" / part)
        (root / STRAY).unlink()
        (root / STRAY).parent.rmdir()
        copy_tree(source / "git", root / "test_data" / "git")
        env = {**os.environ, **GIT_DATES, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        subprocess.run(["bash", "generate_repo.sh"], cwd=root / "test_data" / "git", env=env, check=True,
                       capture_output=True)
        (root / "outputs" / OUTPUT_SUB_FOLDER / "task_outputs").mkdir(parents=True)
        return root
    category = world.removeprefix("mcpmark/")
    if world.startswith("mcpmark/"):
        build_category(category, root, data)
        return root
    raise ValueError(f"unknown world {world!r}: expected none, mcpverse or mcpmark/<category>")


def world_servers(world: str | None, servers: Collection[str] | None, root: Path, npm_dir: Path,
                  sqlite_command: Path) -> ServerSetup:
    """The sources of the servers a task runs with (``servers``; None: all six), started as the
    end-to-end study starts them in the world at ``root``."""
    repo = root / DEMO_REPO if world == "mcpverse" else None
    setup = server_sources(root, npm_dir, sqlite_command, repo=repo)
    if servers is None:
        return setup
    keep = [s for s in setup.sources if s.split("=", 1)[0] in servers]
    missing = [m for m in setup.missing if m.split()[0].replace("_", "-").removeprefix("mcp-server-") in servers]
    return ServerSetup(keep, setup.env, missing)


def run_verify(script: str, root: Path) -> bool:
    """An MCPMark ``verify.py`` (relative to the public data folder) run unchanged as its harness
    runs it: ``python verify.py`` with ``FILESYSTEM_TEST_DIR`` the test folder; exit 0 passes."""
    path = require_data() / script
    try:
        done = subprocess.run([sys.executable, str(path)], cwd=path.parent, capture_output=True,
                              env={**os.environ, "FILESYSTEM_TEST_DIR": str(root)}, timeout=SCRIPT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


CALL_RUN_TEST = ("import importlib.util, sys\n"
                 "spec = importlib.util.spec_from_file_location('check', sys.argv[1])\n"
                 "module = importlib.util.module_from_spec(spec)\n"
                 "spec.loader.exec_module(module)\n"
                 "sys.exit(0 if module.run_test(sys.argv[2], sys.argv[3]) else 1)\n")
"""Loads an MCPVerse eval script and calls its ``run_test(pred, answer)``, as its runner does."""


def run_eval_script(script: str, answer: str, root: Path, pred: str = "") -> bool:
    """An MCPVerse eval script (relative to the public data folder) run unchanged: its
    ``run_test(pred, answer)`` in the working folder ``root``, a truthy result passes. ``answer``
    is the task's reference answer (a path); ``pred``, the final answer, none of the three scripts
    reads."""
    path = require_data() / script
    try:
        done = subprocess.run([sys.executable, "-c", CALL_RUN_TEST, str(path), pred, answer], cwd=root,
                              capture_output=True, timeout=SCRIPT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0
