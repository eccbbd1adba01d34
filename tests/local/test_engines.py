"""The engines a local model can be served with (issue 54, item 1): each builds its own command line,
says in one line what is missing, and is chosen by name, by option or by environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from helmdeck_dspy.errors import LocalModelError, MissingExtraError
from helmdeck_dspy.local.engines import ENGINE_ENV, LLAMA_SERVER_ENV, default_engine, engine_named
from helmdeck_dspy.local.server import LocalServer, ServerOptions


def test_llama_server_gets_its_own_flags_one_slot_and_chunk_reuse(tmp_path):
    options = ServerOptions(engine="llama-server", n_ctx=4096, n_threads=2, port=0)
    flags = LocalServer(tmp_path / "m.gguf", "tiny", options=options).args(8123)
    pairs = dict(zip(flags[::2], flags[1::2]))
    assert pairs["--model"] == str(tmp_path / "m.gguf") and pairs["--alias"] == "tiny" and pairs["--port"] == "8123"
    assert pairs["--host"] == "127.0.0.1" and pairs["--ctx-size"] == "4096" and pairs["--threads"] == "2"
    assert pairs["--parallel"] == "1" and pairs["--cache-reuse"] == "32" and pairs["--cache-ram"] == "4096"
    assert "--jinja" in flags and "--no-webui" in flags
    assert pairs["--repeat-penalty"] == "1.1" and pairs["--repeat-last-n"] == "64"  # llama-cpp-python's defaults
    no_cache = LocalServer(tmp_path / "m.gguf", "tiny", options=options.model_copy(update={"prompt_cache_entries": 0}))
    assert dict(zip(no_cache.args(1)[::2], no_cache.args(1)[1::2]))["--cache-ram"] == "0"


def test_a_missing_llama_server_is_one_line_saying_how_to_build_it(tmp_path, monkeypatch):
    monkeypatch.setenv(LLAMA_SERVER_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(MissingExtraError) as missing:
        LocalServer(tmp_path / "m.gguf", "tiny", options=ServerOptions(engine="llama-server")).start()
    assert "\n" not in str(missing.value) and "make llama-server" in str(missing.value)
    assert f"{LLAMA_SERVER_ENV}={tmp_path / 'nowhere'} is no executable file" in str(missing.value)


def test_the_engine_named_in_the_environment_is_the_default_and_a_wrong_name_is_refused(monkeypatch):
    monkeypatch.delenv(ENGINE_ENV, raising=False)
    assert default_engine() == "llama-cpp-python"
    monkeypatch.setenv(ENGINE_ENV, "llama-server")
    assert default_engine() == "llama-server"
    monkeypatch.setenv(ENGINE_ENV, "ollama")
    with pytest.raises(LocalModelError, match="HELMDECK_LOCAL_ENGINE: unknown local engine 'ollama': expected one of "
                                              "llama-cpp-python, llama-server"):
        default_engine()


def test_a_server_records_which_engine_it_ran(tmp_path, monkeypatch):
    fake = tmp_path / "llama-server"
    fake.write_text("#!/bin/sh\necho 'version: 1 (build 9, commit abc)'\n")
    fake.chmod(0o755)
    monkeypatch.setenv(LLAMA_SERVER_ENV, str(fake))
    settings = LocalServer(Path("m.gguf"), "tiny", options=ServerOptions(engine="llama-server", slots=2)).settings()
    assert settings["engine"] == "llama-server" and settings["engine_version"] == "1 (build 9, commit abc)"
    assert settings["slots"] == 2 and settings["cache_reuse"] == 32
    assert engine_named("llama-cpp-python").settings(ServerOptions()) == {"logits_all": False}
