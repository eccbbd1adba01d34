"""A stand-in for ``python -m llama_cpp.server`` in the lifecycle tests (run as a script).

It takes the same flags (unknown ones are ignored) plus ``--mode``:
``ok`` serves ``GET /v1/models`` and ``POST /v1/chat/completions`` (streamed when asked) until SIGTERM;
``crash`` prints an error and exits with code 3; ``hang`` never listens;
``stubborn`` serves like ``ok`` but ignores SIGTERM; ``exit-soon`` serves for 1 s, then exits 0.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPLY = '{"steps": []}'


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="ok")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--model_alias", default="fake")
    args, _ = parser.parse_known_args()
    print(f"fake server: mode {args.mode}", flush=True)
    if args.mode == "crash":
        print("error loading model: fake failure", file=sys.stderr, flush=True)
        sys.exit(3)
    if args.mode == "hang":
        print("loading model ...", flush=True)
        time.sleep(600)
        return

    class Handler(BaseHTTPRequestHandler):
        def _send(self, body: dict) -> None:
            raw = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:  # noqa: N802
            self._send({"object": "list", "data": [{"id": args.model_alias, "object": "model"}]})

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if body.get("stream"):  # server-sent events, one chunk per piece, as llama.cpp streams
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for delta, finish in (({"role": "assistant", "content": REPLY[:5]}, None),
                                      ({"content": REPLY[5:]}, None), ({}, "stop")):
                    chunk = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
                             "model": args.model_alias, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                return
            self._send({
                "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                "model": args.model_alias,
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": REPLY}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
            })

        def log_message(self, *a) -> None:
            pass

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    if args.mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *a: threading.Thread(target=server.shutdown).start())
    if args.mode == "exit-soon":
        threading.Timer(1.0, server.shutdown).start()
    print(f"listening on {args.host}:{args.port}", flush=True)
    server.serve_forever(poll_interval=0.1)
    print("fake server: stopped", flush=True)


if __name__ == "__main__":
    main()
