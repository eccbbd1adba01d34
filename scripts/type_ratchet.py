"""mypy over the package, held to a ratchet, per module and in total: no module's error count or
``type: ignore`` comment count may rise, a module not in the counts (a new one, or one that had
none) may have neither, the totals and the per-module ``ignore_errors`` overrides may only go down,
and the modules that define the public API (``helmdeck_dspy.__all__``) have no error at all. The
same run checks a user's code against the package (:data:`USER_CODE`): mypy sees the public names
as their classes and functions, not ``Any`` (one mypy run, as two would each analyse the whole
package).

The counts are kept in ``scripts/type_ratchet.json``: the totals, and by module (a source file's
path from the project root, ``signatures/...`` for that folder) the files that have any. When a
count falls the script says so and ``--lower`` writes the new counts (commit them: the ratchet never
goes back up). A module moved or renamed counts as a new one: its errors go with it only by editing
the kept counts by hand, in the same commit, where the review sees it.

The package maps ``helmdeck_dspy.signatures`` onto the top-level ``signatures/`` folder
(``pyproject.toml``'s ``package-dir``), which mypy cannot follow from the source tree: the check
runs on a shadow tree of symlinks that puts the folder where the import names it.

    .venv/bin/python scripts/type_ratchet.py [--lower]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COUNTS = ROOT / "scripts" / "type_ratchet.json"
ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):\d+: error:")
IGNORE = re.compile(r"#\s*type:\s*ignore")
TOTALS = ("errors", "type_ignores", "module_ignores")
BY_MODULE = {"errors": "errors_by_module", "type_ignores": "type_ignores_by_module"}
"""The totals kept module by module too, and the key of their per-module counts."""
USER = "user_code.py"
USER_CODE = '''\
from helmdeck_dspy import Planner, __version__, load_traces, run_eval
from helmdeck_dspy.planning.planner import Planner as PlannerClass

reveal_type(Planner)
reveal_type(__version__)
reveal_type(run_eval)
reveal_type(load_traces)
planner_class: type[PlannerClass] = Planner
not_an_int: int = Planner  # an error only when Planner is the class: Any would pass
'''
USER_EXPECTS = (
    ('note: Revealed type is "def', '-> helmdeck_dspy.planning.planner.Planner"'),
    ('note: Revealed type is "str"', ""),
    ('note: Revealed type is "def', "-> helmdeck_dspy.evaluation.session.EvalRun"),
    ('note: Revealed type is "def', "-> typing.Iterator[helmdeck_dspy.traces.record.TraceRecord]"),
    ('error: Incompatible types in assignment (expression has type "type[Planner]", variable has type "int")', ""),
)
"""What mypy must say of :data:`USER_CODE`, line by line: each line starts with the first part
and holds the second."""


def shadow_tree(tmp: Path) -> None:
    """``tmp/helmdeck_dspy``: the package's entries and ``signatures/``, as symlinks."""
    pkg = tmp / "helmdeck_dspy"
    pkg.mkdir()
    for entry in (ROOT / "helmdeck_dspy").iterdir():
        if entry.name not in ("signatures", "__pycache__"):
            (pkg / entry.name).symlink_to(entry)
    (pkg / "signatures").symlink_to(ROOT / "signatures")


def run_mypy() -> tuple[list[str], list[str]]:
    """mypy's error lines on the package, their paths relative to the project (``signatures/...``
    for that folder), and what it said of :data:`USER_CODE`."""
    with tempfile.TemporaryDirectory(prefix="helmdeck-mypy-") as tmp:
        shadow_tree(Path(tmp))
        (Path(tmp) / USER).write_text(USER_CODE, encoding="utf-8")
        cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
               "--cache-dir", str(ROOT / ".mypy_cache"), "--no-error-summary", "--hide-error-context",
               "--no-pretty", "helmdeck_dspy", USER]
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, env={**os.environ, "MYPYPATH": tmp})
        if proc.returncode not in (0, 1):  # 2: mypy itself failed
            raise SystemExit(f"mypy did not run: {proc.stderr.strip() or proc.stdout.strip()}")
    lines = proc.stdout.splitlines()
    user = [line.split(": ", 1)[1] for line in lines if line.startswith(f"{USER}:")]
    package = [line for line in lines if (m := ERROR.match(line)) is not None and m["path"] != USER]
    shadowed = "helmdeck_dspy/signatures/"
    return [("signatures/" + line[len(shadowed):]) if line.startswith(shadowed) else line for line in package], user


def user_code_problems(said: list[str]) -> list[str]:
    """Where what mypy said of :data:`USER_CODE` differs from :data:`USER_EXPECTS`."""
    said = [line.split("  [")[0] for line in said]
    if len(said) != len(USER_EXPECTS):
        return [f"expected {len(USER_EXPECTS)} lines, mypy said {len(said)}:", *said]
    return [f"{line!r} is not {start}...{holds}" for line, (start, holds) in zip(said, USER_EXPECTS)
            if not (line.startswith(start) and holds in line)]


