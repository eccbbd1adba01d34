"""A password in ``--api-base`` appears in no output, file or MCP error (issue 40, item 5).

The endpoint is a loopback port nobody listens on, so every call fails and the failure text (which
quotes the URL it could not reach) goes to stderr, the trace record and the MCP caller.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from helmdeck_dspy.io.redaction import redact
from tests.reliability.conftest import clean_env

PASSWORD = "s3cretPassw0rd"
MODEL = "local/qwen2.5-coder-1.5b-instruct"


def _dead_url() -> str:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing answers there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://planner:{PASSWORD}@127.0.0.1:{port}/v1"


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from helmdeck_dspy.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=120, env=clean_env(home), cwd=home.parent)


def test_url_user_info_and_secret_query_values_are_masked():
    text = f"failed to connect to http://planner:{PASSWORD}@host:8080/v1?api_key=abc123def&token=t0k3n99x&q=ok"
    masked = redact(text)
    assert PASSWORD not in masked and "abc123def" not in masked and "t0k3n99x" not in masked
    assert "host:8080/v1" in masked and "q=ok" in masked
    assert PASSWORD not in redact(f"connect to planner:{PASSWORD}@127.0.0.1:9")  # as some clients print it


def test_plan_and_its_record_never_show_the_password(tmp_path):
    record = tmp_path / "rec.jsonl"
    done = _cli(tmp_path / "home", "plan", "publish my notes", "--model", MODEL, "--lm", "llamacpp/m",
                "--api-base", _dead_url(), "--no-history", "--timeout", "5", "--retries", "0", "--record", str(record))
    assert done.returncode == 1
    assert "connect" in (done.stdout + done.stderr).lower()  # the failure is reported, the URL with it
    for text in (done.stdout, done.stderr, record.read_text("utf-8")):
        assert PASSWORD not in text


def test_traces_record_never_writes_the_password(tmp_path):
    out = tmp_path / "t.jsonl"
    done = _cli(tmp_path / "home", "traces", "record", "--model", MODEL, "--lm", "llamacpp/m", "--api-base",
                _dead_url(), "--n", "1", "--timeout", "5", "--retries", "0", "--no-progress", "--out", str(out))
    texts = [done.stdout, done.stderr, *(p.read_text("utf-8") for p in tmp_path.glob("*.jsonl"))]
    assert all(PASSWORD not in t for t in texts)


def test_an_mcp_caller_never_sees_the_password(tmp_path):
    pytest.importorskip("mcp", reason="the 'serve' extra is not installed")
    from helmdeck_dspy.serve.config import ServeConfig
    from helmdeck_dspy.serve.service import PlanService
    from helmdeck_dspy.serve.wire import PlanRequest

    service = PlanService(ServeConfig(lm_spec="llamacpp/m", api_base=_dead_url(), history=False, timeout_s=5, retries=0))
    outcome = service.plan(PlanRequest(user_intent="publish my notes", model=MODEL), "user:test")
    assert PASSWORD not in json.dumps(outcome.result.model_dump(mode="json"))


# ------------------------------------------------------------------ issue 52, item 6: every URL, one function

TOKEN = "tok3nOnlyUserInfo42"
ENV_SECRET = "envS3cretValue9"


def _echoing_server() -> str:
    """An MCP stdio source whose server writes the value of its ``API_TOKEN`` to stderr and exits."""
    code = "import os,sys; sys.stderr.write('auth failed for token ' + os.environ['API_TOKEN'] + chr(10)); sys.exit(3)"
    return f'mcp+stdio:{sys.executable} -c "{code}"'


def test_a_token_only_url_is_masked_like_a_password():
    from helmdeck_dspy.io.redaction import redact_url

    for url in (f"http://{TOKEN}@host:8080/v1", f"https://{TOKEN}:@host/v1", f"http://user:{PASSWORD}@host/v1?key=abc123def"):
        shown = redact_url(url)
        assert TOKEN not in shown and PASSWORD not in shown and "abc123def" not in shown, shown
        assert "host" in shown
    assert redact_url("http://host:8080/v1?q=ok") == "http://host:8080/v1?q=ok"  # nothing to hide, nothing changed
    assert TOKEN not in redact(f"failed to connect to http://{TOKEN}@127.0.0.1:9/v1")


def test_an_mcp_source_is_never_labelled_by_its_credentials():
    """A server that gives no name is labelled by its URL's host (the label is printed and prefixes
    tool names), never by a token in its user info."""
    from helmdeck_dspy.catalog.importing.sources import default_label, parse_source

    label = default_label(parse_source(f"mcp+http://{TOKEN}@tools.example.org:9/mcp"))
    assert label == "example-org" and TOKEN.lower() not in label  # ("tools" is a word every server shares)


def test_plan_never_shows_a_token_only_url(tmp_path):
    url = _dead_url().replace(f"planner:{PASSWORD}", TOKEN)
    record = tmp_path / "rec.jsonl"
    done = _cli(tmp_path / "home", "plan", "publish my notes", "--model", MODEL, "--lm", "llamacpp/m",
                "--api-base", url, "--no-history", "--timeout", "5", "--retries", "0", "--record", str(record))
    assert done.returncode == 1
    for text in (done.stdout, done.stderr, record.read_text("utf-8")):
        assert TOKEN not in text, text


@pytest.mark.parametrize("command", ["catalog", "run"])
def test_an_mcp_source_url_is_never_shown_with_its_credentials(command, tmp_path):
    source = "mcp+http:" + _dead_url().removesuffix("/v1") + "/mcp"
    args = (["catalog", "import", source, "--out", str(tmp_path / "c.json"), "--timeout", "5"] if command == "catalog"
            else ["run", "list notes", "--tools", source, "--model", MODEL, "--lm", "sim:mid-tier", "--start-timeout", "5"])
    done = _cli(tmp_path / "home", *args)
    assert done.returncode == 1 and "cannot reach" in done.stderr
    assert PASSWORD not in done.stdout + done.stderr, done.stderr


def test_imported_and_run_sources_are_written_without_their_credentials(tmp_path):
    """A reachable server whose URL carries a password: `catalog import --json` and the `run` trace
    name the source without it."""
    pytest.importorskip("mcp", reason="the 'serve' extra is not installed")
    from tests.serve.conftest import config_for, http_server

    replay = tmp_path / "replay.jsonl"
    replay.write_text("", encoding="utf-8")
    with http_server(config_for(tmp_path, replay)) as server:
        source = "mcp+http:" + server.url.replace("http://", f"http://planner:{PASSWORD}@")
        imported = _cli(tmp_path / "home", "catalog", "import", source, "--out", str(tmp_path / "c.json"), "--json")
        trace = tmp_path / "run.json"
        ran = _cli(tmp_path / "home", "run", "route my request", "--tools", source, "--model", MODEL, "--lm",
                   "sim:mid-tier", "--dry-run", "--trace", str(trace), "--json")
    assert imported.returncode == 0, imported.stderr
    assert "127.0.0.1" in json.loads(imported.stdout)["sources"][0]["source"]
    assert ran.returncode in (0, 1) and trace.exists(), ran.stderr  # the simulator may find no plan: a failed run
    assert "127.0.0.1" in json.loads(trace.read_text("utf-8"))["servers"][0]["source"]
    for text in (imported.stdout, imported.stderr, (tmp_path / "c.json").read_text("utf-8"), ran.stdout, ran.stderr,
                 trace.read_text("utf-8")):
        assert PASSWORD not in text


@pytest.mark.parametrize("command", ["catalog", "run"])
def test_a_servers_error_output_never_echoes_an_env_value(command, tmp_path):
    args = (["catalog", "import", _echoing_server(), "--out", str(tmp_path / "c.json")] if command == "catalog"
            else ["run", "list notes", "--tools", _echoing_server(), "--model", MODEL, "--lm", "sim:mid-tier"])
    done = _cli(tmp_path / "home", *args, "--env", f"API_TOKEN={ENV_SECRET}")
    assert done.returncode == 1 and "auth failed for token" in done.stderr, done.stderr  # what it said is kept
    assert ENV_SECRET not in done.stdout + done.stderr, done.stderr


def test_bench_e2e_writes_no_password_into_the_study_spec(tmp_path, monkeypatch, capsys):
    """The study spec names the endpoint without its credentials; the run itself still gets them."""
    from helmdeck_dspy.bench.study import flow
    from helmdeck_dspy.bench.study.flow import StudyReport
    from helmdeck_dspy.cli import main

    seen: list[str | None] = []

    def run_study(spec, **_):
        seen.append(spec.api_base)
        return StudyReport(spec=spec)

    monkeypatch.setattr(flow, "run_study", run_study)
    url = _dead_url()
    main(["bench", "e2e", "--model", MODEL, "--lm", "llamacpp/m", "--api-base", url, "--out", str(tmp_path / "e2e"),
          "--no-progress"])
    spec = (tmp_path / "e2e" / "study.toml").read_text("utf-8")
    assert PASSWORD not in spec and "127.0.0.1" in spec
    assert seen == [url]  # the endpoint is called with its credentials
    assert PASSWORD not in capsys.readouterr().out
    # resumed as a study, the spec's masked endpoint is refused until the URL is given again
    with pytest.raises(SystemExit) as refused:
        main(["bench", "study", str(tmp_path / "e2e" / "study.toml")])
    err = capsys.readouterr().err
    assert refused.value.code == 2 and "--api-base" in err and PASSWORD not in err
    main(["bench", "study", str(tmp_path / "e2e" / "study.toml"), "--api-base", url])
    assert seen == [url, url]
