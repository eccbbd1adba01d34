"""The one exception hierarchy of helmdeck_dspy, and the one ValidationError formatter.

Two kinds of failure are kept apart:

- :class:`InputError` — the caller gave something unusable: a malformed data file
  (:class:`DataFileError`, with file and line), an unknown name or option, an LM spec that
  cannot be built, a missing optional extra. Fixing the input fixes the run. It also derives
  from :class:`ValueError`, so generic ``except ValueError`` code keeps working.
- :class:`RunError` — valid input, but the run could not finish: a deadline passed, a replay
  file ran out, a local model server would not start.

Model misbehaviour (a truncated or unparseable completion) is neither: the planner returns it as
a failure cause on the result instead of raising. The CLI maps every :class:`HelmdeckError` to
one stderr line and its ``exit_code`` (1, or 2 for :class:`UsageValueError`: a value given on
the command line that cannot be used).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class HelmdeckError(Exception):
    """Base class for every error helmdeck_dspy raises on purpose.

    ``exit_code`` is the CLI's exit status for it: 1 (bad data, a failed run) unless a subclass
    says 2 (a usage error: see :class:`UsageValueError`).
    """

    exit_code = 1


class InputError(HelmdeckError, ValueError):
    """Bad input from the caller: an argument, a name, a file or an environment that lacks an extra."""


class RunError(HelmdeckError):
    """A run that could not finish although its input was valid."""


class DataFileError(InputError):
    """A data file (budget table, catalog, tasks, traces, profiles, reports) is malformed.

    Attributes:
        path: The file that was read.
        line: 1-based line number when the format has lines, else None.
        detail: What was expected and what was found.
    """

    def __init__(self, path: str, detail: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.detail = detail
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {detail}")

    def __reduce__(self):  # keep the fields across process boundaries (evaluation workers)
        return (type(self), (self.path, self.detail, self.line))


class BudgetTableError(DataFileError):
    """The budget table failed validation; the message names the offending row."""


class CatalogError(DataFileError):
    """A routing-guide catalog failed validation."""


class ToolListError(InputError):
    """A list of tools in none of the shapes read (an MCP ``tools/list`` result, an OpenAI ``tools``
    array, Anthropic ``tools``), or holding a malformed tool; the message says where."""


class ToolFileError(DataFileError):
    """A tool-list file for ``catalog import`` that is unreadable, not JSON or in none of the shapes."""


class ToolSourceError(InputError):
    """A ``catalog import`` source that yields no tool list: a command that is not found, a server
    that exits, fails or does not answer in time, an unreachable URL, a malformed source spec.

    Attributes:
        source: The source as given.
        detail: What went wrong.
    """

    def __init__(self, source: str, detail: str) -> None:
        self.source = source
        self.detail = detail
        super().__init__(f"{source}: {detail}")

    def __reduce__(self):
        return (type(self), (self.source, self.detail))


class ToolServerError(RunError):
    """A tool server that died, hung or cannot serve a call during a run (``run``, the MCP executor).

    Attributes:
        server: The server's label.
        detail: What went wrong, in one line.
    """

    def __init__(self, server: str, detail: str) -> None:
        self.server = server
        self.detail = detail
        super().__init__(f"tool server {server!r}: {detail}")

    def __reduce__(self):
        return (type(self), (self.server, self.detail))


class RecordWriteError(RunError):
    """A plan was made but its trace record could not be written (``plan --record`` onto a full
    disk, a file that cannot be appended to). The plan is not lost: it is ``result``.

    Attributes:
        path: The record file.
        result: The :class:`~helmdeck_dspy.planning.result.PlanResult` the call made.
    """

    def __init__(self, path: str, reason: str, result: object = None) -> None:
        self.path = path
        self.reason = reason
        self.result = result
        super().__init__(f"{path}: cannot write the trace record: {reason}")

    def __reduce__(self):
        return (type(self), (self.path, self.reason, self.result))


class ToolNameClashError(InputError):
    """Two tools of one name that prefixing by source cannot tell apart (one source listing a name
    twice, or two sources with the same label)."""


class TraceFileError(DataFileError):
    """A trace file (JSONL, Parquet or a saved dataset) has an unreadable or invalid record."""


class TaskFileError(DataFileError):
    """A gold-task JSONL file has an invalid line."""


class CompiledProgramError(DataFileError):
    """A compiled program (``compiled/tier_T/V.json``) or the manifest cannot be loaded."""


class BfclDataError(DataFileError):
    """A BFCL question or answer file that does not have the expected shape."""


class LMSpecError(InputError):
    """An ``--lm`` value that cannot be turned into an LM."""


class MissingExtraError(InputError):
    """A feature whose optional dependencies (a pip extra) are not installed."""


class RankerUnavailableError(MissingExtraError):
    """A ranker whose optional dependencies are not installed."""


class BenchDependencyError(MissingExtraError):
    """A benchmark's pinned dependency, installed outside the project's environment (``make
    bench-deps``), is missing or not the pinned version. The CLI exits 2: installing it fixes it."""

    exit_code = 2


class PlanFailedError(RunError):
    """A plan a surface must answer with could not be made: the planner's model call failed."""


