"""Hypothesis strategies and fuzz targets for the parsers that read outside input.

Shared by ``tests/test_fuzz.py`` (a few hundred examples per target, in CI) and
``measure/fuzz.py`` (tens of thousands). Each target takes one generated input and either
returns or raises; the only exceptions it lets through are the ones that are bugs:

- ``parse_completion`` must never raise, must not fall back to its internal-error net, and must
  return a result whose fields agree with its outcome;
- catalog and trace loading may raise only :class:`HelmdeckError` subclasses (``CatalogError``,
  ``DataFileError``); a catalog that loads must also render and select;
- replaying trace lines through the evaluator may raise only ``DataFileError``.

Inputs mix structured generators (plans, catalogs and trace records that are valid or nearly
so, then mutated: keys dropped or retyped, text truncated or spliced, deep nesting, odd
Unicode, huge numbers, NaN) with raw text and raw bytes.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from helmdeck_dspy.decoding.causes import FAILURE_CAUSES
from helmdeck_dspy.decoding.parsing import ParseResult, parse_completion
from helmdeck_dspy.errors import DataFileError, HelmdeckError

# ------------------------------------------------------------------------------ building blocks

ODD_STRINGS = [
    "", " ", "\x00", "\ud800", "\udfff", "a\udc80b", "\ufeff", "\u202e", "\u2028", "\u0085", "𝔘𝔫𝔦",
    "e\u0301", "Ǆ", "ß", "İ", "ﬃ", "\r\n", "\r", "\t", "\x1b[31m", "<think>", "</think>", "<THINKING a=1>",
    "[REASONING]", "[/reasoning]", "```", "```json\n", "{", "}", "[", "]", '"', "\\", "\\u", "\\ud800",
    "null", "NaN", "Infinity", "-Infinity", "1e999", "-0", "名前", "🙂🙂🙂", "a" * 300, "helmdeck__pipeline-run",
    "blog.write", "image.generate", "memory.store", "__proto__", "steps", "STEPS",
]
HUGE_NUMBERS = [
    10**400, -(10**400), 2**63, -(2**63) - 1, 2**64, 10**4000, float("nan"), float("inf"), float("-inf"),
    1e308, 5e-324, -0.0, 0,
]
FINISH_REASONS = [
    "stop", "length", "max_tokens", "MAX_TOKENS", "FINISH_REASON_MAX_TOKENS", "content_filter", "SAFETY",
    "recitation", "tool_calls", "function_call", "end_turn", "eos", "error", " Stop ", "",
]
TOOL_NAMES = ["blog.write", "image.generate", "memory.store", "helmdeck__pipeline-run", "web.search", "unknown"]
MODELS = [
    "openrouter/nvidia/nemotron-3-super-120b-a12b:free", "anthropic/claude-sonnet-4-6",
    "openrouter/deepseek/deepseek-v3.2", "openai/gpt-4o-mini", "", " ", "x" * 200,
]

any_char = st.integers(0, 0x10FFFF).map(chr)  # surrogates included, unlike st.characters()
text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(ODD_STRINGS),
    st.text(any_char, max_size=20),
)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.sampled_from(HUGE_NUMBERS), text,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(text, inner, max_size=4)),
    max_leaves=12,
)


def nest(value: Any, depth: int, kind: str) -> Any:
    """``value`` wrapped ``depth`` times in lists (``[``) or single-key objects (``{``), iteratively."""
    for _ in range(depth):
        value = [value] if kind == "[" else {"k": value}
    return value


def deep_text(depth: int, kind: str, closed: bool = True, leaf: str = "1") -> str:
    """JSON text nested ``depth`` levels deep, without building (or recursing over) the value."""
    opener, closer = ("[", "]") if kind == "[" else ('{"k":', "}")
    return opener * depth + leaf + (closer * depth if closed else "")


depths = st.one_of(st.integers(1, 200), st.integers(200, 3000), st.just(10_000))


@st.composite
def deep_json_text(draw: st.DrawFn) -> str:
    return deep_text(draw(depths), draw(st.sampled_from("[{")), draw(st.booleans()))


@st.composite
def mutated(draw: st.DrawFn, obj: Any) -> Any:
    """Drop, retype or deepen a few keys of a dict (recursively into one list element)."""
    if isinstance(obj, list) and obj and draw(st.booleans()):
        i = draw(st.integers(0, len(obj) - 1))
        obj = [*obj[:i], draw(mutated(obj[i])), *obj[i + 1 :]]
    if not isinstance(obj, dict):
        return obj
    obj = dict(obj)
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["drop", "retype", "add", "deep", "upper", "recurse"]))
        keys = list(obj)
        if op == "add" or not keys:
            obj[draw(text)] = draw(json_values)
            continue
        key = draw(st.sampled_from(keys))
        if op == "drop":
            del obj[key]
        elif op == "retype":
            obj[key] = draw(json_values)
        elif op == "deep":
            obj[key] = nest(draw(scalars), draw(st.integers(1, 400)), draw(st.sampled_from("[{")))
        elif op == "upper" and isinstance(key, str):
            obj[key.upper()] = obj.pop(key)
        elif op == "recurse":
            obj[key] = draw(mutated(obj[key]))
    return obj


def dumps(value: Any, ensure_ascii: bool = False, indent: int | None = None) -> str:
    """JSON text for generated values; falls back to a marker for what json cannot write."""
    try:
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, allow_nan=True)
    except (ValueError, RecursionError):  # ints over the digit limit, or nested beyond recursion
        return '{"unwritable": true}'


@st.composite
def spliced(draw: st.DrawFn, s: str) -> str:
    """Text mutations: truncate, delete, insert odd text, duplicate, a deep value, huge digits."""
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["truncate", "delete", "insert", "dup", "deep", "digits", "char"]))
        i = draw(st.integers(0, len(s)))
        if op == "truncate":
            s = s[:i]
        elif op == "delete":
            s = s[:i] + s[i + draw(st.integers(1, 20)) :]
        elif op == "insert":
            s = s[:i] + draw(text) + s[i:]
        elif op == "dup":
            s = s[:i] + s[i : i + draw(st.integers(1, 200))] * draw(st.integers(2, 5)) + s[i:]
        elif op == "deep":
            s = s[:i] + draw(deep_json_text()) + s[i:]
        elif op == "digits":
            s = s[:i] + draw(st.sampled_from(["1" * 5000, "-" + "9" * 4400, "1e400", "1" * 40 + ".5e-999"])) + s[i:]
        else:
            s = s[:i] + draw(st.sampled_from(list('{}[]",:\\\n\x00') + ["\ud800", "\\ud800", "\\u00"])) + s[i + 1 :]
    return s


# ------------------------------------------------------------------------------ completions

steps = st.fixed_dictionaries(
    {"tool": st.one_of(st.sampled_from(TOOL_NAMES), text), "args": st.dictionaries(text, json_values, max_size=3),
     "rationale": text},
    optional={"id": text, "depends_on": json_values},
)
plans = st.fixed_dictionaries(
    {"steps": st.lists(steps, max_size=5)},
    optional={"complexity": st.one_of(st.sampled_from(["single", "multi"]), json_values), "reasoning": text,
              "done": st.booleans()},
).flatmap(mutated)


@st.composite
def completion_bodies(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["plan", "plan", "plan", "json", "deep", "text", "bytes"]))
    if kind == "plan":
        body = dumps(draw(plans), draw(st.booleans()), draw(st.sampled_from([None, 2])))
    elif kind == "json":
        body = dumps(draw(json_values))
    elif kind == "deep":
        body = draw(deep_json_text())
    elif kind == "text":
        body = draw(st.text(any_char, max_size=200))
    else:
        body = draw(st.binary(max_size=200)).decode("utf-8", errors=draw(st.sampled_from(["replace", "surrogateescape"])))
    return draw(spliced(body))


@st.composite
def completion_texts(draw: st.DrawFn) -> str:
    body = draw(completion_bodies())
    for _ in range(draw(st.integers(0, 3))):
        wrap = draw(st.sampled_from(["fence", "open_fence", "prose", "think", "unclosed", "orphan", "bracket", "twice"]))
        if wrap == "fence":
            body = f"```{draw(st.sampled_from(['', 'json', 'JSON ']))}\n{body}\n```"
        elif wrap == "open_fence":
            body = f"```json\n{body}"
        elif wrap == "prose":
            body = f"{draw(text)} {body} {draw(text)}"
        elif wrap == "think":
            body = f"<think>{draw(text)}</think>{body}"
        elif wrap == "unclosed":
            body = f"{body}<think>{draw(text)}"
        elif wrap == "orphan":
            body = f"{draw(text)}</think>{body}"
        elif wrap == "bracket":
            body = f"[REASONING]{draw(text)}[/REASONING]{body}"
        else:
            body = body + draw(st.sampled_from(["", "\n", " and "])) + body
    return body


completions = st.tuples(
    st.one_of(completion_texts(), st.none()),
    st.one_of(st.none(), st.sampled_from(FINISH_REASONS), text),
    st.one_of(st.none(), text),
)
"""``(content, finish_reason, reasoning_content)`` triples for :func:`parse_completion`."""


def check_parse(case: tuple[str | None, str | None, str | None]) -> ParseResult:
    """Run :func:`parse_completion` and check what came back; raises AssertionError on a bad result."""
    content, finish, reasoning = case
    r = parse_completion(content, finish, reasoning)
    assert isinstance(r, ParseResult), type(r)
    assert "internal_error" not in r.notes, f"internal error caught by the safety net: {r.error}"
    if r.ok:
        assert r.plan is not None and r.cause is None, r
        assert isinstance(r.value, dict), type(r.value)
    else:
        assert r.cause in FAILURE_CAUSES and r.plan is None, r
    json.dumps(r.to_json_dict(), ensure_ascii=False).encode("utf-8")  # the CLI's --json form
    if r.plan is not None:
        r.plan.model_dump_json()
    return r


# ------------------------------------------------------------------------------ catalogs

metadata = st.fixed_dictionaries(
    {},
    optional={key: st.one_of(st.lists(text, max_size=3), json_values)
              for key in ("accepts", "produces", "intent_keywords", "limitations", "supersedes")}
    | {"typical_use": st.one_of(text, json_values),
       "steps": st.one_of(st.lists(st.fixed_dictionaries({}, optional={"id": text, "name": text, "pack": text}),
                                   max_size=3), json_values),
       "inputs": json_values, "outputs": json_values, "extra": json_values},
)
names = st.one_of(st.sampled_from(TOOL_NAMES), text)
schemas = st.recursive(
    st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "object", "array"])},
                          optional={"description": text}),
    lambda inner: st.one_of(
        st.fixed_dictionaries({"type": st.just("object"), "properties": st.dictionaries(text, inner, max_size=3)}),
        st.fixed_dictionaries({"type": st.just("array"), "items": inner}),
    ),
    max_leaves=6,
)
packs = st.fixed_dictionaries(
    {"name": names},
    optional={"description": text, "metadata": metadata, "parameters": st.one_of(schemas, json_values)},
).flatmap(mutated)
pipelines = st.fixed_dictionaries(
    {"id": names}, optional={"name": text, "description": text, "metadata": metadata}
).flatmap(mutated)
class Opaque:
    """Carries a generated object past Hypothesis's pretty-printer, which recurses into deep values."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        try:
            return f"Opaque({json.dumps(self.value, ensure_ascii=False)[:400]})"
        except (ValueError, RecursionError):
            return f"Opaque(<a {type(self.value).__name__} nested too deeply for json.dumps>)"


catalog_objects = st.one_of(
    st.fixed_dictionaries(
        {}, optional={"packs": st.one_of(st.lists(packs, max_size=6), json_values),
                      "pipelines": st.one_of(st.lists(pipelines, max_size=4), json_values)},
    ).flatmap(mutated),
    json_values,
    depths.flatmap(lambda d: st.sampled_from("[{").map(lambda k: {"packs": [{"name": "a", "metadata": {"extra": nest(1, d, k)}}]})),
).map(Opaque)
"""Decoded (JSON-ish) objects for :func:`parse_catalog`, wrapped in :class:`Opaque`."""


@st.composite
def mutated_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["truncate", "flip", "insert", "bom"]))
        i = draw(st.integers(0, len(data)))
        if op == "truncate":
            data = data[:i]
        elif op == "flip" and data:
            i = min(i, len(data) - 1)
            data = data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1 :]
        elif op == "insert":
            data = data[:i] + draw(st.sampled_from([b"\xff", b"\x00", b"\xed\xa0\x80", b"\xc0\xaf", b"\n", b"\r",
                                                   b"\xef\xbb\xbf", b"\xf4\x90\x80\x80"])) + data[i:]
        else:
            data = b"\xef\xbb\xbf" + data
    return data


