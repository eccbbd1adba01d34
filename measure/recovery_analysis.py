"""Why the planner's loop does not recover after a tool error where the model alone's does (issue 55,
item 1): every count of docs/results/recovery.md, from committed files only.

Reads the end-to-end studies' result lines (``experiments/e2e/<study>/<arm>.jsonl``: executed steps,
stop reason, and for the model alone its raw ``turns``), the planner's plan-call trace records
(``traces/``: raw answers and ``run`` stamps, matched to a task by its intent and time window), the
tasks (``eval/e2e/tasks.jsonl``) and their known solutions (``bench/e2e/gold.py``). No model call,
no server, nothing written.

Definitions (the same for both arms):

- *tool error*: an executed step whose ``error`` is true (the tool reported an error, or no server
  has the tool the model named);
- *recovered*: a failed call F is recovered when a later step of the same run succeeded and either
  calls the tool the model named in F (for a step the planner's guards demoted to ``unknown``, the
  name the model wrote) with other arguments, or names the same file as F (``path``, ``source`` or
  ``destination``, equal strings); a task is recovered when one of its failed calls is;
- *done with an error*: the task's checks passed and it had a tool error (the study tables' column
  "tasks with an error: done", which the write-ups called "recovered"); split here into recovered,
  *done before the error* (every tool of the task's known solution had succeeded before the first
  error; ``read_file`` counts as ``read_text_file``) and *refrain* (a task that must not act, passed
  because a failed call changes nothing);
- *answer after the first error*: the model's next answer after the batch holding the run's first
  failed call (the planner: its re-plan; the model alone: its next turn).

Every figure is read from live runs (llama.cpp, Qwen2.5 Coder 1.5B); nothing here is simulated.

Run: ``.venv/bin/python measure/recovery_analysis.py`` (``--tasks`` also prints, for the stream-test
and the dev half, each task with an error in either arm, the arms side by side).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from helmdeck_dspy.bench.e2e.checks import task_split
from helmdeck_dspy.bench.e2e.gold import GOLD
from helmdeck_dspy.decoding.call_list import decode_calls
from helmdeck_dspy.decoding.reasoning import split_reasoning
from helmdeck_dspy.planning.execution import OUTPUT_CHARS, needs_earlier
from helmdeck_dspy.planning.guards import GuardedStep

ROOT = Path(__file__).resolve().parents[1]
E2E = ROOT / "experiments" / "e2e"
TASKS = {t["id"]: t for t in (json.loads(line) for line in (ROOT / "eval" / "e2e" / "tasks.jsonl").open())}
MAX_STEPS = 8
SAME_TOOL = {"read_file": "read_text_file"}  # the filesystem server's deprecated alias
FILE_KEYS = ("path", "source", "destination")

# (label, study folder, half, planner rows with the option stamps their trace records carry, traces
# file): every paired 1.5B run; the model alone's row is alone.jsonl of the same folder (on dev: the
# first run's, which every dev lever was paired with). The stamps tell apart rows whose runs overlapped
# in time (planner-fill ran beside planner-turns); rows with equal stamps never ran at the same time.
FILL, RECHECK, WRAP = "fill_placeholders", "recheck_top", "wrap_args"
STAMPS = (FILL, RECHECK, WRAP)
SHIPPED = frozenset({FILL, RECHECK})
RUNS: list[tuple[str, str, str, dict[str, frozenset[str]], str]] = [
    ("stream-test", "stream-test", "test", {"planner": SHIPPED}, "traces/planner.jsonl"),
    ("recheck-test", "recheck-test", "test", {"planner": SHIPPED}, "traces/local_qwen2.5-coder-1.5b-instruct.jsonl"),
    ("fill-test", "fill-test", "test", {"planner-fill": frozenset({FILL})},
     "traces/local_qwen2.5-coder-1.5b-instruct.jsonl"),
    ("first run, test half", "qwen2.5-coder-1.5b", "test", {"planner": frozenset()},
     "traces/local_qwen2.5-coder-1.5b-instruct.jsonl"),
    ("dev half", "qwen2.5-coder-1.5b", "dev",
     {"planner": frozenset(), "planner-next": frozenset(), "planner-wrap": frozenset({WRAP}),
      "planner-turns": frozenset(), "planner-fill": frozenset({FILL}), "planner-recheck": SHIPPED},
     "traces/local_qwen2.5-coder-1.5b-instruct.jsonl"),
]


# ---------------------------------------------------------------- reading


def load_rows(path: Path, half: str) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for line in path.open():
        v = json.loads(line)
        if task_split(v["task_id"]) == half:
            rows[v["task_id"]] = v  # the last line of a task wins, as load_results does
    return rows


def load_traces(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.open()] if path.exists() else []


def when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


def task_traces(v: dict[str, Any], traces: list[dict[str, Any]], stamps: frozenset[str]) -> list[dict[str, Any]]:
    """The planner's trace records of one task run: its intent (the site's port left open), its row's
    option stamps, recorded between the run's start and its end (plus a minute)."""
    pattern = re.compile(re.escape(TASKS[v["task_id"]]["intent"]).replace(re.escape("{site}"),
                                                                           r"http://127\.0\.0\.1:\d+") + "$")
    start = when(v["started_at"])
    end = start + timedelta(seconds=v["seconds"] + 60)
    return [r for r in traces if pattern.match(r["intent"]) and start <= when(r["recorded_at"]) <= end
            and frozenset(k for k in STAMPS if r["run"].get(k)) == stamps]


