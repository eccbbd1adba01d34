"""What schema-constrained decoding costs per output token on a real llama.cpp server.

The same planning requests (the tier program's prompt for the bundled dev intents over their
selected catalogs, built by the planner's own adapter) go to a local model twice each: once free,
once with the selected catalog's answer schema as a ``json_object`` schema (the grammar). Each
request is sent once first to warm llama.cpp's prompt cache, so the timed calls evaluate almost no
prompt and their latency is generation (plus, when constrained, the grammar's sampling cost).
Printed: median milliseconds per completion token, free and constrained, their difference and
ratio, and for each kind a least-squares line of latency on tokens (its slope is the cost of a
token without the fixed cost of a request), all measured in this run.

    .venv/bin/python measure/constrained_cost.py [--model qwen2.5-coder-1.5b] [--n 6]

Needs the ``local`` extra and the model installed (``helmdeck-dspy models install NAME``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import urllib.request
import warnings

from helmdeck_dspy.io.offline import apply_offline_defaults


def _post(api_base: str, key: str, body: dict) -> tuple[float, int]:
    req = urllib.request.Request(f"{api_base}/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as resp:
        answer = json.load(resp)
    return (time.perf_counter() - t0) * 1000, int(answer["usage"]["completion_tokens"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--n", type=int, default=6)
    args = parser.parse_args()
    apply_offline_defaults()
    warnings.simplefilter("ignore")
    from helmdeck_dspy.budgets import budget_for
    from helmdeck_dspy.catalog.models import load_catalog
    from helmdeck_dspy.catalog.select import select_catalog
    from helmdeck_dspy.local.endpoint import local_lm_args
    from helmdeck_dspy.program.adapter import PlanAdapter
    from helmdeck_dspy.program.spec import PromptSpec
    from helmdeck_dspy.program.answer_schema import plan_schema
    from helmdeck_dspy.signatures.plan import signature_for
    from helmdeck_dspy.tasks import load_tasks

    _, api_base, key = local_lm_args(args.model)
    budget = budget_for(f"local/{args.model}-instruct")
    catalog = load_catalog()
    per_token: dict[str, list[float]] = {"free": [], "constrained": []}
    pairs: dict[str, list[tuple[int, float]]] = {"free": [], "constrained": []}
    for task in load_tasks("dev")[: args.n]:
        selected, _ = select_catalog(catalog, budget, task.intent)
        schema = plan_schema(selected, "full_steps")
        adapter = PlanAdapter(PromptSpec(answer_schema=schema, schema_wire="json_object"))
        messages = adapter.format(signature_for("full_steps"), [], {"user_intent": task.intent, "catalog": selected.render()})
        base = {"messages": messages, "max_tokens": 200, "temperature": 0.0, "seed": 7}
        _post(api_base, key, base)  # warm the prompt cache: the timed calls below generate only
        for kind, extra in (("free", {}), ("constrained", {"response_format": {"type": "json_object", "schema": schema}})):
            ms, tokens = _post(api_base, key, {**base, **extra})
            per_token[kind].append(ms / max(tokens, 1))
            pairs[kind].append((tokens, ms))
            print(f"{task.id} {kind}: {tokens} tokens, {ms:.0f} ms, {ms / max(tokens, 1):.1f} ms/token", flush=True)
    free, bound = statistics.median(per_token["free"]), statistics.median(per_token["constrained"])
    print(f"\n{args.model}, {len(per_token['free'])} requests: free {free:.1f} ms/token, constrained {bound:.1f} ms/token, "
          f"+{bound - free:.1f} ms/token (x{bound / free:.2f})")
    for kind, points in pairs.items():
        if len({t for t, _ in points}) > 1:  # a line needs two token counts
            slope, intercept = statistics.linear_regression([t for t, _ in points], [ms for _, ms in points])
            print(f"{kind}: least-squares {slope:.1f} ms/token + {intercept:.0f} ms per request")


if __name__ == "__main__":
    main()
