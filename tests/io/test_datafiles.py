"""TOML data files: syntax, encoding and read errors name the file and line."""

from __future__ import annotations

import pytest

from helmdeck_dspy.errors import BudgetTableError, DataFileError
from helmdeck_dspy.io.datafiles import parse_toml, read_toml


def test_valid_file_decodes(tmp_path):
    p = tmp_path / "ok.toml"
    p.write_text('[a]\nb = 1\n')
    assert read_toml(p) == {"a": {"b": 1}}


def test_syntax_error_names_line_and_column(tmp_path):
    with pytest.raises(DataFileError) as err:
        parse_toml('a = 1\nb = "open\n', tmp_path / "x.toml")
    assert err.value.line == 2 and str(err.value).startswith(f"{tmp_path / 'x.toml'}:2: not valid TOML:")
    assert "(column" in str(err.value)


def test_non_utf8_names_the_line_and_the_error_class_is_kept(tmp_path):
    p = tmp_path / "b.toml"
    p.write_bytes(b'a = 1\n\nb = "\xff"\n')
    with pytest.raises(BudgetTableError) as err:
        read_toml(p, BudgetTableError)
    assert err.value.line == 3 and "not UTF-8" in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(DataFileError, match="cannot read"):
        read_toml(tmp_path / "missing.toml")


def test_read_json_errors_name_line_and_carry_the_prefix(tmp_path):
    from helmdeck_dspy.errors import CatalogError
    from helmdeck_dspy.io.datafiles import read_json

    p = tmp_path / "r.json"
    p.write_text('{\n  "a": 1,\n  oops\n}\n')
    with pytest.raises(CatalogError) as err:
        read_json(p, CatalogError, "not a report")
    assert err.value.line == 3 and "r.json:3: not a report: not valid JSON:" in str(err.value)
    assert "(column 3)" in str(err.value) and "char" not in str(err.value)
    p.write_text("[" * 100_000)
    with pytest.raises(DataFileError, match="nested too deeply"):
        read_json(p)
    p.write_bytes(b'{"a":\n"\xff"}')
    with pytest.raises(DataFileError) as err:
        read_json(p)
    assert err.value.line == 2 and "not UTF-8" in str(err.value)
    p.write_text('{"ok": [1, 2]}')
    assert read_json(p) == {"ok": [1, 2]}


def test_a_toml_input_nested_too_deep_is_refused_in_one_line_before_parsing(tmp_path):
    import pytest

    from helmdeck_dspy.errors import DataFileError
    from helmdeck_dspy.io.datafiles import MAX_TOML_DEPTH, read_toml

    path = tmp_path / "deep.toml"
    path.write_text("x = " + "[" * 500 + "]" * 500 + "\n", encoding="utf-8")
    with pytest.raises(DataFileError) as found:
        read_toml(path)
    assert f"more than {MAX_TOML_DEPTH} levels" in str(found.value) and "\n" not in str(found.value)
    ok = tmp_path / "ok.toml"
    ok.write_text('[table]\nx = [[1, 2], [3]]\ny = { a = { b = [1] } }\n', encoding="utf-8")
    assert read_toml(ok)["table"]["y"] == {"a": {"b": [1]}}
