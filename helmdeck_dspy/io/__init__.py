"""File input and output: data files, JSON Lines, atomic writes, bundled resources, offline defaults,
tokens, and the redaction of credentials from everything written."""
