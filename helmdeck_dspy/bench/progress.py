"""How the benchmark flows report progress: bars the caller supplies, silent by default.

A flow announces each stage with its size and counts its steps through the callable the stage
yields; a compile counts its LM calls through ``calls()``. The CLI draws them as tqdm bars on
stderr; a library caller may pass nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol


class Bars(Protocol):
    """Progress for the benchmark flows."""

    def stage(self, label: str, total: int, unit: str = " plan") -> AbstractContextManager[Callable[[int], Any]]:
        """A stage of ``total`` steps; the yielded callable is called with the steps just done."""
        ...

    def calls(self) -> AbstractContextManager[Callable[[Any], Any]]:
        """One compile; the yielded callable is its ``on_call`` (called with the call meter)."""
        ...


def _ignore(*_args: Any) -> None:
    return None


class SilentBars:
    """Bars that show nothing."""

    def stage(self, label: str, total: int, unit: str = " plan") -> AbstractContextManager[Callable[[int], Any]]:
        return nullcontext(_ignore)

    def calls(self) -> AbstractContextManager[Callable[[Any], Any]]:
        return nullcontext(_ignore)
