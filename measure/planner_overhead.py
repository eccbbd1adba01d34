"""Planner overhead per call with the LM taken out, and prompt sizes per tier.

An instant in-process engine answers every call, so what is timed is the planner's own work:
catalog selection, rendering, the DSPy module call, parsing and guards. The baseline, measured
in the same run on the same engine and inputs, is a plain ``dspy.Predict(PlanSignature)`` with
DSPy's default ChatAdapter and the whole catalog as an input field — the naive way to build
this planner with DSPy.

    .venv/bin/python measure/planner_overhead.py [--n 60]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings

from helmdeck_dspy.io.offline import apply_offline_defaults

PLAN = {
    "steps": [{"order": 1, "tool": "web.scrape", "args": {"url": "https://example.org"}, "rationale": "Fetch it."},
              {"order": 2, "tool": "slides.outline", "args": {}, "rationale": "Outline it."}],
    "complexity": "pack-chain", "more_steps_likely": False, "reasoning": "Two packs.",
}
MODELS = {
    "A": "anthropic/claude-sonnet-4-6",
    "B": "openrouter/deepseek/deepseek-v3.2",
    "C": "openrouter/nvidia/nemotron-3-super-120b-a12b:free",
}


class InstantEngine:
    """Answers at once: JSON for our adapter, ChatAdapter fields for the baseline."""

    def __init__(self) -> None:
        self.last = None

    def complete(self, request):
        from helmdeck_dspy.engines.base import make_response

        self.last = request
        if "[[ ## " in (request.system or ""):
            text = (f"[[ ## steps ## ]]\n{json.dumps(PLAN['steps'])}\n\n[[ ## complexity ## ]]\npack-chain\n\n"
                    "[[ ## more_steps_likely ## ]]\nFalse\n\n[[ ## reasoning ## ]]\nTwo packs.\n\n[[ ## completed ## ]]")
        else:
            text = json.dumps(PLAN)
        return make_response(request.model, text, finish_reason="stop", prompt_tokens=1, completion_tokens=1)

    def close(self):
        pass


def median_ms(fn, items, repeat=3):
    samples = []
    for _ in range(repeat):
        for it in items:
            t0 = time.perf_counter()
            fn(it)
            samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=60)
    args = ap.parse_args()
    apply_offline_defaults()
    import dspy
    from helmdeck_dspy.signatures.plan import PlanSignature

    from helmdeck_dspy.catalog import load_catalog
    from helmdeck_dspy.io.tokens import METHOD, count_message_tokens
    from helmdeck_dspy.planning.planner import Planner
    from helmdeck_dspy.program.calls import capture_completions
    from helmdeck_dspy.tasks import load_tasks

    intents = [t.intent for t in load_tasks()][: args.n]
    catalog = load_catalog()
    lm = dspy.LM("bench/instant", engine=InstantEngine(), cache=False)

    print(f"{len(intents)} intents, LM = instant in-process engine, tokens = {METHOD}\n")
    print(f"{'tier':4} {'planner ms':>10} {'naive dspy ms':>14} {'ratio':>6}   {'prompt tokens p50 / max':>24}")
    for tier, model in MODELS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            planner = Planner.for_model(model, lm=lm, catalog=catalog, use_filter=False)
        ours = median_ms(planner.plan, intents)

        sizes = []
        for intent in intents:
            with capture_completions() as calls:
                planner.plan(intent)
            c = calls[-1]
            sizes.append(count_message_tokens(c.system, c.messages))

        naive = dspy.Predict(PlanSignature)
        rendered = catalog.render()

        def naive_call(intent, naive=naive, rendered=rendered):
            with dspy.context(lm=lm):
                naive(user_intent=intent, catalog=rendered)

        base = median_ms(naive_call, intents)
        print(f"{tier:4} {ours:10.2f} {base:14.2f} {base / ours:6.1f}x   {statistics.median(sizes):>12.0f} / {max(sizes)}")
    print("\nratio = naive DSPy time / planner time (higher is better for the planner)")


if __name__ == "__main__":
    main()
