"""The simulator's knobs for what small real models do (fitted profiles): each produces its own
failure cause through the real decoder, per-variant overrides apply to their variant only, and a
profile that does not use them answers byte for byte as before they existed."""

from __future__ import annotations

import hashlib
import json

import pytest
from dspy.lm15 import Config, Message, Request, TextPart

from helmdeck_dspy.catalog.models import load_catalog
from helmdeck_dspy.decoding.parsing import parse_completion
from helmdeck_dspy.program.calls import LATENCY_KEY, raw_finish_reason
from helmdeck_dspy.engines.profile import Shape, SimProfile, Timing, load_profile
from helmdeck_dspy.engines.sim import SimEngine, sim_model_name
from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.io import tokens as token_counting
from helmdeck_dspy.program.adapter import PlanAdapter
from helmdeck_dspy.program.spec import PromptSpec
from helmdeck_dspy.program.modules import MODULES
from helmdeck_dspy.tasks import load_tasks

CATALOG = load_catalog()
DEV = load_tasks("dev")
MODEL = "local/qwen2.5-coder-0.5b-instruct"


def request(intent: str, variant: str = "full_steps", max_tokens: int = 1500, json_object: bool = False) -> Request:
    """The request the planner sends, rendered by the real PlanAdapter."""
    adapter = PlanAdapter(PromptSpec(variant=variant))
    messages = adapter.format(MODULES[variant]().plan.signature, [],
                              {"user_intent": intent, "catalog": CATALOG.render(), "context": None, "prior_steps": None})
    convo = tuple(Message.user(m["content"]) if m["role"] == "user" else Message.assistant(m["content"]) for m in messages[1:])
    config = Config(max_tokens=max_tokens, response_format={"type": "json_object"} if json_object else None)
    return Request(model="sim/test", system=messages[0]["content"], messages=convo, config=config)


def text_of(resp) -> str:
    return "".join(p.text for p in resp.message.parts if isinstance(p, TextPart))


def decoded(resp):
    return parse_completion(text_of(resp), raw_finish_reason(resp))


def engine(seed: int = 0, variants: dict | None = None, timing: dict | None = None, **shape) -> SimEngine:
    return SimEngine(SimProfile(name="knobs", model=MODEL, shape=Shape(**shape), timing=Timing(**(timing or {})),
                                variants=variants or {}), seed=seed)


# ----------------------------------------------------------------------------- existing profiles unchanged

# Digests of 80 answers per profile (dev tasks 1-20 x both variants x caps 300 and 4000, JSON mode for
# single_pick at 300), taken with the simulator as it was before these knobs were added, then retaken
# once (simulator v4) when a verbose answer's extra words moved from each step's rationale into its
# reasoning: over 960 answers of the four profiles no finish reason changed and 52 token counts moved
# (68 tokens in all); and again when the catalog's rendering changed (argument schemas as signature
# lines at tiers B/C), which changes every prompt.
REFERENCE = {
    "frontier-like": "5945fe68addff1f78cd780bf9185efe2fbca8a08b7440059d7cc7f439a0c13ff",
    "kimi-like": "3bc17db9712a8a0c964208f7039e4ecbbeacae192c05bb56035f669621cb7220",
    "mid-tier": "0154f3609e918b137fd9fccf3264876570dcf9b774dbe5cd448d2509f9c75467",
    "nemotron-like": "f0c8fce94d0efaa5055a02b19ef4741c409a56fc76b8b747f3c6144522984ec2",
}
NAMES = {  # the simulator LM names (DSPy's cache key): the profiles' content hashes did not change
    "frontier-like": "sim/frontier-like/v4-68cb2ce63b/seed0",
    "kimi-like": "sim/kimi-like/v4-87f5d1c27b/seed0",
    "mid-tier": "sim/mid-tier/v4-94d2a7202e/seed0",
    "nemotron-like": "sim/nemotron-like/v4-227bbc4ab0/seed0",
}


def _digest(profile: SimProfile) -> str:
    h = hashlib.sha256()
    eng = SimEngine(profile, seed=5)
    for task in DEV[:20]:
        for variant in ("full_steps", "single_pick"):
            for cap in (300, 4000):
                r = eng.complete(request(task.intent, variant, cap, json_object=cap == 300 and variant == "single_pick"))
                parts = [(type(p).__name__, p.text) for p in r.message.parts]
                h.update(json.dumps([parts, raw_finish_reason(r), r.usage.output_tokens, r.usage.input_tokens,
                                     (r.provider_data or {}).get(LATENCY_KEY)]).encode())
    return h.hexdigest()


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_hand_written_profiles_answer_exactly_as_before_the_new_knobs(name):
    token_counting._encoding()
    if token_counting.METHOD != "cl100k_base":
        pytest.skip("the reference digests were taken with the cl100k_base token counts")
    profile = load_profile(name)
    assert sim_model_name(profile, 0) == NAMES[name]
    assert _digest(profile) == REFERENCE[name]


def test_the_lm_name_changes_only_when_a_new_knob_is_used():
    base = SimProfile(name="x", model=MODEL)
    assert sim_model_name(base, 0) == sim_model_name(SimProfile(name="x", model=MODEL, shape=Shape(no_json_rate=0.0)), 0)
    for changed in (SimProfile(name="x", model=MODEL, shape=Shape(no_json_rate=0.1)),
                    SimProfile(name="x", model=MODEL, timing=Timing(ttft_sigma=0.5)),
                    SimProfile(name="x", model=MODEL, variants={"single_pick": {"shape": {"fence_rate": 0.5}}})):
        assert sim_model_name(changed, 0) != sim_model_name(base, 0)


