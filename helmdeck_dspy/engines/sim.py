"""SimEngine: a simulated tier LM that answers our plan prompts as a model of some kind would.

It reads the request and the catalog actually present in the prompt, plans with a noisy
lexical planner (BM25 over the shown entries, clause by clause, a pipeline when one covers the
whole request), and then dresses the answer the way the profile's model does: reasoning in a
separate field or inline ``<think>`` tags, reasoning leaks, verbose answers (each step's rationale
stays one sentence; the extra words go in the answer's reasoning), code fences,
trailing prose, empty 200s, content filters, and truncation at ``max_tokens`` with
``finish_reason = length``; and, for profiles fitted to small real models (``fitting/fit.py``),
whole answers in prose, empty answers that end normally, JSON that is not a plan or does not
decode, answers that run on until the cap, a completion-token scale and per-variant values.
Reasoning grows with the number of steps the prompt asks for, so single_pick (one step per call)
spends far fewer tokens than full_steps.

Answers are deterministic for (profile, seed, request). Latency (time to first token plus
tokens / rate) is simulated, not slept, and travels in ``provider_data``.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from functools import lru_cache
from typing import Any

from dspy.lm15 import Request, Response

from helmdeck_dspy.catalog.models import RoutingGuide, parse_catalog
from helmdeck_dspy.catalog.ranking import rank_bm25
from helmdeck_dspy.catalog.text import tokenize
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL, PLANNER_TOOL_IDS, complexity_for
from helmdeck_dspy.engines.base import make_response
from helmdeck_dspy.engines.profile import (
    Planning,
    Shape,
    SimProfile,
    Timing,
    load_profile,
)
from helmdeck_dspy.io.tokens import count_tokens, truncate_tokens
from helmdeck_dspy.program.sections import (
    CATALOG_HEADER,
    FILTER_REQUEST_HEADER,
    PRIOR_STEPS_HEADER,
    SINGLE_PICK_MARK,
    call_kind,
    request_of,
    section,
)

__all__ = ["SimEngine", "load_profile", "sim_model_name"]

_CLAUSES = re.compile(r"\s*(?:;|\.\s|,\s*(?:and\s+)?then\b|\band then\b|\bthen\b|\band also\b|,\s*and\b|,|\band\b)\s*", re.I)
SIM_VERSION = 4  # bump when the simulator's behaviour changes: it is part of the LM name, so of DSPy's cache key
MIN_SCORE = 3.0  # BM25 score below which a clause is treated as something the catalog cannot do
LEAK_TEXTS = ("I will plan this step by step.", "Planning the steps now.", "{", "Let me think about the tools first")


@lru_cache(maxsize=64)
def _catalog(text: str) -> RoutingGuide | None:
    try:
        return parse_catalog(json.loads(text))
    except Exception:  # noqa: BLE001 - a prompt without a readable catalog plans nothing
        return None


def sim_model_name(profile: SimProfile, seed: int) -> str:
    """The LM name for a simulated model. DSPy's cache key holds the name but not the engine, so
    the name carries the profile's content hash and the simulator version."""
    digest = hashlib.sha256(profile.model_dump_json(exclude=profile.digest_exclude()).encode()).hexdigest()[:10]
    return f"sim/{profile.name}/v{SIM_VERSION}-{digest}/seed{seed}"


