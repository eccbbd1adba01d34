"""MCPMark's filesystem categories, laid out as each task's test folder expects.

MCPMark downloads each category's initial state from a store this machine cannot reach, so here
it is recovered or rebuilt from what the public repository holds (``../shared/data/public-mcp``,
read at run time, never copied into the project):

- ``desktop_template``: the 21 files an older commit of the repository held, copied unchanged;
- the others: the category's file tree from ``meta.json`` (``meta_data.stateContent``), with
  contents written here to meet every fact the category's ``verify.py`` scripts hard-code (the
  three ``.txt`` texts of file_property, the total size of folder_structure, the 14 files in
  seven identical pairs of file_context, ...). Those facts are read out of the scripts (``ast``)
  when the folder is built, and the contents are otherwise synthetic: deterministic text of our
  own, so a task's difficulty can differ from the original's.

:func:`build_category` builds one category folder; :data:`CATEGORIES` lists the ones it can.
"""

from __future__ import annotations

import ast
import json
import random
import re
import shutil
from pathlib import Path
from typing import Any

TASKS = Path("mcpmark/tasks/filesystem")
"""The MCPMark tasks, under the public data folder."""
RECOVERED = Path("mcpmark/git-history/5a5e304/test_environments/desktop")
"""desktop_template's initial state, recovered from the repository's history."""


def parse_tree(text: str) -> tuple[list[str], list[str]]:
    """The folders and files of a ``stateContent`` tree (``├──``/``└──`` lines, a folder ends in
    ``/``), as paths below the tree's first line (its root)."""
    stack: list[tuple[int, str]] = []
    dirs: list[str] = []
    files: list[str] = []
    for line in text.splitlines()[1:]:
        mark = re.search(r"[├└]── ", line)
        if not mark:
            continue
        col, name = mark.start(), line[mark.end():].strip()
        while stack and stack[-1][0] >= col:
            stack.pop()
        path = "/".join([*(s[1] for s in stack), name.rstrip("/")])
        if name.endswith("/"):
            dirs.append(path)
            stack.append((col, name.rstrip("/")))
        else:
            files.append(path)
    return dirs, files


def _tree(data: Path, task: str) -> tuple[list[str], list[str]]:
    meta = json.loads((data / TASKS / task / "meta.json").read_text(encoding="utf-8"))
    return parse_tree(meta["meta_data"]["stateContent"])


