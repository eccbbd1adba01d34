"""The server lifecycle, with a stand-in for llama.cpp's server that takes the same flags."""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.request

import pytest

from helmdeck_dspy.errors import LocalModelError, MissingExtraError
from helmdeck_dspy.local import server as server_module
from helmdeck_dspy.local import engines as engines_module
from helmdeck_dspy.local.server import (
    HOST,
    LocalServer,
    ServerOptions,
    _server_env,
    cpu_features,
    ensure_port_free,
    log_tail,
    require_engine,
    stop_all,
)
from tests.local.conftest import fake_server_command


def _get(url: str) -> dict:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as r:
        return json.loads(r.read())


def _server(tmp_path, mode="ok", **options) -> LocalServer:
    return LocalServer(tmp_path / "m.gguf", "tiny", options=ServerOptions(**options),
                       log_path=tmp_path / "server.log", command=fake_server_command(mode))


def test_start_answers_on_an_ephemeral_port_and_stop_ends_it(tmp_path):
    server = _server(tmp_path, startup_timeout_s=30)
    with server:
        assert server.running and server.port
        assert server.api_base == f"http://127.0.0.1:{server.port}/v1"
        assert _get(f"{server.api_base}/models")["data"][0]["id"] == "tiny"
        assert server in server_module._RUNNING
        pid = server.process.pid
    assert not server.running and server.process.returncode == 0
    assert server not in server_module._RUNNING
    assert "fake server: stopped" in server.log_path.read_text()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_the_server_gets_the_flags_and_not_the_settings_in_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PORT", "1")
    monkeypatch.setenv("API_KEY", "secret")
    monkeypatch.setenv("cache", "true")
    monkeypatch.setenv("KEEP_ME", "1")
    env = _server_env()
    assert "PORT" not in env and "API_KEY" not in env and "cache" not in env and env["KEEP_ME"] == "1"
    args = _server(tmp_path, port=1234, n_ctx=4096, n_threads=3, prompt_cache_entries=0).args(1234)
    assert args == ["--model", str(tmp_path / "m.gguf"), "--model_alias", "tiny", "--host", "127.0.0.1",
                    "--port", "1234", "--n_ctx", "4096", "--n_threads", "3", "--n_threads_batch", "3",
                    "--cache", "false", "--logits_all", "false", "--interrupt_requests", "false"]
    cached = _server(tmp_path, port=1234).args(1234)  # the default: the bounded RAM cache
    assert cached[cached.index("--cache"):] == ["--cache", "true", "--cache_type", "ram", "--cache_size",
                                                str(4 << 30), "--logits_all", "false", "--interrupt_requests", "false"]


def test_a_port_in_use_is_refused_before_starting(tmp_path):
    with socket.socket() as busy:
        busy.bind((HOST, 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(LocalModelError, match=f"port {port} on 127.0.0.1 is in use"):
            ensure_port_free(port)
        server = _server(tmp_path, port=port)
        with pytest.raises(LocalModelError, match="is in use"):
            server.start()
        assert server.process is None


def test_a_server_that_exits_at_start_reports_its_log_tail(tmp_path):
    server = _server(tmp_path, mode="crash", startup_timeout_s=30)
    with pytest.raises(LocalModelError) as exc:
        server.start()
    msg = str(exc.value)
    assert "the llama.cpp server for tiny exited with code 3 before answering" in msg
    assert "error loading model: fake failure" in msg and str(tmp_path / "server.log") in msg
    assert "\n" not in msg
    assert not server.running and server not in server_module._RUNNING


def test_a_server_that_never_answers_times_out_with_its_log_tail_and_is_stopped(tmp_path):
    server = _server(tmp_path, mode="hang", startup_timeout_s=1.5)
    start = time.monotonic()
    with pytest.raises(LocalModelError) as exc:
        server.start()
    assert time.monotonic() - start < 15
    assert "did not answer on http://127.0.0.1:" in str(exc.value) and "within 1.5 s" in str(exc.value)
    assert "loading model ..." in str(exc.value)
    assert not server.running


def test_stop_kills_a_server_that_ignores_sigterm(tmp_path):
    server = _server(tmp_path, mode="stubborn", startup_timeout_s=30).start()
    start = time.monotonic()
    assert server.stop(grace_s=0.5) == -9
    assert time.monotonic() - start < 5


def test_stop_all_stops_every_running_server(tmp_path):
    a = _server(tmp_path / "a", startup_timeout_s=30).start()
    b = _server(tmp_path / "b", startup_timeout_s=30).start()
    assert a.port != b.port
    stop_all()
    assert not a.running and not b.running and not server_module._RUNNING


def test_log_tail_is_one_line():
    assert log_tail(None) == "(empty log)"


def test_without_the_extra_the_engine_check_is_one_line(monkeypatch):
    real = engines_module.importlib.util.find_spec
    monkeypatch.setattr(engines_module.importlib.util, "find_spec", lambda m: None if m == "llama_cpp" else real(m))
    with pytest.raises(MissingExtraError) as exc:
        require_engine()
    msg = str(exc.value)
    assert "\n" not in msg and msg.endswith("install it with: pip install 'helmdeck-dspy[local]'")
    assert "missing: llama_cpp" in msg
    with pytest.raises(MissingExtraError):
        LocalServer("m.gguf", "tiny").start()


def test_only_the_newest_logs_are_kept(tmp_path):
    for i in range(5):
        (tmp_path / f"m-{i}.log").write_text("x")
        os.utime(tmp_path / f"m-{i}.log", (i, i))
    (tmp_path / "notes.txt").write_text("kept")
    server_module.prune_logs(tmp_path, keep=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-3.log", "m-4.log", "notes.txt"]


def test_the_cpu_features_of_a_build_are_read_from_its_log(tmp_path):
    log = tmp_path / "server.log"
    tensors = "".join(f"llama_model_loader: - tensor {i}: blk.{i}.attn_q.weight q4_K\n" for i in range(3000))
    log.write_text(tensors + "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 1 | AVX512_VNNI = 0 | REPACK = 1 | \n"
                   "llama_server: model loaded\n", encoding="utf-8")
    assert cpu_features(log) == "SSE3 AVX AVX2 AVX512 REPACK"  # past the first 64 KB, the zeros left out
    log.write_text("0.00.001 I srv llama_server: initializing\n", encoding="utf-8")
    assert cpu_features(log) is None and cpu_features(tmp_path / "missing.log") is None