class SimEngine:
    """``engine=`` for ``dspy.LM(sim_model_name(profile, seed), engine=SimEngine(profile, seed))``."""

    def __init__(self, profile: SimProfile | str, seed: int = 0) -> None:
        self.profile = load_profile(profile) if isinstance(profile, str) else profile
        self.seed = seed
        self.calls = 0
        # per prompt variant: (planning, shape, timing), the profile's values with the variant's overrides
        self._values = {v: (self.profile.planning_for(v), self.profile.shape_for(v), self.profile.timing_for(v))
                        for v in ("full_steps", "single_pick")}

    # DSPy can save an LM with its engine; keep that possible.
    def dump_state(self) -> dict[str, Any]:
        return {"profile": self.profile.model_dump(), "seed": self.seed}

    @classmethod
    def load_state(cls, state: dict[str, Any]) -> SimEngine:
        return cls(SimProfile.model_validate(state["profile"]), state.get("seed", 0))

    def close(self) -> None:
        pass

    # ------------------------------------------------------------------ entry point

    def complete(self, request: Request) -> Response:
        self.calls += 1
        system = request.system if isinstance(request.system, str) else ""
        messages = [(m.role, m.text or "") for m in request.messages]
        rng = random.Random(self._seed_for(system, messages, request.config.max_tokens))
        kind = call_kind(system)
        if kind == "plan":
            return self._plan_reply(request, system, messages, rng)
        if kind == "filter":
            return self._filter_reply(request, messages[-1][1])
        return make_response(request.model, _generic_answer(request, system, messages), finish_reason="stop")

    def _seed_for(self, system: str, messages: list[tuple[str, str]], max_tokens: int | None) -> int:
        h = hashlib.sha256(f"{self.profile.name}|{self.seed}|{max_tokens}|{system}".encode())
        for role, text in messages:
            h.update(f"|{role}:{text}".encode())
        return int.from_bytes(h.digest()[:8], "big")

    # ------------------------------------------------------------------ planning

    def _plan_reply(self, request: Request, system: str, messages: list[tuple[str, str]], rng: random.Random) -> Response:
        user = messages[-1][1] if messages else ""
        catalog_text = section(system, CATALOG_HEADER) or section(user, CATALOG_HEADER)
        guide = _catalog(catalog_text) if catalog_text else None
        intent = request_of(user)
        prior = section(user, PRIOR_STEPS_HEADER)
        done = len(prior.splitlines()) if prior else 0
        demos = sum(1 for role, _ in messages[:-1] if role == "assistant")
        single = SINGLE_PICK_MARK in system
        p, s, t = self._values["single_pick" if single else "full_steps"]
        steps, reasoning = self._plan(guide, intent, demos, rng, p)
        asked = 1 if single else max(1, len(steps))
        if single:
            more = len(steps) > done + 1
            steps = steps[done : done + 1]
        return self._dress(request, steps, reasoning, single, more if single else False, asked, rng, s, t)

    def _plan(self, guide: RoutingGuide | None, intent: str, demos: int, rng: random.Random,
              p: Planning) -> tuple[list[dict], str]:
        damp = 1.0 - p.demo_gain * min(demos, 4) / 4
        if guide is None or not tokenize(intent):
            return [], "Nothing in the request maps to a catalog entry."
        whole = [r for r in rank_bm25(guide, intent) if r.id not in PLANNER_TOOL_IDS]
        if whole and whole[0].kind == "pipeline" and whole[0].score >= MIN_SCORE:
            if rng.random() >= p.pipeline_blindness * damp:
                why = f"{whole[0].id} covers the whole request, so one pipeline run is enough."
                return [self._step(guide, whole, 0, intent, rng, damp, p)], why
            # Blind to the pipeline: spell out the packs it supersedes (named in the prompt), one step each.
            pipe = next(pl for pl in guide.pipelines if pl.id == whole[0].id)
            packs = list(pipe.metadata.supersedes)
            if len(packs) >= 2:
                return ([{"tool": name, "args": {}, "why": f"{name} for this part of the request"} for name in packs],
                        "Each part of the request maps to a pack, run in order.")
        steps: list[dict] = []
        used: set[str] = set()
        for clause in (c for c in _CLAUSES.split(intent) if len(tokenize(c)) >= 2):
            ranked = [r for r in rank_bm25(guide, clause) if r.id not in PLANNER_TOOL_IDS and r.id not in used]
            if not ranked or ranked[0].score < MIN_SCORE:
                continue
            step = self._step(guide, ranked, len(steps), clause, rng, damp, p)
            used.add(step["args"].get("id", step["tool"]) if step["tool"] == PIPELINE_RUN_TOOL else step["tool"])
            steps.append(step)
        if len(steps) > 1 and rng.random() < p.missing_step_rate * damp:
            steps.pop(rng.randrange(len(steps)))
        if steps and rng.random() < p.self_call_rate * damp:
            steps.insert(0, {"tool": "helmdeck.plan", "args": {}, "why": "break the request down first"})
        reasoning = "The request has several parts; one pack per part, in order." if len(steps) > 1 else (
            "One pack covers it." if steps else "No catalog entry fits this request.")
        return steps, reasoning

    def _step(self, guide: RoutingGuide, ranked: list, index: int, clause: str, rng: random.Random, damp: float,
              p: Planning) -> dict:
        pick = ranked[0]
        if len(ranked) > 1 and rng.random() < p.wrong_tool_rate * damp:
            pick = ranked[1]
        if rng.random() < p.invented_tool_rate * damp:
            words = [t for t in tokenize(clause) if len(t) > 3] or ["helper"]
            return {"tool": f"{rng.choice(words)}.{rng.choice(['run', 'get', 'make', 'transcript'])}", "args": {}, "why": clause}
        url = re.search(r"https?://\S+", clause)
        args: dict[str, Any] = {"url": url.group(0).rstrip(".,)")} if url else {}
        if pick.kind == "pipeline":
            return {"tool": PIPELINE_RUN_TOOL, "args": {"id": pick.id, "inputs": args}, "why": clause}
        return {"tool": pick.id, "args": args, "why": clause}

    # ------------------------------------------------------------------ shaping the reply

    def _dress(self, request: Request, steps: list[dict], reasoning: str, single: bool, more: bool, asked: int,
               rng: random.Random, s: Shape, t: Timing) -> Response:
        cap = request.config.max_tokens or 4096
        verbose = rng.random() < s.verbose_rate
        words = s.rationale_words
        plan_steps = []
        rambling: list[str] = []  # a verbose answer's extra words per step: they go in its reasoning
        for i, st in enumerate(steps, 1):
            why = _sentence(st["why"], words, rng)
            if verbose and s.verbose_tokens_per_step:
                extra = s.verbose_tokens_per_step * math.exp(rng.gauss(0, s.verbose_sigma) - s.verbose_sigma**2 / 2)
                rambling.append(_padding(int(extra), rng))
            plan_steps.append({"order": i, "tool": st["tool"], "args": st["args"], "rationale": why})
        complexity = complexity_for([st["tool"] for st in steps], more)
        answer: dict[str, Any] = {"steps": plan_steps, "complexity": complexity}
        if single:
            answer["more_steps_likely"] = more
        answer["reasoning"] = " ".join([reasoning, *rambling])
        visible = json.dumps(answer, ensure_ascii=False, indent=2 if verbose else None)

        strict = request.config.response_format is not None and s.strict_json_obeys
        if not strict and rng.random() < s.malformed_rate:
            visible = visible.rstrip()[:-1].rstrip() + ",}"  # a trailing comma before the closing brace
        if not strict and rng.random() < s.fence_rate:
            visible = f"```json\n{visible}\n```"
        if not strict and rng.random() < s.prose_rate:
            visible += "\n\nThis plan covers every part of the request."

        r_tokens = 0
        if s.reasoning != "none":
            mean = s.reasoning_base_tokens + s.reasoning_per_step_tokens * asked
            r_tokens = int(mean * math.exp(rng.gauss(0, s.reasoning_sigma) - s.reasoning_sigma**2 / 2)) if mean else 0
        reasoning_text = _padding(r_tokens, rng) if r_tokens else None
        finish: str | None = "stop"
        roll = rng.random()
        if roll < s.empty_rate:
            visible, reasoning_text, finish, r_tokens = "", None, None, 0
        elif roll < s.empty_rate + s.content_filter_rate:
            visible, finish = "", "content_filter"
        elif roll < s.empty_rate + s.content_filter_rate + s.leak_rate and s.reasoning != "none":
            visible = rng.choice(LEAK_TEXTS)
        else:
            odd = _odd_reply(s, roll - (s.empty_rate + s.content_filter_rate + s.leak_rate), visible, steps, cap, rng)
            if odd is not None:
                visible = odd
                if not odd:  # an empty answer that ends normally carries nothing at all
                    reasoning_text, r_tokens = None, 0

        inline = s.reasoning == "inline" and reasoning_text
        if inline:
            visible = f"<think>\n{reasoning_text}\n</think>\n{visible}"
        scale = s.completion_token_scale
        v_tokens = count_tokens(visible) if visible else 0
        if scale != 1.0:
            v_tokens = round(v_tokens * scale)
        counted = v_tokens if (inline or not s.reasoning_counts_toward_cap) else v_tokens + r_tokens
        completion = v_tokens + (0 if inline else r_tokens)
        if finish == "stop" and counted > cap:
            # cut the visible text where the cap ran out (inline reasoning eats the cap first)
            budget = cap - (0 if inline or not s.reasoning_counts_toward_cap else r_tokens)
            visible = truncate_tokens(visible, max(budget, 0) if scale == 1.0 else max(int(budget / scale), 0))
            finish, completion = "length", cap
        rate = t.tokens_per_s * math.exp(rng.gauss(0, t.tokens_per_s_sigma))
        latency = t.ttft_ms * math.exp(rng.gauss(0, t.ttft_sigma)) + 1000 * completion / rate
        return make_response(
            request.model, visible, reasoning=None if inline else reasoning_text, finish_reason=finish,
            prompt_tokens=_prompt_tokens(request), completion_tokens=completion, latency_ms=round(latency, 1),
        )

    def _filter_reply(self, request: Request, user: str) -> Response:
        ids = re.findall(r"^- (\S+)", user, re.M)
        intent = section(user, FILTER_REQUEST_HEADER) or ""
        wanted = set(tokenize(intent))
        scored = sorted(ids, key=lambda i: (-len(set(tokenize(i)) & wanted), i))[:8]
        return make_response(request.model, json.dumps({"ids": scored}), finish_reason="stop", completion_tokens=40)