def public_modules() -> set[str]:
    """The files that define a name in ``helmdeck_dspy.__all__``."""
    sys.path.insert(0, str(ROOT))
    import helmdeck_dspy

    mods = {getattr(getattr(helmdeck_dspy, n), "__module__", None) for n in helmdeck_dspy.__all__}
    files = set()
    for mod in filter(None, mods):
        rel = mod.replace(".", "/")
        files.add(rel.replace("helmdeck_dspy/signatures", "signatures") + ".py")
    return files


def ignore_comments() -> Counter[str]:
    """The ``type: ignore`` comments of each source file, by its path from the project root."""
    found: Counter[str] = Counter()
    for folder in ("helmdeck_dspy", "signatures"):
        for path in (ROOT / folder).rglob("*.py"):
            if n := len(IGNORE.findall(path.read_text(encoding="utf-8"))):
                found[path.relative_to(ROOT).as_posix()] = n
    return found


def module_ignores() -> int:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8")).get("tool", {}).get("mypy", {})
    return sum(1 for o in config.get("overrides", []) if o.get("ignore_errors"))


def counts(errors: list[str], ignores: Counter[str], overrides: int) -> dict[str, Any]:
    """The counts as the json keeps them: the totals, then the modules that have any, sorted."""
    by_file = Counter(line.split(":", 1)[0] for line in errors)
    return {"errors": len(errors), "type_ignores": sum(ignores.values()), "module_ignores": overrides,
            "errors_by_module": dict(sorted(by_file.items())), "type_ignores_by_module": dict(sorted(ignores.items()))}


def compare(kept: dict[str, Any], now: dict[str, Any]) -> tuple[list[str], list[str]]:
    """What rose and what fell from ``kept`` to ``now``, one line each: a total (``errors 109 (kept
    108)``) or a module's count (``errors in helmdeck_dspy/x.py: 2 (kept 1)``). A module absent from
    the kept counts is kept at 0, so a new module with an error has risen."""
    risen, fell = [], []
    for key in TOTALS:
        before, after = kept.get(key, 0), now[key]
        if after != before:
            (risen if after > before else fell).append(f"{key} {after} (kept {before})")
    for total, key in BY_MODULE.items():
        before_by, after_by = kept.get(key, {}), now[key]
        for path in sorted(set(before_by) | set(after_by)):
            before, after = before_by.get(path, 0), after_by.get(path, 0)
            if after != before:
                new = "" if path in before_by else ", a module not kept"
                (risen if after > before else fell).append(f"{total} in {path}: {after} (kept {before}{new})")
    return risen, fell


def main() -> int:
    parser = argparse.ArgumentParser(description="mypy with a ratchet, per module and in total")
    parser.add_argument("--lower", action="store_true", help="write the counts when they fell")
    args = parser.parse_args()
    errors, said = run_mypy()
    now = counts(errors, ignore_comments(), module_ignores())
    kept = json.loads(COUNTS.read_text(encoding="utf-8")) if COUNTS.exists() else dict(now)
    unkept = [key for key in BY_MODULE.values() if key not in kept]  # a counts file from before the per-module ratchet
    if unkept:
        print(f"no {', '.join(unkept)} in {COUNTS.relative_to(ROOT)}: this run's are taken as kept")
        kept.update({key: now[key] for key in unkept})
    by_file = now["errors_by_module"]
    public = sorted(f for f in public_modules() if by_file.get(f))
    risen, fell = compare(kept, now)
    print("mypy ratchet: " + ", ".join(f"{k} {now[k]} (kept {kept.get(k, 0)})" for k in TOTALS)
          + f"; {len(by_file)} modules with errors (kept {len(kept['errors_by_module'])})")
    failed = False
    wrong = user_code_problems(said)
    if wrong:
        failed = True
        print("a user's code does not see the public names' types:")
        print("\n".join("  " + w for w in wrong))
    if public:
        failed = True
        print("errors in the public API's modules (they must have none):")
        for line in errors:
            if line.split(":", 1)[0] in public:
                print("  " + line)
    if risen:
        failed = True
        print("the ratchet rose:")
        print("\n".join("  " + r for r in risen))
        grown = {p for p, n in by_file.items() if n > kept["errors_by_module"].get(p, 0)}
        if grown:
            print("the errors of the modules whose count rose:")
            print("\n".join("  " + line for line in errors if line.split(":", 1)[0] in grown))
    if (fell or unkept) and not failed:
        changed = fell or [f"the per-module counts ({', '.join(unkept)})"]
        if args.lower:
            COUNTS.write_text(json.dumps(now, indent=2) + "\n", encoding="utf-8")
            print(f"lowered in {COUNTS.relative_to(ROOT)} (commit it):")
        else:
            print(f"fell or new (run with --lower and commit {COUNTS.relative_to(ROOT)}):")
        print("\n".join("  " + line for line in changed))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
