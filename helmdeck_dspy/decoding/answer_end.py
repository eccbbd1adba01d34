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

A list can also run away without closing: a small model writes the same call again and again (with
a result it invents each time, counting ids up) until the output cap cuts it. Such an answer is
already lost when the cap cuts it (a cut list is never run), so it is stopped as soon as the
runaway is certain: the :data:`REPEAT_STOP`-th writing of one call in the list (the same name and
arguments; any other keys, such as an invented result, ignored) ends the scan with
:attr:`AnswerEnd.runaway` set, and the caller reports the answer as cut (``length``), only sooner
(what that changes over the recorded answers: ``docs/results/runaway.md``).
"""

from __future__ import annotations

import json
from typing import Literal

REPEAT_STOP = 3
"""The writing of one call (the third) that makes a list answer a runaway."""

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
        self.runaway = False  # the scan ended on a repeated call, not on the value's close
        self._element: list[str] = []  # the text of the list element being read, piece by piece
        self._element_from: int | None = None  # where that element starts in the current piece
        self._calls: dict[str, int] = {}  # each call seen in the list, and how often

    def feed(self, piece: str) -> int | None:
        """Read the next piece; return the end of the answer (an index into everything fed so far,
        one past the closing bracket) once the expected value has closed, else None. With
        :attr:`runaway` set, the end is one past the element that repeated a call too often."""
        if self.end is not None:
            return self.end
        if self._element_from is not None:
            self._element_from = 0
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
                elif self._depth == 1 and self._top == "list" == self.kind:
                    self._element, self._element_from = [], i
                self._depth += 1
            elif ch in _CLOSE and self._depth:
                self._depth -= 1
                if self._depth == 0 and self._top == self.kind:
                    self.end = self.seen + i + 1
                    self.seen += len(piece)
                    return self.end
                if self._depth == 1 and self._element_from is not None:
                    self._element.append(piece[self._element_from:i + 1])
                    self._element_from = None
                    if self._repeats("".join(self._element)):
                        self.runaway = True
                        self.end = self.seen + i + 1
                        self.seen += len(piece)
                        return self.end
        if self._element_from is not None:
            self._element.append(piece[self._element_from:])
        self.seen += len(piece)
        return None

    def _repeats(self, element: str) -> bool:
        """Count a finished list element; True once its call has appeared :data:`REPEAT_STOP` times."""
        key = _call_key(element)
        self._calls[key] = self._calls.get(key, 0) + 1
        return self._calls[key] >= REPEAT_STOP


def _call_key(element: str) -> str:
    """What makes two list elements the same call: the name and arguments of a call object (other
    keys ignored), else the element's JSON, else its text with runs of whitespace collapsed."""
    try:
        value = json.loads(element)
    except ValueError:
        return " ".join(element.split())
    if isinstance(value, dict) and "name" in value:
        value = [value.get("name"), value.get("arguments", value.get("args"))]
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


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
