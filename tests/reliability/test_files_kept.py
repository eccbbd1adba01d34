"""Files and folders a command did not create keep what they are (issue 40, item 5): a symlinked
target is written through, never replaced by a regular file, and a data directory that already
existed keeps its mode."""

from __future__ import annotations

import os
import stat

import pytest

from helmdeck_dspy.io.atomic import atomic_write_text


def test_a_symlinked_target_is_written_through(tmp_path):
    real = tmp_path / "tables" / "budgets.toml"
    real.parent.mkdir()
    real.write_text("old\n", encoding="utf-8")
    link = tmp_path / "budgets-link.toml"
    link.symlink_to(real)
    atomic_write_text(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text(encoding="utf-8") == "new\n"


@pytest.mark.parametrize("mode", [0o1777, 0o755])
def test_an_existing_data_directory_keeps_its_mode(tmp_path, monkeypatch, mode):
    from helmdeck_dspy.planning.history import HistoryStore

    home = tmp_path / "shared-home"
    home.mkdir()
    os.chmod(home, mode)
    monkeypatch.setenv("HELMDECK_DSPY_HOME", str(home))
    HistoryStore()  # opens (and creates) its database in the data directory
    assert stat.S_IMODE(home.stat().st_mode) == mode
