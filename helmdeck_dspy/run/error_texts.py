"""Failed calls that a server reports only in its result's text (``error_texts.toml``).

Some MCP servers catch their own exceptions and return the message as an ordinary result, with
``isError`` unset. The table beside this module names those servers (by the name they give in
their initialize answer) and the prefixes their failure texts start with; :func:`reports_error`
applies it, so :class:`~helmdeck_dspy.run.sessions.ToolSessions` marks such a step failed for
every loop and arm alike.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from helmdeck_dspy.errors import DataFileError, validation_message
from helmdeck_dspy.io.datafiles import read_toml

TABLE_PATH = Path(__file__).with_name("error_texts.toml")


class ErrorTexts(BaseModel):
    """One server's failure texts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    package: str = Field(min_length=1, description="Where the server comes from (for the reader).")
    prefixes: tuple[str, ...] = Field(min_length=1)


@lru_cache(maxsize=4)
def error_texts(path: Path = TABLE_PATH) -> dict[str, ErrorTexts]:
    """The table at ``path`` (default: the bundled one), keyed by server name.

    Raises:
        DataFileError: The file is not valid TOML or a row is malformed.
    """
    data = read_toml(path)
    try:
        return {name: ErrorTexts.model_validate(row) for name, row in data.items()}
    except ValidationError as exc:
        raise DataFileError(str(path), validation_message(exc)) from None


def reports_error(server_name: str, text: str) -> bool:
    """Whether ``text``, a result of the server that calls itself ``server_name``, is a failure
    it reported without ``isError``."""
    row = error_texts().get(server_name)
    return row is not None and text.startswith(row.prefixes)
