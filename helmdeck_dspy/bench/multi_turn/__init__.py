"""BFCL v4 ``multi_turn_base``, executed: the questions run turn by turn over the BFCL package's own
API classes, and are checked by the package's own multi-turn checker (issue 55, item 4).

The package (``bfcl-eval``, pinned below) is installed outside the project's environment, without its
dependencies (``make bench-deps``: its declared dependencies pin numpy 1.26 and pull in model
runtimes; the parts used here need only ``mpmath``, installed beside it): :mod:`.package` finds and
imports it. :mod:`.load` reads the questions from the package's data files, checked against the
hashes below (questions 0-99 the dev half, 100-199 the test half, by their place in the file);
:mod:`.executor` runs a call as a method call on the question's instances; :mod:`.check` scores a
run with the package's ``multi_turn_checker``; :mod:`.run` runs one question under one arm. A study
spec's ``[multi_turn]`` table (:class:`MultiTurnSource`) makes them a study's cases
(:mod:`helmdeck_dspy.bench.study`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PACKAGE = "bfcl-eval"
VERSION = "2026.3.23"
"""The pinned release of the BFCL package (``bench-deps.txt`` pins its wheel and mpmath's by hash)."""
CATEGORY = "multi_turn_base"
SPLITS: dict[str, range] = {"dev": range(0, 100), "test": range(100, 200)}
"""The halves, by a question's place in the package's file (its id's number)."""

FROZEN: dict[str, str] = {
    "questions": "1a21a995d06fd6f20ba55de7bced30ef953ec35e998f502ec2ecf4d66ef1c43a",
    "answers": "1fee67823b317571649177dd89d63969feaae4e810cc7448ee55ba797fb7c8fc",
    "function_docs": "8ffff8620826cea6e49904e01d481469f08f69fea5e404dd5d6e5f34d8b2d6bc",
    "dev": "ae74c5aa89567d433bf5c7cf4c8f2f60016c61f681d9ba6af23fd28b2cd47afe",
    "test": "a2e647108ee8b4be549eafc7472694836745c8442398be5255dc3699cb513332",
}
"""sha256 of the data as frozen before any planner run: the question file, the answer file, the
function documents of the classes the questions name (:func:`~.load.digests` says how each is
taken) and each half (its question and answer lines). The loader refuses data that differs."""

STEP_LIMIT = 20
"""Calls a turn may make: BFCL's own limit (``MAXIMUM_STEP_LIMIT``, counted in model answers there);
a turn that reaches it is force-terminated and the question fails, as in BFCL."""
TURN_TIME_CAP_S = 600.0
"""Seconds a turn may take (ours; a turn cut off is force-terminated too)."""


class MultiTurnSource(BaseModel):
    """BFCL's ``multi_turn_base`` as a study's cases (``[multi_turn]``), each question a case."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    split: Literal["all", "dev", "test"] = Field(default="dev", description="dev: questions 0-99, test: 100-199.")
    only: tuple[str, ...] = Field(default=(), description="Question ids (empty: every question of the split).")
    max_steps: int = Field(default=STEP_LIMIT, ge=1, le=100, description="Calls a turn may make.")
    time_cap_s: float = Field(default=TURN_TIME_CAP_S, gt=0, description="Seconds a turn may take.")
