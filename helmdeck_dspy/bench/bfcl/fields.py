"""Reading the fields every BFCL question line shares: the id and the chat turns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helmdeck_dspy.errors import BfclDataError


def need_str(obj: dict, key: str, path: str | Path, line: int) -> str:
    """``obj[key]`` as a non-empty string, else an error naming the field."""
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise BfclDataError(str(path), f"field {key!r}: expected a non-empty string", line=line)
    return value


def turns_of(obj: dict, path: str | Path, line: int) -> list[Any]:
    """The ``question`` field: a non-empty list of turns."""
    turns = obj.get("question")
    if not isinstance(turns, list) or not turns:
        raise BfclDataError(str(path), "field 'question': expected a list of turns (lists of messages)", line=line)
    return turns


def user_text(turn: Any, path: str | Path, line: int) -> str:
    """What the user says in one turn (a list of messages, or one message): system and assistant
    messages left out, one line per message; ``""`` for an empty turn."""
    messages = turn if isinstance(turn, list) else [turn]
    said = []
    for m in messages:
        if not isinstance(m, dict) or not isinstance(m.get("content"), str):
            raise BfclDataError(str(path), "field 'question': each message needs a string 'content'", line=line)
        if m.get("role", "user") == "user":
            said.append(m["content"].strip())
    return "\n".join(s for s in said if s)


def intent_of(obj: dict, path: str | Path, line: int) -> str:
    """A single-turn question's request: the user messages of all its turns."""
    intent = "\n".join(t for t in (user_text(turn, path, line) for turn in turns_of(obj, path, line)) if t)
    if not intent:
        raise BfclDataError(str(path), "field 'question': no user message with text", line=line)
    return intent
