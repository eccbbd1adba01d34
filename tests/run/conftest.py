"""Fixtures of the execution tests."""

from __future__ import annotations

import io
import sys

import pytest


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def terminal(monkeypatch):
    """A terminal that answers the next question with ``answer``; returns what was asked on it."""

    def answering(answer: str) -> io.StringIO:
        asked = io.StringIO()
        monkeypatch.setattr(sys, "stdin", _Tty(answer + "\n"))
        monkeypatch.setattr(sys, "stderr", asked)
        return asked

    return answering
