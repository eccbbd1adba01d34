"""Reading the stdio transport's JSON-RPC lines with a length limit.

Over HTTP the SDK refuses a body above its size limit with 413 before reading it. Over stdio it
reads whole lines, however long, so one 50 MB line would sit in memory (several times over, as
text and as parsed JSON). :class:`BoundedLines` is the stdin the stdio server reads instead: a
line longer than the limit is read past in small blocks, never held, and replaced by a short
line that is not JSON, which the SDK answers as a parse error; the caller is told on stderr.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import BinaryIO

import anyio.to_thread

TOO_LONG = "line too long"
"""What a refused line becomes: not JSON, so the SDK reports it as an unreadable message."""

_BLOCK = 1 << 16


class BoundedLines:
    """An async iterator over ``stream``'s lines (UTF-8 text, undecodable bytes replaced) of at
    most ``limit`` bytes each; a longer line is skipped and yields :data:`TOO_LONG`.

    Args:
        stream: A binary stream (the process's stdin buffer).
        limit: The longest line taken, in bytes, newline included.
        notify: Told, in one line, about every line that was too long.
    """

    def __init__(self, stream: BinaryIO, limit: int, notify: Callable[[str], None] | None = None) -> None:
        self.stream = stream
        self.limit = limit
        self.notify = notify
        self.refused = 0

    def __aiter__(self) -> BoundedLines:
        return self

    async def __anext__(self) -> str:
        line = await anyio.to_thread.run_sync(self.read_line, abandon_on_cancel=True)
        if line is None:
            raise StopAsyncIteration
        return line

    def read_line(self) -> str | None:
        """The next line (None at the end of the stream); blocking."""
        raw = self.stream.readline(self.limit + 1)
        if not raw:
            return None
        if len(raw) <= self.limit:
            return raw.decode("utf-8", "replace")
        size = len(raw)
        while not raw.endswith(b"\n"):
            raw = self.stream.readline(_BLOCK)
            if not raw:
                break
            size += len(raw)
        self.refused += 1
        if self.notify is not None:
            self.notify(f"helmdeck-dspy serve: refused a message of {size} bytes on stdin (the limit is {self.limit})")
        return TOO_LONG + "\n"
