"""Write experiments/public-mcp/tasks.jsonl: tasks of two public MCP end-to-end benchmarks (MCPVerse,
MCPMark) that run offline here, each with its end-state check, from the public data beside the
project (../shared/data/public-mcp, read here and again at run time; nothing of it is copied).

Run from the repository root: ``.venv/bin/python experiments/public-mcp/make_tasks.py`` (``--table``
prints how each check maps to the original, for docs/results/public-mcp.md). The output is
deterministic; its SHA-256 is recorded in docs/results/public-mcp.md before any run.

What is kept (the rest is left out, docs/results/public-mcp.md says why):

- MCPVerse's filesystem and git tasks (servers exactly filesystem or git): their world is the
  benchmark's working folder (bench/e2e/public.py). The intent is the task text as published, with
  ``{OUTPUT_SUB_FOLDER}`` replaced by the run folder's name as MCPVerse's runner does. The three
  tasks MCPVerse checks by a script are checked by that script, run unchanged; the others, which
  MCPVerse gives to an LLM judge, by the fixed checks in ``VERSE_CHECKS`` below, written before any
  run: neither of the study's loops ends in a prose answer, so the reference answer (or the data
  it is read off) must come back in a tool result, and a task that writes a file is checked on the
  file too.
- MCPMark's filesystem tasks whose initial state is recovered from the repository's history or
  rebuilt from its trees and checks (verdict ``recovered`` or ``yes``): the intent is
  ``description.md`` with the note MCPMark's harness appends, the check its own ``verify.py``.

Each task's half (dev or test) is fixed here by :func:`halves`, before any run.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from helmdeck_dspy.bench.e2e.public import OUTPUT_SUB_FOLDER, require_data  # noqa: E402

OUT = Path(__file__).resolve().parent / "tasks.jsonl"
PLACEHOLDER = "{OUTPUT_SUB_FOLDER}"
MCPMARK_NOTE = "\n\nNote: Based on your understanding, solve the task all at once by yourself, don't ask for my opinions on anything."
"""What MCPMark's harness appends to every description.md."""
OUT_DIR = f"outputs/{OUTPUT_SUB_FOLDER}/task_outputs"


def result(text: str, tool: str | None = None) -> dict[str, Any]:
    return {"kind": "result", "text": text, **({"tool": tool} if tool else {})}


def match(pattern: str, tool: str | None = None) -> dict[str, Any]:
    return {"kind": "result_match", "text": pattern, **({"tool": tool} if tool else {})}


def size(path: str, n: int) -> dict[str, Any]:
    return {"kind": "file_size", "path": path, "size": n}


VERSE_CHECKS: dict[str, list[dict[str, Any]]] = {
    "Q87": [result("(2000,456)")],
    "Q89": [match(r"Total: 3 files|(?=.*\bave\.txt)(?=.*\be1\.txt)(?=.*\be2\.txt)")],
    "Q91": [result("tree_example/t1/t1-1/t1-1-1.txt")],
    "Q92": [match(r"size:\s*10\b|e1\.txt\s+10 B\b")],
    "Q93": [match(r"On branch main.*nothing to commit", "git_status")],
    "Q94": [match(r"(?=.*\bmain\b)(?=.*\bfeature\b)", "git_branch")],
    "Q95": [match(r"(?=.*## Subtitle)(?=.*Line 2 \(unstaged\))(?=.*Feature branch line)")],
    "Q131": [result("(2000,456)"), result("(1000,234)")],
    "Q132": [result("I am deepest.")],
    "Q133": [match(r"Add example\.txt.*\+Line 1")],
    "Q172": [size(f"{OUT_DIR}/report.txt", 9), match(r"size:\s*9\b", "get_file_info")],
    "Q173": [result("每股资本公积金")],
    "Q174": [match(r"CN-14\.txt\s+2\.85 KB|size:\s*2914\b")],
    "Q175": [result("以下文章来源于Nature Portfolio"), result("Nature Reviews Microb")],
    "Q176": [size(f"{OUT_DIR}/snapshots/preview.txt", 3357), match(r"size:\s*3357\b", "get_file_info")],
}
"""The fixed checks in place of MCPVerse's LLM judge (docs/results/public-mcp.md maps each)."""
VERSE_WRITES = {"Q88", "Q170", "Q171", "Q172", "Q176"}
"""The MCPVerse tasks that ask for a file to be written (kind ``act``; the rest read)."""
KEPT_VERDICTS = ("recovered", "yes")


