"""signatures/, compiled/ and the bundled data ship inside the wheel and work from it."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(PROJECT_ROOT)],
        check=True, capture_output=True, text=True,
    )
    (path,) = out.glob("helmdeck_dspy-*.whl")
    return path


def test_wheel_contains_signatures_compiled_and_bundled_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "helmdeck_dspy/signatures/types.py",
        "helmdeck_dspy/compiled/budgets.toml",
        "helmdeck_dspy/bundled/catalog/routing-guide.json",
        "helmdeck_dspy/cli/app.py",
        "helmdeck_dspy/decoding/finish_reasons.toml",  # the finish-reason table is read at run time
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
