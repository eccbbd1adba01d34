"""Retries, deadlines and model fallback around a plan call: the policy is data, every outcome typed.

- :mod:`.policy` — :class:`RetryPolicy`, :class:`FallbackChain`, the TOML file that holds them;
- :mod:`.classify` — the failure cause, status and ``Retry-After`` of a failed exchange;
- :mod:`.deadline` — the wall-clock limit of one attempt;
- :mod:`.loop` — :func:`run_plan`, the retry and fallback loop the planner runs.
"""
