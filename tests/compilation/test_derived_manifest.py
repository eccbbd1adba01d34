"""The manifest is derived from the program files (issue 41, item 2): each file carries its entry,
its compile run's facts sit beside it, and the bundled manifest is exactly what the files say."""

from __future__ import annotations

import json
import shutil

from helmdeck_dspy.compilation.manifest import (
    beside,
    derive_manifest,
    entry_of,
    program_files,
    write_manifest,
)
from helmdeck_dspy.io.resources import compiled_dir
from helmdeck_dspy.program.store import program_about, read_manifest


def test_the_bundled_manifest_is_what_the_program_files_say():
    files = program_files()
    assert len(files) == 6
    for path in files:
        about = program_about(json.loads(path.read_text()))
        assert about["variant"] == path.stem and about["tier"] == path.parent.name.removeprefix("tier_")
        assert entry_of(path) is not None and beside(path, "run").is_file()
    assert derive_manifest() == read_manifest()


def test_a_program_copied_elsewhere_takes_its_entry_with_it(tmp_path):
    source = compiled_dir() / "tier_C" / "full_steps.json"
    (tmp_path / "tier_C").mkdir()
    for path in (source, beside(source, "run")):
        shutil.copy(path, tmp_path / "tier_C" / path.name)
    write_manifest(tmp_path)
    (key, entry), = read_manifest(tmp_path)["programs"].items()
    assert key == "tier_C/full_steps" and entry == read_manifest()["programs"][key]


def test_a_file_without_an_entry_keeps_the_one_the_manifest_lists_unless_it_hashes_another(tmp_path):
    (tmp_path / "tier_B").mkdir()
    program = tmp_path / "tier_B" / "single_pick.json"
    state = json.loads((compiled_dir() / "tier_B" / "single_pick.json").read_text())
    del state["metadata"]["helmdeck"]  # a program from before files carried their entries
    program.write_text(json.dumps(state))
    listed = {"tier": "B", "variant": "single_pick", "optimizer": "fit", "path": "tier_B/single_pick.json"}
    (tmp_path / "manifest.json").write_text(json.dumps({"schema_version": 1, "programs": {"tier_B/single_pick": listed}}))
    assert derive_manifest(tmp_path)["programs"] == {"tier_B/single_pick": listed}
    listed["program_sha256"] = "0" * 64  # the entry hashes another file: it no longer describes this one
    (tmp_path / "manifest.json").write_text(json.dumps({"schema_version": 1, "programs": {"tier_B/single_pick": listed}}))
    assert derive_manifest(tmp_path)["programs"] == {}
