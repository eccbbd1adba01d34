"""The end-to-end study: tasks run over six real MCP servers in a sandbox, scored by what the tools
did (``sandbox``, ``checks``), the planner's loop paired with the model alone's (``arms``), one
resumable runner (``study``) and its table (``report``)."""