def _odd_reply(s: Shape, u: float, visible: str, steps: list[dict], cap: int, rng: random.Random) -> str | None:
    """The answer of a failure the profile's newer rates draw (``u``: the failure draw past the
    older rates' share), or None when the draw falls outside them. Draws from ``rng`` only for a
    reply it makes, so a profile with these rates at 0 answers exactly as before they existed."""
    if u < 0:
        return None
    bands = (("empty_stop", s.empty_stop_rate), ("no_json", s.no_json_rate), ("not_plan", s.not_plan_rate),
             ("garbled", s.garbled_rate), ("runaway", s.runaway_rate))
    for kind, rate in bands:
        if u < rate:
            break
        u -= rate
    else:
        return None
    per_token = 1.0 / s.completion_token_scale  # counted tokens of text per reported token
    if kind == "empty_stop":
        return ""
    if kind == "no_json":
        target = s.no_json_tokens * math.exp(rng.gauss(0, s.no_json_sigma))
        return _prose(min(target, cap + 20) * per_token, rng)
    if kind == "not_plan":  # one step object where the plan should be
        first = steps[0] if steps else {"tool": "unknown", "args": {}, "why": "the request"}
        return json.dumps({"tool": first["tool"], "args": first["args"], "rationale": _sentence(str(first["why"]), 12, rng)})
    if kind == "garbled":  # braces around prose: nothing decodes, and repair gives no plan
        return "{ " + _prose(40 * per_token, rng) + " }"
    return visible + "\n" + _prose((cap + 20) * per_token, rng)  # runaway: cut by the cap


