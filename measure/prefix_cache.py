"""Prefix caching on a real llama.cpp server: the catalog in the system message or in the user message.

The same Tier C and Tier B planning requests (the compiled program's instructions and demos, the
dev intents, a catalog cut to the tier's byte cap) go to a local model's server in two layouts:

- ``system``: one catalog for every request (selected for a general request, not per intent), at
  the end of a byte-identical system message; the request in the user message;
- ``user``: the catalog selected for each intent (what the planner sends), at the start of the
  user message, before the request.

llama.cpp keeps the last request's evaluated prompt and re-evaluates only what follows the
longest common prefix; its log says how many prompt tokens it evaluated for each request. Each
layout runs as a block (a deployment uses one layout), twice, alternating; the first request of a
block warms the cache and is reported apart. Printed per tier and layout: median latency and
median prompt tokens evaluated, and the ``user`` / ``system`` ratios.

    .venv/bin/python measure/prefix_cache.py [--model qwen2.5-coder-0.5b] [--n 6] [--max-tokens 48]

Needs the ``local`` extra and the model installed (``helmdeck-dspy models install NAME``).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
import urllib.request
import warnings

from helmdeck_dspy.io.offline import apply_offline_defaults

TIER_MODELS = {"C": "local/qwen2.5-coder-0.5b-instruct", "B": "openrouter/deepseek/deepseek-v3.2"}
_EVALUATED = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")


def requests_for(tier: str, n: int, catalog_in_system: bool, max_tokens: int) -> list[list[dict[str, str]]]:
    """The chat messages of ``n`` planning requests for ``tier`` in one layout."""
    from helmdeck_dspy.budgets import budget_for
    from helmdeck_dspy.catalog.models import load_catalog
    from helmdeck_dspy.catalog.select import select_catalog
    from helmdeck_dspy.program.adapter import PlanAdapter
    from helmdeck_dspy.program.spec import PromptSpec
    from helmdeck_dspy.program.store import load_program
    from helmdeck_dspy.tasks import load_tasks

    budget = budget_for(TIER_MODELS[tier])
    variant = budget.resolved_prompt_variant
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = load_program(tier, variant)
    predict = program.plan
    guide = load_catalog()
    # In the system message: one catalog for every request (selected for a general request), so the
    # system message is byte-identical; in the user message: the catalog selected for each intent.
    shared, _ = select_catalog(guide, budget, "plan the steps of a request with the available tools")
    adapter = PlanAdapter(PromptSpec(variant=variant, catalog_in_system=catalog_in_system, max_tokens=max_tokens))
    out = []
    for task in load_tasks("dev")[:n]:
        catalog = shared if catalog_in_system else select_catalog(guide, budget, task.intent)[0]
        inputs = {"user_intent": task.intent, "catalog": catalog.render(), "context": task.context}
        out.append(adapter.format(predict.signature, predict.demos, inputs))
    return out


def evaluated_tokens(log_text: str) -> int | None:
    """Prompt tokens llama.cpp evaluated for the one request whose log lines these are."""
    found = _EVALUATED.findall(log_text)
    return int(found[-1]) if found else None


def send(api_base: str, alias: str, messages: list[dict[str, str]], max_tokens: int) -> tuple[float, int]:
    """Latency in ms and the prompt tokens the server reports for one chat completion."""
    body = json.dumps({"model": alias, "messages": messages, "max_tokens": max_tokens, "temperature": 0.0,
                       "seed": 7}).encode()
    req = urllib.request.Request(f"{api_base}/chat/completions", data=body, headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as resp:
        payload = json.loads(resp.read())
    return (time.perf_counter() - t0) * 1000, payload["usage"]["prompt_tokens"]


def main() -> None:
    apply_offline_defaults()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b", help="An installed local model.")
    parser.add_argument("--n", type=int, default=6, help="Requests per block.")
    parser.add_argument("--max-tokens", type=int, default=48, help="Output cap: short answers keep the run short.")
    parser.add_argument("--tiers", nargs="+", default=["C", "B"])
    args = parser.parse_args()

    from helmdeck_dspy.local.install import require_installed
    from helmdeck_dspy.local.registry import get_model
    from helmdeck_dspy.local.server import LocalServer

    model = get_model(args.model)
    server = LocalServer(require_installed(model), model.name)
    server.start()
    print(f"{model.name} on {server.api_base}; log {server.log_path}")
    rows = []
    try:
        for tier in args.tiers:
            layouts = {"system": requests_for(tier, args.n, True, args.max_tokens),
                       "user": requests_for(tier, args.n, False, args.max_tokens)}
            seen: dict[str, dict[str, list[float]]] = {k: {"ms": [], "evaluated": [], "prompt": [], "first_ms": [],
                                                         "first_evaluated": []} for k in layouts}
            for _round in range(2):
                for layout, messages in layouts.items():
                    for i, msgs in enumerate(messages):
                        offset = server.log_path.stat().st_size
                        ms, prompt = send(server.api_base, server.alias, msgs, args.max_tokens)
                        time.sleep(0.2)  # let the server flush its timing lines
                        with open(server.log_path, encoding="utf-8", errors="replace") as log:
                            log.seek(offset)
                            evaluated = evaluated_tokens(log.read())
                        s = seen[layout]
                        if i == 0:
                            s["first_ms"].append(ms)
                            s["first_evaluated"].append(evaluated or 0)
                        else:
                            s["ms"].append(ms)
                            s["evaluated"].append(evaluated or 0)
                        s["prompt"].append(prompt)
                        print(f"  tier {tier} {layout:6} #{i}: {ms:8.0f} ms, prompt {prompt} tok, evaluated {evaluated}",
                              flush=True)
            med = {k: {m: statistics.median(v) for m, v in s.items() if v} for k, s in seen.items()}
            rows.append((tier, med))
    finally:
        server.stop()
    print("\ntier  layout  prompt tok  evaluated (median)  latency ms (median)  first request of a block")
    for tier, med in rows:
        for layout in ("system", "user"):
            m = med[layout]
            print(f"{tier:4}  {layout:6}  {m['prompt']:10.0f}  {m['evaluated']:18.0f}  {m['ms']:19.0f}  "
                  f"{m['first_ms']:.0f} ms, {m['first_evaluated']:.0f} evaluated")
        s, u = med["system"], med["user"]
        print(f"{tier:4}  user/system: latency x{u['ms'] / s['ms']:.2f}, tokens evaluated x{u['evaluated'] / max(s['evaluated'], 1):.2f}")


if __name__ == "__main__":
    main()
