"""How much of the narrowed recheck llama-server must evaluate after the whole-list prompt, by the
recheck's order and the server's chunk size (issue 54, item 2). A benchmark, not a test.

For the first ``--n`` requests of the MCP gold set (eval/tasks/mcp-servers.jsonl, the dev half's
order), the prompt the ``plain`` strategy sends over the whole catalog (37 tools) is sent to a
llama-server, then the recheck's prompt over the ranker's top 10: in rank order (the shipped recheck)
and in the whole list's order (``recheck_order = "catalog"``), each right after its own whole-list
prompt. Every call asks for one token, so only prompt evaluation is measured; the server's own
``timings.prompt_n`` says how many prompt tokens it evaluated. One server per ``--cache-reuse`` value
(0 turns chunk reuse off); one slot, as the engine is started by default.

    .venv/bin/python measure/chunk_reuse.py [--model qwen2.5-coder-1.5b] [--n 10] [--reuse 0 --reuse 32 --reuse 256]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helmdeck_dspy.io.offline import apply_offline_defaults  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine_rates import post_json  # noqa: E402


def prompts(n: int) -> list[tuple[str, str, str]]:
    """``(whole, rank-ordered recheck, catalog-ordered recheck)`` user messages of the first ``n`` requests."""
    from helmdeck_dspy.catalog.models import load_catalog
    from helmdeck_dspy.catalog.ranking import RANKERS
    from helmdeck_dspy.catalog.select import restrict_catalog
    from helmdeck_dspy.io.resources import bundled_dir
    from helmdeck_dspy.planning.options import PlannerOptions
    from helmdeck_dspy.program.plain_prompt import plain_functions, plain_request

    catalog = load_catalog(bundled_dir() / "catalog" / "mcp-servers.json")
    lines = (bundled_dir() / "tasks" / "mcp-servers.jsonl").read_text("utf-8").splitlines()
    options = PlannerOptions()
    out = []
    for line in lines[:n]:
        intent = json.loads(line)["intent"]
        ranked = [r.id for r in RANKERS[options.ranker](catalog, intent, None)[:options.recheck_top]]
        in_order = [i for i in catalog.ids() if i in set(ranked)]
        out.append(tuple(plain_request(plain_functions(g), intent)
                         for g in (catalog, restrict_catalog(catalog, ranked), restrict_catalog(catalog, in_order))))
    return out  # type: ignore[return-value]


def evaluated(url: str, alias: str, text: str) -> int:
    done = post_json(url, {"model": alias, "messages": [{"role": "user", "content": text}], "max_tokens": 1,
                       "temperature": 0})
    return int((done.get("timings") or {}).get("prompt_n") or -1)


def measure(name: str, reuse: int, asked: list[tuple[str, str, str]]) -> dict:
    from helmdeck_dspy.local.install import require_installed
    from helmdeck_dspy.local.registry import get_model
    from helmdeck_dspy.local.server import LocalServer, ServerOptions

    model = get_model(name)
    server = LocalServer(require_installed(model), model.name,
                         options=ServerOptions(engine="llama-server", cache_reuse=reuse))
    counts: dict[str, list[int]] = {"whole": [], "rank": [], "catalog": []}
    with server:
        url = server.api_base + "/chat/completions"
        evaluated(url, model.name, asked[0][0])  # warm: the first whole list is evaluated cold
        for whole, by_rank, by_catalog in asked:
            for label, text in (("rank", by_rank), ("catalog", by_catalog)):
                counts["whole"].append(evaluated(url, model.name, whole))
                counts[label].append(evaluated(url, model.name, text))
    return {"cache_reuse": reuse, "requests": len(asked),
            **{f"{k}_evaluated_p50": statistics.median(v) for k, v in counts.items()},
            **{f"{k}_evaluated": v for k, v in counts.items() if k != "whole"}}


if __name__ == "__main__":
    apply_offline_defaults()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--reuse", type=int, action="append")
    args = parser.parse_args()
    asked = prompts(args.n)
    for reuse in args.reuse or [0, 32, 256]:
        print(json.dumps(measure(args.model, reuse, asked)))
