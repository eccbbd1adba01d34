"""Who is calling: bearer tokens over HTTP, the process owner over stdio.

Tokens come from ``$HELMDECK_DSPY_TOKENS`` (``name=token`` pairs, comma- or space-separated)
and/or a TOML file (``--tokens-file`` or ``$HELMDECK_DSPY_TOKENS_FILE``) with a ``[tokens]``
table of ``name = "token"``. A caller's id is ``token:<name>``; history rows and
``helmdeck://my-plans`` are keyed by it, so one caller never sees another's plans.

Rules, each decided here:

- with tokens configured, every HTTP request needs one of them (401 otherwise);
- an HTTP bind to anything but loopback without tokens is refused before the socket is opened;
- without tokens on loopback, every HTTP client is the one caller ``http:anonymous``;
- over stdio the caller is the process owner, ``user:<login>`` (tokens do not apply).
"""

from __future__ import annotations

import getpass
import hmac
import ipaddress
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from helmdeck_dspy.errors import ServeRefusedError, TokenFileError, UnsafeBindError
from helmdeck_dspy.io.datafiles import parse_toml, read_text
from helmdeck_dspy.io.redaction import register_secret

TOKENS_ENV = "HELMDECK_DSPY_TOKENS"
TOKENS_FILE_ENV = "HELMDECK_DSPY_TOKENS_FILE"
MIN_TOKEN_CHARS = 16
TOKEN_CALLER_PREFIX = "token:"
ANONYMOUS_HTTP_CALLER = "http:anonymous"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")


