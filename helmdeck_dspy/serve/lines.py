"""Reading the stdio transport's JSON-RPC lines: a length limit, an answer for every request.

Over HTTP the SDK refuses a body above its size limit with 413 before reading it. Over stdio it
reads whole lines, however long, so one 50 MB line would sit in memory (several times over, as
text and as parsed JSON). :class:`BoundedLines` is the stdin the stdio server reads instead:

- a line longer than the limit is read past in small blocks, never held; when its id can be read
  from its first kilobyte it is answered with that id (JSON-RPC -32600, naming the limit), else
  it becomes a short line that is not JSON; the caller is told on stderr either way;
- a line that is not JSON is answered with a parse error (-32700, id null) and not passed on, and
  so is a line nested deeper than :data:`~helmdeck_dspy.domain.MAX_JSON_DEPTH` (checked before it
  is parsed; -32600 with its id when the id can be read);
- a request whose ``method`` is not a string is answered with -32600 and not passed on;
- at the end of input the reader waits (up to ``drain_s``) until every request it passed on has
  been answered and the answers are written, so a client that writes a call and closes its end
  still gets the answer.

What the server sends back is seen through :class:`Ledger` (the server module records each
answer's id); replies the reader makes itself go out through the ledger's ``send``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

import anyio
import anyio.to_thread

from helmdeck_dspy.domain import MAX_JSON_DEPTH
from helmdeck_dspy.io.nesting import nesting_exceeds

TOO_LONG = "line too long"
"""What a refused line becomes: not JSON, so the SDK reports it as an unreadable message."""

_BLOCK = 1 << 16
_HEAD = 1024
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,18})')
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


class Ledger:
    """Which requests the reader passed on and which the server answered (ids as JSON text), and
    how the reader sends a reply of its own (set by the server once its write stream exists)."""

    def __init__(self) -> None:
        self.requested: set[str] = set()
        self.answered: set[str] = set()
        self.send: Callable[[dict[str, Any]], Awaitable[None]] | None = None
        self.written: Callable[[], bool] = lambda: True
        """Whether every answer handed to the writer is out (set by the server: its writer is idle)."""
        self.ready = anyio.Event()

    @staticmethod
    def key(request_id: Any) -> str:
        return json.dumps(request_id)

    def pending(self) -> set[str]:
        return self.requested - self.answered

    async def reply(self, message: dict[str, Any]) -> None:
        await self.ready.wait()
        assert self.send is not None
        await self.send(message)


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


class BoundedLines:
    """An async iterator over ``stream``'s lines (UTF-8 text, undecodable bytes replaced) of at
    most ``limit`` bytes each; a longer line is skipped and yields :data:`TOO_LONG`.

    Args:
        stream: A binary stream (the process's stdin buffer).
        limit: The longest line taken, in bytes, newline included.
        notify: Told, in one line, about every line that was too long.
    """

    def __init__(self, stream: BinaryIO, limit: int, notify: Callable[[str], None] | None = None,
                 ledger: Ledger | None = None, drain_s: float = 0.0) -> None:
        self.stream = stream
        self.limit = limit
        self.notify = notify
        self.ledger = ledger
        self.drain_s = drain_s
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
                found = _ID.search(line[:_HEAD].encode("utf-8", "replace"))
                await self.ledger.reply(_error(json.loads(found.group(1)) if found else None, INVALID_REQUEST,
                                               f"message nested more than {MAX_JSON_DEPTH} levels deep"))
                continue
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                if line.strip():
                    await self.ledger.reply(_error(None, PARSE_ERROR, "Parse error: the line is not JSON"))
                continue
            if isinstance(message, dict) and "id" in message and "method" in message:
                if not isinstance(message["method"], str):
                    request_id = message["id"] if isinstance(message["id"], (str, int)) else None
                    await self.ledger.reply(_error(request_id, INVALID_REQUEST, "Invalid request: method is not a string"))
                    continue
                self.ledger.requested.add(Ledger.key(message["id"]))
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
