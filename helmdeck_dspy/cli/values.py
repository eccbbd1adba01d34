"""What a command line gives, checked when click parses it: one callback per kind of value.

A value no command can use (an empty or malformed model id, an ``--lm`` naming nothing, an
``--api-base`` that is no http(s) URL, an unknown ``--tasks`` split or ``--program``, a tool source
naming nothing) is a usage error here, exit 2 with one line, before any work starts (issue 52,
item 7; ``tests/reliability/test_exit_codes.py``). :mod:`helmdeck_dspy.cli.options` declares the
options with these callbacks and re-exports them; nothing here imports a heavy library at module
level.
"""

from __future__ import annotations

import re
from typing import Any

import click

from helmdeck_dspy.domain import MAX_MODEL_ID_CHARS, MODEL_ID_PATTERN, TIERS


def model_id(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A ``--model`` (or several ids) callback: each id trimmed; an empty one, one over
    :data:`~helmdeck_dspy.domain.MAX_MODEL_ID_CHARS` characters or one holding anything but letters,
    digits and ``._:/@+-`` (a space, a control character) is a usage error (exit 2), as over MCP."""
    if value is None:
        return None
    if isinstance(value, tuple):
        return tuple(model_id(ctx, param, v) for v in value)
    value = value.strip()
    if not value:
        raise click.BadParameter("must not be empty", ctx=ctx, param=param)
    if len(value) > MAX_MODEL_ID_CHARS or not re.fullmatch(MODEL_ID_PATTERN, value):
        raise click.BadParameter(f"{shown(value)}: a model id is at most {MAX_MODEL_ID_CHARS} characters: letters, "
                                 "digits and ._:/@+- (no spaces or control characters)", ctx=ctx, param=param)
    return value


def shown(value: str, limit: int = 60) -> str:
    """A value as a usage error quotes it: ``repr`` (control characters escaped), at most ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def lm_spec_value(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """An ``--lm`` callback: trimmed, never empty, and naming an LM that can be built
    (:func:`~helmdeck_dspy.engines.lm_spec.check_lm_spec`: a replay file that exists, a simulator
    profile that exists, a known local model, or ``provider/model``); otherwise a usage error (exit 2)."""
    if value is None:
        return None
    value = value.strip()
    if not value or any(not c.isprintable() for c in value):
        raise click.BadParameter("must not be empty" if not value else f"{shown(value)}: holds a control character",
                                 ctx=ctx, param=param)
    from helmdeck_dspy.engines.lm_spec import check_lm_spec
    from helmdeck_dspy.errors import HelmdeckError

    try:
        check_lm_spec(value)
    except HelmdeckError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    return value


def endpoint_url(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """An ``--api-base`` callback: an ``http://`` or ``https://`` URL with a host, else a usage error
    (exit 2). The message never quotes the URL's credentials."""
    if value is None:
        return None
    from urllib.parse import urlsplit

    from helmdeck_dspy.io.redaction import redact_url, register_url_secrets

    value = value.strip()
    try:
        parts = urlsplit(value)
        _ = parts.port  # raises for a port that is not a number
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # a port that is not a number, a malformed IPv6 host
        ok = False
    if not ok:
        given = shown(redact_url(value)) if value else "empty"
        raise click.BadParameter(f"{given}: expected an http:// or https:// URL with a host", ctx=ctx, param=param)
    register_url_secrets(value)
    return value


def not_empty(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A callback for free text (an intent): kept as given, but blank is a usage error (exit 2)."""
    if value is not None and not value.strip():
        raise click.BadParameter("must not be empty", ctx=ctx, param=param)
    return value


def task_split(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A ``--tasks`` callback: a bundled split (``train``, ``dev``, ``test``, ``all``) or a ``.jsonl``
    file that exists; anything else is a usage error (exit 2)."""
    from helmdeck_dspy.tasks import SPLITS

    if value is None or value in (*SPLITS, "all"):
        return value
    if value.endswith(".jsonl"):
        from pathlib import Path

        if Path(value).is_file():
            return value
        raise click.BadParameter(f"{shown(value)}: no such file", ctx=ctx, param=param)
    raise click.BadParameter(f"{shown(value)}: expected a split ({', '.join([*SPLITS, 'all'])}) or a .jsonl file",
                             ctx=ctx, param=param)


def program_choice(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A ``--program`` callback: ``auto``, ``tier``, ``tier:T`` (a known tier), ``bare``, or a program
    file that exists; anything else is a usage error (exit 2)."""
    if value is None or value in ("auto", "tier", "bare") or (value.startswith("tier:") and value[5:] in TIERS):
        return value
    from pathlib import Path

    if value and Path(value).is_file():
        return value
    raise click.BadParameter(f"{shown(value)}: expected auto, tier, tier:T (T one of {', '.join(TIERS)}), bare or a "
                             "program file that exists", ctx=ctx, param=param)


def tool_sources(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A callback for tool sources (``catalog import SOURCES``, ``run --tools``): each must parse
    (:func:`~helmdeck_dspy.catalog.importing.sources.parse_source`: a known kind, a command, an
    http(s) URL, a file that exists), else a usage error (exit 2) before any server starts."""
    from helmdeck_dspy.catalog.importing.sources import parse_source
    from helmdeck_dspy.errors import SourceSpecError

    for text in value or ():
        try:
            parse_source(text)
        except SourceSpecError as exc:
            raise click.BadParameter(f"{shown(exc.source)}: {exc.detail}", ctx=ctx, param=param) from None
    return value


def check_source_options(sources: tuple[str, ...], headers: tuple[str, ...], env: tuple[str, ...]) -> None:
    """Refuse ``--header`` without an ``mcp+http:`` source and ``--env`` without an ``mcp+stdio:``
    one: an option that would reach no server is a usage error (exit 2), not silently dropped."""
    from helmdeck_dspy.catalog.importing.sources import parse_source

    kinds = {parse_source(text).kind for text in sources}
    for values, option, kind, prefix in ((headers, "--header", "http", "mcp+http:"),
                                         (env, "--env", "stdio", "mcp+stdio:")):
        if values and kind not in kinds:
            raise click.BadParameter(f"is for {prefix} sources, and none is given", param_hint=option)


def pairs(values: tuple[str, ...], sep: str, option: str) -> dict[str, str]:
    """``K: V`` headers or ``K=V`` variables as a dict; a value without the separator is a usage error."""
    out: dict[str, str] = {}
    for value in values:
        key, found, rest = value.partition(sep)
        if not found or not key.strip() or any(c.isspace() for c in key.strip()):
            example = "'Authorization: Bearer TOKEN'" if sep == ":" else "NAME=VALUE"
            raise click.BadParameter(f"{value!r}: expected {example}", param_hint=option)
        out[key.strip()] = rest.strip() if sep == ":" else rest
    return out
