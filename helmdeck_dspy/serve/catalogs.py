"""The catalogs of callers' own tools (the ``tools`` argument of ``helmdeck.plan`` and
``helmdeck.route``), read once per distinct tool list.

A client that plans over its own tools sends the same list on every call. Its catalog is built
the first time (the importer's shape readers, then the packs, their rendering and ranking
features) and kept under the list's content hash, so later calls neither read the list again nor
render it again: the catalog text in the prompt is the very same string each time, which keeps the
prompt prefix stable for a model's prefix cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from helmdeck_dspy.catalog.importing.merge import catalog_from_tools
from helmdeck_dspy.catalog.importing.shapes import read_tool_list
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.errors import CatalogError, ToolListError, ToolNameClashError, ToolsArgumentError
from helmdeck_dspy.serve.wire import tools_digest

TOOL_CATALOG_CACHE_SIZE = 32
"""Distinct tool lists whose catalogs are kept; the least recently used is dropped beyond this."""


def read_tools_catalog(tools: list[dict[str, Any]]) -> RoutingGuide:
    """A tool list in MCP, OpenAI or Anthropic shape as a catalog, names as given.

    Raises:
        ToolsArgumentError: ``invalid argument tools: ...`` naming the tool at fault.
    """
    try:
        return catalog_from_tools(read_tool_list(tools).tools)
    except (ToolListError, ToolNameClashError, CatalogError) as exc:
        detail = exc.detail if isinstance(exc, CatalogError) else str(exc)
        raise ToolsArgumentError(f"invalid argument tools: {detail}") from None


class ToolCatalogs:
    """Catalogs of tool lists, by content hash (thread-safe; least recently used dropped first).

    Args:
        size: How many distinct tool lists to keep.
    """

    def __init__(self, size: int = TOOL_CATALOG_CACHE_SIZE) -> None:
        self.size = size
        self.hits = 0
        self.misses = 0
        self._catalogs: OrderedDict[str, RoutingGuide] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._catalogs)

    def get(self, tools: list[dict[str, Any]]) -> RoutingGuide:
        """The catalog of ``tools``: the cached one for an equal list, else read now and kept.

        Raises:
            ToolsArgumentError: The list cannot be read (nothing is cached for it).
        """
        key = tools_digest(tools)
        with self._lock:
            found = self._catalogs.get(key)
            if found is not None:
                self._catalogs.move_to_end(key)
                self.hits += 1
                return found
        guide = read_tools_catalog(tools)
        guide.size_bytes()  # rendered once, here, not inside the first plan call
        with self._lock:
            self.misses += 1
            kept = self._catalogs.setdefault(key, guide)  # two first calls at once: both get the first kept
            self._catalogs.move_to_end(key)
            while len(self._catalogs) > self.size:
                self._catalogs.popitem(last=False)
        return kept
