"""Counting prompt tokens offline.

Uses tiktoken's ``cl100k_base`` encoding from the copy LiteLLM ships inside its package (found
without importing LiteLLM, which is slow), so nothing is downloaded. Model tokenizers differ;
cl100k is a stand-in, good to a few percent for English and JSON. When the encoding cannot be
loaded, falls back to 1 token per 4 characters (and says so through :data:`METHOD`).
"""

from __future__ import annotations

import importlib.util
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

METHOD = "cl100k_base"


@lru_cache(maxsize=1)
def _encoding() -> Any | None:
    global METHOD
    spec = importlib.util.find_spec("litellm")
    if spec is not None and spec.origin:
        cache = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
        if cache.is_dir():
            os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(cache))
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base")
    except Exception:  # noqa: BLE001 - no encoding offline: use the heuristic
        METHOD = "chars/4"
        return None


def count_tokens(text: str) -> int:
    """Tokens in ``text`` (cl100k_base, or characters / 4 when unavailable)."""
    enc = _encoding()
    if enc is None:
        return (len(text) + 3) // 4
    return len(enc.encode(text, disallowed_special=()))


def count_message_tokens(system: str, messages: list[dict[str, str]]) -> int:
    """Tokens of a chat request: every message's text plus 4 per message of framing."""
    total = count_tokens(system) + 4
    for m in messages:
        total += count_tokens(m.get("content", "")) + 4
    return total


def truncate_tokens(text: str, tokens: int) -> str:
    """``text`` cut to its first ``tokens`` tokens (cl100k_base, or 4 characters a token)."""
    enc = _encoding()
    if enc is None:
        return text[: tokens * 4]
    return enc.decode(enc.encode(text, disallowed_special=())[:tokens])
