"""Reading the stdio transport's JSON-RPC lines: a length limit, an answer for every request.

Over HTTP the SDK refuses a body above its size limit with 413 before reading it. Over stdio it
reads whole lines, however long, so one 50 MB line would sit in memory (several times over, as
text and as parsed JSON). :class:`BoundedLines` is the stdin the stdio server reads instead:

- a line longer than the limit is read past in small blocks, never held; when its id can be read
  from its first kilobyte it is answered with that id (JSON-RPC -32600, naming the limit), else
  it becomes a short line that is not JSON; the caller is told on stderr either way;
- a line nested deeper than :data:`~helmdeck_dspy.domain.MAX_JSON_DEPTH` is answered with -32600
  (checked before it is parsed; with its id when the id can be read) and not passed on;
- every other line is read first as the SDK will read it (``read``, given by the server): the SDK
  drops a line it cannot read without a word, so such a line is answered here and not passed on,
  with a parse error (-32700) when it is not JSON to the SDK and -32600 when it is no JSON-RPC
  message, each with the line's id when Python's JSON reader finds a usable one (a string or an
  integer), else id null; only what the SDK reads as a request is counted as waiting for an answer;
- at the end of input the reader waits (up to ``drain_s``) until every request it passed on has
  been answered and the answers are written, so a client that writes a call and closes its end
  still gets the answer.

What the server sends back is seen through :class:`Ledger` (the server module records each
answer's id); replies the reader makes itself go out through the ledger's ``send``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

import anyio
import anyio.to_thread

from helmdeck_dspy.domain import MAX_JSON_DEPTH
from helmdeck_dspy.io.nesting import nesting_exceeds, top_level_scalar

REQUEST, NOTIFICATION, RESPONSE, NOT_JSON, INVALID = "request", "notification", "response", "not JSON", "invalid"
Reading = tuple[str, Any]
"""How the SDK reads a line: ``(REQUEST, id)``, ``(NOTIFICATION | RESPONSE, None)``, or
``(NOT_JSON | INVALID, None)`` for a line it drops."""

TOO_LONG = "line too long"
"""What a refused line becomes: not JSON, so the SDK reports it as an unreadable message."""

_BLOCK = 1 << 16
_HEAD = 1024
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,18})')
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


class Ledger:
    """Which requests the reader passed on and which the server answered (ids as JSON text, each
    counted as often as it was sent: a client may reuse an id), and how the reader sends a reply of
    its own (set by the server once its write stream exists)."""

    def __init__(self) -> None:
        self.requested: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()
        self.send: Callable[[dict[str, Any]], Awaitable[None]] | None = None
        self.written: Callable[[], bool] = lambda: True
        """Whether every answer handed to the writer is out (set by the server: its writer is idle)."""
        self.ready = anyio.Event()

    @staticmethod
    def key(request_id: Any) -> str:
        return json.dumps(request_id)

    def pending(self) -> Counter[str]:
        return self.requested - self.answered

    async def reply(self, message: dict[str, Any]) -> None:
        await self.ready.wait()
        assert self.send is not None
        await self.send(message)


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _usable(request_id: Any) -> bool:
    """An id an answer can carry: an integer, or a string writable as UTF-8 (no lone surrogate)."""
    if isinstance(request_id, str):
        try:
            request_id.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    return isinstance(request_id, int) and not isinstance(request_id, bool)


def readable_id(line: str, guess: bool = False) -> Any:
    """The id of ``line`` as Python's JSON reader finds it (None when it finds none usable); with
    ``guess``, a line it cannot read (nested past the recursion limit, say) gives the string or
    integer ``id`` of its top-level object, read without parsing what nests inside it."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        message = {"id": top_level_scalar(line, "id")} if guess else None
    request_id = message.get("id") if isinstance(message, dict) else None
    return request_id if _usable(request_id) else None


class BoundedLines:
    """An async iterator over ``stream``'s lines (UTF-8 text, undecodable bytes replaced) of at
    most ``limit`` bytes each; a longer line is skipped and yields :data:`TOO_LONG`.

    Args:
        stream: A binary stream (the process's stdin buffer).
        limit: The longest line taken, in bytes, newline included.
        notify: Told, in one line, about every line that was too long.
        ledger: Where requests passed on are counted and the reader's own replies go out.
        drain_s: At the end of input, how long to wait for the answers still owed.
        read: How the server's protocol library reads a line (default: Python's JSON reader).
    """

    def __init__(self, stream: BinaryIO, limit: int, notify: Callable[[str], None] | None = None,
                 ledger: Ledger | None = None, drain_s: float = 0.0,
                 read: Callable[[str], Reading] | None = None) -> None:
        self.stream = stream
        self.limit = limit
        self.notify = notify
        self.ledger = ledger
        self.drain_s = drain_s
        self.read = read or _python_reading
        self.refused = 0

    def __aiter__(self) -> BoundedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            read = await anyio.to_thread.run_sync(self.read_line, abandon_on_cancel=True)
            if read is None:
                await self._drain()
                raise StopAsyncIteration
            line, head = read
            if self.ledger is None:
                return line
            if head is not None:  # over the limit
                found = _ID.search(head)
                if found is None:
                    return line
                await self.ledger.reply(_error(json.loads(found.group(1)), INVALID_REQUEST,
                                               f"message over the {self.limit}-byte limit of this server's stdin"))
                continue
            if nesting_exceeds(line, MAX_JSON_DEPTH):
                await self.ledger.reply(_error(readable_id(line, guess=True), INVALID_REQUEST,
                                               f"message nested more than {MAX_JSON_DEPTH} levels deep"))
                continue
            if not line.strip():
                continue
            kind, request_id = self.read(line)
            if kind == NOT_JSON:
                await self.ledger.reply(_error(readable_id(line), PARSE_ERROR, "Parse error: the line is not JSON"))
                continue
            if kind == INVALID:
                await self.ledger.reply(_error(readable_id(line), INVALID_REQUEST,
                                               "Invalid request: not a JSON-RPC 2.0 message (jsonrpc \"2.0\", a string "
                                               "method, params an object, an id that is a string or an integer)"))
                continue
            if kind == REQUEST:
                self.ledger.requested[Ledger.key(request_id)] += 1
            return line

    async def _drain(self) -> None:
        """At the end of input: wait until every request passed on has its answer (or ``drain_s``)."""
        if self.ledger is None:
            return
        with anyio.move_on_after(self.drain_s):
            while self.ledger.pending() or not self.ledger.written():
                await anyio.sleep(0.02)

    def read_line(self) -> tuple[str, bytes | None] | None:
        """The next line and, for a line over the limit, its first kilobyte (None at the end of the
        stream); blocking."""
        raw = self.stream.readline(self.limit + 1)
        if not raw:
            return None
        if len(raw) <= self.limit:
            return raw.decode("utf-8", "replace"), None
        head = raw[:_HEAD]
        size = len(raw)
        while not raw.endswith(b"\n"):
            raw = self.stream.readline(_BLOCK)
            if not raw:
                break
            size += len(raw)
        self.refused += 1
        if self.notify is not None:
            self.notify(f"helmdeck-dspy serve: refused a message of {size} bytes on stdin (the limit is {self.limit})")
        return TOO_LONG + "\n", head


def _python_reading(line: str) -> Reading:
    """A line read without the SDK's reader: JSON, and a request when it has a string ``method`` and an id."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return NOT_JSON, None
    if not isinstance(message, dict) or ("method" in message and not isinstance(message["method"], str)):
        return INVALID, None
    return (REQUEST, message["id"]) if "method" in message and "id" in message else (NOTIFICATION, None)
