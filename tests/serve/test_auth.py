"""Callers and tokens: where tokens come from, which binds need them, who a request is."""

from __future__ import annotations

import anyio
import pytest

from helmdeck_dspy.errors import ServeRefusedError, TokenFileError
from helmdeck_dspy.serve.auth import (
    CallerTokens,
    StaticTokenVerifier,
    check_bind,
    current_caller,
    is_loopback,
    load_tokens,
    parse_env_tokens,
    process_owner,
    read_token_file,
)

A, B = "a" * 16 + "-alice", "b" * 16 + "-bob"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_hosts(host):
    assert is_loopback(host)
    check_bind(host, CallerTokens())  # allowed without tokens


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "192.168.1.10", "example.org", "my-laptop"])
def test_non_loopback_needs_tokens(host):
    assert not is_loopback(host)
    with pytest.raises(ServeRefusedError, match=f"refusing to serve on {host}"):
        check_bind(host, CallerTokens())
    check_bind(host, CallerTokens({"alice": A}))


def test_env_pairs_and_their_errors():
    assert parse_env_tokens(f"alice={A}, bob={B}\n") == {"alice": A, "bob": B}
    assert parse_env_tokens("  ") == {}
    with pytest.raises(ServeRefusedError, match="without '='"):
        parse_env_tokens(A)
    with pytest.raises(ServeRefusedError, match="at least 16 characters"):
        parse_env_tokens("alice=short")
    with pytest.raises(ServeRefusedError, match="caller name"):
        parse_env_tokens(f"al/ice={A}")


def test_token_file_and_its_errors(tmp_path):
    good = tmp_path / "tokens.toml"
    good.write_text(f'# who may call\n[tokens]\nalice = "{A}"\n"bob@example.org" = "{B}"\n')
    assert read_token_file(good) == {"alice": A, "bob@example.org": B}
    for text, problem in [("[tokens]\nalice = 3\n", "at least 16"), ("alice = 'x'\n", r"\[tokens\] table"),
                          ("[tokens\n", "not valid TOML"),
                          (f'[tokens]  # callers\nalice = "{A}"\n"alice" = "{B}"\n', r"3: caller 'alice' is named twice")]:
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        with pytest.raises(TokenFileError, match=problem):
            read_token_file(bad)


def test_load_tokens_merges_file_and_env_and_refuses_a_shared_token(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text(f'[tokens]\nalice = "{A}"\n')
    tokens = load_tokens(None, {"HELMDECK_DSPY_TOKENS_FILE": str(path), "HELMDECK_DSPY_TOKENS": f"bob={B}"})
    assert len(tokens) == 2 and tokens.caller_for(B) == "token:bob"
    assert A not in repr(tokens) and "alice" in repr(tokens)
    with pytest.raises(ServeRefusedError, match="same token"):
        load_tokens(path, {"HELMDECK_DSPY_TOKENS": f"carol={A}"})
    assert not load_tokens(None, {})


def test_a_token_is_its_caller_and_nothing_else():
    tokens = CallerTokens({"alice": A, "bob": B})
    assert tokens.caller_for(A) == "token:alice" and tokens.caller_for(B) == "token:bob"
    assert tokens.caller_for(A[:-1]) is None and tokens.caller_for("") is None
    verifier = StaticTokenVerifier(tokens)
    granted = anyio.run(verifier.verify_token, B)
    assert granted.client_id == "token:bob" and granted.scopes == []
    assert anyio.run(verifier.verify_token, "nope" * 8) is None


def test_without_a_token_the_default_caller_is_used():
    assert current_caller("user:someone") == "user:someone"
    assert process_owner().startswith("user:") and len(process_owner()) > len("user:")
