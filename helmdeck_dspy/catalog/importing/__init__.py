"""Catalogs from where tools really live: MCP servers (stdio, streamable HTTP) and the tool lists
of MCP, OpenAI and Anthropic, merged into one routing-guide catalog.

``sources`` parses and reads each source (``mcp_fetch`` talks to live servers through the MCP
SDK), ``shapes`` reads a tool list in any of the three shapes, ``merge`` turns the tools into
packs with prefixed names where they clash. :func:`import_catalog` is what
``helmdeck-dspy catalog import`` calls.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from helmdeck_dspy.catalog.importing.mcp_fetch import DEFAULT_TIMEOUT_S
from helmdeck_dspy.catalog.importing.merge import SEPARATOR, catalog_from_tools, merge_sources
from helmdeck_dspy.catalog.importing.shapes import ImportedTool, ToolList, read_tool_list
from helmdeck_dspy.catalog.importing.sources import SourceSpec, SourceTools, parse_source, read_source
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.io.redaction import redact_url


class SourceSummary(BaseModel):
    """What one source gave, for the command's report."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(description="The source as given, its URL's credentials masked (io.redaction.redact_url).")
    kind: str
    label: str
    shape: str | None
    tools: int


class ImportedCatalog(BaseModel):
    """The merged catalog and what each source gave."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    catalog: RoutingGuide
    sources: tuple[SourceSummary, ...]

    @property
    def prefixed(self) -> int:
        """How many pack names carry their source's label."""
        return sum(1 for p in self.catalog.packs if p.metadata.tool)


def import_catalog(
    sources: Sequence[str], *, prefix: bool = False, headers: dict[str, str] | None = None,
    env: dict[str, str] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
) -> ImportedCatalog:
    """Read every source and merge their tools into one catalog.

    Args:
        sources: Source specs (``mcp+stdio:COMMAND ARGS``, ``mcp+http:URL``, a JSON file), each
            optionally ``LABEL=``-prefixed.
        prefix: Prefix every tool name with its source's label.
        headers: HTTP headers for every ``mcp+http:`` source.
        env: Extra environment for every ``mcp+stdio:`` server.
        timeout_s: How long each server may take to start and list its tools.

    Raises:
        ToolSourceError: A source that cannot be parsed, started, reached or listed.
        ToolFileError: A file that is unreadable or in none of the shapes.
        ToolNameClashError: Two tools that would share one name.
    """
    specs = [parse_source(text, env) for text in sources]  # every spec checked before any server starts
    read = [read_source(spec, headers=headers, timeout_s=timeout_s) for spec in specs]
    catalog = merge_sources(read, prefix=prefix)
    summary = tuple(SourceSummary(source=redact_url(s.spec.text), kind=s.spec.kind, label=s.label, shape=s.tools.shape,
                                  tools=len(s.tools.tools)) for s in read)
    return ImportedCatalog(catalog=catalog, sources=summary)


__all__ = [
    "SEPARATOR",
    "ImportedCatalog",
    "ImportedTool",
    "SourceSpec",
    "SourceSummary",
    "SourceTools",
    "ToolList",
    "catalog_from_tools",
    "import_catalog",
    "merge_sources",
    "parse_source",
    "read_source",
    "read_tool_list",
]
