"""One compile from keyword arguments, for tests: the request and its options built from them."""

from __future__ import annotations

from typing import Any

from helmdeck_dspy.compilation.compiler import compile_program
from helmdeck_dspy.compilation.manifest import CompileResult
from helmdeck_dspy.compilation.request import CompileOptions, CompileRequest

_REQUEST = {"train", "dev", "budgets"}
_CALL = {"resume", "notify", "on_call"}


def compile_one(tier: str | None, variant: str, **kw: Any) -> CompileResult:
    """``compile_program`` for (tier, variant); each keyword goes to the request, the call or the options."""
    request = CompileRequest(tier=tier, variant=variant, **{k: kw.pop(k) for k in _REQUEST & kw.keys()},
                             options=CompileOptions(**{k: v for k, v in kw.items() if k not in _CALL}))
    return compile_program(request, **{k: v for k, v in kw.items() if k in _CALL})