class CallerTokens:
    """Bearer tokens and the caller each one identifies. Never shows a token in its repr."""

    def __init__(self, by_name: Mapping[str, str] | None = None) -> None:
        self._by_name = dict(by_name or {})
        for token in self._by_name.values():
            register_secret(token)  # masked in anything the process logs

    def __bool__(self) -> bool:
        return bool(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def __repr__(self) -> str:
        return f"CallerTokens(callers={sorted(self._by_name)})"

    def caller_for(self, token: str) -> str | None:
        """The caller id (``token:<name>``) a presented token stands for, or None. Every token is
        compared in constant time, so the answer's timing does not tell how close a guess was."""
        found = None
        for name, known in self._by_name.items():
            if hmac.compare_digest(token.encode("utf-8"), known.encode("utf-8")):
                found = name
        return None if found is None else TOKEN_CALLER_PREFIX + found


def _check_pair(name: str, token: Any, where: str) -> str:
    """The problem with one ``name = token`` entry, or "" when it is usable."""
    if not _NAME.match(name):
        return f"{where}: caller name {name!r} must be 1-64 letters, digits, '.', '_', '@' or '-'"
    if not isinstance(token, str) or len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        return (f"{where}: the token of {name!r} must be a string of at least {MIN_TOKEN_CHARS} characters "
                "without spaces")
    return ""


def parse_env_tokens(value: str) -> dict[str, str]:
    """``name=token`` pairs from ``$HELMDECK_DSPY_TOKENS`` (separated by commas or whitespace).

    Raises:
        ServeRefusedError: A pair without ``=``, a bad name, a short token, or a caller named twice.
    """
    out: dict[str, str] = {}
    for pair in re.split(r"[,\s]+", value.strip()):
        if not pair:
            continue
        name, sep, token = pair.partition("=")
        problem = "" if sep else f"${TOKENS_ENV}: expected name=token pairs, got an entry without '='"
        problem = problem or _check_pair(name, token, f"${TOKENS_ENV}")
        if problem:
            raise ServeRefusedError(problem)
        if name in out:
            raise ServeRefusedError(f"${TOKENS_ENV}: caller {name!r} is named twice; give each caller one token")
        out[name] = token
    return out


def read_token_file(path: str | Path) -> dict[str, str]:
    """The ``[tokens]`` table of a TOML file.

    Raises:
        TokenFileError: Unreadable, not TOML, no ``[tokens]`` table, or an unusable entry.
    """
    text = read_text(path, TokenFileError)
    _refuse_repeated_names(text, path)
    data = parse_toml(text, path, TokenFileError)
    table = data.get("tokens")
    if not isinstance(table, dict) or not table:
        raise TokenFileError(str(path), 'expected a [tokens] table of caller = "token" entries')
    for name, token in table.items():
        problem = _check_pair(name, token, "[tokens]")
        if problem:
            raise TokenFileError(str(path), problem)
    return dict(table)


_ENTRY = re.compile(r"""^\s*(?:"([^"]+)"|'([^']+)'|([A-Za-z0-9._@-]+))\s*=""")


def _refuse_repeated_names(text: str, path: str | Path) -> None:
    """Name a caller given two tokens in the file's ``[tokens]`` table (TOML itself only says it
    "cannot overwrite a value")."""
    seen: dict[str, int] = {}
    in_tokens = False
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            in_tokens = stripped.split("#", 1)[0].replace(" ", "") == "[tokens]"
            continue
        match = _ENTRY.match(line) if in_tokens else None
        if match is None:
            continue
        name = next(g for g in match.groups() if g is not None)
        if name in seen:
            raise TokenFileError(str(path), f"caller {name!r} is named twice (first on line {seen[name]}); give each "
                                            "caller one token", number)
        seen[name] = number


def load_tokens(tokens_file: str | Path | None = None, environ: Mapping[str, str] | None = None) -> CallerTokens:
    """Every configured token: the file given (else ``$HELMDECK_DSPY_TOKENS_FILE``'s) and the
    environment's pairs. A caller named twice (in either place, or in both) and a token given to
    two callers are refused.

    Raises:
        TokenFileError: The token file is malformed.
        ServeRefusedError: The environment's pairs are malformed, a caller is named twice, or one
            token names two callers.
    """
    env = os.environ if environ is None else environ
    path = tokens_file or env.get(TOKENS_FILE_ENV) or None
    by_name = read_token_file(path) if path else {}
    for name, token in parse_env_tokens(env.get(TOKENS_ENV, "")).items():
        if name in by_name:
            raise ServeRefusedError(f"caller {name!r} is named both in ${TOKENS_ENV} and in {path}; give each caller "
                                    "one token")
        by_name[name] = token
    owners: dict[str, str] = {}
    for name, token in by_name.items():
        if token in owners:
            raise ServeRefusedError(f"callers {owners[token]!r} and {name!r} have the same token")
        owners[token] = name
    return CallerTokens(by_name)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1) or ``localhost``."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # any other host name may resolve to a public interface


def check_bind(host: str, tokens: CallerTokens) -> None:
    """Refuse an HTTP bind beyond loopback when no token would be required.

    Raises:
        UnsafeBindError: ``host`` is not loopback and no tokens are configured (a usage error, exit 2).
    """
    if not tokens and not is_loopback(host):
        raise UnsafeBindError(
            f"refusing to serve on {host} without bearer tokens: set ${TOKENS_ENV} (name=token) or "
            f"--tokens-file, or bind 127.0.0.1"
        )


def process_owner() -> str:
    """The stdio caller: ``user:<login name>`` of the process owner (the uid when there is none)."""
    try:
        login = getpass.getuser()
    except (KeyError, OSError):
        login = f"uid{os.getuid()}" if hasattr(os, "getuid") else "unknown"
    return f"user:{login}"


class StaticTokenVerifier:
    """The MCP SDK's ``TokenVerifier`` over :class:`CallerTokens`: a known token becomes an access
    token whose ``client_id`` is the caller id."""

    def __init__(self, tokens: CallerTokens) -> None:
        self.tokens = tokens

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        caller = self.tokens.caller_for(token)
        return None if caller is None else AccessToken(token=token, client_id=caller, scopes=[])


def current_caller(default: str) -> str:
    """The caller of the request being handled: the bearer token's caller over HTTP with tokens,
    else ``default`` (the process owner over stdio, ``http:anonymous`` over tokenless HTTP)."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    token = get_access_token()
    return token.client_id if token is not None else default