class DeadlineExceeded(RunError, TimeoutError):
    """An attempt ran past its retry policy's ``timeout_s`` (the call is abandoned, not awaited).

    ``settled`` is set once the attempt's streamed calls are closed on the server (None: nothing
    to wait for); ``freed`` says whether that happened within the grace that followed the deadline.
    When not, the server is still busy with the request (evaluating its prompt): a retry waits
    for ``settled`` rather than queue behind it."""

    def __init__(self, timeout_s: float, *, settled: threading.Event | None = None) -> None:
        self.timeout_s = timeout_s
        self.settled = settled
        self.freed = settled is None or settled.is_set()
        busy = "" if self.freed else "; the server was still working on its request"
        super().__init__(f"attempt exceeded its {timeout_s:g} s deadline{busy}")


class CallCancelled(RunError):
    """An LM call whose attempt gave up on it (its deadline passed): the stream was closed, so the
    server stops generating for it (``engines.streaming``)."""


class RecordingFailedError(RunError):
    """A recording in which every request sent failed (a wrong key, an unreachable endpoint): it is
    not a finished trace set."""


class ReplayExhausted(RunError):
    """A replay engine was asked for more completions than its trace file holds."""


def validation_message(
    exc: Any,
    *,
    subject: str = "record",
    with_input: bool = False,
    all_errors: bool = False,
    count_more: bool = False,
    missing: str | None = None,
    describe_loc: Callable[[tuple], str] | None = None,
) -> str:
    """One line for a pydantic ``ValidationError``: ``field.path: message``.

    Args:
        exc: The ValidationError.
        subject: Stands in for the field path when the error is about the whole object.
        with_input: Append ``(got <value>)`` (at most 60 characters) unless the field is missing.
        all_errors: Join every error with ``; `` instead of reporting the first.
        count_more: Append ``(and N more)`` when more errors were found than reported.
        missing: The message to use for a missing required field instead of pydantic's.
        describe_loc: Renders an error's location tuple (default: its parts joined by dots).
    """
    errors = exc.errors()
    parts = []
    for e in errors if all_errors else errors[:1]:
        loc = (describe_loc(e["loc"]) if describe_loc else ".".join(str(x) for x in e["loc"])) or subject
        msg = missing if (missing and e["type"] == "missing") else e["msg"]
        got = f" (got {e.get('input')!r:.60})" if with_input and e["type"] != "missing" else ""
        parts.append(f"{loc}: {msg}{got}")
    text = "; ".join(parts)
    if count_more and not all_errors and len(errors) > 1:
        text += f" (and {len(errors) - 1} more)"
    return text


class UnknownModelError(InputError):
    """A local model name that the registry of local models does not list."""


