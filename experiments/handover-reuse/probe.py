"""Does llama-server's chunk reuse make a catalog-ordered 15-tool hand-over cheap after the whole list?

A diagnostic for issues 54 and 55 (the fallback loop's bounded hand-over), not a test: the bundled
catalog's tools offered natively, the whole list, then two 15-tool subsets in the whole list's order,
then the whole list again; each line prints the wall time, the prompt tokens and how many of them the
server evaluated (``timings.prompt_n``; llama-cpp-python reports none).

    .venv/bin/python experiments/handover-reuse/probe.py llama-server
"""
import json, sys, time, urllib.request
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from helmdeck_dspy.io.offline import apply_offline_defaults
apply_offline_defaults()
from helmdeck_dspy.io.resources import bundled_dir
from helmdeck_dspy.catalog.models import RoutingGuide
from helmdeck_dspy.program.native_tools import native_tools
from helmdeck_dspy.local.install import require_installed
from helmdeck_dspy.local.registry import get_model
from helmdeck_dspy.local.server import LocalServer, ServerOptions

engine = sys.argv[1]
g = RoutingGuide.model_validate_json((bundled_dir() / "catalog" / "mcp-servers.json").read_text())
tools = [{"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}} for t in native_tools(g)]
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
def call(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with opener.open(req, timeout=900) as r:
        data = json.loads(r.read())
    return round(time.perf_counter() - t0, 2), data
model = get_model("qwen2.5-coder-1.5b")
server = LocalServer(require_installed(model), model.name, options=ServerOptions(engine=engine))
with server:
    url = server.api_base + "/chat/completions"
    def ask(ts, text):
        dt, d = call(url, {"model": model.name, "messages": [{"role": "user", "content": text}], "tools": ts, "max_tokens": 40, "temperature": 0})
        return dt, d.get("usage", {}).get("prompt_tokens"), (d.get("timings") or {}).get("prompt_n")
    print("whole, first", ask(tools, "What time is it in Tokyo?"), flush=True)
    print("whole, next request", ask(tools, "List the files in the notes folder."), flush=True)
    picks = [1, 3, 4, 6, 8, 10, 12, 15, 18, 20, 22, 25, 28, 30, 33]
    print("15 in catalog order", ask([tools[i] for i in picks], "Show the git log of the repo."), flush=True)
    print("15 in catalog order, other 15", ask([tools[i] for i in [0, 2, 5, 7, 9, 11, 13, 14, 16, 17, 19, 21, 23, 24, 26]], "Read the file a.txt."), flush=True)
    print("whole again", ask(tools, "Which branch is checked out?"), flush=True)