@st.composite
def catalog_files(draw: st.DrawFn) -> bytes:
    """File contents for :func:`load_catalog`: JSON text of catalog objects, mutated, or raw bytes."""
    kind = draw(st.sampled_from(["json", "json", "json", "deep", "utf16", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    if kind == "deep":
        return deep_text(draw(depths), draw(st.sampled_from("[{")), draw(st.booleans())).encode()
    body = draw(spliced(dumps(draw(catalog_objects).value, draw(st.booleans()), draw(st.sampled_from([None, 1])))))
    if kind == "utf16":
        return body.encode("utf-16", errors="surrogatepass")
    return draw(mutated_bytes(body.encode("utf-8", errors=draw(st.sampled_from(["surrogatepass", "replace"])))))


def _budgets():
    from helmdeck_dspy.budgets import budget_for

    return [budget_for(m) for m in ("openrouter/nvidia/nemotron-3-super-120b-a12b:free", "openrouter/deepseek/deepseek-v3.2")]


BUDGETS = _budgets()  # a Tier C and a Tier B budget


def use_catalog(guide: Any, intent: str = "write a blog post and an image") -> None:
    """What every loaded catalog must survive: rendering, sizing and selection on tiers C and B."""
    from helmdeck_dspy.catalog.select import select_catalog

    guide.render()
    guide.size_bytes()
    for budget in BUDGETS:
        for ranker in ("lexical", "bm25"):
            selected, _trim = select_catalog(guide, budget, intent, ranker=ranker)
            selected.size_bytes()


def check_parse_catalog(obj: Opaque) -> None:
    from helmdeck_dspy.catalog.models import parse_catalog

    try:
        guide = parse_catalog(obj.value)
    except HelmdeckError:
        return
    use_catalog(guide)


def check_load_catalog(data: bytes) -> None:
    from helmdeck_dspy.catalog.models import load_catalog

    path = scratch_file("catalog.json", data)
    try:
        guide = load_catalog(path)
    except HelmdeckError:
        return
    use_catalog(guide)


# ------------------------------------------------------------------------------ traces

@lru_cache(maxsize=1)
def _task_ids() -> tuple[str, ...]:
    from helmdeck_dspy.tasks import load_tasks

    return tuple(t.id for t in load_tasks())[:20]


trace_records = st.fixed_dictionaries(
    {"id": st.one_of(st.text(min_size=1, max_size=10), json_values)},
    optional={
        "source": st.one_of(st.sampled_from(["live", "sim:nemotron-like", "import:openai"]), json_values),
        "model": st.one_of(st.sampled_from(MODELS), json_values),
        "tier": st.one_of(st.sampled_from(["A", "B", "C", "D", ""]), json_values),
        "prompt_variant": st.one_of(st.sampled_from(["full_steps", "single_pick", "both", ""]), json_values),
        "task_id": st.one_of(st.deferred(lambda: st.sampled_from(_task_ids())), text),
        "intent": text,
        "max_tokens": st.one_of(st.integers(), st.sampled_from(HUGE_NUMBERS), json_values),
        "content": st.one_of(completion_texts(), json_values),
        "reasoning_content": st.one_of(text, json_values),
        "finish_reason": st.one_of(st.sampled_from(FINISH_REASONS), json_values),
        "completion_tokens": st.one_of(st.integers(), st.sampled_from(HUGE_NUMBERS), json_values),
        "prompt_tokens": st.one_of(st.integers(), json_values),
        "latency_ms": st.one_of(st.floats(), st.sampled_from(HUGE_NUMBERS), json_values),
        "http_status": st.one_of(st.sampled_from([200, 429, 500, 503, 0, -1, 10**6]), json_values),
        "error": st.one_of(text, json_values),
        "outcome_label": st.one_of(st.sampled_from(["success", "strict", "clean", "failed", "length_truncated"]), json_values),
        "recorded_at": text,
        "call": st.one_of(st.sampled_from(["plan", "filter", ""]), json_values),
        "extra_field": json_values,
    },
).flatmap(mutated)


@st.composite
def trace_lines(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["record"] * 6 + ["json", "deep", "blank", "text"]))
    if kind == "record":
        line = dumps(draw(trace_records), draw(st.booleans()))
    elif kind == "json":
        line = dumps(draw(json_values))
    elif kind == "deep":
        line = draw(deep_json_text())
    elif kind == "blank":
        line = draw(st.sampled_from(["", " ", "\t", "\r"]))
    else:
        line = draw(st.text(any_char, max_size=80))
    return draw(spliced(line)) if draw(st.integers(0, 3)) == 0 else line


@st.composite
def trace_files(draw: st.DrawFn) -> bytes:
    """File contents for trace loading: JSONL of records (some mutated), or raw bytes."""
    if draw(st.integers(0, 7)) == 0:
        return draw(st.binary(max_size=400))
    sep = draw(st.sampled_from(["\n", "\n", "\r\n", "\n\n", "\u2028"]))
    body = sep.join(draw(st.lists(trace_lines(), min_size=1, max_size=6)))
    if draw(st.booleans()):
        body += "\n"
    return draw(mutated_bytes(body.encode("utf-8", errors=draw(st.sampled_from(["surrogatepass", "replace"])))))


def check_load_traces(data: bytes) -> None:
    """load_traces and read_jsonl_traces, failing and skipping: only DataFileError may escape, and
    skipped lines are reported as DataFileError."""
    from helmdeck_dspy.traces.io import load_traces, read_jsonl_traces

    path = scratch_file("traces.jsonl", data)
    for reader in (load_traces, read_jsonl_traces):
        for on_error in ("fail", "skip"):
            skipped: list[DataFileError] = []
            try:
                for rec in reader(path, on_error=on_error, report=skipped.append):
                    rec.model_dump(mode="json")
            except DataFileError:
                pass  # a bad line (fail mode) or a bad file (either mode: not UTF-8, empty...)
            assert all(isinstance(e, DataFileError) for e in skipped)


@lru_cache(maxsize=1)
def _replay_context():
    from helmdeck_dspy.evaluation.runner import build_context

    return build_context()


def check_eval(data: bytes) -> None:
    """The evaluator's chunk path (lines in memory, and a byte range the worker reads itself)."""
    from helmdeck_dspy.evaluation.runner import process_chunk

    path = scratch_file("eval.jsonl", data)
    lines = [(i, line) for i, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), 1) if line.strip()]
    ctx = _replay_context()
    for rows in (lines, (0, len(data), 1)):
        for on_error in ("skip", "fail"):
            try:
                process_chunk(str(path), rows, on_error, ctx, {})
            except DataFileError:
                pass


