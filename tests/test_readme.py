"""README.md and docs/ as a reader meets them.

- README.md stays a front door: at most 12 KiB.
- Every relative link in README.md and docs/**/*.md names a file that exists inside the
  repository (nothing points at the shared data folder beside the checkout, or anywhere else
  outside it).
- Every ```bash / ```sh / ```console and ```python block of README.md, and of each page of docs/,
  runs as shown, in order, in one fresh temporary directory per page with this checkout's
  .venv/bin first on PATH, as a user who follows the page top to bottom would run them. The examples use `sim:` LMs, so no model,
  key or network is needed. A block that needs something this machine may lack is marked with an
  HTML comment on the line before it:

      <!-- readme-check: skip (REASON) -->        never run here; REASON is the skip message
      <!-- readme-check: requires MOD [MOD...] --> run when the .venv can import every MOD

  Blocks that only run `make ...` (`make demo`, `make test`) are not re-run here: CI (.ci/run)
  runs both on a fresh clone, and running the suite from inside the suite would recurse.
- ```json blocks (client configurations) are valid JSON.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
VENV_BIN = REPO / ".venv" / "bin"
MAX_README_BYTES = 12 * 1024
BLOCK_TIMEOUT_S = 300

RUN_LANGS = {"bash", "sh", "console", "python"}
FENCE = re.compile(r"^(`{3,})\s*([\w+-]*)\s*$")
DIRECTIVE = re.compile(r"^<!--\s*readme-check:\s*(.*?)\s*-->$")
# [text](target) and ![alt](target), with an optional "title"
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"`[^`\n]*`")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # https:, mailto:, ...
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    directive: str | None
    doc: str = "README.md"

    def __str__(self) -> str:
        return f"{self.doc}:{self.line} ({self.lang})"


def fenced_blocks(text: str, doc: str = "README.md") -> list[Block]:
    """Every fenced block of ``text`` with the readme-check directive on the line before it."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2).lower(), i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        prev = start - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        d = DIRECTIVE.match(lines[prev].strip()) if prev >= 0 else None
        blocks.append(Block(start + 1, lang, "\n".join(body) + "\n", d.group(1) if d else None, doc))
        i += 1
    return blocks


def outside_fences(text: str) -> list[str]:
    """The lines of ``text`` that are not inside a fenced block."""
    out: list[str] = []
    in_fence: str | None = None
    for line in text.splitlines():
        m = FENCE.match(line)
        if in_fence is None and m:
            in_fence = m.group(1)
            continue
        if in_fence is not None:
            if line.startswith(in_fence):
                in_fence = None
            continue
        out.append(line)
    return out


