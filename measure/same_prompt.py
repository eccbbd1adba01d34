"""Same prompt, temperature 0, different answer? One request sent to a fresh local server three times
in a row: cold, then again with the whole prompt in the server's RAM cache of evaluated prompts, then
once more; and the same on a fresh server with that cache off. Prints each answer's opening and time.

Prompted by ``mcp-gap-05`` in ``experiments/mcp/stream-check``: the model alone and the planner sent
the same request in one run, the planner's answered from the cache in 0.9 s, and the answers differed.

    .venv/bin/python measure/same_prompt.py [--model qwen2.5-coder-1.5b] [--task mcp-gap-05]
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

from helmdeck_dspy.io.offline import apply_offline_defaults

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    apply_offline_defaults()
    warnings.simplefilter("ignore")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--task", default="mcp-gap-05")
    parser.add_argument("--ctx", type=int, default=16384)
    args = parser.parse_args()

    from helmdeck_dspy.bench.bfcl.baseline import ask_plain
    from helmdeck_dspy.catalog.models import load_catalog
    from helmdeck_dspy.engines.lm_spec import make_lm
    from helmdeck_dspy.local.install import require_installed
    from helmdeck_dspy.local.registry import get_model
    from helmdeck_dspy.local.server import LocalServer, ServerOptions
    from helmdeck_dspy.tasks import load_tasks

    catalog = load_catalog(ROOT / "eval" / "catalog" / "mcp-servers.json")
    task = next(t for t in load_tasks(path=ROOT / "eval" / "tasks" / "mcp-servers.jsonl") if t.id == args.task)
    model = get_model(args.model)
    print(f"{args.model}, {args.task}: {task.intent!r}, context {args.ctx}")
    for entries in (4, 0):
        with LocalServer(require_installed(model), model.name,
                         options=ServerOptions(n_ctx=args.ctx, prompt_cache_entries=entries)) as server:
            lm = make_lm(f"llamacpp/{model.name}", api_base=server.api_base, cache=False, num_retries=0)
            for i in range(3):
                t0 = time.perf_counter()
                answer = ask_plain(lm, task.intent, catalog, max_tokens=512, sampling={"temperature": 0.0, "seed": 7})
                print(f"  RAM cache {entries or 'off'}, call {i + 1}: {time.perf_counter() - t0:6.1f} s  "
                      f"{answer.content[:70]!r}")


if __name__ == "__main__":
    main()