class ModelNotInstalledError(InputError):
    """A known local model whose weights are not installed yet (``helmdeck-dspy models install NAME``)."""


class LocalModelError(RunError):
    """A local model that could not be installed or served: a missing or corrupt chunk, a full
    disk, a port in use, a server that would not start, never answered or died."""


class ArgumentError(InputError):
    """An argument with an unusable value: an unknown name or option, an empty request."""


class ToolsArgumentError(ArgumentError):
    """The ``tools`` argument of ``helmdeck.plan`` or ``helmdeck.route`` that cannot be read as a
    tool list (none of the shapes, a malformed tool, two tools of one name)."""

    argument = "tools"


class TokenFileError(DataFileError):
    """A bearer-token file for ``serve`` (a TOML ``[tokens]`` table, caller name = token) that is malformed."""


class ConversationError(ArgumentError):
    """Chat messages that are not one conversation: a tool result answering no call made before it,
    or no user message at all."""


class ServeRefusedError(InputError):
    """A ``serve`` configuration that would expose the planner unsafely (a non-loopback bind with no tokens)."""


class StepCapError(InputError):
    """A single_pick loop that already ran as many steps as the server allows per intent."""


class UsageValueError(ArgumentError):
    """A command-line value the command cannot use: an empty model id, a timeout that is not a
    finite number, an output path whose suffix names no format, a request too large for the
    model's budget. The CLI exits 2 for it, as for any usage error.

    Attributes:
        argument: The option or argument the value was given to, when one is known.
    """

    exit_code = 2

    def __init__(self, message: str, argument: str | None = None) -> None:
        self.argument = argument
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (str(self), self.argument))


class OutputRefusedError(UsageValueError):
    """An output path the command will not write: an existing file or non-empty directory without
    ``--force``, bundled data, or a file where a directory is needed (and the reverse)."""


class OutputUnwritableError(RunError):
    """An output path that cannot be written (no permission, a read-only or virtual file system,
    a parent that is a file); raised before any work starts."""


class OutputLockedError(UsageValueError):
    """An output another run is writing right now (its lock file is held)."""


class InputTooLargeError(UsageValueError):
    """A request (intent and context) larger than the model's budget row allows as input."""


class ContextOverflowError(InputTooLargeError):
    """A request whose prompt leaves too little of the served context for an answer: refused before
    it is sent (a llama.cpp server would answer HTTP 400)."""

    def __init__(self, prompt_tokens: int, cap: int, n_ctx: int, *, exact: bool) -> None:
        self.prompt_tokens, self.cap, self.n_ctx = prompt_tokens, cap, n_ctx
        counted = "" if exact else "at most "
        super().__init__(f"the prompt ({counted}{prompt_tokens} tokens) and an answer of up to {cap} tokens do not "
                         f"fit the served context of {n_ctx} tokens: use a smaller catalog or request, or serve "
                         "the model with a larger context (models serve --ctx)")


class HistoryStoreError(RunError):
    """The plan-history store cannot be opened: its folder is not a directory, the database is
    not an SQLite file, or its secret is unreadable."""


class FrozenPlannerError(RunError, AttributeError):
    """An assignment to a :class:`~helmdeck_dspy.planning.planner.Planner`: a planner is a value;
    ``Planner.replace`` builds another."""


class FrozenProgramError(RunError, AttributeError):
    """An assignment to a plan program after it was loaded for planning: programs are shared by
    concurrent requests, so per-request settings travel with the call instead."""


class SourceSpecError(ToolSourceError, UsageValueError):
    """A tool source as written that names nothing to read (``catalog import SOURCES``, ``run
    --tools``): an unknown kind, an empty command, a URL that is not http(s), a file that is not
    there. A usage error (exit 2), where a server that fails is a :class:`ToolSourceError` (exit 1)."""


class UnsafeBindError(ServeRefusedError, UsageValueError):
    """``serve`` asked to listen beyond loopback with no bearer tokens: a usage error (exit 2)."""