def verse_task(row: dict[str, Any]) -> dict[str, Any]:
    qid, server = row["id"], row["servers"][0]
    if row["check"]["type"] == "eval_script":
        answer = row["reference_answer"].replace(PLACEHOLDER, OUTPUT_SUB_FOLDER)
        checks = [{"kind": "run_test", "path": row["check"]["path"], "text": answer}]
    else:
        checks = VERSE_CHECKS[qid]
    return {"id": f"mcpverse/{qid}", "type": f"mcpverse-{server}", "kind": "act" if qid in VERSE_WRITES else "read",
            "intent": row["task_text"].replace(PLACEHOLDER, OUTPUT_SUB_FOLDER), "checks": checks,
            "world": "mcpverse", "servers": [server]}


def mark_task(row: dict[str, Any]) -> dict[str, Any]:
    suite = row["id"].split("/")[0]
    return {"id": f"mcpmark/{row['id']}", "type": f"mcpmark-{suite}", "kind": "act",
            "intent": row["task_text"] + MCPMARK_NOTE, "checks": [{"kind": "verify_py", "path": row["check"]["path"]}],
            "world": f"mcpmark/{row['category']}", "servers": ["filesystem"]}


def kept(row: dict[str, Any]) -> bool:
    if row["source"] == "mcpverse":
        return row["servers"] in (["filesystem"], ["git"])
    return str(row["rebuild_from_repo"]).startswith(KEPT_VERDICTS)


def halves(tasks: list[dict[str, Any]]) -> None:
    """Fix each task's half (``half``) by the rule written before any run: within each type, the
    tasks in the order of the SHA-256 of their ids go dev, test, dev, test, ..."""
    for kind in sorted({t["type"] for t in tasks}):
        ranked = sorted((t for t in tasks if t["type"] == kind), key=lambda t: hashlib.sha256(t["id"].encode()).hexdigest())
        for i, t in enumerate(ranked):
            t["half"] = "dev" if i % 2 == 0 else "test"


def make_tasks(data: Path) -> list[dict[str, Any]]:
    """The project's tasks, from the public data folder ``data``."""
    rows = [json.loads(line) for line in (data / "tasks.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    tasks = [verse_task(r) if r["source"] == "mcpverse" else mark_task(r) for r in rows if kept(r)]
    halves(tasks)
    return tasks


def text(tasks: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tasks)


def table(tasks: list[dict[str, Any]], data: Path) -> str:
    """How each kept task's check maps to the original's (Markdown rows)."""
    rows = {json.loads(line)["id"]: json.loads(line) for line in (data / "tasks.jsonl").read_text(encoding="utf-8").splitlines()}
    lines = ["| task | split | original check | check here |", "|---|---|---|---|"]
    for t in tasks:
        source, _, oid = t["id"].partition("/")
        original = rows[oid]["check"]
        was = (f"`{Path(original['path']).name}` (script)" if original["type"] in ("eval_script", "verify_py")
               else f"LLM judge: {json.dumps(original['reference_answer'], ensure_ascii=False)[:60]}")
        here = "; ".join(_said(c) for c in t["checks"])
        lines.append(f"| {t['id']} | {t['half']} | {was} | {here} |")
    return "\n".join(lines) + "\n"


def _said(check: dict[str, Any]) -> str:
    kind = check["kind"]
    tool = f" of `{check['tool']}`" if check.get("tool") else ""
    if kind == "result":
        return f"a tool result{tool} holds `{check['text']}`"
    if kind == "result_match":
        return f"a tool result{tool} matches `{check['text'].replace('|', chr(92) + '|')}`"
    if kind == "file_size":
        return f"`{check['path']}` is {check['size']} bytes"
    if kind == "run_test":
        return f"the same script, unchanged, answer `{check['text']}`"
    return "the same `verify.py`, unchanged"


def main() -> None:
    data = require_data()
    tasks = make_tasks(data)
    if "--table" in sys.argv:
        sys.stdout.write(table(tasks, data))
        return
    OUT.write_text(text(tasks), encoding="utf-8")
    print(f"wrote {len(tasks)} tasks to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
