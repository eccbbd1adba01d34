"""The names and defaults a server publishes. Standard library only: the CLI reads it for ``--help``."""

from __future__ import annotations

PLAN_TOOL = "helmdeck.plan"
ROUTE_TOOL = "helmdeck.route"

CONTEXT_BUDGETS_URI = "helmdeck://context-budgets"
MY_PLANS_URI = "helmdeck://my-plans"
ROUTING_GUIDE_URI = "helmdeck://routing-guide"
MODELS_URI = "helmdeck://models"

SERVER_NAME = "helmdeck-dspy"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
HTTP_PATH = "/mcp"

DEFAULT_STEP_CAP = 8
"""Steps one single_pick loop may run per intent (the same default as ``Planner.run_loop``)."""

ROUTE_ALTERNATIVES = 3
"""Alternatives ``helmdeck.route`` lists after its recommendation."""

DEFAULT_SESSION_IDLE_S = 600.0
"""Seconds an HTTP session may sit with no request in flight before it is closed."""
DEFAULT_SESSIONS_PER_CALLER = 32
"""Open HTTP sessions one caller (one token, or every tokenless loopback client together) may hold."""
