"""Grounding path arguments in what earlier results showed (planning.grounding, ground_results)."""

import json

from helmdeck_dspy.planning.grounding import Grounding, Known, ground_args, known_from
from helmdeck_dspy.signatures.types import ExecutedStep

ROOT = "/tmp/box/sandbox"


def step(tool, args, output, error=False):
    return ExecutedStep(order=1, tool=tool, args=args, output=output, error=error)


def test_results_show_listed_entries_matched_paths_written_paths_and_the_roots_refusals_name():
    known = known_from([
        step("list_directory", {"path": "test_data/txt"}, "[FILE] a.txt\n[DIR] sub\n[FILE] big report.txt    1.2 KB"),
        step("search_files", {"path": ".", "pattern": "t1"}, f"{ROOT}/deep/t1-1-1.txt\nfetched http://127.0.0.1:80/x/y.html"),
        step("write_file", {"path": "out/new.txt", "content": "x"}, "Successfully wrote to out/new.txt"),
        step("read_file", {"path": "/nope/z.txt"}, f"Access denied - path outside allowed directories: /nope/z.txt not in {ROOT}",
             error=True),
        step("git_status", {"repo_path": "x"}, f"Repository path 'x' is outside the allowed repository '{ROOT}/repo'", error=True),
    ])
    assert {"test_data/txt/a.txt", "test_data/txt/sub", "test_data/txt/big report.txt", f"{ROOT}/deep/t1-1-1.txt",
            "out/new.txt"} <= known.paths
    assert not any("127.0.0.1" in p or p.startswith("/nope") for p in known.paths)  # no URL, no failed call's path
    assert known.roots == {ROOT} and known.repositories == {f"{ROOT}/repo"}


def test_a_path_is_completed_from_results_only_where_one_candidate_fits():
    listing = known_from([step("list_directory", {"path": "test_data/txt"}, "[FILE] a.txt\n[FILE] b.txt")])
    ground = Grounding("Which file is largest in test_data/txt?", complete_tails=True, known=listing)
    assert ground_args({"path": "a.txt"}, ground) == ({"path": "test_data/txt/a.txt"}, ["grounded path"])
    assert ground_args({"path": "c.txt"}, ground) == ({"path": "c.txt"}, [])  # nothing fits: sent as written
    found = known_from([step("search_files", {"path": "."}, f"{ROOT}/deep/t1-1-1.txt\n{ROOT}/other/t1-1-1.txt")])
    two = Grounding("Read t1-1-1.txt.", complete_tails=True, known=found)
    assert ground_args({"path": "t1-1-1.txt"}, two) == ({"path": "t1-1-1.txt"}, [])  # two fit: left as it is
    assert ground_args({"path": "a.txt"}, Grounding("Read a.txt", complete_tails=True)) == ({"path": "a.txt"}, [])


def test_an_absolute_path_outside_the_allowed_folders_is_read_from_their_root():
    known = known_from([
        step("list_directory", {"path": "."}, "[FILE] file_01.txt\n[DIR] test"),
        step("read_file", {"path": "/x"}, f"Access denied - path outside allowed directories: /x not in {ROOT}", error=True),
    ])
    ground = Grounding("Convert file_01.txt.", complete_tails=True, known=known)
    assert ground_args({"path": "/file_01.txt"}, ground) == ({"path": "file_01.txt"}, ["grounded path"])
    assert ground_args({"path": "/test"}, ground)[0] == {"path": "test"}
    assert ground_args({"path": f"{ROOT}/file_01.txt"}, ground)[0] == {"path": f"{ROOT}/file_01.txt"}  # inside
    assert ground_args({"path": "/uppercase"}, ground)[0] == {"path": "/uppercase"}  # unknown: the server says why


def test_a_repository_outside_the_one_allowed_is_replaced_by_it():
    known = known_from([step("git_log", {"repo_path": "/path/to/your/repo"},
                             f"Repository path '/path/to/your/repo' is outside the allowed repository '{ROOT}/repo'",
                             error=True)])
    ground = Grounding("Create a branch docs in the git repository at repo.", complete_tails=True, known=known)
    for wrong in ("/path/to/your/repo", "your-repo-path", ROOT, "files", "../repo"):
        assert ground_args({"repo_path": wrong}, ground) == ({"repo_path": f"{ROOT}/repo"}, ["grounded repo_path"])
    for right in ("repo", "./repo", f"{ROOT}/repo", f"{ROOT}/repo/"):
        assert ground_args({"repo_path": right}, ground) == ({"repo_path": right}, [])
    off = Grounding("Create a branch docs in the git repository at repo.", known=known)  # placeholders only
    assert ground_args({"repo_path": ROOT}, off) == ({"repo_path": ROOT}, [])


def test_the_planner_grounds_in_results_only_with_the_option_on(tmp_path):
    from helmdeck_dspy.catalog.models import RoutingGuide
    from tests.planning.test_planner import planner

    guide = RoutingGuide.model_validate({"packs": [{"name": "read_file", "description": "Reads a file"},
                                                   {"name": "list_directory", "description": "Lists a folder"}]})
    answer = json.dumps([{"name": "read_file", "arguments": {"path": "a.txt"}}])
    prior = [step("list_directory", {"path": "docs"}, "[FILE] a.txt\n[FILE] b.txt")]
    got = {}
    for on in (False, True):
        p = planner(tmp_path, "local/qwen2.5-coder-1.5b-instruct", answer, catalog=guide, answer_strategy="plain",
                    ground_results=on)
        got[on] = p.plan("Read the first file of the docs folder.", prior_steps=prior).steps[0].args["path"]
    assert got == {False: "a.txt", True: "docs/a.txt"}
    assert Known() == known_from([])
