"""The planner served over MCP (``helmdeck-dspy serve``): tools, resources, callers, transports.

- :mod:`.names` and :mod:`.config` — the names a server publishes, and what it is started with;
- :mod:`.wire` — the tools' argument and result shapes, and the projection of a ``PlanResult``;
- :mod:`.route` — the no-LM single-tool recommendation (``helmdeck.route``);
- :mod:`.resources` — the JSON documents behind the ``helmdeck://`` resources;
- :mod:`.service` — the library calls behind each tool (the same ones the CLI makes);
- :mod:`.auth` — who is calling: bearer tokens over HTTP, the process owner over stdio;
- :mod:`.tools` and :mod:`.server` — the MCP SDK glue (``mcp`` 2.x, imported only here).

Nothing in this package is imported by ``helmdeck-dspy --help``.
"""
