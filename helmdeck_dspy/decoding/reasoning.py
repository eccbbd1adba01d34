"""Separating a completion's reasoning from its visible answer.

Models emit reasoning inline as ``<think>``, ``<thinking>`` or ``<reasoning>`` blocks (any case,
attributes allowed, possibly nested) or as ``[REASONING]...[/REASONING]``; some providers drop the
opening tag and send only ``...</think>answer``; some cut the output inside an unclosed block.
:func:`split_reasoning` handles all of these in one left-to-right pass over the tags.

A tag written inside a string of the visible JSON answer (``"rationale": "[REASONING]"``) is
text, not a tag: outside reasoning blocks, the pass follows the visible text's JSON strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ANGLE_TAG = re.compile(r"<\s*(/?)\s*(think|thinking|reasoning)\b[^>]*>", re.IGNORECASE)
_BRACKET_TAG = re.compile(r"\[(/?)REASONING\]", re.IGNORECASE)
_BLANK_RUNS = re.compile(r"\n[ \t\r\f\v]*(?:\n[ \t\r\f\v]*)+\n")
_JSON_CHARS = re.compile(r'[{}\[\]"\\]')


class _JsonStrings:
    """Follows the visible text, segment by segment, to tell whether a position lies inside a
    string of a JSON object or array (brackets outside strings counted, escapes understood)."""

    __slots__ = ("depth", "in_string", "skip_at")

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.skip_at = -1  # index of a character consumed by a backslash escape

    def feed(self, text: str, start: int, end: int) -> None:
        for m in _JSON_CHARS.finditer(text, start, end):
            i = m.start()
            if i == self.skip_at:
                continue
            ch = m.group()
            if self.in_string:
                if ch == "\\":
                    self.skip_at = i + 1
                elif ch == '"':
                    self.in_string = False
            elif ch == '"':
                self.in_string = self.depth > 0
            elif ch in "{[":
                self.depth += 1
            elif self.depth:
                self.depth -= 1

    @property
    def inside_string(self) -> bool:
        return self.in_string and self.depth > 0


@dataclass(frozen=True, slots=True)
class SplitText:
    """A completion split into its visible answer and its reasoning.

    Attributes:
        visible: The answer text with every reasoning block removed, trimmed, blank-line runs
            collapsed to one blank line.
        reasoning: The text found inside reasoning blocks (and before an orphan closing tag).
        had_tags: Any reasoning tag was found.
        unclosed: A reasoning block was still open at the end: the answer never started after it.
        orphan_close: A closing tag appeared with no opener; only what follows it is visible.
        kinds: The tag names seen, lower-cased: ``think``, ``thinking``, ``reasoning`` or
            ``[reasoning]`` for the bracket form.
    """

    visible: str
    reasoning: str
    had_tags: bool
    unclosed: bool
    orphan_close: bool
    kinds: frozenset[str] = frozenset()


def _tags(text: str) -> list[tuple[int, int, bool, str]]:
    """(start, end, is_closing, kind) of every reasoning tag, in order.

    Jumps from ``<`` to ``<`` with str.find and tries the tag pattern only there: much faster
    than a regex search over the whole text on long answers with no tags.
    """
    tags: list[tuple[int, int, bool, str]] = []
    pos = text.find("<")
    while pos != -1:
        m = _ANGLE_TAG.match(text, pos)
        if m:
            tags.append((pos, m.end(), bool(m.group(1)), m.group(2).lower()))
            pos = text.find("<", m.end())
        else:
            pos = text.find("<", pos + 1)
    if "[" in text and "reasoning]" in text.lower():
        tags.extend((m.start(), m.end(), bool(m.group(1)), "[reasoning]") for m in _BRACKET_TAG.finditer(text))
        tags.sort()
    return tags


def split_reasoning(text: str) -> SplitText:
    """Split ``text`` into visible answer and reasoning. Never raises; idempotent on ``visible``."""
    tags = _tags(text)
    if not tags:
        return SplitText(text.strip(), "", False, False, False)

    visible: list[str] = []
    reasoning: list[str] = []
    depth = 0
    pos = 0  # end of the last tag consumed
    block_start = 0  # where the current outermost reasoning block's body starts
    orphan = False
    json_state = _JsonStrings() if '"' in text else None
    seen_kinds: set[str] = set()
    for start, end, closing, kind in tags:
        if start < pos:
            continue  # overlapping match (cannot happen with these patterns, but be safe)
        if depth == 0 and json_state is not None:
            json_state.feed(text, pos, start)
            if json_state.inside_string:
                json_state.feed(text, start, end)
                visible.append(text[pos:end])  # a tag inside a JSON string is text
                pos = end
                continue
        seen_kinds.add(kind)
        if not closing:
            if depth == 0:
                visible.append(text[pos:start])
                block_start = end
            depth += 1
        elif depth == 0:
            # The opener was dropped: everything so far was reasoning.
            reasoning.append("".join(visible) + text[pos:start])
            visible.clear()
            orphan = True
            if json_state is not None:
                json_state = _JsonStrings()  # the visible text starts again after the closer
        else:
            depth -= 1
            if depth == 0:
                reasoning.append(text[block_start:start])
        pos = end

    unclosed = depth > 0
    if unclosed:
        reasoning.append(text[block_start:])
    else:
        visible.append(text[pos:])
    if not seen_kinds:  # every tag was inside a JSON string
        return SplitText(text.strip(), "", False, False, False)
    return SplitText(
        visible=_tidy("".join(visible)),
        reasoning="\n".join(r.strip() for r in reasoning if r.strip()),
        had_tags=True,
        unclosed=unclosed,
        orphan_close=orphan,
        kinds=frozenset(seen_kinds),
    )


def strip_reasoning(text: str) -> str:
    """The visible answer of ``text`` (see :func:`split_reasoning`)."""
    return split_reasoning(text).visible


def has_reasoning(text: str) -> bool:
    """Whether ``text`` contains any reasoning tag, closed or not (outside JSON strings)."""
    return bool(_tags(text)) and split_reasoning(text).had_tags


def _tidy(text: str) -> str:
    return _BLANK_RUNS.sub("\n\n", text.strip())
