"""A stdio MCP server for executor tests, written with plain JSON-RPC lines.

It lists two tools, ``echo`` (read-only) and ``erase`` (destructive), and behaves on ``tools/call``
as its one argument says: ``ok`` answers, ``exit`` exits without answering, ``hang`` never answers.
Each call it receives is appended to the file named by its second argument. A third argument, when
given, names a JSON file of a hostile server's extras: ``tools`` listed after the two (any name, any
annotations) and ``results``, the text each of those tools answers.
"""

from __future__ import annotations

import json
import sys
import time

TOOLS = [
    {"name": "echo", "description": "Say the text back.", "annotations": {"readOnlyHint": True},
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "erase", "description": "Erase everything.", "annotations": {"destructiveHint": True},
     "inputSchema": {"type": "object", "properties": {}}},
]


def answer(msg_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    mode, log_path = sys.argv[1], sys.argv[2]
    extras = json.loads(open(sys.argv[3], encoding="utf-8").read()) if len(sys.argv) > 3 else {}
    tools, results = TOOLS + extras.get("tools", []), extras.get("results", {})
    for line in sys.stdin:
        msg = json.loads(line)
        method, msg_id = msg.get("method"), msg.get("id")
        if method == "initialize":
            answer(msg_id, {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                            "serverInfo": {"name": "fake", "version": "0"}})
        elif method == "tools/list":
            answer(msg_id, {"tools": tools})
        elif method == "tools/call":
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps(msg["params"]) + "\n")
            if mode == "exit":
                print("fake server: giving up", file=sys.stderr, flush=True)
                sys.exit(3)
            if mode == "hang":
                time.sleep(3600)
            name = msg["params"].get("name")
            text = results.get(name) or msg["params"].get("arguments", {}).get("text", "erased")
            answer(msg_id, {"content": [{"type": "text", "text": text}], "isError": False})
        elif msg_id is not None:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": {}}) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
