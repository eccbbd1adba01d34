"""Running llama.cpp's OpenAI-compatible server for a local model file.

:class:`LocalServer` starts the server of an engine (:mod:`.engines`: llama-cpp-python's, the
default, or llama.cpp's own ``llama-server``); for llama-cpp-python that is
``python -m llama_cpp.server --model F --host 127.0.0.1 --port P --n_ctx N --n_threads T``
(the ``local`` extra). It logs the server's output to a file,
waits until ``GET /v1/models`` answers, and stops it with SIGTERM, then SIGKILL after a grace
period. Port 0 (the default) picks a free ephemeral port. The RAM prompt cache keeps a few
evaluated prompts (``ServerOptions.prompt_cache_entries``, bounded by :mod:`.prefix_cache`; 0 turns
it off), so a prompt in between (a narrowed recheck, another caller) does not cost the next call
over the whole tool list a full prefill; llama-cpp-python's own cache, unbounded, grew to 23 GB in
a long run.
Logits are kept for the last token only (``--logits_all false``; the server's default keeps an
``n_ctx x vocabulary`` float array: 2.6 GB resident for Qwen 0.5B at 8192 tokens, 0.8 GB without);
nothing here asks for logprobs. A streamed answer is not cut short when another request arrives
(``--interrupt_requests false``: the planner streams every call, and the server's default would end
one caller's stream whenever another caller's request waits). The launcher adds one route, ``POST /helmdeck/next-token``
(:mod:`.next_token`): the probability of what the model writes next at one point of an answer,
from the last position's logits.

Every started server is stopped when the process exits (an ``atexit`` hook), and on Linux a
server started from the main thread is also killed when its parent dies without running
``atexit``, e.g. on SIGTERM (``PR_SET_PDEATHSIG`` with SIGKILL). Environment variables the server would read as settings
(``PORT``, ``API_KEY``, ``CACHE`` ...) are removed from its environment: the flags decide.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, Field

from helmdeck_dspy.errors import LocalModelError
from helmdeck_dspy.local import DEFAULT_CTX
from helmdeck_dspy.local.engines import EngineName, engine_named
from helmdeck_dspy.local.registry import models_dir
from helmdeck_dspy.local.prefix_cache import DEFAULT_ENTRIES

HOST = "127.0.0.1"
STARTUP_TIMEOUT_S = 180.0
STOP_GRACE_S = 10.0
POLL_S = 0.25
LOG_TAIL_LINES = 6
KEEP_LOGS = 20
"""Server logs kept in ``<models dir>/logs`` (one per start; older ones are deleted)."""

# Settings of llama-cpp-python 0.3.36's server (pinned by the extra), which it also reads from
# environment variables of the same name in any case, plus CONFIG_FILE.
SERVER_SETTING_NAMES = frozenset("""
api_key cache cache_size cache_type chat_format chat_template_kwargs clip_model_path config_file
disable_ping_events draft_model draft_model_num_pred_tokens embedding flash_attn hf_model_repo_id
hf_pretrained_model_name_or_path hf_tokenizer_config_path host interrupt_requests kv_overrides
last_n_tokens_size logits_all lora_base lora_path main_gpu model model_alias mul_mat_q n_batch n_ctx
n_gpu_layers n_threads n_threads_batch n_ubatch numa offload_kqv port root_path rope_freq_base
rope_freq_scale rope_scaling_type rpc_servers seed split_mode ssl_certfile ssl_keyfile tensor_split
type_k type_v use_mlock use_mmap verbose vocab_only yarn_attn_factor yarn_beta_fast yarn_beta_slow
yarn_ext_factor yarn_orig_ctx
""".split())


def require_engine(engine: str = "llama-cpp-python") -> None:
    """Raise :class:`MissingExtraError` (one line saying how to get it) unless ``engine`` can run here."""
    engine_named(engine).require()


def engine_version(engine: str = "llama-cpp-python") -> str | None:
    """The installed version of ``engine``, or None."""
    return engine_named(engine).version()


def default_threads() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def cpu_features(log_path: Path, head_bytes: int = 1 << 20) -> str | None:
    """The CPU features a llama.cpp build uses, as llama-cpp-python prints them at start (``CPU : SSE3 = 1 |
    AVX2 = 1 | ...``, after the model's tensors): the names set to 1, space-separated; None when the
    log's first megabyte has no such line (llama-server logs none at its default verbosity)."""
    try:
        with open(log_path, "rb") as log:
            head = log.read(head_bytes).decode("utf-8", "replace")
    except OSError:
        return None
    line = next((part for part in head.splitlines() if "CPU : " in part), None)
    if line is None:
        return None
    flags = [f.split("=")[0].strip() for f in line.split("CPU : ", 1)[1].split("|") if f.strip().endswith("= 1")]
    return " ".join(flags) or None


class ServerOptions(BaseModel):
    """How a server is run: its engine, port (0 = a free ephemeral port), context size, CPU
    threads, how many evaluated prompts it keeps (0: only llama.cpp's last one), and how long it
    may take to answer after starting; for ``llama-server``, its slots and the least chunk it
    reuses from a cached prompt (``--cache-reuse``; 0 turns reuse off)."""

    engine: EngineName = "llama-cpp-python"
    port: int = Field(default=0, ge=0, le=65535)
    n_ctx: int = Field(default=DEFAULT_CTX, ge=256)
    n_threads: int = Field(default_factory=default_threads, ge=1)
    prompt_cache_entries: int = Field(default=DEFAULT_ENTRIES, ge=0, le=64)
    startup_timeout_s: float = Field(default=STARTUP_TIMEOUT_S, gt=0)
    slots: int = Field(default=1, ge=1, le=16)
    cache_reuse: int = Field(default=32, ge=0)  # experiments/chunk-reuse-1.5b.txt: 256 reused no tool's entry


def free_port(host: str = HOST) -> int:
    """A port the OS reports free on ``host`` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def ensure_port_free(port: int, host: str = HOST) -> None:
    """Raise :class:`LocalModelError` when something listens on ``host:port`` already."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will: TIME_WAIT is not "in use"
        try:
            s.bind((host, port))
        except OSError as exc:
            raise LocalModelError(f"port {port} on {host} is in use ({exc.strerror}): choose another port, "
                                  "or leave the port out to get a free one") from None


def log_tail(path: Path | None, lines: int = LOG_TAIL_LINES) -> str:
    """The last non-empty lines of a log file joined by `` | `` (one line), or ``(empty log)``."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace") if path else ""
    except OSError:
        text = ""
    tail = [s.strip() for s in text.splitlines() if s.strip()][-lines:]
    return " | ".join(tail) or "(empty log)"


def prune_logs(directory: Path, keep: int = KEEP_LOGS) -> None:
    """Delete all but the ``keep`` newest ``*.log`` files in ``directory``."""
    logs = sorted(directory.glob("*.log"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in logs[keep:]:
        old.unlink(missing_ok=True)


def _server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.lower() not in SERVER_SETTING_NAMES}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _answers(url: str) -> bool:
    """True when ``GET url`` returns 200 with a JSON object (no proxy: the server is local)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=2) as response:
            return response.status == 200 and isinstance(json.loads(response.read()), dict)
    except (OSError, ValueError, urllib.error.URLError):
        return False