def prose(text: str) -> str:
    """``text`` without fenced blocks and inline code, where link-like text is not a link."""
    return "\n".join(INLINE_CODE.sub("", line) for line in outside_fences(text))


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings of ``text`` (lower case, punctuation dropped, spaces
    to hyphens, repeats numbered)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for line in outside_fences(text):
        m = HEADING.match(line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def doc_files() -> list[Path]:
    return [README, *sorted((REPO / "docs").rglob("*.md"))]


README_TEXT = README.read_text(encoding="utf-8")
BLOCKS = fenced_blocks(README_TEXT)
RUNNABLE = [b for b in BLOCKS if b.lang in RUN_LANGS]
DOC_RUNNABLE = [b for p in doc_files()[1:] for b in fenced_blocks(p.read_text(encoding="utf-8"), str(p.relative_to(REPO)))
                if b.lang in RUN_LANGS]


# ----------------------------------------------------------------------------- size and links


def test_readme_is_at_most_12_kib() -> None:
    size = len(README.read_bytes())
    assert size <= MAX_README_BYTES, f"README.md is {size} bytes; the limit is {MAX_README_BYTES}"


@pytest.mark.parametrize("doc", doc_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve_inside_the_repository(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    bad: list[str] = []
    for target in LINK.findall(prose(text)):
        if EXTERNAL.match(target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (doc.parent / path).resolve() if path else doc
        if not resolved.is_relative_to(REPO):
            bad.append(f"{target}: points outside the repository")
        elif not resolved.exists():
            bad.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text(encoding="utf-8")):
            bad.append(f"{target}: no heading with that anchor")
    assert not bad, f"{doc.relative_to(REPO)}: " + "; ".join(bad)
    assert "../shared" not in text, f"{doc.relative_to(REPO)} names a path outside the repository (../shared)"


def test_the_readme_has_the_blocks_this_test_runs() -> None:
    langs = {b.lang for b in RUNNABLE}
    assert {"bash", "python"} <= langs and len(RUNNABLE) >= 8, [str(b) for b in RUNNABLE]
    assert any(_only_make(b) for b in RUNNABLE), "the two commands (make demo, make test) are missing"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang == "json"], ids=str)
def test_json_blocks_are_valid_json(block: Block) -> None:
    json.loads(block.code)


# ----------------------------------------------------------------------------- running the blocks


def _only_make(block: Block) -> bool:
    commands = [ln.strip() for ln in block.code.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return bool(commands) and all(c.startswith("make ") for c in commands)


def _missing_modules(modules: list[str]) -> list[str]:
    probe = "import importlib.util, sys; print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))"
    out = subprocess.run([str(VENV_BIN / "python"), "-c", probe, *modules], capture_output=True, text=True,
                         timeout=60, check=True)
    return out.stdout.split()


def _skip_reason(block: Block) -> str | None:
    if _only_make(block):
        return "make demo / make test: CI (.ci/run) runs both on a fresh clone; not re-run inside the suite"
    if not block.directive:
        return None
    if block.directive.startswith("skip"):
        reason = block.directive[len("skip"):].strip().strip("()").strip()
        return reason or "marked skip"
    if block.directive.startswith("requires"):
        missing = _missing_modules(block.directive.split()[1:])
        if missing:
            return f"needs {', '.join(missing)} in .venv (pip install -e '.[dev]')"
        return None
    raise AssertionError(f"{block}: unknown readme-check directive {block.directive!r}")


def _console_commands(code: str) -> str:
    """A console block's commands: its ``$ `` lines (continuations kept), without the output."""
    out: list[str] = []
    continuing = False
    for line in code.splitlines():
        if line.startswith("$ "):
            out.append(line[2:])
        elif continuing:
            out.append(line)
        else:
            continue
        continuing = line.rstrip().endswith("\\")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def workdirs() -> dict[str, Path]:
    """One folder per page, made on first use and kept for the page's later blocks."""
    return {}


def _user_env(workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(VENV_BIN.parent)
    env["HELMDECK_DSPY_HOME"] = str(workdir / ".home")  # plan history and its key
    env["HELMDECK_DSPY_CACHE"] = str(workdir / ".cache")
    env.pop("HELMDECK_LIVE_MODEL", None)
    return env


@pytest.mark.skipif(not (VENV_BIN / "python").exists(), reason="no .venv in this checkout (make creates it)")
@pytest.mark.parametrize("block", RUNNABLE + DOC_RUNNABLE, ids=str)
def test_block_runs_as_shown(block: Block, workdirs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> None:
    if block.doc not in workdirs:
        workdirs[block.doc] = tmp_path_factory.mktemp(Path(block.doc).stem)
    workdir = workdirs[block.doc]
    user_env = _user_env(workdir)
    reason = _skip_reason(block)
    if reason:
        pytest.skip(reason)
    if block.lang == "python":
        script = workdir / f"readme_block_{block.line}.py"
        script.write_text(block.code, encoding="utf-8")
        argv = [str(VENV_BIN / "python"), str(script)]
    else:
        code = _console_commands(block.code) if block.lang == "console" else block.code
        argv = ["bash", "-e", "-o", "pipefail", "-c", code]
    done = subprocess.run(argv, cwd=workdir, env=user_env, capture_output=True, text=True,
                          timeout=BLOCK_TIMEOUT_S, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (
        f"{block} exited {done.returncode}\n--- block\n{block.code}--- stdout\n{done.stdout[-4000:]}"
        f"--- stderr\n{done.stderr[-4000:]}"
    )


if __name__ == "__main__":  # pragma: no cover - a quick listing of what would run
    for b in RUNNABLE:
        print(b, b.directive or "")
    sys.exit(0)
