"""``helmdeck-dspy models install`` with several names: each looked up first, then installed in order."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from helmdeck_dspy.cli.models import models
from helmdeck_dspy.errors import UnknownModelError
from helmdeck_dspy.local import install as install_module
from helmdeck_dspy.local.install import InstallResult


@pytest.fixture
def installed(monkeypatch) -> list[str]:
    """The names ``install`` was called with (nothing is downloaded)."""
    calls: list[str] = []

    def fake_install(model, *, keep_wheels=False, notify=None, **_kw):
        calls.append(model.name)
        return InstallResult(name=model.name, path=f"/models/{model.name}.gguf", action="installed", seconds=0.5)

    monkeypatch.setattr(install_module, "install", fake_install)
    return calls


def test_several_names_install_in_the_order_given(installed):
    r = CliRunner().invoke(models, ["install", "qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"])
    assert r.exit_code == 0, r.output
    assert installed == ["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"]
    assert r.stdout.splitlines() == ["qwen2.5-coder-1.5b: installed at /models/qwen2.5-coder-1.5b.gguf (0.5 s)",
                                     "qwen2.5-coder-0.5b: installed at /models/qwen2.5-coder-0.5b.gguf (0.5 s)"]


def test_an_unknown_name_stops_the_command_before_any_download(installed):
    r = CliRunner().invoke(models, ["install", "qwen2.5-coder-0.5b", "llama-70b"])
    assert isinstance(r.exception, UnknownModelError) and "llama-70b" in str(r.exception)
    assert installed == []


def test_install_needs_a_name(installed):
    r = CliRunner().invoke(models, ["install"])
    assert r.exit_code == 2 and "Missing argument 'NAME...'" in r.output