# ----------------------------------------------------------------------------- each knob, its cause


@pytest.mark.parametrize(
    ("shape", "cause", "finish"),
    [
        ({"empty_stop_rate": 1.0}, "likely_timeout", "stop"),
        ({"no_json_rate": 1.0, "no_json_tokens": 80, "no_json_sigma": 0.0}, "no_json", "stop"),
        ({"no_json_rate": 1.0, "no_json_tokens": 5000, "no_json_sigma": 0.0}, "length_truncated", "length"),
        ({"not_plan_rate": 1.0}, "schema_mismatch", "stop"),
        ({"garbled_rate": 1.0}, "constrained_deadlock", "stop"),
        ({"runaway_rate": 1.0}, "length_truncated", "length"),
    ],
)
def test_each_new_rate_gives_its_failure_cause(shape, cause, finish):
    eng = engine(**shape)
    for task in DEV[:8]:
        resp = eng.complete(request(task.intent))
        result = decoded(resp)
        assert (result.outcome, result.cause, raw_finish_reason(resp)) == ("failed", cause, finish), text_of(resp)[:200]
        if finish == "length":
            assert resp.usage.output_tokens == 1500


def test_prose_answers_have_no_json_and_about_the_asked_length():
    eng = engine(no_json_rate=1.0, no_json_tokens=300, no_json_sigma=0.0)
    for task in DEV[:5]:
        resp = eng.complete(request(task.intent))
        assert "{" not in text_of(resp) and "[" not in text_of(resp)
        assert resp.usage.output_tokens == 300


def test_rates_mix_at_their_shares_and_leave_the_rest_clean():
    eng = engine(empty_stop_rate=0.2, no_json_rate=0.2, not_plan_rate=0.1, no_json_tokens=60)
    causes = [decoded(eng.complete(request(f"{t.intent} #{i}"))).cause for i in range(4) for t in DEV]
    n = len(causes)
    assert abs(causes.count("likely_timeout") / n - 0.2) < 0.07
    assert abs(causes.count("no_json") / n - 0.2) < 0.07
    assert abs(causes.count("schema_mismatch") / n - 0.1) < 0.05
    assert abs(causes.count(None) / n - 0.5) < 0.08


def test_failure_rates_may_not_add_up_to_more_than_one():
    with pytest.raises(ValueError, match="more than 1"):
        Shape(no_json_rate=0.6, empty_stop_rate=0.5)


def test_completion_token_scale_scales_the_count_and_the_cap_applies_to_it():
    plain, scaled = engine(), engine(completion_token_scale=2.0)
    for task in DEV[:6]:
        a, b = plain.complete(request(task.intent)), scaled.complete(request(task.intent))
        assert text_of(a) == text_of(b)
        assert abs(b.usage.output_tokens - 2 * a.usage.output_tokens) <= 1
    tight = engine(completion_token_scale=3.0)
    resp = tight.complete(request(DEV[0].intent, max_tokens=60))
    assert raw_finish_reason(resp) == "length" and resp.usage.output_tokens == 60
    assert token_counting.count_tokens(text_of(resp)) <= 20


def test_ttft_sigma_zero_gives_exact_latency():
    eng = engine(timing={"ttft_ms": 1000, "ttft_sigma": 0.0, "tokens_per_s": 50, "tokens_per_s_sigma": 0.0})
    resp = eng.complete(request(DEV[0].intent))
    assert resp.provider_data[LATENCY_KEY] == pytest.approx(1000 + 1000 * resp.usage.output_tokens / 50, abs=0.1)


# ----------------------------------------------------------------------------- per-variant values


def test_variant_overrides_apply_to_their_variant_only():
    eng = engine(variants={"single_pick": {"shape": {"no_json_rate": 1.0, "no_json_tokens": 50},
                                           "planning": {"invented_tool_rate": 1.0}}})
    for task in DEV[:6]:
        assert decoded(eng.complete(request(task.intent, "single_pick"))).cause == "no_json"
        full = decoded(eng.complete(request(task.intent, "full_steps")))
        assert full.outcome == "strict"
        assert all("." not in s.tool or s.tool in CATALOG.id_set for s in full.plan.steps)
    inventive = engine(variants={"full_steps": {"planning": {"invented_tool_rate": 1.0}}})
    tools = [s.tool for t in DEV[:10] for s in decoded(inventive.complete(request(t.intent))).plan.steps]
    assert tools and not set(tools) & CATALOG.id_set


def test_profile_values_for_a_variant():
    p = SimProfile(name="v", model=MODEL, shape=Shape(fence_rate=0.1),
                   variants={"single_pick": {"shape": {"fence_rate": 0.4}}})
    assert p.shape_for("full_steps").fence_rate == 0.1
    assert p.shape_for("single_pick").fence_rate == 0.4
    assert p.planning_for("single_pick") == p.planning


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[variants.single_pick.shape]\nfence_rat = 0.1\n", "fence_rat"),
        ("[variants.single_pick.planning]\nwrong_tool_rate = 2\n", "wrong_tool_rate"),
        ("[variants.other.shape]\nfence_rate = 0.1\n", "other"),
        ("[shape]\nno_json_rate = 0.7\nrunaway_rate = 0.7\n", "more than 1"),
    ],
)
def test_bad_overrides_are_data_file_errors(tmp_path, text, fragment):
    path = tmp_path / "bad.toml"
    path.write_text(f'name = "bad"\nmodel = "{MODEL}"\n{text}', encoding="utf-8")
    with pytest.raises(DataFileError) as info:
        load_profile(path)
    assert fragment in str(info.value) and str(path) in str(info.value)
