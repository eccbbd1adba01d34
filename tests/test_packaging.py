"""signatures/, compiled/ and the bundled data ship inside the wheel and work from it; experiment
output (experiments/) does not."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT

# What a checkout has that is not source: left out of the copy the wheel is built from.
NOT_SOURCE = {".git", ".venv", "build", "dist", ".mcp-servers", ".hypothesis", ".pytest_cache", "mlruns", ".helmdeck",
              "__pycache__", ".bench-deps"}
# Where each mapped folder of the checkout sits inside the wheel (pyproject's package-dir).
WHEEL_DIRS = {"helmdeck_dspy/bundled/": "eval/", "helmdeck_dspy/compiled/": "compiled/",
              "helmdeck_dspy/signatures/": "signatures/", "helmdeck_dspy/": "helmdeck_dspy/"}


def _skip_non_source(folder: str, names: list[str]) -> set[str]:
    return {n for n in names if n in NOT_SOURCE or n.endswith(".egg-info")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the working tree without build/ (setuptools packs whatever an
    earlier build left in build/lib, so a module moved since would still ship from there)."""
    src = tmp_path_factory.mktemp("src") / "helmdeck-dspy"
    shutil.copytree(PROJECT_ROOT, src, ignore=_skip_non_source)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
        check=True, capture_output=True, text=True,
    )
    (path,) = out.glob("helmdeck_dspy-*.whl")
    return path


def _source_of(name: str) -> Path:
    """The checkout file a wheel entry was packed from."""
    prefix = next(p for p in WHEEL_DIRS if name.startswith(p))
    return PROJECT_ROOT / (WHEEL_DIRS[prefix] + name[len(prefix):])


def test_wheel_holds_the_shipped_data_and_no_experiment_output(wheel):
    names = {n for n in zipfile.ZipFile(wheel).namelist() if ".dist-info/" not in n}
    shipped = sorted(p for p in (PROJECT_ROOT / "eval").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert len(shipped) > 20, "eval/ should hold the catalog, tasks, traces and profiles"
    missing = [str(p.relative_to(PROJECT_ROOT)) for p in shipped
               if f"helmdeck_dspy/bundled/{p.relative_to(PROJECT_ROOT / 'eval').as_posix()}" not in names]
    assert missing == [], f"shipped data left out of the wheel: {missing}"
    experiments = [p.relative_to(PROJECT_ROOT / "experiments").as_posix()
                   for p in (PROJECT_ROOT / "experiments").rglob("*") if p.is_file()]
    assert any(e.startswith("heldout/") for e in experiments), "the held-out comparison lives under experiments/"
    leaked = sorted(n for n in names if "experiments/" in n or any(n.endswith("/" + e) for e in experiments))
    assert leaked == [], f"experiment output in the wheel: {leaked}"
    stale = sorted(n for n in names if not _source_of(n).is_file())
    assert stale == [], f"wheel entries with no source file in the checkout: {stale}"


def test_wheel_contains_signatures_compiled_and_bundled_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "helmdeck_dspy/signatures/types.py",
        "helmdeck_dspy/compiled/budgets.toml",
        "helmdeck_dspy/bundled/catalog/routing-guide.json",
        "helmdeck_dspy/cli/app.py",
        "helmdeck_dspy/bench/study/compiled.py",
        "helmdeck_dspy/decoding/finish_reasons.toml",  # the finish-reason table is read at run time
        "helmdeck_dspy/py.typed",  # type checkers read the package's annotations
    ):
        assert required in names, required


def test_installed_wheel_resolves_budgets_and_catalog_from_itself(wheel, tmp_path):
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(site), str(wheel)],
        check=True, capture_output=True, text=True,
    )
    code = (
        "import helmdeck_dspy, helmdeck_dspy.io.resources as r\n"
        "from helmdeck_dspy.budgets import budget_for\n"
        "from helmdeck_dspy.catalog import load_catalog\n"
        "print(helmdeck_dspy.__file__)\n"
        "print(r.default_budgets_path())\n"
        "print(budget_for('openrouter/nvidia/nemotron-3-super-120b-a12b:free').tier)\n"
        "print(len(load_catalog().packs))\n"
        "from helmdeck_dspy.decoding.causes import normalize_finish_reason\n"
        "assert normalize_finish_reason('end_turn') == 'stop', 'finish-reason table missing from the wheel'\n"
        "import helmdeck_dspy.catalog.ranking, helmdeck_dspy.engines.sim, helmdeck_dspy.evaluation.runner\n"
        "import helmdeck_dspy.traces.io, helmdeck_dspy.bench.bfcl.load\n"
        "mods = [helmdeck_dspy.catalog.ranking, helmdeck_dspy.engines.sim, helmdeck_dspy.evaluation.runner,\n"
        "        helmdeck_dspy.traces.io, helmdeck_dspy.bench.bfcl.load]\n"
        "print(all(m.__file__.startswith(helmdeck_dspy.__path__[0]) for m in mods))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    lines = out.stdout.split("\n")
    assert lines[0].startswith(str(site)), lines[0]
    assert lines[1].startswith(str(site))
    assert lines[2:5] == ["C", "65", "True"], "subpackages must come from the wheel, not the editable checkout"
