"""The CLI tests share the BFCL fixture files of tests/bench/bfcl."""

from tests.bench.conftest import bfcl_dir  # noqa: F401  (a pytest fixture)
