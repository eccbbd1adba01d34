"""File input and output: data files, JSON Lines, atomic writes, bundled resources, offline defaults, tokens."""
