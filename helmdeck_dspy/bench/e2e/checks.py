"""What the tools did: the end-to-end tasks, their checks, and :func:`run_checks`.

A task passes when every check holds after the run. A check looks at the world (a file's text, a
branch, the memory graph, a query over the database), at the run's tool results (read-only tasks:
the asked-for data came back from a tool), or at nothing having changed (``unchanged``: the
sandbox's digest before and after the run are equal). A task from a public benchmark
(:mod:`~helmdeck_dspy.bench.e2e.public`) runs in that benchmark's world and may be checked by the
benchmark's own script, run unchanged (``verify_py``, ``run_test``).
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from helmdeck_dspy.bench.e2e.public import run_eval_script, run_verify
from helmdeck_dspy.bench.e2e.sandbox import git, read_memory
from helmdeck_dspy.errors import TaskFileError
from helmdeck_dspy.io.jsonl import iter_jsonl

CheckKind = Literal["file", "no_file", "dir", "branch", "current_branch", "head_message", "staged", "entity",
                    "relation", "sql", "result", "unchanged", "result_match", "file_size", "verify_py", "run_test"]
TaskKind = Literal["act", "read", "refrain"]
_NEEDS: dict[str, tuple[str, ...]] = {
    "file": ("path", "text"), "no_file": ("path",), "dir": ("path",), "branch": ("name",),
    "current_branch": ("name",), "head_message": ("text",), "staged": ("path",), "entity": ("name",),
    "relation": ("name", "to", "text"), "sql": ("query", "rows"), "result": ("text",), "unchanged": (),
    "result_match": ("text",), "file_size": ("path", "size"), "verify_py": ("path",), "run_test": ("path", "text"),
}


class Check(BaseModel):
    """One check. ``text`` matches case-insensitively, as a substring.

    - ``file``: ``path`` (in the sandbox) holds ``text``; ``no_file``: ``path`` is gone; ``dir``:
      ``path`` is a folder;
    - ``branch``: the repository has branch ``name``; ``current_branch``: it is checked out;
      ``head_message``: the last commit's message holds ``text``; ``staged``: ``path`` is staged;
    - ``entity``: the graph has ``name`` (of type ``type`` and with an observation holding
      ``text``, when given); ``relation``: ``name`` → ``to`` with a relation type holding ``text``
      (separators and case ignored);
    - ``sql``: ``query`` returns ``rows``;
    - ``result``: a tool result of the run (of ``tool``, when given) holds ``text``;
      ``result_match``: one matches the regular expression ``text`` (case ignored, ``.`` matching
      newlines too);
    - ``unchanged``: nothing a tool could change has changed;
    - ``file_size``: ``path`` is a file of ``size`` bytes;
    - ``verify_py``: MCPMark's check script ``path`` (relative to the public data folder) passes on
      the world; ``run_test``: MCPVerse's eval script ``path`` passes with ``text`` as its answer.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: CheckKind
    path: str | None = None
    text: str | None = None
    name: str | None = None
    to: str | None = None
    type: str | None = None
    tool: str | None = None
    query: str | None = None
    rows: list[list[Any]] | None = None
    size: int | None = None

    @model_validator(mode="after")
    def _fields(self) -> Check:
        missing = [f for f in _NEEDS[self.kind] if getattr(self, f) is None]
        if missing:
            raise ValueError(f"a {self.kind} check needs {', '.join(missing)}")
        return self


class E2ETask(BaseModel):
    """One end-to-end task: the request, what kind of task it is, and its checks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    type: str = Field(description="The task type the table breaks down by (git, filesystem, ..., no-tool).")
    kind: TaskKind = Field(description="act (it must change the world), read (a tool must return the data) or "
                                       "refrain (nothing may change).")
    intent: str = Field(description="The request; {site} stands for the loopback site's base URL.")
    checks: list[Check] = Field(min_length=1)
    world: str | None = Field(default=None, description="Where the task runs (None: the project's sandbox; "
                              "mcpverse or mcpmark/<category>: a public benchmark's, bench/e2e/public.py).")
    servers: tuple[str, ...] | None = Field(default=None, description="The servers it runs with (None: all six).")
    half: Literal["dev", "test"] | None = Field(default=None, description="Its half, when its task file fixes "
                                                "one (None: task_split's, by its id).")

    @property
    def category(self) -> str:
        """The task type: a study's category."""
        return self.type

    @property
    def split(self) -> str:
        """``dev`` or ``test``: the half its task file fixes, else :func:`task_split`'s."""
        return self.half or task_split(self.id)

    def intent_for(self, site: str) -> str:
        return self.intent.replace("{site}", site)


