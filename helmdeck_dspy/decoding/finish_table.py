"""The finish-reason table: every documented provider spelling and its class (``finish_reasons.toml``).

The table is data: the spellings, the providers that document them, their class and a one-line
meaning live in ``finish_reasons.toml`` beside this module, read once on first use. This module
holds only the rules of matching (case, whitespace, SDK enum prefixes, the ``blockReason:`` form
importers give Gemini's prompt-level blocks).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from helmdeck_dspy.errors import DataFileError, validation_message
from helmdeck_dspy.io.datafiles import read_toml

FinishKind = Literal["stop", "length", "safety", "tool_calls", "tool_error", "interrupted"]
"""The class of a documented finish reason (see the table's header)."""

TABLE_PATH = Path(__file__).with_name("finish_reasons.toml")
BLOCK_PREFIX = "blockReason:"
"""How importers record a Gemini / Vertex AI prompt-level block: ``blockReason:SAFETY``."""

# SDK enum prefixes that some clients leave on the value ("FinishReason.STOP", "FINISH_REASON_SAFETY").
_ENUM_PREFIXES = ("finishreason.", "finish_reason.", "blockreason.", "blockedreason.")
_PROTO_PREFIX = "finish_reason_"


class FinishRow(BaseModel):
    """One documented spelling."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spelling: str = Field(min_length=1)
    kind: FinishKind
    providers: tuple[str, ...] = Field(min_length=1)
    meaning: str = Field(min_length=1)
    block: bool = Field(default=False, description="A prompt-level block reason, not a finish reason.")


class FinishTable(BaseModel):
    """The finish and block rows, keyed by lower-case spelling."""

    model_config = ConfigDict(frozen=True)

    finish: dict[str, FinishRow]
    block: dict[str, FinishRow]

    def lookup(self, raw: str | None) -> FinishRow | None:
        """The row for a provider's spelling, or None when it is absent, empty or undocumented."""
        if raw is None:
            return None
        text = raw.strip()
        if text[: len(BLOCK_PREFIX)].lower() == BLOCK_PREFIX.lower():
            return self.block.get(_bare(text[len(BLOCK_PREFIX):].strip().lower()))
        key = _bare(text.lower())
        if not key:
            return None
        row = self.finish.get(key)
        if row is None and key.startswith(_PROTO_PREFIX):
            row = self.finish.get(key[len(_PROTO_PREFIX):])
        return row

    def rows(self) -> list[FinishRow]:
        """Every row, finish reasons first, in file order."""
        return [*self.finish.values(), *self.block.values()]


def _bare(key: str) -> str:
    for prefix in _ENUM_PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


def parse_finish_table(data: dict, path: str) -> FinishTable:
    """Validate a decoded table; a bad or repeated row names its section, index and spelling."""
    unknown = set(data) - {"finish", "block"}
    if unknown:
        raise DataFileError(path, f"unknown top-level key(s) {sorted(unknown)}; expected [[finish]] and [[block]] rows")
    sections: dict[str, dict[str, FinishRow]] = {"finish": {}, "block": {}}
    for section, rows in sections.items():
        raw_rows = data.get(section, [])
        if not isinstance(raw_rows, list):
            raise DataFileError(path, f"`{section}` must be an array of tables ([[{section}]])")
        for i, raw in enumerate(raw_rows, 1):
            label = f"[[{section}]] #{i}"
            if isinstance(raw, dict) and isinstance(raw.get("spelling"), str):
                label += f" ({raw['spelling']!r})"
            try:
                row = FinishRow.model_validate({**raw, "block": section == "block"} if isinstance(raw, dict) else raw)
            except ValidationError as exc:
                raise DataFileError(path, f"{label}: {validation_message(exc, subject='row', all_errors=True)}") from None
            key = row.spelling.strip().lower()
            if key in rows:
                raise DataFileError(path, f"{label}: spelling repeats an earlier row (matching ignores case)")
            rows[key] = row
    return FinishTable(**sections)


@lru_cache(maxsize=1)
def finish_table() -> FinishTable:
    """The bundled table, read and validated once."""
    return parse_finish_table(read_toml(TABLE_PATH), str(TABLE_PATH))
