"""``helmdeck-dspy catalog import``: the file it writes is a catalog ``plan --catalog`` reads; it
never replaces a file without --force; every bad source is one error line: exit 2 for a source that
names nothing (a usage error), 1 for a server or file that fails."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from helmdeck_dspy.catalog.models import load_catalog
from tests.catalog.importing.test_sources import NO_SDK, PAGED
from tests.cli.test_bad_input import check_error, run_cli
from tests.planning.test_planner import SONNET, plan_json, replay_file, step

OPENAI = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}]


@pytest.fixture
def tool_file(tmp_path) -> Path:
    path = tmp_path / "weather.json"
    path.write_text(json.dumps(OPENAI), encoding="utf-8")
    return path


def test_import_writes_a_catalog_that_plan_reads(tool_file, tmp_path, capsys):
    out = tmp_path / "out" / "catalog.json"
    code, stdout, err = run_cli(["catalog", "import", str(tool_file), "--out", str(out)], capsys)
    assert code == 0, err
    assert stdout.splitlines() == ["weather: 1 tools (file, openai)",
                                   f"wrote {out}: 1 packs, 0 prefixed, {load_catalog(out).size_bytes()} bytes rendered"]
    [pack] = load_catalog(out).packs
    assert pack.name == "get_weather" and pack.parameters == OPENAI[0]["function"]["parameters"]
    replay = replay_file(tmp_path, plan_json([step(1, "get_weather", {"city": "Oslo"})]))
    code, stdout, err = run_cli(["plan", "weather in Oslo?", "-m", SONNET, "--lm", f"replay:{replay}",
                                 "--catalog", str(out), "--no-history", "--json"], capsys)
    assert code == 0, err
    assert [s["tool"] for s in json.loads(stdout)["steps"]] == ["get_weather"]


def test_an_existing_file_is_replaced_only_with_force(tool_file, tmp_path, capsys):
    out = tmp_path / "catalog.json"
    out.write_text("keep me", encoding="utf-8")
    code, _, err = run_cli(["catalog", "import", str(tool_file), "--out", str(out)], capsys)
    assert (code, err) == (2, f"error: --out {out}: exists; pass --force to replace it\n")
    assert out.read_text(encoding="utf-8") == "keep me"
    code, _, err = run_cli(["catalog", "import", str(tool_file), "--out", str(out), "--force"], capsys)
    assert code == 0, err
    assert load_catalog(out).ids() == ["get_weather"]


def test_json_output_and_a_server_merged_with_a_file(tool_file, tmp_path, capsys):
    pytest.importorskip("mcp", reason=NO_SDK)
    out = tmp_path / "catalog.json"
    server = f"notes=mcp+stdio:{sys.executable} {PAGED}"
    code, stdout, err = run_cli(["catalog", "import", server, str(tool_file), "--prefix", "--out", str(out),
                                 "--json"], capsys)
    assert code == 0, err
    report = json.loads(stdout)
    assert [(s["label"], s["kind"], s["tools"]) for s in report["sources"]] == [("notes", "stdio", 5),
                                                                              ("weather", "file", 1)]
    assert report["packs"] == 6 == report["prefixed"]
    assert load_catalog(out).ids()[0] == "notes__read_note" and load_catalog(out).ids()[-1] == "weather__get_weather"


BAD = [
    (["mcp+stdio:no-such-server-command-4711"], "command not found: no-such-server-command-4711", 1),
    ([f"mcp+stdio:{sys.executable} -c 'import sys; sys.exit(3)'"], "closed the connection before listing its tools", 1),
    (["{tmp}/none.json"], "no such file", 2),  # a source that names nothing is a usage error (issue 52, item 7)
    (["{tmp}/bad.json"], "expected an MCP tools/list result", 1),
    (["{tmp}/weather.json", "{tmp}/weather.json"], "two tools would be named 'weather__get_weather'", 1),
    (["mcp+ws:ws://127.0.0.1/mcp"], "unknown source kind", 2),
]


@pytest.mark.parametrize(("sources", "says", "exit_code"), BAD, ids=[s for _, s, _ in BAD])
def test_bad_sources_are_one_line(sources, says, exit_code, tool_file, tmp_path, capsys):
    if any(s.startswith("mcp+stdio:") for s in sources):
        pytest.importorskip("mcp", reason=NO_SDK)
    (tmp_path / "bad.json").write_text('{"functions": []}', encoding="utf-8")
    out = tmp_path / "catalog.json"
    argv = ["catalog", "import", *(s.replace("{tmp}", str(tmp_path)) for s in sources), "--out", str(out),
            "--timeout", "30"]
    code, _, err = run_cli(argv, capsys)
    check_error(code, err, exit_code, (says,))
    assert not out.exists()


@pytest.mark.parametrize(("option", "value"), [("--header", "Authorization Bearer x"), ("--env", "NOEQUALS")])
def test_malformed_headers_and_variables_are_usage_errors(option, value, tool_file, tmp_path, capsys):
    code, _, err = run_cli(["catalog", "import", str(tool_file), "--out", str(tmp_path / "c.json"), option, value],
                           capsys)
    check_error(code, err, 2, (option, repr(value)))


def test_an_http_server_is_imported_with_the_header_it_requires(tmp_path, capsys):
    pytest.importorskip("mcp", reason=NO_SDK)
    from helmdeck_dspy.serve.auth import CallerTokens
    from tests.serve.conftest import config_for, http_server

    token = "import-test-token-0123456789"
    out = tmp_path / "helmdeck.json"
    replay = replay_file(tmp_path)
    with http_server(config_for(tmp_path, replay), CallerTokens({"importer": token})) as server:
        code, _, err = run_cli(["catalog", "import", f"mcp+http:{server.url}", "--out", str(out)], capsys)
        check_error(code, err, 1, ("HTTP 401", "--header"))
        code, stdout, err = run_cli(["catalog", "import", f"mcp+http:{server.url}", "--out", str(out),
                                     "--header", f"Authorization: Bearer {token}"], capsys)
    assert code == 0, err
    assert token not in stdout + err
    guide = load_catalog(out)
    assert guide.ids() == ["helmdeck.plan", "helmdeck.route"]
    assert guide.packs[1].metadata.hints == ("read_only", "idempotent")
    assert "user_intent" in guide.packs[0].parameters["properties"]


def test_the_output_must_be_a_json_file(tool_file, tmp_path, capsys):
    code, _, err = run_cli(["catalog", "import", str(tool_file), "--out", str(tmp_path / "catalog.toml")], capsys)
    assert code == 2 and err.startswith("error: --out ") and "unknown suffix '.toml'; expected .json" in err
    assert len(err.splitlines()) == 1


def test_an_http_endpoint_that_is_not_mcp_is_one_line(tmp_path, capsys):
    pytest.importorskip("mcp", reason=NO_SDK)
    from tests.fault_server import FaultServer, ok

    out = tmp_path / "c.json"
    with FaultServer([ok("hello")]) as server:  # an OpenAI-compatible endpoint: JSON, but not JSON-RPC
        code, _, err = run_cli(["catalog", "import", f"mcp+http:{server.url}/chat/completions", "--out", str(out),
                                "--timeout", "10"], capsys)
    check_error(code, err, 1, ("not an MCP endpoint",))
    assert not out.exists()