def task_split(task_id: str) -> str:
    """``dev`` or ``test``: a fixed half of the tasks by a hash of the id (levers are chosen on dev)."""
    return "dev" if hashlib.sha256(task_id.encode()).digest()[0] % 2 == 0 else "test"


def load_e2e_tasks(path: Path) -> tuple[list[E2ETask], str]:
    """The tasks of a JSONL file and the file's SHA-256.

    Raises:
        TaskFileError: Unreadable, not JSONL, a task that does not validate, or two tasks with one id.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TaskFileError(str(path), exc.strerror or str(exc)) from None
    tasks: list[E2ETask] = []
    for lineno, value in iter_jsonl(path, error_type=TaskFileError):
        try:
            tasks.append(E2ETask.model_validate(value))
        except ValueError as exc:
            raise TaskFileError(str(path), " ".join(str(exc).split())[:300], lineno) from None
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        raise TaskFileError(str(path), "two tasks share an id")
    return tasks, hashlib.sha256(data).hexdigest()


def _has(haystack: str, needle: str | None) -> bool:
    return needle is None or needle.lower() in haystack.lower()


def _words(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def check_one(check: Check, root: Path, results: list[tuple[str, str]], digest_before: str, digest_after: str) -> bool:
    """Whether ``check`` holds in the sandbox at ``root`` after a run whose tool results were
    ``results`` (``(tool, text)`` pairs of the calls that did not fail)."""
    kind = check.kind
    if kind in ("file", "no_file", "dir"):
        path = root / str(check.path)
        if kind == "no_file":
            return not path.exists()
        if kind == "dir":
            return path.is_dir()
        return path.is_file() and _has(path.read_text(encoding="utf-8", errors="replace"), check.text)
    if kind in ("branch", "current_branch", "head_message", "staged"):
        repo = root / "repo"
        if kind == "branch":
            return check.name in git(repo, "branch", "--format=%(refname:short)").split()
        if kind == "current_branch":
            return git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == check.name
        if kind == "head_message":
            return _has(git(repo, "log", "-1", "--format=%B"), check.text)
        return str(check.path) in git(repo, "diff", "--cached", "--name-only").split()
    if kind in ("entity", "relation"):
        graph = read_memory(root)
        if kind == "entity":
            return any(e.get("type") == "entity" and str(e.get("name", "")).lower() == str(check.name).lower()
                       and (check.type is None or str(e.get("entityType", "")).lower() == check.type.lower())
                       and (check.text is None or any(_has(str(o), check.text) for o in e.get("observations", [])))
                       for e in graph)
        return any(r.get("type") == "relation" and str(r.get("from", "")).lower() == str(check.name).lower()
                   and str(r.get("to", "")).lower() == str(check.to).lower()
                   and _words(str(check.text)) in _words(str(r.get("relationType", ""))) for r in graph)
    if kind == "sql":
        with sqlite3.connect(root / "data.db") as db:
            try:
                rows = [list(r) for r in db.execute(str(check.query)).fetchall()]
            except sqlite3.Error:
                rows = None
        db.close()
        return rows == check.rows
    if kind == "result":
        return any((check.tool is None or tool == check.tool) and _has(text, check.text) for tool, text in results)
    if kind == "result_match":
        pattern = re.compile(str(check.text), re.I | re.S)
        return any((check.tool is None or tool == check.tool) and pattern.search(text) for tool, text in results)
    if kind == "file_size":
        path = root / str(check.path)
        return path.is_file() and path.stat().st_size == check.size
    if kind == "verify_py":
        return run_verify(str(check.path), root)
    if kind == "run_test":
        return run_eval_script(str(check.path), str(check.text), root)
    return digest_before == digest_after  # unchanged


def run_checks(task: E2ETask, root: Path, results: list[tuple[str, str]], digest_before: str,
               digest_after: str) -> list[bool]:
    """Each of ``task``'s checks, held or not."""
    return [check_one(c, root, results, digest_before, digest_after) for c in task.checks]