# ------------------------------------------------------------------------------ scratch files

_SCRATCH: Path | None = None


def scratch_file(name: str, data: bytes) -> Path:
    """Write ``data`` to a per-process scratch directory (reused across examples) and return the path."""
    global _SCRATCH
    if _SCRATCH is None:
        _SCRATCH = Path(tempfile.mkdtemp(prefix=f"helmdeck-fuzz-{os.getpid()}-"))
        atexit.register(shutil.rmtree, _SCRATCH, True)
    path = _SCRATCH / name
    path.write_bytes(data)
    return path


TARGETS = {
    "parse_completion": (completions, check_parse),
    "parse_catalog": (catalog_objects, check_parse_catalog),
    "load_catalog": (catalog_files(), check_load_catalog),
    "load_traces": (trace_files(), check_load_traces),
    "eval_replay": (trace_files(), check_eval),
}
"""name -> (strategy, check); a check returns or raises, and any exception it raises is a finding."""


# ------------------------------------------------------------------------------ large inputs

_VERBS = ["write", "read", "search", "store", "render", "convert", "summarise", "translate", "schedule", "deploy"]
_NOUNS = ["blog", "image", "memory", "calendar", "invoice", "video", "email", "ticket", "report", "dataset"]


def synthetic_catalog(n_packs: int, n_pipelines: int = 0) -> dict[str, Any]:
    """A routing-guide object with ``n_packs`` distinct packs (and pipelines), entries of realistic
    size (a sentence of description, keywords, accepts/produces), for scale tests."""
    packs = []
    for i in range(n_packs):
        verb, noun = _VERBS[i % len(_VERBS)], _NOUNS[(i // len(_VERBS)) % len(_NOUNS)]
        packs.append({
            "name": f"{noun}.{verb}_{i}",
            "description": f"{verb.capitalize()} a {noun} (variant {i}) and return its identifier.",
            "metadata": {"accepts": [noun], "produces": [f"{noun}_id"],
                         "intent_keywords": [f"{verb} {noun}", f"{noun} {i}"], "typical_use": f"{verb} my {noun}"},
        })
    pipelines = [
        {"id": f"pipe.{i}", "name": f"Pipeline {i}", "description": f"Chain {i}",
         "metadata": {"supersedes": [packs[i % max(1, n_packs)]["name"]] if n_packs else []}}
        for i in range(n_pipelines)
    ]
    return {"packs": packs, "pipelines": pipelines}
