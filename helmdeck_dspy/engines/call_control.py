"""What a caller tells the LM engine about the calls it makes, through context variables: the kind
of answer expected (where a streamed answer may stop) and the cancellation handle of an attempt.

Light on purpose (no dspy): the attempt deadline (:mod:`helmdeck_dspy.planning.resilience.deadline`)
sets a :class:`CallControl` for every attempt, and :mod:`helmdeck_dspy.engines.streaming` reads both.
Context variables, not attributes of a shared LM: each request's own settings travel with its call
(the deadline's worker thread runs in a copy of the caller's context).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from helmdeck_dspy.decoding.answer_end import AnswerKind

_KIND: contextvars.ContextVar[AnswerKind | None] = contextvars.ContextVar("helmdeck_answer_kind", default=None)
_CONTROL: contextvars.ContextVar[CallControl | None] = contextvars.ContextVar("helmdeck_call_control", default=None)


@contextlib.contextmanager
def expecting(kind: AnswerKind | None) -> Iterator[None]:
    """Calls made in this block answer with one JSON value of ``kind`` (None: not known, never cut)."""
    token = _KIND.set(kind)
    try:
        yield
    finally:
        _KIND.reset(token)


@dataclass
class CallControl:
    """The cancellation handle of the calls one attempt makes (set with :func:`controlled`).

    ``cancel()`` asks every stream of the attempt to close; ``closed`` is set once no stream of
    the attempt is open any more (the last one closed, or none was open), which is when the
    server is free of this attempt's work.
    """

    cancelled: threading.Event = field(default_factory=threading.Event)
    closed: threading.Event = field(default_factory=threading.Event)
    _open: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.closed.set()

    def cancel(self) -> None:
        """Ask the attempt's streams to close at the next piece that arrives; none opens after it."""
        with self._lock:
            self.cancelled.set()

    def opened(self) -> bool:
        """Count a stream about to open; False (and nothing counted) once the attempt is cancelled,
        so no request can slip out between a cancellation and the wait for ``closed``."""
        with self._lock:
            if self.cancelled.is_set():
                return False
            self._open += 1
            self.closed.clear()
            return True

    def ended(self) -> None:
        with self._lock:
            self._open -= 1
            if self._open <= 0:
                self.closed.set()


@contextlib.contextmanager
def controlled(control: CallControl) -> Iterator[CallControl]:
    """Calls made in this block stop when ``control`` is cancelled."""
    token = _CONTROL.set(control)
    try:
        yield control
    finally:
        _CONTROL.reset(token)


def current_kind() -> AnswerKind | None:
    """The answer kind the calls of this context expect (None: unknown, never cut)."""
    return _KIND.get()


def current_control() -> CallControl | None:
    """The cancellation handle of this context's attempt, if it runs under one."""
    return _CONTROL.get()
