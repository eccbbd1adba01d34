"""Write eval/catalog/mcp-test.json, the catalog of the MCP gold set's test half, from the real servers.

Run from the repository root: ``.venv/bin/python experiments/mcp-test/make_catalog.py``. It builds
the end-to-end study's sandbox in a temporary folder (bench/e2e/sandbox.py), starts its six servers
there (the sandbox as their working folder, ``MEMORY_FILE_PATH`` set, as the study starts them)
plus ``@modelcontextprotocol/server-everything`` over stdio, and writes what they list the way
``helmdeck-dspy catalog import`` does. A server that is not installed stops it.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from helmdeck_dspy.bench.e2e.sandbox import Site, build_sandbox, server_sources
from helmdeck_dspy.run import ToolSessions

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "eval" / "catalog" / "mcp-test.json"
NPM_DIR = ROOT / ".mcp-servers"
SQLITE = NPM_DIR / "sqlite" / "bin" / "mcp-server-sqlite"
EVERYTHING = NPM_DIR / "node_modules" / ".bin" / "mcp-server-everything"
SERVERS = ("time", "git", "fetch", "filesystem", "memory", "sqlite", "everything")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="helmdeck-mcp-test-") as tmp, Site():
        root = build_sandbox(Path(tmp) / "sandbox")
        servers = server_sources(root, NPM_DIR, SQLITE)
        missing = list(servers.missing)
        if not EVERYTHING.exists() or shutil.which("node") is None:
            missing.append(f"mcp-server-everything (npm install --prefix {NPM_DIR} "
                           "@modelcontextprotocol/server-everything)")
        if missing:
            sys.exit("not installed: " + "; ".join(missing))
        sources = [*servers.sources, "everything=mcp+stdio:" + shlex.join([str(EVERYTHING)])]
        with ToolSessions(sources, env=servers.env, cwd=str(root)) as tools:
            guide = tools.catalog()
            counts = {s.label: len(s.tools.tools) for s in tools.sources}
        text = json.dumps(guide.to_wire(), indent=2, ensure_ascii=False) + "\n"
        leaks = sorted({needle for needle in (tmp, str(root), "helmdeck-mcp-test-") if needle in text})
    if leaks:
        sys.exit(f"the catalog names the temporary sandbox ({', '.join(leaks)}); not written")
    if set(counts) != set(SERVERS) or not all(counts.values()):
        sys.exit(f"expected tools from {', '.join(SERVERS)}; got {counts}")
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(guide.packs)} packs "
          f"({', '.join(f'{k} {v}' for k, v in counts.items())}), {guide.size_bytes()} bytes rendered")


if __name__ == "__main__":
    main()
