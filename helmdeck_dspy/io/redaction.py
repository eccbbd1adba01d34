"""Keeping credentials out of everything the planner writes or says.

Error text from HTTP clients and providers can carry what was sent: a proxy that echoes the
``Authorization`` header, an SDK message quoting a key. Everything the planner persists or
returns as diagnostics (``PlanResult.error``, trace records' ``error``, warnings) passes through
:func:`redact` first. Known secret values are always replaced; the patterns below catch keys the
planner was never told about (a provider's own error quoting one). Project loggers carry a
:class:`RedactingFilter` that does the same for log records, with the keys :func:`make_lm` was
given registered (:func:`register_secret`).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from typing import TypeVar

from pydantic import BaseModel

MASK = "[REDACTED]"

_PATTERNS = (
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{4,}"),
    re.compile(r"(?i)\b(authorization|x-api-key|api[_-]?key)(\"?\s*[:=]\s*\"?)[^\s\"',}&]+"),
    re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),
    # ``user:password@host`` as some clients print a URL without its scheme (a URL with one is
    # :func:`redact_url`'s)
    re.compile(r"(?<![\w/:@.\-])[^\s/@:\"']+:[^\s/@\"']+@(?=[\w\[])"),
    # secret values in a URL's query (``?token=...``, ``&access_key=...``)
    re.compile(r"(?i)([?&](?:[a-z_\-]*(?:token|secret|password|passwd|key|sig|signature))=)[^\s&#\"']+"),
)

_URL = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^\s/?#\"'<>]*)([^\s\"'<>]*)")
"""A URL with a scheme: the scheme, the authority (user info and host) and the rest."""


def redact_url(text: str) -> str:
    """``text`` with every URL in it shown safely: the user info masked whatever it holds (a user
    and a password, or a token given as the user name: ``http://[REDACTED]@host/``) and the values
    of secret query parameters (``?token=``, ``&api_key=``) masked; the scheme, host, port and path
    kept. Text without a URL comes back unchanged.

    This is the one way a URL is printed, recorded or written (an ``--api-base``, an MCP source, a
    study spec, a server's error line): :func:`redact` applies it to every URL it meets.
    """
    if not text or "://" not in text:
        return text
    return _URL.sub(_safe_url, text)


def _safe_url(match: re.Match[str]) -> str:
    scheme, authority, rest = match.groups()
    if "@" in authority:
        authority = f"{MASK}@{authority.rsplit('@', 1)[1]}"
    return scheme + authority + _PATTERNS[5].sub(lambda m: f"{m.group(1)}{MASK}", rest)


_PLACEHOLDER = "\x00helmdeck-secret\x00"
_SCHEME_OF = re.compile(r"(?i)\b(?:bearer|basic|token)\s+\x00helmdeck-secret\x00")


def _pattern_sub(match: re.Match[str]) -> str:
    text = match.group(0)
    if match.re is _PATTERNS[0]:
        return MASK
    if match.re is _PATTERNS[1]:
        return f"{match.group(1)}{match.group(2)}{MASK}"
    if match.re is _PATTERNS[4]:
        return f"{MASK}@"
    if match.re is _PATTERNS[5]:
        return f"{match.group(1)}{MASK}"
    return MASK if not text.lower().startswith(("sk-", "pk-", "rk-")) else f"{text[:3]}{MASK}"


def redact(text: str | None, secrets: Iterable[str | None] = (), *, patterns: bool = True) -> str | None:
    """``text`` with every known secret masked, and with ``patterns`` every credential-shaped token
    too (off for model output, where a pattern could match legitimate text)."""
    if not text:
        return text
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = _SCHEME_OF.sub(MASK, text.replace(secret, _PLACEHOLDER)).replace(_PLACEHOLDER, MASK)
    if not patterns:
        return text
    text = redact_url(text)
    for pattern in _PATTERNS:
        text = pattern.sub(_pattern_sub, text)
    return text


M = TypeVar("M", bound=BaseModel)


def scrub(model: M, secrets: Iterable[str | None]) -> M:
    """``model`` with every known secret masked wherever it appears in its fields (model output
    that repeats a credential, e.g. from an echoing proxy); the same object when none does."""
    known = [s for s in secrets if s]
    text = model.model_dump_json()
    if not any(s in text for s in known):
        return model
    return type(model).model_validate_json(redact(text, known, patterns=False) or text)


def secret_values(lm: object) -> list[str]:
    """The credential values an LM object holds (its ``api_key`` and header values that look like
    one), and every secret registered in this process."""
    kwargs = getattr(lm, "kwargs", None) or {}
    out: list[str] = sorted(_KNOWN)
    key = kwargs.get("api_key")
    if isinstance(key, str) and key:
        out.append(key)
    for name in ("headers", "extra_headers"):
        for k, v in (kwargs.get(name) or {}).items():
            if isinstance(v, str) and str(k).lower() in ("authorization", "x-api-key", "api-key"):
                out.append(v)
                out.append(v.split(None, 1)[-1])
    return out


# ------------------------------------------------------------------ logs

_KNOWN: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a credential this process uses, so log records quoting it are masked."""
    if value and len(value) >= 8:
        _KNOWN.add(value)


def register_url_secrets(url: str | None) -> None:
    """Remember the credentials a URL carries (the password of its user info, or its user name when
    there is no password: a token; secret query values),
    so every text that quotes the URL, or only the credential, is masked."""
    if not url:
        return
    from urllib.parse import parse_qsl, urlsplit

    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
        query = parse_qsl(parts.query)
    except ValueError:
        return
    if password:
        _KNOWN.add(password)  # any length: a short password is still a password
    elif user:
        register_secret(user)  # a token given as the user name (``http://TOKEN@host``)
    for name, value in query:
        if _PATTERNS[5].search(f"?{name}={value}"):
            register_secret(value)


def register_env_secrets(environ: dict[str, str] | None = None) -> None:
    """Register the values of ``*_API_KEY`` / ``*_TOKEN`` variables, where LiteLLM finds keys."""
    for name, value in (environ if environ is not None else os.environ).items():
        if name.upper().endswith(("_API_KEY", "_TOKEN", "_SECRET")):
            register_secret(value)


def known_secrets() -> frozenset[str]:
    """Every secret registered in this process."""
    return frozenset(_KNOWN)


class RedactingFilter(logging.Filter):
    """Masks registered secrets and credential-shaped tokens in a record's message and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is the logging module's to report
            return True
        clean = redact(message, _KNOWN)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info), _KNOWN)
        elif record.exc_text:
            record.exc_text = redact(record.exc_text, _KNOWN)
        return True


_FILTER = RedactingFilter()

LOGGERS = ("helmdeck_dspy", "helmdeck_dspy.engines", "helmdeck_dspy.program.catalog_filter", "helmdeck_dspy.tracking.mlflow")
"""Project loggers that can quote an exception's text (a filter applies only where a record starts)."""


def protect_loggers(names: Iterable[str] = LOGGERS) -> None:
    """Attach the redacting filter to ``names`` (idempotent)."""
    for name in names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
