"""The BFCL reading rules, from the bundled ``eval/bfcl.toml``: parameter types, multi-turn class
files, and how each category is loaded (see the file's header for the meaning of every table)."""

from __future__ import annotations

from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from helmdeck_dspy.errors import BfclDataError, validation_message
from helmdeck_dspy.io.datafiles import read_toml
from helmdeck_dspy.io.resources import bundled_dir

CategoryKind = Literal["calls", "no_call", "any_call", "multi_turn", "skip"]
Expect = Literal["calls", "no_call", "any_call"]
"""What a right plan does: make the gold calls, call nothing, or call any offered function."""


class CategoryRule(BaseModel):
    """How the categories whose name fits ``match`` are loaded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    match: str = Field(min_length=1, description="A shell-style pattern over category names.")
    kind: CategoryKind
    reason: str = Field(default="", description="Why a skipped category is not loaded.")

    @property
    def needs_answers(self) -> bool:
        """Whether the category's questions need a possible_answer/ file."""
        return self.kind in ("calls", "multi_turn")


class BfclSpec(BaseModel):
    """The contents of ``eval/bfcl.toml``."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    types: dict[str, str] = Field(description="BFCL type -> JSON Schema type ('' = any value).")
    language_types: dict[str, str] = Field(description="Java/JavaScript type -> JSON Schema type, kept in metadata.")
    multi_turn_classes: dict[str, str] = Field(description="Class name -> multi_turn_func_doc/ file name.")
    categories: tuple[CategoryRule, ...] = Field(alias="category", min_length=1)

    def json_type(self, bfcl_type: str) -> tuple[bool, str | None, bool]:
        """``(known, json_type_or_None, is_language_type)`` for one BFCL type name."""
        if bfcl_type in self.types:
            return True, self.types[bfcl_type] or None, False
        if bfcl_type in self.language_types:
            return True, self.language_types[bfcl_type] or None, True
        return False, None, False

    def known_types(self) -> list[str]:
        """Every accepted type name, for error messages (the empty name shown as '')."""
        return [repr(t) if not t else t for t in (*self.types, *self.language_types)]

    def rule_for(self, category: str) -> CategoryRule:
        """The first rule matching ``category`` (a catch-all rule is required)."""
        for rule in self.categories:
            if fnmatchcase(category, rule.match):
                return rule
        raise BfclDataError(str(spec_path()), f"no [[category]] rule matches {category!r}; end the list with match = \"*\"")


def spec_path() -> Path:
    """Where the bundled rules live."""
    return bundled_dir() / "bfcl.toml"


def parse_spec(data: dict, path: str | Path) -> BfclSpec:
    """Validate decoded rules; errors name the file and the field."""
    try:
        return BfclSpec.model_validate(data)
    except ValidationError as exc:
        raise BfclDataError(str(path), validation_message(exc)) from None


@lru_cache(maxsize=1)
def load_reading_rules() -> BfclSpec:
    """The bundled rules, read once."""
    path = spec_path()
    return parse_spec(read_toml(path, BfclDataError), path)
