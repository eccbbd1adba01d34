"""Merging the tool lists of several sources into one catalog of packs.

Each tool becomes a pack: its name, its description, its argument schema as ``parameters`` (kept
as the source gave it), and metadata saying where it came from (``server``), its own name there
when the pack's differs (``tool``) and its MCP annotations (``hints``). A name two sources share
is prefixed in both by the source's label and ``__`` (``git__git_log``); ``prefix=True`` prefixes
every name. Names that still collide (one source listing a name twice, two sources with one
label) raise :class:`~helmdeck_dspy.errors.ToolNameClashError`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from helmdeck_dspy.catalog.importing.shapes import ImportedTool
from helmdeck_dspy.catalog.importing.sources import SourceTools
from helmdeck_dspy.catalog.models import Pack, PackMetadata, RoutingGuide, parse_catalog
from helmdeck_dspy.errors import ToolNameClashError

SEPARATOR = "__"
"""Between a source's label and a tool's name in a prefixed pack name."""


def pack_for(tool: ImportedTool, *, name: str | None = None, server: str = "") -> Pack:
    """The catalog pack for one tool, named ``name`` (default: the tool's own name)."""
    name = name or tool.name
    metadata = PackMetadata(server=server, tool=tool.name if name != tool.name else "", hints=tool.hints)
    return Pack(name=name, description=tool.description, parameters=tool.parameters, metadata=metadata)


def _twice(names: Sequence[str]) -> list[str]:
    return sorted(n for n, k in Counter(names).items() if k > 1)


def _checked(packs: list[Pack], where: str) -> RoutingGuide:
    """The catalog of ``packs``, validated and rendered as any loaded catalog is."""
    if clash := _twice([p.name for p in packs]):
        raise ToolNameClashError(f"{where}: two tools named {clash[0]!r}")
    return parse_catalog(RoutingGuide(packs=tuple(packs)).to_wire(), where)


def catalog_from_tools(tools: Sequence[ImportedTool], *, where: str = "tools") -> RoutingGuide:
    """One source's tools as a catalog, names as given (the MCP server's ``tools`` argument).

    Raises:
        ToolNameClashError: Two tools share a name.
    """
    return _checked([pack_for(t) for t in tools], where)


def merge_sources(sources: Sequence[SourceTools], *, prefix: bool = False) -> RoutingGuide:
    """One catalog of every source's tools, in source order.

    Args:
        sources: What each source listed, with its label.
        prefix: Prefix every name with its source's label, not only the names that clash.

    Raises:
        ToolNameClashError: One source lists a name twice, or prefixed names still collide (two
            sources with one label: give one ``LABEL=``).
    """
    for source in sources:
        if clash := _twice([t.name for t in source.tools.tools]):
            raise ToolNameClashError(f"{source.spec.text}: lists two tools named {clash[0]!r}")
    owners = Counter(name for s in sources for name in {t.name for t in s.tools.tools})
    packs: list[Pack] = []
    origin: dict[str, str] = {}
    for source in sources:
        for tool in source.tools.tools:
            name = tool.name
            if prefix or owners[name] > 1:
                name = f"{source.label}{SEPARATOR}{tool.name}"
            if name in origin:
                raise ToolNameClashError(
                    f"two tools would be named {name!r} (from {origin[name]} and {source.spec.text}); "
                    "give the sources different labels (LABEL=SOURCE)")
            origin[name] = source.spec.text
            packs.append(pack_for(tool, name=name, server=source.label))
    return _checked(packs, "merged catalog")
