"""Where a streamed answer is complete: the close of the top-level JSON value its format asks for.

A strategy whose answer is one JSON value (the ``plain`` strategy's and the model alone's list of
calls, the ``schema`` strategy's plan object) is complete when that value closes; anything a model
writes after it (a closing fence, a second list, prose) is not read by the decoders that matter
here, and a model that runs on after it spends seconds per dozen tokens on 2 CPU cores.
:class:`AnswerEnd` reads the answer as it streams, in pieces of any size, and says at which
character the expected value closed. It is linear in the text and keeps three integers of state,
so a hostile stream costs nothing more than its length.

Only a value of the expected kind ends the answer: with ``list`` expected, an object written first
(``{"name": ...}`` without brackets) or a bracket inside prose that closes on an object is skipped
and the scan goes on; brackets inside JSON strings never count.
"""

from __future__ import annotations

from typing import Literal

AnswerKind = Literal["list", "object"]
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


def answer_end(text: str, kind: AnswerKind) -> int | None:
    """The end of the first top-level ``kind`` value in a whole ``text`` (see :class:`AnswerEnd`)."""
    return AnswerEnd(kind).feed(text)
