"""The bundled registry of local models: it loads, and it is consistent."""

from __future__ import annotations

import tomllib

import pytest

from helmdeck_dspy.errors import DataFileError, InputError, UnknownModelError
from helmdeck_dspy.local.registry import (
    REGISTRY_PATH,
    get_model,
    load_registry,
    models_dir,
    parse_registry,
)
from tests.conftest import PROJECT_ROOT


def test_bundled_registry_lists_the_three_models_with_stable_ids():
    reg = load_registry()
    assert reg.names == ["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "gemma-3-270m"]
    assert [m.model_id for m in reg.models] == [
        "local/qwen2.5-coder-0.5b-instruct", "local/qwen2.5-coder-1.5b-instruct", "local/gemma-3-270m"]
    assert [m.instruct for m in reg.models] == [True, True, False]


def test_bundled_registry_pins_what_the_issue_measured():
    qwen05, qwen15, gemma = load_registry().models
    assert qwen05.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert qwen15.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert gemma.sha256 == "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
    assert [len(m.chunks) for m in (qwen05, qwen15, gemma)] == [6, 22, 4]
    assert qwen05.general_name.startswith("Qwen2.5 Coder 0.5B Instruct")
    assert qwen15.general_name == "Qwen2.5 Coder 1.5B Instruct GGUF"
    assert 490e6 < qwen05.size < 492e6 and 1.11e9 < qwen15.size < 1.12e9 and 252e6 < gemma.size < 254e6


def test_every_chunk_is_pinned_and_in_order():
    for model in load_registry().models:
        assert sum(c.size for c in model.chunks) == model.size
        for i, chunk in enumerate(model.chunks, 1):
            assert chunk.requirement == f"{chunk.package}=={chunk.version}"
            assert chunk.package.endswith(f"part{i}")
            assert chunk.member.startswith(chunk.package.replace("-", "_") + "/data/")
            assert chunk.wheel_prefix == f"{chunk.package.replace('-', '_')}-{chunk.version}-"


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(UnknownModelError) as exc:
        get_model("llama-70b")
    assert isinstance(exc.value, InputError)
    assert "llama-70b" in str(exc.value) and "qwen2.5-coder-0.5b, qwen2.5-coder-1.5b, gemma-3-270m" in str(exc.value)


def _data() -> dict:
    return tomllib.loads(REGISTRY_PATH.read_text(encoding="utf-8"))


def test_a_size_that_the_chunks_do_not_add_up_to_is_rejected():
    data = _data()
    data["model"][0]["size"] += 1
    with pytest.raises(DataFileError, match="the chunks add up to 491400064 bytes"):
        parse_registry(data, "models.toml")


def test_repeated_names_and_bad_hashes_are_rejected():
    data = _data()
    data["model"][1]["name"] = data["model"][0]["name"]
    with pytest.raises(DataFileError, match="name repeated: qwen2.5-coder-0.5b"):
        parse_registry(data, "models.toml")
    data = _data()
    data["model"][2]["chunk"][0]["sha256"] = "abc"
    with pytest.raises(DataFileError, match=r"^models.toml: model.2.chunk.0.sha256"):
        parse_registry(data, "models.toml")


def test_a_header_without_general_name_is_rejected():
    data = _data()
    del data["model"][0]["header"]["general.name"]
    with pytest.raises(DataFileError, match="general.name"):
        parse_registry(data, "models.toml")


def test_models_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("HELMDECK_DSPY_MODELS", str(tmp_path / "m"))
    assert models_dir() == tmp_path / "m"
    monkeypatch.delenv("HELMDECK_DSPY_MODELS")
    assert models_dir().name == "models" and "helmdeck-dspy" in str(models_dir())


def test_the_package_ships_the_registry_and_declares_the_local_extra():
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = project["tool"]["setuptools"]
    assert "helmdeck_dspy.local" in setuptools["packages"]
    assert "*.toml" in setuptools["package-data"]["helmdeck_dspy.local"]
    assert project["project"]["optional-dependencies"]["local"] == ["llama-cpp-python[server]==0.3.36"]
