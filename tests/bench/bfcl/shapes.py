"""A made-up BFCL v4 data folder with one question of every shape of the full layout.

Loaded: parallel (from conftest), simple_java, simple_javascript, live_simple (system message),
irrelevance and live_relevance (no answer file), multi_turn_base (two classes, an excluded
function, a positional call, a turn with empty gold), multi_turn_miss_func (a function held back
until an empty turn). Not loaded: web_search and memory_kv (agentic), format_sensitivity (an id
index, one JSON object over several lines), simple_python (question file without answer file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.bench.conftest import write_bfcl


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def _fn(name: str, description: str, props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"name": name, "description": description,
            "parameters": {"type": "dict", "properties": props, "required": required or list(props)}}


JAVA = {
    "id": "simple_java_0",
    "question": [_user("Cache the user map `sessions` for 30000 ms with separator ';' and ids 4, 5.")],
    "function": [_fn("SessionCache.store", "Store a map of sessions in the cache.", {
        "entries": {"type": "HashMap", "description": "The sessions."},
        "ttl": {"type": "long", "description": "Time to live in ms."},
        "separator": {"type": "char", "description": "Key separator."},
        "ids": {"type": "ArrayList", "description": "Session ids.", "items": {"type": "long"}},
        "label": {"type": "String", "description": "A label."},
        "ratio": {"type": "double", "description": "Fill ratio."},
        "strict": {"type": "Boolean", "description": "Strict mode."},
        "hint": {"type": "", "description": "Anything."},
    }, ["entries", "ttl"])],
}
JAVA_ANSWER = {"id": "simple_java_0", "ground_truth": [{"SessionCache.store": {
    "entries": ["sessions"], "ttl": [30000], "separator": [";", ""], "ids": [[4, 5], ""]}}]}

JAVASCRIPT = {
    "id": "simple_javascript_0",
    "question": [_user("Highlight the rows 'a' and 'b' of table 'orders'.")],
    "function": [_fn("highlightRows", "Highlight table rows.", {
        "table": {"type": "String", "description": "Table id."},
        "rows": {"type": "array", "items": {"type": "String"}, "description": "Row keys."},
        "animate": {"type": "Boolean", "description": "Animate it."},
    }, ["table", "rows"])],
}
JAVASCRIPT_ANSWER = {"id": "simple_javascript_0", "ground_truth": [
    {"highlightRows": {"table": ["orders"], "rows": [["a", "b"]], "animate": ["", False]}}]}

LIVE = {
    "id": "live_simple_0-0-0",
    "question": [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Oslo?"}]],
    "function": [_fn("get_weather", "Current weather for a city.", {"city": {"type": "string", "description": "City."}})],
}
LIVE_ANSWER = {"id": "live_simple_0-0-0", "ground_truth": [{"get_weather": {"city": ["Oslo"]}}]}

IRRELEVANT = {
    "id": "irrelevance_0",
    "question": [_user("Who painted the Mona Lisa?")],
    "function": [_fn("loan.payment", "Monthly payment of a loan.", {"amount": {"type": "float", "description": "Principal."}})],
}
RELEVANT = {
    "id": "live_relevance_0-0-0",
    "question": [_user("Draw me a cat in a hat.")],
    "function": [_fn("image.generate", "Generate an image from a prompt.", {"prompt": {"type": "string", "description": "What to draw."}})],
}

FILES_DOC = [
    _fn("cd", "Change directory.", {"folder": {"type": "string", "description": "Folder."}}),
    _fn("sort", "Sort a file's lines.", {"file_name": {"type": "string", "description": "File."}}),
    {**_fn("tail", "Last lines of a file.", {
        "file_name": {"type": "string", "description": "File."},
        "lines": {"type": "integer", "description": "How many.", "default": 10},
    }, ["file_name"]), "response": {"type": "dict", "properties": {"last_lines": {"type": "string"}}}},
    _fn("rm", "Remove a file.", {"file_name": {"type": "string", "description": "File."}}),
]
MATH_DOC = [_fn("mean", "Mean of numbers.", {"numbers": {"type": "array", "items": {"type": "float"}, "description": "Numbers."}})]

MULTI_TURN = {
    "id": "multi_turn_base_0",
    "question": [[_user("Go to 'docs' and sort 'notes.txt'.")[0]], _user("Show the last 10 lines of it."),
                 _user("Average the numbers 2, 4 and 9."), _user("Delete the report.")],
    "initial_config": {"GorillaFileSystem": {"root": {}}},
    "path": ["GorillaFileSystem.cd", "GorillaFileSystem.sort", "GorillaFileSystem.tail", "MathAPI.mean"],
    "involved_classes": ["GorillaFileSystem", "MathAPI"],
    "excluded_function": ["rm"],
}
MULTI_TURN_ANSWER = {"id": "multi_turn_base_0", "ground_truth": [
    ["cd(folder='docs')", "sort('notes.txt')"], ["tail(file_name='notes.txt', lines=10)"], ["mean(numbers=[2, 4, 9])"], []]}

MISS_FUNC = {
    "id": "multi_turn_miss_func_0",
    "question": [_user("Go to 'docs'."), _user("Sort 'notes.txt'."), []],
    "initial_config": {}, "path": [], "involved_classes": ["GorillaFileSystem"],
    "missed_function": {"2": ["sort"]},
}
MISS_FUNC_ANSWER = {"id": "multi_turn_miss_func_0", "ground_truth": [["cd(folder='docs')"], [], ["sort(file_name='notes.txt')"]]}

LOADED = ["irrelevance", "live_relevance", "live_simple", "multi_turn_base", "multi_turn_miss_func", "parallel",
          "simple_java", "simple_javascript"]
NOT_LOADED = {"format_sensitivity": "skipped", "memory_kv": "skipped", "simple_python": "no_answer_file",
              "web_search": "skipped"}


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_all_shapes(root: Path) -> Path:
    """Write the folder described in the module docstring under ``root``."""
    write_bfcl(root)
    pairs = {"simple_java": (JAVA, JAVA_ANSWER), "simple_javascript": (JAVASCRIPT, JAVASCRIPT_ANSWER),
             "live_simple": (LIVE, LIVE_ANSWER), "multi_turn_base": (MULTI_TURN, MULTI_TURN_ANSWER),
             "multi_turn_miss_func": (MISS_FUNC, MISS_FUNC_ANSWER)}
    for category, (question, answer) in pairs.items():
        _jsonl(root / f"BFCL_v4_{category}.json", [question])
        _jsonl(root / "possible_answer" / f"BFCL_v4_{category}.json", [answer])
    _jsonl(root / "BFCL_v4_irrelevance.json", [IRRELEVANT])
    _jsonl(root / "BFCL_v4_live_relevance.json", [RELEVANT])
    _jsonl(root / "multi_turn_func_doc" / "gorilla_file_system.json", FILES_DOC)
    _jsonl(root / "multi_turn_func_doc" / "math_api.json", MATH_DOC)
    _jsonl(root / "BFCL_v4_simple_python.json", [{**LIVE, "id": "simple_python_0"}])  # its answer file is missing
    _jsonl(root / "BFCL_v4_web_search.json", [{"id": "web_search_0", "question": [_user("Who won?")],
                                                "involved_classes": ["WebSearchAPI"]}])
    _jsonl(root / "possible_answer" / "BFCL_v4_web_search.json", [{"id": "web_search_0", "ground_truth": ["Nobody"]}])
    _jsonl(root / "BFCL_v4_memory_kv.json", [{"id": "memory_kv_0", "question": [_user("What is my name?")],
                                              "involved_classes": ["MemoryAPI_kv"]}])
    (root / "BFCL_v4_format_sensitivity.json").write_text(json.dumps({"parallel": ["parallel_0"]}, indent=4))
    return root
