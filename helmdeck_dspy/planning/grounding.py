"""Grounding a step's path arguments in what the task can know (issue 55, item 2).

:func:`ground_args` reads the path arguments of a step (:data:`PATH_KEYS`; a list under one of
them, each item) against a :class:`Grounding`: the path-like words of the request, and with
``PlannerOptions.ground_results`` what earlier results of the same run showed (:func:`known_from`).
It changes a value only where exactly one candidate fits; a value with no candidate, or several, is
sent as the model wrote it, and the server's refusal (its text says why) goes back to the model as
the step's result.

- a documentation placeholder path (``path/to/repo``) is replaced by the one known path that ends
  the same way (``filled repo_path``; ``PlannerOptions.fill_placeholders``, on by default: chosen
  on the end-to-end study's dev half, docs/results/e2e.md);
- with ``complete_tails`` (``PlannerOptions.ground_paths``), a path the request does not name is
  completed to the one known path that ends with it: ``todo.md`` → ``files/todo.md`` (``grounded
  path``). Only path arguments are read, so a repository-relative file list is never rewritten;
- with earlier results known (``ground_results``): an absolute path outside every folder the
  filesystem server said it allows is read without its leading ``/`` before the completion
  (``/file_01.txt`` → ``file_01.txt`` when a listing of the root named it), and a ``repo_path``
  other than the one repository the git server said it allows becomes that repository.

What results show (:func:`known_from`): the entries of a directory listing joined to the folder
listed (``[FILE] b.txt`` under ``a`` → ``a/b.txt``), every path-like word of a result that holds a
``/`` (a search's matches; URLs left out), the path arguments of calls that succeeded, and the roots
a refusal names (``... not in /sandbox``, ``outside the allowed repository '/sandbox/repo'``). A
result is read as the model saw it (the loop's truncated output).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

PLACEHOLDERS_KEY = "fill_placeholders"
"""``run`` key of a trace record whose planner filled placeholder paths from the request
(:func:`ground_args`): scoring the record again does the same."""
GROUND_PATHS_KEY = "ground_paths"
"""``run`` key of a trace record whose planner completed path arguments from the request."""
PATH_KEYS = frozenset({"path", "paths", "source", "destination", "repo_path", "file_path", "directory"})
"""Argument names that hold a path on the file system (a list under one of them: each item)."""
_PLACEHOLDER = re.compile(r"^/?(?:your/)?path/to/(?P<tail>[^\s]+)$", re.I)
_PATH_TOKEN = re.compile(r"[\w./~-]+")
_URL = re.compile(r"\b\w+://\S+")
_LISTED = re.compile(r"^\[(?:FILE|DIR)\]\s+(?P<name>\S(?:.*?\S)?)(?:\s+[\d.]+\s*(?:B|KB|MB|GB))?\s*$", re.M)
_REPOSITORY = re.compile(r"allowed repository '(?P<root>/[^']+)'")
_ALLOWED = re.compile(r"(?:\bnot in|Allowed directories:)\s+(?P<root>/[^\s,;:]+)")


def _words(text: str) -> set[str]:
    return {t.rstrip(".,;:!?'\"") for t in _PATH_TOKEN.findall(text)}


@dataclass(frozen=True)
class Known:
    """What a run's earlier results showed (see the module docstring).

    Attributes:
        paths: Paths the results named.
        roots: Folders the filesystem server said it allows.
        repositories: Repositories the git server said it allows.
    """

    paths: frozenset[str] = frozenset()
    roots: frozenset[str] = frozenset()
    repositories: frozenset[str] = frozenset()


def known_from(steps: Sequence[Any]) -> Known:
    """What ``steps`` (executed steps: ``tool``, ``args``, ``output``, ``error``) showed of the world."""
    paths: set[str] = set()
    roots: set[str] = set()
    repositories: set[str] = set()
    for step in steps:
        text = step.output or ""
        args = step.args if isinstance(step.args, dict) else {}
        repositories |= {m["root"].rstrip("/") for m in _REPOSITORY.finditer(text)}
        roots |= {m["root"].rstrip("/") for m in _ALLOWED.finditer(text)}
        if step.error:
            continue
        base = args.get("path") if isinstance(args.get("path"), str) else ""
        for m in _LISTED.finditer(text):
            paths.add(posixpath.normpath(posixpath.join(base, m["name"])) if base else m["name"])
        paths |= {w for w in _words(_URL.sub(" ", text)) if "/" in w.strip("/")}
        for key in PATH_KEYS & args.keys():
            value = args[key]
            paths |= {v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str) and v}
    return Known(frozenset(p.removeprefix("./") for p in paths), frozenset(roots), frozenset(repositories))


@dataclass(frozen=True)
class Grounding:
    """What a step's path arguments are checked against (see the module docstring).

    Attributes:
        intent: The request.
        placeholders: Fill documentation placeholder paths.
        complete_tails: Complete a path the request does not name to the one it names that ends with it.
        known: What earlier results of the run showed (empty: the request alone).
    """

    intent: str
    placeholders: bool = True
    complete_tails: bool = False
    known: Known = Known()

    def named(self) -> set[str]:
        """The known paths: the path-like words of the request (trailing punctuation off) and those results showed."""
        return _words(self.intent) | self.known.paths

    def outside(self, value: str) -> bool:
        """Whether ``value`` is an absolute path outside every folder the filesystem server said it allows."""
        roots = self.known.roots
        return bool(roots) and value.startswith("/") and not any(value == r or value.startswith(r + "/") for r in roots)


def _in_repository(value: str, repository: str) -> bool:
    if value.startswith("/"):
        return value.rstrip("/") == repository or value.startswith(repository + "/")
    relative = posixpath.normpath(value).removeprefix("./")
    return relative != ".." and not relative.startswith("../") and (
        repository.endswith("/" + relative) or relative in (".", repository))


def ground_args(args: dict[str, Any], grounding: Grounding) -> tuple[dict[str, Any], list[str]]:
    """``args`` with their path arguments grounded (see the module docstring).
    Returns the arguments and a note per changed value (``filled repo_path``, ``grounded path``)."""
    tokens = grounding.named()
    repositories = grounding.known.repositories
    notes: list[str] = []

    def one(candidates: set[str]) -> str | None:
        return next(iter(candidates)) if len(candidates) == 1 else None

    def fill(value: Any, path: str, key: str) -> Any:
        if isinstance(value, dict):
            return {k: fill(v, f"{path}.{k}" if path else str(k), str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [fill(v, path, key) for v in value]
        if not isinstance(value, str):
            return value
        if grounding.complete_tails and key == "repo_path" and len(repositories) == 1:
            (repository,) = repositories
            if not _in_repository(value, repository):
                notes.append(f"grounded {path}")
                return repository
            return value
        m = _PLACEHOLDER.match(value) if grounding.placeholders else None
        if m is not None:
            tail = m["tail"].rstrip("/")
            found = one({t for t in tokens if t == tail or t.endswith("/" + tail)})
            if found is not None:
                notes.append(f"filled {path}")
            return value if found is None else found
        if not grounding.complete_tails or key not in PATH_KEYS or value in tokens:
            return value
        tail = value.strip().removeprefix("./").rstrip("/")
        if grounding.outside(tail):
            tail = tail.lstrip("/")
            if tail in tokens:
                notes.append(f"grounded {path}")
                return tail
        found = one({t for t in tokens if tail and t.endswith("/" + tail)})
        if found is not None:
            notes.append(f"grounded {path}")
            return found
        return value

    return fill(args, "", ""), notes


def fill_placeholders(args: dict[str, Any], intent: str) -> tuple[dict[str, Any], list[str]]:
    """``args`` with documentation placeholders filled from ``intent`` (:func:`ground_args`, placeholders only)."""
    return ground_args(args, Grounding(intent))