_RUNNING: set[LocalServer] = set()
_RUNNING_LOCK = threading.Lock()
_HOOKED = False


def stop_all() -> None:
    """Stop every server this process started and has not stopped (the ``atexit`` hook)."""
    with _RUNNING_LOCK:
        servers = list(_RUNNING)
    for server in servers:
        server.stop()


def _track(server: LocalServer, running: bool) -> None:
    global _HOOKED
    with _RUNNING_LOCK:
        if running:
            _RUNNING.add(server)
            if not _HOOKED:
                atexit.register(stop_all)
                _HOOKED = True
        else:
            _RUNNING.discard(server)


class LocalServer:
    """One llama.cpp server process serving one GGUF file under one alias.

    Args:
        gguf: The model file.
        alias: The model name the server answers to (``llamacpp/<alias>`` in an LM spec).
        options: Port, context size, threads and startup timeout.
        log_path: Where the server's output goes (default: ``<models dir>/logs/ALIAS-PORT.log``).
        command: The program to run instead of llama-cpp-python's server (tests use a fake one
            that takes the same flags); the ``local`` extra is required only without it.
    """

    def __init__(self, gguf: Path, alias: str, *, options: ServerOptions | None = None,
                 log_path: Path | None = None, command: Sequence[str] | None = None) -> None:
        self.gguf = Path(gguf)
        self.alias = alias
        self.options = options or ServerOptions()
        self.command = list(command) if command is not None else None
        self.log_path = log_path
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        self._log: IO[bytes] | None = None
        self._fixed_log = log_path is not None

    @property
    def running(self) -> bool:
        """The process was started and has not exited."""
        return self.process is not None and self.process.poll() is None

    @property
    def api_base(self) -> str:
        """The OpenAI-compatible base URL: ``http://127.0.0.1:PORT/v1``."""
        return f"http://{HOST}:{self.port}/v1"

    def settings(self) -> dict[str, Any]:
        """What this server runs with, for records: model file, alias, port, context, threads, engine,
        and the CPU instructions its build uses (as its log says; a build choice changes answers)."""
        engine = engine_named(self.options.engine)
        cpu = cpu_features(self.log_path) if self.log_path is not None else None
        return {"model_file": str(self.gguf), "alias": self.alias, "host": HOST, "port": self.port,
                "n_ctx": self.options.n_ctx, "n_threads": self.options.n_threads,
                "prompt_cache": self.options.prompt_cache_entries or False, **engine.settings(self.options),
                "engine": engine.name, "engine_version": engine.version() if self.command is None else None,
                **({"cpu_features": cpu} if cpu else {})}

    def args(self, port: int) -> list[str]:
        """The server's flags for ``port`` (its engine's; a test's fake command gets the same)."""
        return engine_named(self.options.engine).flags(self.gguf, self.alias, port, self.options)

    def start(self) -> LocalServer:
        """Start the server and wait until it answers; a running server is left as it is.

        Raises:
            MissingExtraError: The ``local`` extra is not installed.
            LocalModelError: The port is in use, the server exited before answering, or it did not
                answer within the startup timeout (each with the log's last lines).
        """
        if self.running:
            return self
        if self.command is None:
            require_engine(self.options.engine)
        auto = self.options.port == 0
        tries = 0
        while True:  # an ephemeral port can be taken between choosing it and binding it: try another
            tries += 1
            port = free_port() if auto else self.options.port
            if not auto:
                ensure_port_free(port)
            self._spawn(port)
            try:
                self._wait_ready()
                return self
            except LocalModelError:
                lost_race = auto and tries < 3 and "address already in use" in log_tail(self.log_path, 40).lower()
                if not lost_race:
                    raise

    def _spawn(self, port: int) -> None:
        self.port = port
        if not self._fixed_log:
            self.log_path = models_dir() / "logs" / f"{self.alias}-{port}.log"
            prune_logs(self.log_path.parent)
        assert self.log_path is not None
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")
        if self.command is None:
            watch = os.getpid() if threading.current_thread() is threading.main_thread() else 0
            command = [*engine_named(self.options.engine).launcher(self.options, watch), *self.args(port)]
        else:
            command = [*self.command, *self.args(port)]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=self._log,
                                        stderr=subprocess.STDOUT, env=_server_env(), start_new_session=True)
        _track(self, True)

    def _wait_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.options.startup_timeout_s
        url = f"{self.api_base}/models"
        while True:
            code = self.process.poll()
            if code is not None:
                self.stop()
                raise LocalModelError(f"the llama.cpp server for {self.alias} exited with code {code} before answering; "
                                      f"log {self.log_path}: {log_tail(self.log_path)}")
            if _answers(url):
                return
            if time.monotonic() > deadline:
                self.stop()
                raise LocalModelError(f"the llama.cpp server for {self.alias} did not answer on {url} within "
                                      f"{self.options.startup_timeout_s:g} s; log {self.log_path}: {log_tail(self.log_path)}")
            time.sleep(POLL_S)

    def stop(self, grace_s: float = STOP_GRACE_S) -> int | None:
        """Stop the server: SIGTERM, then SIGKILL after ``grace_s`` seconds. Returns its exit code
        (None when it was never started)."""
        proc = self.process
        if proc is None:
            return None
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        _track(self, False)
        return proc.returncode

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
