#!/usr/bin/env bash
# The real MCP servers the end-to-end tasks and the tests run, beside the dev extra's PyPI ones
# (mcp-server-time, -git, -fetch): the npm ones into the ignored folder .mcp-servers/, and
# mcp-server-sqlite (last release 2025.4.25; it runs on the MCP SDK 1.x only) in a venv of its own
# under .mcp-servers/sqlite. Run from the repository root; logs go to .venv/.
set -euo pipefail
if command -v npm > /dev/null; then
  npm install --prefix .mcp-servers --no-audit --no-fund --loglevel=error \
    @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-memory@2026.8.31 \
    @modelcontextprotocol/server-everything@2026.8.31 \
    > .venv/mcp-npm.log 2>&1 || { tail -n 30 .venv/mcp-npm.log; exit 1; }
else
  echo "npm not found: the filesystem and memory servers are not installed (their tasks and tests skip)"
fi
if [ ! -x .mcp-servers/sqlite/bin/mcp-server-sqlite ]; then
  python3 -m venv .mcp-servers/sqlite && .mcp-servers/sqlite/bin/python -m pip install --disable-pip-version-check -q \
    mcp-server-sqlite==2025.4.25 "mcp>=1.2,<2" > .venv/mcp-sqlite.log 2>&1 || { tail -n 30 .venv/mcp-sqlite.log; exit 1; }
fi