def calls_in(content: str | None) -> list[tuple[str, dict[str, Any]]] | None:
    if content is None:
        return None
    calls, _ = decode_calls(split_reasoning(content).visible.strip())
    return None if calls is None else [(n, a) for n, a in calls]


def written_name(step: dict[str, Any]) -> str:
    """The tool the model named (a demoted step keeps it only in the error text)."""
    m = re.match(r"no tool named '([^']+)'", step["result"])
    return m.group(1) if step["tool"] == "unknown" and m else step["tool"]


def canon(tool: str) -> str:
    return SAME_TOOL.get(tool, tool)


def waits(index: int, name: str, args: dict[str, Any]) -> bool:
    """A step after the first whose argument stands for an earlier result: run_loop asks again instead."""
    return index > 0 and needs_earlier(GuardedStep(order=index + 1, tool=name, args=args))


def _letters(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


# ---------------------------------------------------------------- answers and the steps they ran


def alone_answers(v: dict[str, Any]) -> list[dict[str, Any]]:
    """The model alone's turns, each with the executed steps it ran (as run_loop ran them)."""
    steps, k, out = v["steps"], 0, []
    for turn in v["turns"]:
        content = turn.get("content")
        calls = calls_in(content)
        ran: list[int] = []
        for index, (name, args) in enumerate(calls or []):
            if k >= len(steps) or k >= MAX_STEPS:
                break
            if any(s["error"] and s["tool"] == name and s["args"] == args for s in steps[:k]):
                break  # stuck: not run
            if waits(index, name, args):
                break
            assert steps[k]["tool"] == name, (v["task_id"], name, steps[k]["tool"])
            ran.append(k)
            k += 1
            if steps[k - 1]["error"]:
                break
        out.append({"content": content, "calls": calls, "ran": ran, "rechecked": False})
    assert k == len(steps), (v["task_id"], k, len(steps))
    return out


def planner_answers(v: dict[str, Any], traces: list[dict[str, Any]], stamps: frozenset[str]) -> list[dict[str, Any]]:
    """The planner's plan calls (a declined first answer and its recheck are one plan call), each with
    its raw answer and the executed steps it ran (after the guards)."""
    all_records = task_traces(v, traces, stamps)
    records = [r for r in all_records if r["content"] is not None]  # a timed-out attempt, retried
    groups: list[list[dict[str, Any]]] = []
    i = 0
    while i < len(records):
        r = records[i]
        nxt = records[i + 1] if i + 1 < len(records) else None
        # a recheck: stamped ``rechecked`` (since issue 54), or, before that stamp, the next record's
        # prompt a narrowed list (the top 10 tools: about a quarter of the whole list's tokens)
        pair = (nxt is not None and calls_in(r["content"]) == []
                and (("rechecked" in r["run"] and "rechecked" in nxt["run"])
                     or (r["run"].get("recheck_top") and nxt["prompt_tokens"] < r["prompt_tokens"] / 2)))
        groups.append(records[i:i + 2] if pair else [r])
        i += 2 if pair else 1
    if v["stopped_because"] == "failed" and len(groups) == v["plan_calls"] - 1:
        groups.append([r for r in all_records if r["content"] is None][-1:])  # the plan call that failed
    assert len(groups) == v["plan_calls"], (v["task_id"], v["arm"], len(groups), v["plan_calls"])
    steps, k, out = v["steps"], 0, []
    for group in groups:
        content = group[-1]["content"] if group else None
        calls = calls_in(content)
        ran: list[int] = []
        for index, (name, args) in enumerate(calls or []):
            if k >= len(steps) or k >= MAX_STEPS or waits(index, name, args):
                break
            s = steps[k]
            if not (s["tool"] == name or (s["tool"] == "unknown" and written_name(s) == name)
                    or _letters(s["tool"]) == _letters(name.rsplit(".", 1)[-1])):
                break  # stuck (the guarded call equals a failed one) or a step left for a re-plan
            ran.append(k)
            k += 1
            if s["error"]:
                break
        out.append({"content": content, "calls": calls, "ran": ran, "rechecked": len(group) == 2, "records": group,
                    "first": group[0]["content"] if group else None})
    assert k == len(steps), (v["task_id"], v["arm"], k, len(steps))
    return out


# ---------------------------------------------------------------- the rules


def file_values(args: dict[str, Any]) -> set[str]:
    return {str(args[key]) for key in FILE_KEYS if isinstance(args.get(key), str)}


def recovered(v: dict[str, Any]) -> bool:
    steps = v["steps"]
    for i, f in enumerate(steps):
        if not f["error"]:
            continue
        for s in steps[i + 1:]:
            if s["error"]:
                continue
            if canon(written_name(s)) == canon(written_name(f)) or file_values(s["args"]) & file_values(f["args"]):
                return True
    return False


def done_before_error(v: dict[str, Any]) -> bool:
    first = next(i for i, s in enumerate(v["steps"]) if s["error"])
    ok = {canon(s["tool"]) for s in v["steps"][:first] if not s["error"]}
    gold = {canon(t) for t, _ in GOLD[v["task_id"]]}
    return bool(gold) and gold <= ok


def why_done(v: dict[str, Any]) -> str:
    if recovered(v):
        return "recovered"
    if TASKS[v["task_id"]]["kind"] == "refrain":
        return "refrain"
    return "before the error" if done_before_error(v) else "other"


def first_error(answers: list[dict[str, Any]], v: dict[str, Any]) -> tuple[int, int]:
    """(index of the answer whose batch held the first failed call, index of that step)."""
    for a, answer in enumerate(answers):
        for k in answer["ran"]:
            if v["steps"][k]["error"]:
                return a, k
    raise ValueError(v["task_id"])


def after_error(v: dict[str, Any], answers: list[dict[str, Any]]) -> tuple[str, str | None]:
    """What the answer after the first failed call was (one of :data:`AFTER`), and its raw text."""
    a, k = first_error(answers, v)
    failed = v["steps"][k]
    if a + 1 >= len(answers):
        return ("no answer: step cap" if v["stopped_because"] == "max_steps" else
                f"no answer: {v['stopped_because']}"), None
    nxt = answers[a + 1]
    if nxt["content"] is None:
        return "the re-plan failed (deadline)", None
    if nxt["calls"] is None:
        return "unreadable answer", nxt["content"]
    if not nxt["calls"]:
        return "[] -> done", nxt["content"]
    later = v["steps"][nxt["ran"][0]:] if nxt["ran"] else []
    if any(not s["error"] and (canon(written_name(s)) == canon(written_name(failed))
                               or file_values(s["args"]) & file_values(failed["args"])) for s in later):
        return "calls: a recovery", nxt["content"]
    if a + 2 == len(answers) and v["stopped_because"] == "stuck":
        return "the failed call again -> stuck", nxt["content"]
    bad = {json.dumps(x) for x in failed["args"].values() if isinstance(x, str)}
    first = v["steps"][nxt["ran"][0]] if nxt["ran"] else None
    if first is not None and bad & {json.dumps(x) for x in first["args"].values() if isinstance(x, str)}:
        return "calls: the same wrong value again", nxt["content"]
    return "calls: other tools, no recovery", nxt["content"]


ERROR_CLASSES = (
    ("a tool no server has", r"^no tool named"),
    ("a path outside the sandbox", r"outside the allowed|path outside allowed"),
    ("no such file", r"ENOENT"),
    ("arguments of the wrong shape", r"validation error|Invalid arguments|Field required"),
)


def error_class(step: dict[str, Any]) -> str:
    """What kind of failure a failed step's text reports (else: the world's state refused it)."""
    return next((name for name, pattern in ERROR_CLASSES if re.search(pattern, step["result"])),
                "a state or value the tool refused")


def error_origin(v: dict[str, Any], answers: list[dict[str, Any]], arm: str) -> str:
    """Where the run's first failed call came from."""
    a, k = first_error(answers, v)
    earlier_ok = any(not v["steps"][j]["error"] for j in range(k))
    if arm == "alone":
        if a > 0 and earlier_ok:
            return "a turn asked after a success"
        return "the first answer" if a == 0 else "a later answer"
    answer = answers[a]
    step = v["steps"][k]
    index = answer["ran"].index(k)
    name, args = answer["calls"][index]
    if step["tool"] == "unknown":
        how = "guards: name not on the servers -> unknown"
    elif step["args"] == {} and args:
        how = "guards: arguments dropped -> {}"
    elif step["args"] != args and "path/to" in json.dumps(args):
        how = "guards: placeholder path filled"
    elif step["args"] != args:
        how = "guards: arguments changed"
    else:
        how = "as written"
    return f"{'the recheck' if answer['rechecked'] else 'the first answer' if a == 0 else 'a re-plan'}; {how}"


# ---------------------------------------------------------------- what the model was shown


def shown_to_planner(step: dict[str, Any], order: int) -> str:
    """The failed step as the planner's re-plan prompt lists it (PRIOR_LEAD: the executed, guarded step)."""
    return json.dumps({"order": order, "tool": step["tool"], "args": step["args"],
                       "output": step["result"][:OUTPUT_CHARS], "error": True}, ensure_ascii=False)


def shown_to_alone(step: dict[str, Any]) -> str:
    """The failed step as the model alone's results message lists it (results_message)."""
    return json.dumps({"name": step["tool"], "arguments": step["args"], "result": step["result"][:OUTPUT_CHARS],
                       "error": True}, ensure_ascii=False)


# ---------------------------------------------------------------- the lead: asking again after a success


def asks_after_success(v: dict[str, Any], answers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each answer given right after a batch whose calls all succeeded, with what it did."""
    gold = {canon(t) for t, _ in GOLD[v["task_id"]]}
    out = []
    for a in range(len(answers) - 1):
        ran = answers[a]["ran"]
        if not ran or any(v["steps"][k]["error"] for k in ran):
            continue
        done_before = {canon(v["steps"][k]["tool"]) for k in range(ran[-1] + 1) if not v["steps"][k]["error"]}
        nxt = answers[a + 1]
        new = [v["steps"][k] for k in nxt["ran"]]
        useful = any(not s["error"] and canon(s["tool"]) in gold - done_before for s in new)
        out.append({"declined": nxt["calls"] == [], "useful": useful, "after": ran[-1] + 1,
                    "error": any(s["error"] for s in new), "calls": bool(nxt["calls"]),
                    "solved_before": bool(gold) and gold <= done_before})
    return out


def missing_gold(v: dict[str, Any]) -> str | None:
    """Which way a run fell short of the task's known solution's tools: ``partial`` (some of them ran,
    not all), ``other tools`` (none of them ran), or None (all ran, or the task needs none)."""
    gold = {canon(t) for t, _ in GOLD[v["task_id"]]}
    ok = {canon(s["tool"]) for s in v["steps"] if not s["error"]}
    if not gold - ok:
        return None
    return "partial" if gold & ok else "other tools"


# ---------------------------------------------------------------- report


def short(value: Any, n: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = re.sub(r"/tmp/helmdeck-e2e-[^/ ]+/", "…/", text.replace("\n", " "))
    return text if len(text) <= n else text[:n - 1] + "…"


def analyse(v: dict[str, Any], arm: str, traces: list[dict[str, Any]], stamps: frozenset[str]) -> dict[str, Any]:
    """One task run: its error, what came after it, and the lead's counts."""
    info: dict[str, Any] = {"task": v["task_id"], "success": v["success"], "stop": v["stopped_because"],
                            "plan_calls": v["plan_calls"],
                            "erred": any(s["error"] for s in v["steps"]), "steps": v["steps"]}
    answers = alone_answers(v) if arm == "alone" else (planner_answers(v, traces, stamps) if info["erred"] else [])
    if arm == "alone":
        asks = asks_after_success(v, answers)
        info["asks"] = asks
    info["clean_done"] = (bool(v["steps"]) and not info["erred"] and v["stopped_because"] == "done")
    info["missing_gold"] = missing_gold(v)
    info["answers"] = answers
    if not info["erred"]:
        return info
    a, k = first_error(answers, v)
    step = v["steps"][k]
    info.update(
        k=k, recovered=recovered(v), why=why_done(v) if v["success"] else None,
        ended_right_after=k == len(v["steps"]) - 1, origin=error_origin(v, answers, arm),
        shown=shown_to_alone(step) if arm == "alone" else shown_to_planner(step, k + 1),
        written=answers[a]["calls"][answers[a]["ran"].index(k)] if answers[a]["calls"] else None)
    info["after"], info["raw"] = after_error(v, answers)
    info["class"] = error_class(step)
    nxt = answers[a + 1] if a + 1 < len(answers) else None
    info["after_tokens"] = None
    if nxt is not None and arm == "alone":
        info["after_tokens"] = v["turns"][a + 1].get("prompt_tokens")
    elif nxt is not None and nxt.get("records"):
        info["after_tokens"] = nxt["records"][-1].get("prompt_tokens")
    return info


def cell(info: dict[str, Any] | None) -> str:
    """One arm's side of a task: the first failed call as run, its error, the answer after it, the end."""
    if info is None:
        return "(no run)"
    outcome = "**done**" if info["success"] else "failed"
    if not info["erred"]:
        calls = ", ".join(f"`{s['tool']}`" for s in info["steps"]) or "no call"
        return f"no error ({calls}); {info['stop']}; {outcome}"
    step = info["steps"][info["k"]]
    raw = "–" if info["raw"] is None else f"`{short(info['raw'].replace('```json', '').replace('```', '').strip(), 70)}`"
    if info["after_tokens"]:
        raw += f" ({info['after_tokens']:,} prompt tokens)"
    return (f"{info['k'] + 1}. `{step['tool']}` {short(step['args'], 60)} → {short(step['result'], 70)} "
            f"[{info['origin']}] ⇒ {raw} ⇒ {info['after']}; {info['stop']}; {outcome}")


def main(argv: list[str]) -> int:
    per_task = "--tasks" in argv
    results: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for label, folder, half, planners, trace_file in RUNS:
        traces = load_traces(E2E / folder / trace_file)
        for arm in [*planners, "alone"]:
            rows = load_rows(E2E / folder / f"{arm}.jsonl", half)
            results[(label, arm)] = {t: analyse(v, arm, traces, planners.get(arm, frozenset()))
                                     for t, v in sorted(rows.items())}

    print("## 1. Tasks with a tool error, per arm\n")
    print("| run | arm | tasks | with an error | done (the tables' column) | recovered | done because: recovered / "
          "before the error / refrain | ended right after the 1st error: done / stuck / other | went on after it |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (label, arm), runs in results.items():
        erred = [i for i in runs.values() if i["erred"]]
        why = Counter(i["why"] for i in erred if i["success"])
        assert set(why) <= {"recovered", "before the error", "refrain"}, why
        ended = Counter(i["stop"] for i in erred if i["ended_right_after"])
        other = sum(ended.values()) - ended["done"] - ended["stuck"]
        print(f"| {label} | {arm} | {len(runs)} | {len(erred)} | {sum(i['success'] for i in erred)} | "
              f"{sum(i['recovered'] for i in erred)} | {why['recovered']} / {why['before the error']} / "
              f"{why['refrain']} | {ended['done']} / {ended['stuck']} / {other} | "
              f"{sum(not i['ended_right_after'] for i in erred)} |")

    print("\n## 2. The same tasks, both arms: where each arm's first failed call came from, and the answer after it\n")
    for label, folder, half, planners, _ in RUNS:
        alone = results[(label, "alone")]
        for arm in planners:
            mine = results[(label, arm)]
            both = sorted(t for t in mine if mine[t]["erred"] and alone[t]["erred"])
            p_only = sorted(t for t in mine if mine[t]["erred"] and not alone[t]["erred"])
            a_only = sorted(t for t in alone if alone[t]["erred"] and not mine[t]["erred"])
            print(f"### {label}: {arm} against alone\n")
            print(f"- an error in both arms: {len(both)}; answer after it, {arm}: "
                  + "; ".join(f"{k} {n}" for k, n in Counter(mine[t]["after"] for t in both).most_common())
                  + "; alone: " + "; ".join(f"{k} {n}" for k, n in Counter(alone[t]["after"] for t in both).most_common()))
            print(f"- an error in {arm} only: {len(p_only)} ("
                  + "; ".join(f"{k} {n}" for k, n in Counter(mine[t]["origin"] for t in p_only).most_common())
                  + f"); the alone on those tasks: {sum(alone[t]['success'] for t in p_only)} done, "
                  f"{sum(not alone[t]['steps'] for t in p_only)} with no call")
            print(f"- an error in alone only: {len(a_only)} ("
                  + "; ".join(f"{k} {n}" for k, n in Counter(alone[t]["origin"] for t in a_only).most_common())
                  + f"); {arm} on those tasks: {sum(mine[t]['success'] for t in a_only)} done")
            print(f"- origin of {arm}'s first failed call, all its error tasks: "
                  + "; ".join(f"{k} {n}" for k, n in Counter(i["origin"] for i in mine.values() if i["erred"]).most_common()))
            print(f"- kind of {arm}'s first failed call: "
                  + "; ".join(f"{k} {n}" for k, n in Counter(i["class"] for i in mine.values() if i["erred"]).most_common()))
            print("- kind of alone's first failed call: "
                  + "; ".join(f"{k} {n}" for k, n in Counter(i["class"] for i in alone.values() if i["erred"]).most_common()))
            print(f"- answer after {arm}'s first failed call, all its error tasks: "
                  + "; ".join(f"{k} {n}" for k, n in Counter(i["after"] for i in mine.values() if i["erred"]).most_common()))
            print("- answer after alone's first failed call, all its error tasks: "
                  + "; ".join(f"{k} {n}" for k, n in Counter(i["after"] for i in alone.values() if i["erred"]).most_common())
                  + "\n")

    for side in ("planner rows", "alone runs"):
        pool = [i for (label, arm), runs in results.items() if (arm == "alone") == (side == "alone runs")
                for i in runs.values() if i["erred"]]
        print(f"Pooled over the {side} above (each a separate run): tasks with an error {len(pool)}; answer after the "
              f"first failed call `[]` {sum(i['after'] == '[] -> done' for i in pool)}; recovered "
              f"{sum(i['recovered'] for i in pool)}")
    print()
    rechecked = sum(a["rechecked"] for (label, arm), runs in results.items() if arm != "alone"
                    for i in runs.values() for a in i.get("answers", [])[1:])
    print(f"Re-plans (a plan call after a step ran) that were rechecked, every planner row: {rechecked}\n")
    print("## 3. Asking again after a success\n")
    print("| run | alone: runs asked again after a batch that all succeeded | its next answer [] | a later ask made "
          "a useful call | the extra calls hit an error | of those, task done anyway | planner row | planner: ended "
          "`done` after its plan's steps all succeeded | of those, failed: part of a known solution's tools run / "
          "other tools |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, folder, half, planners, _ in RUNS:
        alone = results[(label, "alone")]
        asked = [i for i in alone.values() if i["asks"]]
        for arm in planners:
            mine = results[(label, arm)]
            clean = [i for i in mine.values() if i["clean_done"]]
            print(f"| {label} | {len(asked)} | {sum(i['asks'][0]['declined'] for i in asked)} | "
                  f"{sum(any(x['useful'] for x in i['asks']) for i in asked)} | "
                  f"{sum(any(x['error'] for x in i['asks']) for i in asked)} | "
                  f"{sum(any(x['error'] for x in i['asks']) and i['success'] for i in asked)} | {arm} | "
                  f"{len(clean)} | {sum((not i['success']) and i['missing_gold'] == 'partial' for i in clean)} / "
                  f"{sum((not i['success']) and i['missing_gold'] == 'other tools' for i in clean)} |")
    for label, folder, half, planners, _ in RUNS:
        alone = results[(label, "alone")]
        late = []
        for t, i in alone.items():
            if i["success"] and TASKS[t]["kind"] != "refrain":
                first = {canon(i["steps"][k]["tool"]) for k in i["answers"][0]["ran"] if not i["steps"][k]["error"]}
                if not {canon(x) for x, _ in GOLD[t]} <= first:
                    late.append(t)
        print(f"\n{label}, alone: tasks done (act or read) {sum(i['success'] and TASKS[t]['kind'] != 'refrain' for t, i in alone.items())}, "
              f"of which not by the tools of its first answer: {len(late)} {late}")
        for arm in planners if label != "dev half" else ["planner-recheck"]:
            mine = results[(label, arm)]
            short_plans = [t for t, i in mine.items() if i["clean_done"] and not i["success"] and i["missing_gold"]]
            undone = [t for t, i in alone.items() if i["asks"] and i["asks"][0]["solved_before"] and not i["success"]]
            row_names = list(planners)
            print(f"\n{label}, alone: failed although every tool of the known solution had succeeded before its "
                  f"first ask after a success (then: the calls after it; the planner rows on the task): "
                  + ", ".join(f"{t} ({[s['tool'] + (' ✗' if s['error'] else '') for s in alone[t]['steps'][alone[t]['asks'][0]['after']:]]}; "
                              + ", ".join(f"{a} {'done' if results[(label, a)][t]['success'] else 'failed'}" for a in row_names)
                              + ")" for t in undone))
            print(f"\n{label}, {arm}: plans whose steps all succeeded, ended `done` and failed "
                  f"(a known-solution tool never run): "
                  + ", ".join(f"{t} (ran {[s['tool'] for s in mine[t]['steps']]}; alone: "
                              f"{[s['tool'] + (' ✗' if s['error'] else '') for s in alone[t]['steps']]}, "
                              f"{'done' if alone[t]['success'] else 'failed'})" for t in short_plans))

    a, b = results[("stream-test", "alone")], results[("recheck-test", "alone")]
    print(f"\nThe model alone, stream-test against recheck-test: the same first answer's calls on "
          f"{sum(calls_in(a[t]['answers'][0]['content']) == calls_in(b[t]['answers'][0]['content']) for t in a)} "
          f"of {len(a)} tasks, the same outcome on {sum(a[t]['success'] == b[t]['success'] for t in a)}; answer after "
          f"the first failed call `[]`: {sum(i['after'] == '[] -> done' for i in a.values() if i['erred'])} against "
          f"{sum(i['after'] == '[] -> done' for i in b.values() if i['erred'])}")
    print("\n### The planner's own ask after a success: a re-plan for a step whose argument stood for an earlier "
          "result (runs with no tool error and two plan calls)\n")
    for (label, arm), runs in results.items():
        if arm == "alone":
            continue
        for t, i in runs.items():
            if not i["erred"] and len(i["steps"]) >= 2 and i["stop"] == "done" and i["plan_calls"] >= 2:
                print(f"- {label} / {arm}: {t}: {[s['tool'] for s in i['steps']]}, {'done' if i['success'] else 'failed'}")

    if per_task:
        for label, folder, half, planners, _ in RUNS[:1] + RUNS[-1:]:
            alone = results[(label, "alone")]
            arms = list(planners) if label == "stream-test" else ["planner-recheck", "planner-turns"]
            print(f"\n## Per task, {label}: the first failed call as run (`tool` args → error) [where it came "
                  f"from] ⇒ the raw answer after it ⇒ what the loop did; stop; outcome\n")
            print("| task | " + " | ".join(arms) + " | alone |")
            print("|---|" + "---|" * (len(arms) + 1))
            tasks = sorted(t for t in alone if alone[t]["erred"] or any(results[(label, a)][t]["erred"] for a in arms))
            for t in tasks:
                print(f"| {t} | " + " | ".join(cell(results[(label, a)].get(t)) for a in arms)
                      + f" | {cell(alone[t])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
