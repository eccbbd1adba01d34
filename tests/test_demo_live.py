"""``make demo-live`` (scripts/demo_live.sh) names the tier and prompt variant in its headings from
the budget lookup, not from text written into the script."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from helmdeck_dspy.budgets import budget_for
from tests.conftest import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "demo_live.sh"


def _lookup_lines() -> str:
    """The script's lines that set TIER and VARIANT (the `read` and its continuation)."""
    lines = SCRIPT.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("read -r TIER VARIANT"))
    end = start
    while lines[end].endswith("\\"):
        end += 1
    return "\n".join(lines[start:end + 1])


def test_the_live_plan_headings_name_what_the_budget_lookup_says():
    text = SCRIPT.read_text()
    model = re.search(r'^MODEL=(\S+)$', text, re.M).group(1)
    headings = re.findall(r'section "Live plan \((.*?)\)', text)
    assert headings == ["$VARIANT, Tier $TIER"]
    cli = Path(sys.executable).with_name("helmdeck-dspy")
    shell = f'CLI="{cli}"; PY="{sys.executable}"; MODEL="{model}"\n{_lookup_lines()}\necho "$VARIANT, Tier $TIER"'
    out = subprocess.run(["bash", "-c", shell], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True).stdout
    row = budget_for(model)
    assert out.strip() == f"{row.resolved_prompt_variant}, Tier {row.tier}"


def test_the_local_extra_is_built_the_way_the_docs_say():
    """llama-cpp-python is built with scripts/cmake_args.sh's flags before the extra is installed (the
    docs', CI's and llama-server's build), so the extra's install finds it satisfied and compiles nothing
    natively."""
    text = SCRIPT.read_text()
    docs = (PROJECT_ROOT / "docs" / "local-models.md").read_text()
    build = re.search(r'CMAKE_ARGS="(\$\(bash scripts/cmake_args.sh\))" \$PY -m pip install[^\n]*\\\n\s*"llama-cpp-python\[server\]==([\d.]+)"',
                      text)
    assert build is not None, "demo_live.sh does not build llama-cpp-python with scripts/cmake_args.sh's flags"
    assert f'CMAKE_ARGS="{build.group(1)}"' in docs
    pinned = re.search(r'"llama-cpp-python\[server\]==([\d.]+)"', (PROJECT_ROOT / "pyproject.toml").read_text())
    assert pinned is not None and pinned.group(1) == build.group(2)
    assert text.index(build.group(0)) < text.index("-e '.[dev,local]'")