def _prose(tokens: float, rng: random.Random) -> str:
    """Plain sentences (no braces or brackets) of about ``tokens`` counted tokens."""
    opening = "Sure, here is how I would handle this request."  # 11 tokens with the closing stop; 1 per filler word
    start = rng.randrange(len(_FILLER))
    words = " ".join(_FILLER[(start + i) % len(_FILLER)] for i in range(max(1, round(tokens) - 12)))
    return f"{opening} {words}."


def _sentence(clause: str, words: int, rng: random.Random) -> str:
    base = clause.strip().rstrip(".")
    text = f"Handles '{base}'" if base else "Needed for the request"
    return text + ("." if len(text.split()) >= words else " and passes its result on.")


_FILLER = ("the user wants this part done before the next one so the output of this call feeds the "
           "following step and nothing else in the catalog fits better for that reason").split()


def _padding(tokens: int, rng: random.Random) -> str:
    n = max(1, int(tokens * 0.75))  # about 0.75 words per token
    start = rng.randrange(len(_FILLER))
    return " ".join(_FILLER[(start + i) % len(_FILLER)] for i in range(n))


def _prompt_tokens(request: Request) -> int:
    system = request.system if isinstance(request.system, str) else ""
    return count_tokens(system) + sum(count_tokens(m.text or "") + 4 for m in request.messages)


def _generic_answer(request: Request, system: str, messages: list[tuple[str, str]]) -> str:
    """Answer DSPy's own prompts (instruction proposals, reflection) in the format they ask for."""
    m = re.search(r"Your output fields are:\n(.*?)\n\n", system, re.S)
    names = re.findall(r"\d+\. `(\w+)`", m.group(1)) if m else ["answer"]
    values = {n: "Plan with exact catalog ids; prefer a pipeline that covers the whole request; "
                 "one short rationale per step." for n in names}
    # DSPy's ChatAdapter ends its field list with [[ ## completed ## ]]; its JSON adapter does not.
    if request.config.response_format is not None or "[[ ## completed ## ]]" not in system:
        return json.dumps(values)
    return "\n\n".join(f"[[ ## {n} ## ]]\n{v}" for n, v in values.items()) + "\n\n[[ ## completed ## ]]"
