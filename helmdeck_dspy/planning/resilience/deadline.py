"""The attempt deadline: a wall-clock limit on one plan attempt, and the set-up kept outside it."""

from __future__ import annotations

import contextvars
import importlib
import threading
from collections.abc import Callable
from typing import Any

from helmdeck_dspy.errors import DeadlineExceeded

_LAZY_CLIENT_MODULES = ("openai.resources", "httpcore", "h11")
"""Modules LiteLLM's first call imports lazily (seconds together on a cold start)."""


def warm_up(lm: Any) -> None:
    """Import the client library ``lm`` will call through, outside any deadline.

    LiteLLM takes seconds to import and DSPy opens its disk cache lazily; a first attempt must
    not spend its deadline on either. LMs with a custom engine (replay, sim) skip the import.

    Args:
        lm: A ``dspy.LM`` (anything else is marked warm and left alone).
    """
    if getattr(lm, "_helmdeck_warm", False):
        return
    if getattr(lm, "cache", False):
        import dspy

        getattr(dspy, "cache", None)  # DSPy opens its disk cache on first use (a few hundred ms)
    try:
        from dspy.clients.backend_selection import select_backend

        native = select_backend(lm).native
    except Exception:  # noqa: BLE001 - custom engines, or not a dspy.LM: nothing to import
        native = True
    if not native:
        from dspy.clients._litellm import get_litellm

        get_litellm(feature="dspy.LM")
        for module in _LAZY_CLIENT_MODULES:
            try:
                importlib.import_module(module)
            except ImportError:  # pragma: no cover - optional
                pass
    try:
        lm._helmdeck_warm = True
    except AttributeError:  # pragma: no cover - an LM that refuses attributes
        pass


CANCEL_GRACE_S = 3.0
"""How long a timed-out attempt waits for its streams to close on the server (a generating llama.cpp
server sends its next token well within this; one still evaluating the prompt does not)."""


def call_with_deadline(fn: Callable[[], Any], timeout_s: float, *, grace_s: float = CANCEL_GRACE_S) -> Any:
    """Run ``fn`` in a daemon thread (with this context's variables) and wait at most ``timeout_s``.

    A call still running then is cancelled: the streams its LM calls hold are closed at their next
    piece (:mod:`helmdeck_dspy.engines.streaming`), so the server stops generating for it, and
    :class:`DeadlineExceeded` is raised after at most ``grace_s`` more, with the event that is set
    once they are closed (a retry waits for it). The thread itself is abandoned. The HTTP client's
    own timeout is per read, so a server that trickles bytes would otherwise hold the call forever.

    Args:
        fn: The call to run.
        timeout_s: Seconds to wait for it.
        grace_s: Seconds to wait, after the deadline, for its streams to close.

    Returns:
        What ``fn`` returned; what it raised is raised here.
    """
    from helmdeck_dspy.engines.call_control import CallControl, controlled

    control = CallControl()
    with controlled(control):
        ctx = contextvars.copy_context()
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = ctx.run(fn)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=run, name="helmdeck-plan-attempt", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        control.cancel()
        control.closed.wait(grace_s)
        raise DeadlineExceeded(timeout_s, settled=control.closed)
    if "error" in box:
        raise box["error"]
    return box.get("value")
