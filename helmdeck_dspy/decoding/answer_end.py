"""Where a streamed answer is complete: the close of the top-level JSON value its format asks for.

A strategy whose answer is one JSON value (the ``plain`` strategy's and the model alone's list of
calls, the ``schema`` strategy's plan object) is complete when that value closes; anything a model
writes after it (a closing fence, a second list, prose) is not read by the decoders that matter
here, and a model that runs on after it spends seconds per dozen tokens on 2 CPU cores.
:class:`AnswerEnd` reads the answer as it streams, in pieces of any size, and says at which
character the expected value closed. It is linear in the text and keeps three integers of state,
so a hostile stream costs nothing more than its length.

A turn of a tool-calling conversation (``turn``: calls in the model's own format, or a text answer
that ends the task) has no closing bracket to wait for; :class:`TurnEnd` says only when it is
plainly text: :data:`TEXT_HEAD_CHARS` characters with no call opened (no ``<tool_call``, ``{`` or
``[``). The loop reads nothing of such an answer but that it holds no call.

Only a value of the expected kind ends the answer: with ``list`` expected, an object written first
(``{"name": ...}`` without brackets) or a bracket inside prose that closes on an object is skipped
and the scan goes on; brackets inside JSON strings never count.
"""

from __future__ import annotations

from typing import Literal

AnswerKind = Literal["list", "object", "turn"]
_OPEN = {"[": "list", "{": "object"}
_CLOSE = frozenset("]}")


class AnswerEnd:
    """An incremental scanner for the end of the first top-level JSON value of ``kind``.

    Args:
        kind: ``list`` (a JSON array) or ``object`` (a JSON object).
    """

    def __init__(self, kind: AnswerKind) -> None:
        if kind not in ("list", "object"):
            raise ValueError(f"unknown answer kind {kind!r}: expected 'list' or 'object'")
        self.kind = kind
        self.seen = 0  # characters read so far
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self._top: str | None = None  # the kind of the top-level value being read
        self.end: int | None = None  # one past the closing bracket, once found

    def feed(self, piece: str) -> int | None:
        """Read the next piece; return the end of the answer (an index into everything fed so far,
        one past the closing bracket) once the expected value has closed, else None."""
        if self.end is not None:
            return self.end
        for i, ch in enumerate(piece):
            if self._in_string:
                if self._escaped:
                    self._escaped = False
                elif ch == "\\":
                    self._escaped = True
                elif ch == '"':
                    self._in_string = False
                continue
            if ch == '"':
                if self._depth:  # quotes in prose before the value are not JSON strings
                    self._in_string = True
            elif ch in _OPEN:
                if self._depth == 0:
                    self._top = _OPEN[ch]
                self._depth += 1
            elif ch in _CLOSE and self._depth:
                self._depth -= 1
                if self._depth == 0 and self._top == self.kind:
                    self.end = self.seen + i + 1
                    self.seen += len(piece)
                    return self.end
        self.seen += len(piece)
        return None


TEXT_HEAD_CHARS = 160
"""How much of a conversation turn is read before it counts as a text answer (no call opened)."""
CALL_OPENERS = ("<tool_call", "{", "[")
"""What opens a call in a conversation turn (tags, a JSON object or list); a turn without one is text."""
_SEEN = TEXT_HEAD_CHARS + len(CALL_OPENERS[0]) - 1


class TurnEnd:
    """The end of a conversation turn that is a text answer: :data:`TEXT_HEAD_CHARS` characters in
    which no call opened. A turn that opens a call is never cut here (it ends where the model
    stops, or at the output cap)."""

    def __init__(self) -> None:
        self.head = ""
        self.end: int | None = None
        self._calls = False

    def feed(self, piece: str) -> int | None:
        """Read the next piece; the end of a text answer once it is known, else None."""
        if self.end is not None or self._calls:
            return self.end
        self.head = (self.head + piece)[:_SEEN]
        if any(opener in self.head[:TEXT_HEAD_CHARS + len(opener) - 1] for opener in CALL_OPENERS):
            self._calls = True
        elif len(self.head) >= _SEEN:  # no opener starts in the head, not even one cut at its end
            self.end = TEXT_HEAD_CHARS
        return self.end


def scanner(kind: AnswerKind) -> AnswerEnd | TurnEnd:
    """The incremental scanner for an answer of ``kind``."""
    return TurnEnd() if kind == "turn" else AnswerEnd(kind)


def answer_end(text: str, kind: AnswerKind) -> int | None:
    """The end of a whole ``text`` answer of ``kind`` (see :class:`AnswerEnd`, :class:`TurnEnd`)."""
    return scanner(kind).feed(text)