def _literal(data: Path, task: str, name: str) -> Any:
    """The literal a task's ``verify.py`` assigns to ``name``, or returns from function ``name``."""
    tree = ast.parse((data / TASKS / task / "verify.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            for ret in ast.walk(node):
                if isinstance(ret, ast.Return) and ret.value is not None:
                    return ast.literal_eval(ret.value)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{task}/verify.py has no {name}")


def _write(root: Path, rel: str, data: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")


def copy_tree(src: Path, dst: Path) -> None:
    """Copy ``src`` into ``dst`` as plain writable files (the shared data is read-only)."""
    for path in sorted(src.rglob("*")):
        if path.is_file():
            target = dst / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


LONG = ["lighthouse", "navigation", "landscape", "traveller", "afternoon", "waterfall", "orchestra", "blueprint",
        "chocolate", "adventure", "telescope", "watercolor", "carpenter", "riverbank", "snowflake", "parchment",
        "sunflower", "heartwood", "moonlight", "storyteller", "evergreen", "wanderers", "signalman", "farmhouse",
        "shipwright", "clockmaker", "marketplace", "windmills", "butterfly", "gardeners"]
SHORT = ["a", "an", "at", "by", "do", "go", "if", "in", "is", "it", "me", "my", "no", "of", "on", "or", "so", "to",
         "up", "we", "am", "be", "he", "us"]
MIDDLE = ["pocket", "garden", "silver", "candle", "bridge", "forest", "window", "basket", "marble", "planet",
          "ribbon", "castle", "meadow", "rocket", "harbor", "violin"]
FILLER = ["quartz", "lantern", "thistle", "granite", "harvest", "pebble", "willow", "saffron", "bramble", "cobalt",
          "juniper", "ember", "falcon", "nectar", "orchid", "prairie", "quill", "raven", "sierra", "tundra", "umber",
          "velvet", "walnut", "yarrow", "zephyr", "copper", "badger", "cinder", "dune", "fjord"]
CONTEXT_WORDS = {"file_01.txt": (LONG, 22), "file_03.txt": (LONG, 22), "file_05.txt": (LONG, 18),
                 "file_06.txt": (LONG, 22), "file_07.txt": (LONG, 22), "file_09.txt": (LONG, 18),
                 "file_10.txt": (SHORT, 20), "file_12.txt": (MIDDLE, 20), "file_13.txt": (SHORT, 14),
                 "file_15.txt": (SHORT, 16), "file_17.txt": (SHORT, 18), "file_18.txt": (SHORT, 13),
                 "file_20.txt": (SHORT, 15)}
"""file_context's unique texts: the vocabulary and word count of each (the standard uppercase task's
counts for file_01..10; long words for the ten largest, short ones for the ten smallest, file_12
between them: the standard file_merging task's ten smallest files)."""
PLANTED = {"file_03.txt": (12, 48), "file_06.txt": (30, 70), "file_12.txt": (8, 44), "file_17.txt": (4, 38)}
"""Slices of some texts that large_file.txt repeats: the files a 30-character common substring finds."""


def _sentence(rng: random.Random, words: list[str], n: int) -> str:
    picked = [rng.choice(words) for _ in range(n)]
    return " ".join([picked[0].capitalize(), *picked[1:]]) + ".\n"


def file_context(root: Path, data: Path) -> None:
    """21 files: file_01..20.txt and large_file.txt (see :data:`CONTEXT_WORDS`, :data:`PLANTED`); the
    seven identical pairs that the standard duplicates_searching task hard-codes."""
    dirs, files = _tree(data, "standard/file_context/duplicates_searching")
    groups = _literal(data, "standard/file_context/duplicates_searching", "get_expected_duplicate_groups")
    twin = {b: a for a, b in groups.values()}
    rng = random.Random(55)
    texts: dict[str, str] = {}
    for name in sorted(f for f in files if f.startswith("file_")):
        texts[name] = texts[twin[name]] if name in twin else _sentence(rng, *CONTEXT_WORDS[name])
    parts = [_sentence(rng, FILLER, 40) for _ in range(8)]
    for i, (name, (start, end)) in enumerate(PLANTED.items()):
        parts.insert(2 * i + 1, texts[name][start:end] + "\n")
    large = "".join(parts)
    large += "." * (-len(large) % 10)  # ten equal parts (the standard file_splitting task)
    texts["large_file.txt"] = large
    assert not dirs and sorted(texts) == sorted(files)
    for name, text in texts.items():
        _write(root, name, text)


def file_property(root: Path, data: Path) -> None:
    """Three texts (the easy txt_merging task's) and five media files of filler bytes, sized so that
    sg.jpg is the largest .jpg and each file falls in the standard size_classification task's class."""
    _, files = _tree(data, "standard/file_property/size_classification")
    texts = _literal(data, "easy/file_property/txt_merging", "get_expected_contents")
    sizes = {"bear.jpg": 2400, "bridge.jpg": 3100, "sg.jpg": 4200, "bus.MOV": 5300, "road.MOV": 6100}
    rng = random.Random(55)
    for i, text in enumerate(texts, 1):
        _write(root, f"random_file_{i}.txt", text)
    for name, size in sizes.items():
        head = b"\xff\xd8\xff\xe0" if name.endswith(".jpg") else b"\x00\x00\x00\x14ftypqt  "
        _write(root, name, head + bytes(rng.randrange(256) for _ in range(size - len(head))))
    classes = _literal(data, "standard/file_property/size_classification", "get_expected_classification")
    bounds = {"small_files": (0, 299), "medium_files": (300, 700), "large_files": (701, 10**9)}
    assert sorted(files) == sorted(p.name for p in root.iterdir())
    assert all(bounds[c][0] <= (root / f).stat().st_size <= bounds[c][1] for c, names in classes.items() for f in names)


def folder_structure(root: Path, data: Path) -> None:
    """The tree's 52 folders and 69 files, each file of filler text, 58,097 bytes in all (the
    standard structure_analysis task's total)."""
    task = "standard/folder_structure/structure_analysis"
    dirs, files = _tree(data, task)
    total = _literal(data, task, "expected_size")
    for d in dirs:
        (root / d).mkdir(parents=True, exist_ok=True)
    texts = [f for f in files if not f.endswith(".py")]
    sizes = {f: 700 + (i * 97) % 300 for i, f in enumerate(texts)}
    rest = total - sum(sizes.values())
    (script,) = [f for f in files if f.endswith(".py")]
    for rel, size in sizes.items():
        _write(root, rel, ((Path(rel).stem + " ") * (size // 2))[:size - 1] + "\n")
    body = 'def main():\n    print("complex structure")\n\n\nif __name__ == "__main__":\n    main()\n'
    assert 0 < rest - len(body)
    _write(root, script, body + "#" * (rest - len(body) - 1) + "\n")


def papers(root: Path, data: Path) -> None:
    """The tree's 83 arXiv HTML pages (a title and one line each) and its .bib file."""
    _, files = _tree(data, "easy/papers/papers_counting")
    for name in files:
        stem = Path(name).stem
        if name.endswith(".html"):
            _write(root, name, f"<!DOCTYPE html>\n<html><head><title>arXiv {stem}</title></head>\n"
                               f"<body><h1>arXiv {stem}</h1><p>The HTML version of paper {stem}.</p></body></html>\n")
        else:
            ids = sorted(Path(f).stem for f in files if f.endswith(".html"))
            _write(root, name, "".join(f"@misc{{arxiv{i},\n  eprint = {{{i}}},\n  archivePrefix = {{arXiv}}\n}}\n\n"
                                       for i in ids))


def student_database(root: Path, data: Path) -> None:
    """The tree's 150 student folders (``<id>_<First>_<Last>``), each with a basic_info.txt and a
    short recommendation_letter.txt."""
    dirs, files = _tree(data, "standard/student_database/duplicate_name")
    for folder in dirs:
        sid, first, last = folder.split("_", 2)
        _write(root, f"{folder}/basic_info.txt", f"Name: {first} {last}\nStudent ID: {sid}\n")
        _write(root, f"{folder}/recommendation_letter.txt",
               f"To the admissions committee,\n\nI am glad to recommend {first} {last} (student {sid}), who has "
               "worked carefully and kindly in my classes.\n\nYours sincerely,\nA class teacher\n")
    assert sorted(files) == sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def desktop_template(root: Path, data: Path) -> None:
    """The 21 recovered files, unchanged."""
    copy_tree(data / RECOVERED, root)


CATEGORIES = {"desktop_template": desktop_template, "file_context": file_context, "file_property": file_property,
              "folder_structure": folder_structure, "papers": papers, "student_database": student_database}


def build_category(category: str, root: Path, data: Path) -> None:
    """Lay ``category``'s initial state out in ``root`` (created), from the public data at ``data``.

    Raises:
        KeyError: A category whose state can be neither recovered nor rebuilt here.
    """
    root.mkdir(parents=True, exist_ok=True)
    CATEGORIES[category](root, data)
