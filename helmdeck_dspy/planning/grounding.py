"""Grounding a step's path arguments in what the request names (issue 55, item 2).

:func:`ground_args` reads the path arguments of a step (:data:`PATH_KEYS`; a list under one of
them, each item) against a :class:`Grounding`, the path-like words of the request. It changes a
value only where exactly one candidate fits; a value with no candidate, or several, is sent as the
model wrote it, and the server's refusal (its text says why) goes back to the model as the step's
result.

- a documentation placeholder path (``path/to/repo``) is replaced by the one path the request
  names that ends the same way (``filled repo_path``; ``PlannerOptions.fill_placeholders``, on by
  default: chosen on the end-to-end study's dev half, docs/results/e2e.md);
- with ``complete_tails`` (``PlannerOptions.ground_paths``), a path argument the request does not
  name is completed to the one path it names that ends with it: ``todo.md`` → ``files/todo.md``
  (``grounded path``). Only path arguments are read, so a repository-relative file list is never
  rewritten.

Grounding in what earlier results showed as well (listings, the folders and repository a refusal
names: ``ground_results``) was measured on the end-to-end dev half and lost a no-tool task: a
refused ``git_create_branch`` on a request that needed no tool was sent again with the refusal's
repository and succeeded (experiments/e2e/results-dev; docs/results/e2e.md). It is not here.
"""

from __future__ import annotations

import re
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


@dataclass(frozen=True)
class Grounding:
    """What a step's path arguments are checked against (see the module docstring).

    Attributes:
        intent: The request.
        placeholders: Fill documentation placeholder paths.
        complete_tails: Complete a path the request does not name to the one it names that ends with it.
    """

    intent: str
    placeholders: bool = True
    complete_tails: bool = False

    def named(self) -> set[str]:
        """The path-like words of the request (trailing punctuation off)."""
        return {t.rstrip(".,;:!?'\"") for t in _PATH_TOKEN.findall(self.intent)}


def ground_args(args: dict[str, Any], grounding: Grounding) -> tuple[dict[str, Any], list[str]]:
    """``args`` with their path arguments grounded in the request (see the module docstring).
    Returns the arguments and a note per changed value (``filled repo_path``, ``grounded path``)."""
    tokens = grounding.named()
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
        m = _PLACEHOLDER.match(value) if grounding.placeholders else None
        if m is not None:
            tail = m["tail"].rstrip("/")
            found = one({t for t in tokens if t == tail or t.endswith("/" + tail)})
            if found is not None:
                notes.append(f"filled {path}")
            return value if found is None else found
        if grounding.complete_tails and key in PATH_KEYS and value not in tokens:
            tail = value.strip().removeprefix("./").rstrip("/")
            found = one({t for t in tokens if tail and t.endswith("/" + tail)})
            if found is not None:
                notes.append(f"grounded {path}")
                return found
        return value

    return fill(args, "", ""), notes


def fill_placeholders(args: dict[str, Any], intent: str) -> tuple[dict[str, Any], list[str]]:
    """``args`` with documentation placeholders filled from ``intent`` (:func:`ground_args`, placeholders only)."""
    return ground_args(args, Grounding(intent))
