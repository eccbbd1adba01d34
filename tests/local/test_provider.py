"""The ``llamacpp/`` LM spec sends the output cap in the field llama.cpp's server reads.

llama.cpp's server ignores ``max_completion_tokens`` (what DSPy sends for ``openai/`` models), so a
cap sent that way is no cap at all; the real-model check is ``test_real.py``'s length test.
"""

from __future__ import annotations

import pytest

from helmdeck_dspy.engines.lm_spec import make_lm
from tests.fault_server import FaultServer, ok


@pytest.mark.parametrize(("spec", "field", "absent"), [
    ("llamacpp/some-model", "max_tokens", "max_completion_tokens"),
    ("openai/some-model", "max_completion_tokens", "max_tokens"),  # why llamacpp/ exists
])
def test_the_output_cap_field_on_the_wire(monkeypatch, spec, field, absent):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-wire")
    with FaultServer(ok("{}")) as server:
        lm = make_lm(spec, api_base=server.url, cache=False, num_retries=0, sampling={"temperature": 0.0})
        lm("say nothing", max_tokens=7)
    (request,) = server.requests
    assert request.body[field] == 7 and absent not in request.body
    assert request.body["model"] == "some-model" and request.body["temperature"] == 0.0


def test_a_llamacpp_spec_needs_no_api_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FaultServer(ok("{}")) as server:
        assert make_lm("llamacpp/m", api_base=server.url, cache=False, num_retries=0)("hi") == ["{}"]
