"""The public MCP end-to-end tasks (MCPVerse, MCPMark; experiments/public-mcp): the task file is
its generator's output, the intents are the published ones, every world builds, and every check
fails on the initial state and passes on a hand-made correct end state (the benchmarks' own
scripts too). Skipped, with the reason, where ../shared/data/public-mcp is absent; the known
solutions through the real servers, where those are not installed."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

from helmdeck_dspy.bench.e2e.checks import E2ETask, load_e2e_tasks, run_checks
from helmdeck_dspy.bench.e2e.mcpmark_states import CATEGORIES, parse_tree
from helmdeck_dspy.bench.e2e.public import (DATA_ENV, OUTPUT_SUB_FOLDER, build_world, data_dir, require_data,
                                            world_servers)
from helmdeck_dspy.bench.e2e.run import StudySetup, select_tasks
from helmdeck_dspy.bench.study.spec import load_study_spec
from helmdeck_dspy.errors import DataFileError
from tests.conftest import PROJECT_ROOT

HERE = PROJECT_ROOT / "experiments" / "public-mcp"
TASKS = HERE / "tasks.jsonl"
SPEC = HERE / "qwen2.5-coder-1.5b" / "study.toml"
SETUP = StudySetup(npm_dir=PROJECT_ROOT / ".mcp-servers",
                   sqlite_command=PROJECT_ROOT / ".mcp-servers" / "sqlite" / "bin" / "mcp-server-sqlite")
OUT = f"outputs/{OUTPUT_SUB_FOLDER}/task_outputs"

needs_data = pytest.mark.skipif(not (data_dir() / "tasks.jsonl").is_file(),
                                reason=f"the public MCP data is not at {data_dir()} (../shared/data/public-mcp; "
                                       f"{DATA_ENV} names another folder)")


def _tasks() -> list[E2ETask]:
    return load_e2e_tasks(TASKS)[0]


def _generator():
    spec = importlib.util.spec_from_file_location("make_public_tasks", HERE / "make_tasks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_task_file_loads_with_fixed_halves_and_the_study_spec_runs_it():
    tasks = _tasks()
    assert len(tasks) >= 30 and len({t.id for t in tasks}) == len(tasks)
    by_type = defaultdict(lambda: defaultdict(int))
    for t in tasks:
        by_type[t.type][t.split] += 1
        assert t.half is not None and t.world is not None and t.servers
    assert all(h["dev"] == h["test"] for h in by_type.values()), dict(by_type)
    spec = load_study_spec(SPEC)
    assert [c.name for c in spec.config] == ["planner", "alone", "alone-chat"] and spec.baseline == "alone"
    assert [c.loop for c in spec.config] == ["replan", "replan", "chat"] and spec.config[2].paired_with == "planner"
    assert len(select_tasks(spec.e2e, spec.folder)) == len(tasks)


@needs_data
def test_the_task_file_is_its_generators_output_and_keeps_the_published_intents():
    gen = _generator()
    data = require_data()
    assert TASKS.read_text(encoding="utf-8") == gen.text(gen.make_tasks(data))
    rows = {json.loads(line)["id"]: json.loads(line) for line in (data / "tasks.jsonl").read_text().splitlines()}
    for t in _tasks():
        source, _, oid = t.id.partition("/")
        if source == "mcpverse":
            assert t.intent == rows[oid]["task_text"].replace("{OUTPUT_SUB_FOLDER}", OUTPUT_SUB_FOLDER)
        else:
            published = (data / "mcpmark" / "tasks" / "filesystem" / oid / "description.md").read_text(encoding="utf-8")
            assert t.intent == published + gen.MCPMARK_NOTE
    counts = defaultdict(int)
    for t in _tasks():
        counts[t.type] += 1
    assert counts == {"mcpverse-filesystem": 14, "mcpverse-git": 4, "mcpmark-easy": 8, "mcpmark-standard": 12}


def test_without_the_data_a_public_world_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(DataFileError, match="public MCP benchmarks' data is not there"):
        build_world("mcpverse", tmp_path / "w")


def test_a_task_starts_only_its_benchmarks_servers_and_needs_only_those_installed(tmp_path):
    none = tmp_path / "no-npm"
    git_only = world_servers("mcpverse", ("git",), tmp_path, none, none / "sqlite")
    assert [s.split("=", 1)[0] for s in git_only.sources] == ["git"] and git_only.missing == []
    assert "git-api-demo" in git_only.sources[0]
    files = world_servers("mcpmark/papers", ("filesystem",), tmp_path, none, none / "sqlite")
    assert [s.split("=", 1)[0] for s in files.sources] == ["filesystem"] and files.sources[0].endswith(str(tmp_path))
    assert [m.split()[0] for m in files.missing] == ["mcp-server-filesystem"]


def test_the_results_page_records_the_frozen_task_file():
    import hashlib as h

    page = (PROJECT_ROOT / "docs" / "results" / "public-mcp.md").read_text(encoding="utf-8")
    assert h.sha256(TASKS.read_bytes()).hexdigest() in page


# --- hand-made correct end states: each returns the (tool, text) results a solving run would have had ---

def _read(root: Path, rel: str) -> str:
    return (root / rel).read_text(encoding="utf-8")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root / "test_data/git/git-api-demo"), *args], check=True,
                          capture_output=True, text=True).stdout


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


def _info(root: Path, rel: str) -> tuple[str, str]:
    return ("get_file_info", f"size: {(root / rel).stat().st_size}\nisFile: true")


TXT = "test_data/txt_truncated"
CN = [f"CN-{i}.txt" for i in (1, *range(4, 17))]


def _preview(root: Path) -> list[tuple[str, str]]:
    text = "\n---\n".join(_read(root, f"{TXT}/{n}")[:100] for n in sorted(CN))
    _write(root, f"{OUT}/snapshots/preview.txt", text)
    return [_info(root, f"{OUT}/snapshots/preview.txt")]


VERSE: dict[str, Callable[[Path], list[tuple[str, str]]]] = {
    "Q87": lambda r: [("read_text_file", _read(r, "test_data/filesystem/example/e1.txt"))],
    "Q88": lambda r: _write(r, f"{OUT}/a.txt", "this is a sample text") or [],
    "Q89": lambda r: [("list_directory", "".join(f"[FILE] {p.name}\n" for p in sorted((r / "test_data/filesystem/example").iterdir())))],
    "Q91": lambda r: [("search_files", str(r / "test_data/filesystem/tree_example/t1/t1-1/t1-1-1.txt"))],
    "Q92": lambda r: [_info(r, "test_data/filesystem/example/e1.txt")],
    "Q93": lambda r: [("git_status", "Repository status:\n" + _git(r, "status"))],
    "Q94": lambda r: [("git_branch", _git(r, "branch"))],
    "Q95": lambda r: [("git_diff", _git(r, "diff", "main", "feature"))],
    "Q131": lambda r: [("read_text_file", _read(r, f"test_data/filesystem/example/{n}")) for n in ("e1.txt", "e2.txt")],
    "Q132": lambda r: [("read_text_file", _read(r, "test_data/filesystem/tree_example/t1/t1-2/t1-2-1/t1-2-1-1.txt"))],
    "Q133": lambda r: [("git_show", _git(r, "show", "HEAD"))],
    "Q170": lambda r: _write(r, f"{OUT}/alpha.txt", "Hello Alpha") or _write(r, f"{OUT}/beta.txt", "Hello Beta") or [],
    "Q171": lambda r: _write(r, f"{OUT}/config.txt", "version=1.0\nstatus=complete") or [],
    "Q172": lambda r: _write(r, f"{OUT}/report.txt", "Test Data") or [_info(r, f"{OUT}/report.txt")],
    "Q173": lambda r: [("read_text_file", _read(r, f"{TXT}/CN-16.txt"))],
    "Q174": lambda r: [_info(r, f"{TXT}/CN-14.txt")],
    "Q175": lambda r: [("read_multiple_files", "\n---\n".join(_read(r, f"{TXT}/{n}") for n in CN))],
    "Q176": _preview,
}


def _move(root: Path, src: str, dst: str) -> None:
    (root / dst).parent.mkdir(parents=True, exist_ok=True)
    (root / src).rename(root / dst)


def _split(root: Path, parts: int) -> None:
    text = _read(root, "large_file.txt")
    step = len(text) // parts + (len(text) % parts > 0)
    for i in range(parts):
        _write(root, f"split/split_{i + 1:02d}.txt", text[i * step:(i + 1) * step])


def _longest(text: str, large: str) -> str:
    best = ""
    for start in range(len(text)):
        end = start + len(best) + 1
        while end <= len(text) and text[start:end] in large:
            if end - start >= 30 and end - start > len(best):
                best = text[start:end]
            end += 1
    return best


def _matches(root: Path, positions: bool) -> None:
    large = _read(root, "large_file.txt")
    lines = []
    for i in range(1, 21):
        found = _longest(_read(root, f"file_{i:02d}.txt"), large)
        if found:
            lines.append(f"file_{i:02d}.txt" + (f",{large.find(found) + 1}" if positions else ""))
    _write(root, "answer.txt", "\n".join(lines) + "\n")


def _upper(root: Path, n: int) -> None:
    for i in range(1, n + 1):
        _write(root, f"uppercase/file_{i:02d}.txt", _read(root, f"file_{i:02d}.txt").upper())
    if n == 10:
        _write(root, "uppercase/answer.txt", "".join(f"file_{i:02d}.txt:{len(_read(root, f'file_{i:02d}.txt').split())}\n"
                                                     for i in range(1, 11)))


def _duplicates(root: Path) -> None:
    groups = defaultdict(list)
    for p in sorted(root.glob("file_*.txt")):
        groups[hashlib.sha256(p.read_bytes()).hexdigest()].append(p.name)
    for names in groups.values():
        for name in names if len(names) > 1 else []:
            _move(root, name, f"duplicates/{name}")


def _merge(root: Path) -> None:
    smallest = sorted(sorted(root.glob("*.txt"), key=lambda p: p.stat().st_size)[:10], key=lambda p: p.name)
    _write(root, "merged_content.txt", "".join(f"{p.name}\n{p.read_text()}\n" for p in smallest))


def _by_size(root: Path) -> None:
    for p in sorted(q for q in root.iterdir() if q.is_file()):
        size = p.stat().st_size
        _move(root, p.name, f"{'small' if size < 300 else 'medium' if size <= 700 else 'large'}_files/{p.name}")


def _structure(root: Path) -> None:
    files = [p for p in (root / "complex_structure").rglob("*") if p.is_file()]
    folders = [p for p in (root / "complex_structure").rglob("*") if p.is_dir()]
    deepest = max((p.parent for p in files), key=lambda p: len(p.relative_to(root).parts))
    rel = deepest.relative_to(root)
    _write(root, "structure_analysis.txt",
           f"total number of files: {len(files)}\ntotal number of folders: {len(folders)}\n"
           f"total size of all files: {sum(p.stat().st_size for p in files)}\n\ndepth: {len(rel.parts)}\n{rel.as_posix()}\n\n"
           f"txt: {sum(p.suffix == '.txt' for p in files)}\npy: {sum(p.suffix == '.py' for p in files)}\n")


def _mirror(root: Path) -> None:
    def walk(src: Path, dst: Path) -> None:
        dst.mkdir(parents=True)
        kept = [d for d in sorted(src.iterdir()) if d.is_dir() and sum(f.is_file() for f in d.iterdir()) <= 2]
        for d in kept:
            walk(d, dst / (d.name + "_processed" if any(c.isdigit() for c in d.name) else d.name))
        if not kept:
            (dst / "placeholder.txt").write_text(str(dst.resolve()))
    walk(root / "complex_structure", root / "complex_structure_mirror")


def _namesakes(root: Path, first_only: bool) -> None:
    ids = defaultdict(list)
    for d in sorted(p.name for p in root.iterdir()):
        sid, name = d.split("_", 1)
        ids[name.replace("_", " ")].append(sid)
    groups = [f"name: {n}\ncount: {len(i)}\nids: {', '.join(i)}\n" for n, i in ids.items() if len(i) > 1]
    _write(root, "namesake.txt", "\n".join(groups[:1] if first_only else groups))


BUDGET = [("Archives/tax_documents_2022.csv", v) for v in (42000, 1800, 950)] + \
         [("Documents/Personal/tax_info_2023.csv", v) for v in (45000, 2500, 1200)] + \
         [("Documents/budget.csv", v) for v in (250, 180, 120)] + \
         [("Downloads/expenses.csv", v) for v in (45.99, 99.00, 234.50)] + \
         [("Downloads/price_comparisons.csv", v) for v in (879.99, 289.99, 74.99)]
CONTACTS = ("Name,Email,Phone,Status,Industry\nJohn Smith,john@email.com,555-0101,,\nJane Doe,jane@email.com,555-0102,,\n"
            "Bob Johnson,bob@email.com,555-0103,,\nAlice Brown,alice@email.com,555-0201,Inactive,\n"
            "Charlie Davis,charlie@email.com,555-0202,Active,\nDavid Wilson,david@email.com,555-0203,Inactive,\n"
            "Acme Corp,acme@corp.com,,,Technology\nGlobal Inc,global@inc.com,,,Finance\nLocal Business,local@biz.com,,,Retail\n"
            "Spouse,,+1-555-0124,,\nParent,,+1-555-0125,,\nSibling,,+1-555-0126,,\nPrimary Doctor,,+1-555-0201,,\n"
            "Dentist,,+1-555-0202,,\nPharmacy,,+1-555-0203,,\n")
ARRANGE = {"work": ["Documents/Work/client_list.csv", "Documents/Work/timesheet.csv", "experiment_results.txt",
                    "Documents/Projects/budget_tracker.csv", "Downloads/expenses.csv"],
           "life": ["Desktop/contacts.csv", "Documents/budget.csv", "Downloads/fitness_log.csv",
                    "Downloads/price_comparisons.csv", "book_list.txt", "bookmark_export.txt", "emergency_contacts.txt"],
           "archives": ["Archives/backup_contacts.csv", "Archives/tax_documents_2022.csv", "correspondence_2023.txt",
                        "Documents/Personal/tax_info_2023.csv"],
           "temp": ["Temp/test_data.csv", "draft_letter.txt"],
           "others": ["example.txt", "calculations.txt", "Documents/important_dates.csv"]}


def _arrange(root: Path) -> None:
    for folder, files in ARRANGE.items():
        for rel in files:
            _move(root, rel, f"{folder}/{Path(rel).name}")


MARK: dict[str, Callable[[Path], None]] = {
    "easy/file_context/file_splitting": lambda r: _split(r, 3),
    "easy/file_context/pattern_matching": lambda r: _matches(r, positions=False),
    "easy/file_context/uppercase": lambda r: _upper(r, 5),
    "easy/file_property/largest_rename": lambda r: _move(r, "sg.jpg", "largest.jpg"),
    "easy/file_property/txt_merging": lambda r: _write(r, "merge.txt", "\n".join(p.read_text() for p in sorted(r.glob("*.txt")))),
    "easy/folder_structure/structure_analysis": lambda r: _write(r, "structure_analysis.txt", "1\n"),
    "easy/papers/papers_counting": lambda r: _write(r, "count.txt", f"{len(list(r.glob('*.html')))}\n"),
    "easy/student_database/duplicate_name": lambda r: _namesakes(r, first_only=True),
    "standard/desktop_template/budget_computation": lambda r: _write(
        r, "total_budget.txt", "".join(f"{p};{v:.2f}\n" for p, v in BUDGET) + f"{sum(v for _, v in BUDGET):.2f}\n"),
    "standard/desktop_template/contact_information": lambda r: _write(r, "contact_info.csv", CONTACTS) or _write(
        r, "answer.txt", "Dentist\n"),
    "standard/desktop_template/file_arrangement": _arrange,
    "standard/file_context/duplicates_searching": _duplicates,
    "standard/file_context/file_merging": _merge,
    "standard/file_context/file_splitting": lambda r: _split(r, 10),
    "standard/file_context/pattern_matching": lambda r: _matches(r, positions=True),
    "standard/file_context/uppercase": lambda r: _upper(r, 10),
    "standard/file_property/size_classification": _by_size,
    "standard/folder_structure/structure_analysis": _structure,
    "standard/folder_structure/structure_mirror": _mirror,
    "standard/student_database/duplicate_name": lambda r: _namesakes(r, first_only=False),
}


def _solve(task: E2ETask, root: Path) -> list[tuple[str, str]]:
    source, _, oid = task.id.partition("/")
    if source == "mcpverse":
        return VERSE[oid](root)
    MARK[oid](root)
    return []


@needs_data
@pytest.mark.parametrize("world", ["mcpverse", *(f"mcpmark/{c}" for c in CATEGORIES)])
def test_every_world_builds_as_its_benchmark_lays_it_out(world, tmp_path):
    if world == "mcpverse" and shutil.which("git") is None:
        pytest.skip("git is not on PATH (MCPVerse's generate_repo.sh needs it)")
    root = build_world(world, tmp_path / "w")
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts)
    if world == "mcpverse":
        assert (root / OUT).is_dir() and not (root / "test_data/txt_truncated/snapshots").exists()
        assert _git(root, "status", "--porcelain") == "" and _git(root, "branch", "--format=%(refname:short)").split() == ["feature", "main"]
        assert len([f for f in files if f.startswith(TXT)]) == 14
        return
    category = world.removeprefix("mcpmark/")
    meta = next((require_data() / "mcpmark/tasks/filesystem").glob(f"*/{category}/*/meta.json"))
    dirs, tree_files = parse_tree(json.loads(meta.read_text())["meta_data"]["stateContent"])
    assert files == sorted(tree_files)
    assert all(p.stat().st_mode & 0o200 for p in root.rglob("*"))  # writable, unlike the shared copy
    if category == "desktop_template":
        for rel in tree_files:
            assert (root / rel).read_bytes() == (require_data() / "mcpmark/git-history/5a5e304/test_environments/desktop" / rel).read_bytes()


@needs_data
@pytest.mark.parametrize("task_id", [t.id for t in _tasks()])
def test_each_check_fails_on_the_initial_state_and_passes_on_a_correct_end_state(task_id, tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not on PATH")
    task = next(t for t in _tasks() if t.id == task_id)
    root = build_world(task.world, tmp_path / "w")
    assert not any(run_checks(task, root, [], "a", "a")), "a check passes before anything was done"
    results = _solve(task, root)
    assert all(run_checks(task, root, results, "a", "b")), "a check fails on the correct end state"


@needs_data
def test_a_near_miss_fails_the_fixed_checks_and_the_original_scripts():
    tasks = {t.id: t for t in _tasks()}
    cases = [
        ("mcpverse/Q88", lambda r: _write(r, f"{OUT}/a.txt.", "this is a sample text") or []),  # the stray dot, taken
        ("mcpverse/Q171", lambda r: _write(r, f"{OUT}/config.txt", "version=1.0\\nstatus=complete") or []),
        ("mcpverse/Q176", lambda r: _write(r, f"{OUT}/snapshots/preview.txt", "x" * 3586) or [_info(r, f"{OUT}/snapshots/preview.txt")]),
        ("mcpverse/Q93", lambda r: [("git_status", "On branch feature\nnothing to commit")]),
        ("mcpmark/easy/papers/papers_counting", lambda r: _write(r, "count.txt", "84\n") or []),
        ("mcpmark/standard/file_context/file_splitting", lambda r: _split(r, 9) or []),
    ]
    import tempfile

    for task_id, wrong in cases:
        with tempfile.TemporaryDirectory() as tmp:
            root = build_world(tasks[task_id].world, Path(tmp) / "w")
            assert not all(run_checks(tasks[task_id], root, wrong(root), "a", "b")), task_id


GOLD: dict[str, list[tuple[str, dict]]] = {
    "mcpverse/Q87": [("read_text_file", {"path": "./test_data/filesystem/example/e1.txt"})],
    "mcpverse/Q88": [("write_file", {"path": f"./{OUT}/a.txt", "content": "this is a sample text"})],
    "mcpverse/Q89": [("list_directory", {"path": "./test_data/filesystem/example"})],
    "mcpverse/Q91": [("search_files", {"path": "./test_data/filesystem/tree_example", "pattern": "**/t1-1-1.txt"})],
    "mcpverse/Q92": [("get_file_info", {"path": "./test_data/filesystem/example/e1.txt"})],
    "mcpverse/Q93": [("git_status", {"repo_path": "./test_data/git/git-api-demo"})],
    "mcpverse/Q94": [("git_branch", {"repo_path": "./test_data/git/git-api-demo", "branch_type": "local"})],
    "mcpverse/Q95": [("git_diff", {"repo_path": "./test_data/git/git-api-demo", "target": "feature"})],
    "mcpverse/Q131": [("read_multiple_files", {"paths": ["./test_data/filesystem/example/e1.txt",
                                                         "./test_data/filesystem/example/e2.txt"]})],
    "mcpverse/Q132": [("read_text_file", {"path": "./test_data/filesystem/tree_example/t1/t1-2/t1-2-1/t1-2-1-1.txt"})],
    "mcpverse/Q133": [("git_show", {"repo_path": "./test_data/git/git-api-demo", "revision": "HEAD"})],
    "mcpverse/Q170": [("create_directory", {"path": f"./{OUT}"}),
                      ("write_file", {"path": f"./{OUT}/alpha.txt", "content": "Hello Alpha"}),
                      ("write_file", {"path": f"./{OUT}/beta.txt", "content": "Hello Beta"}),
                      ("search_files", {"path": f"./{OUT}", "pattern": "*.txt"})],
    "mcpverse/Q171": [("write_file", {"path": f"./{OUT}/config.txt", "content": "version=1.0\nstatus=pending"}),
                      ("edit_file", {"path": f"./{OUT}/config.txt", "edits": [{"oldText": "pending", "newText": "complete"}]})],
    "mcpverse/Q172": [("write_file", {"path": f"./{OUT}/report.txt", "content": "Test Data"}),
                      ("get_file_info", {"path": f"./{OUT}/report.txt"})],
    "mcpverse/Q173": [("read_text_file", {"path": f"./{TXT}/CN-16.txt"})],
    "mcpverse/Q174": [("list_directory_with_sizes", {"path": f"./{TXT}", "sortBy": "size"})],
    "mcpverse/Q175": [("read_multiple_files", {"paths": [f"./{TXT}/{n}" for n in CN]})],
    "mcpmark/easy/papers/papers_counting": [("write_file", {"path": "count.txt", "content": "83"})],
    "mcpmark/easy/file_property/largest_rename": [("move_file", {"source": "sg.jpg", "destination": "largest.jpg"})],
}


@needs_data
@pytest.mark.parametrize("task_id", sorted(GOLD))
def test_a_known_solution_through_the_real_servers_passes(task_id, tmp_path):
    from helmdeck_dspy.planning.guards import GuardedStep
    from helmdeck_dspy.run import McpExecutor, ToolSessions, allow_all

    task = next(t for t in _tasks() if t.id == task_id)
    root = build_world(task.world, tmp_path / "w")
    servers = world_servers(task.world, task.servers, root, SETUP.npm_dir, SETUP.sqlite_command)
    if servers.missing:
        pytest.skip("servers not installed: " + "; ".join(servers.missing))
    assert [s.split("=", 1)[0] for s in servers.sources] == list(task.servers)
    results = []
    with ToolSessions(servers.sources, env=servers.env, cwd=str(root)) as tools:
        run = McpExecutor(tools, approve=allow_all)
        for i, (tool, args) in enumerate(GOLD[task_id], 1):
            out = run(GuardedStep(order=i, tool=tool, args=args))
            assert not out.error, out.text
            results.append((tool, out.text))
    assert all(run_checks(task, root, results, "a", "b"))
