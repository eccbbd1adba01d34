"""The CLI tests share the BFCL fixture files of tests/evaluation/bfcl."""

from tests.evaluation.bfcl.conftest import bfcl_dir  # noqa: F401  (a pytest fixture)
