"""Fixtures for the local-model tests: tiny GGUF files, fake chunk wheels and a fake server.

Nothing here needs llama-cpp-python or real weights; the tests that do are in ``test_real.py``
and skip when either is absent.
"""

from __future__ import annotations

import hashlib
import struct
import sys
import zipfile
from pathlib import Path

import pytest

from helmdeck_dspy.local.registry import LocalModel

FAKE_SERVER = Path(__file__).with_name("fake_server.py")


REAL_MODEL = "qwen2.5-coder-0.5b"
"""The model the real-model tests run (the one CI installs)."""


def real_model_missing(name: str = REAL_MODEL) -> str | None:
    """Why a real-model test cannot run here (the ``local`` extra or the model is missing), or None."""
    import importlib.util

    from helmdeck_dspy.local.install import state_of
    from helmdeck_dspy.local.registry import get_model

    if importlib.util.find_spec("llama_cpp") is None:
        return "the 'local' extra is not installed: pip install 'helmdeck-dspy[local]'"
    if state_of(get_model(name)) != "installed":
        return f"{name} is not installed: helmdeck-dspy models install {name}"
    return None


def real_model_marks(name: str = REAL_MODEL) -> list:
    """``pytestmark`` for a module of real-model tests: marked ``local_model``, skipped with the reason when it cannot run."""
    why = real_model_missing(name)
    return [pytest.mark.local_model, pytest.mark.skipif(why is not None, reason=str(why))]


@pytest.fixture
def stop_local_servers():
    """Stop every local server the test started (use with ``autouse`` in a real-model module)."""
    from helmdeck_dspy.local import endpoint
    from helmdeck_dspy.local.server import stop_all

    yield
    stop_all()
    endpoint._SERVERS.clear()


def pytest_configure(config):
    config.addinivalue_line("markers", "local_model: needs the 'local' extra and an installed local model")


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def gguf_bytes(metadata: dict, *, version: int = 3, tensor_count: int = 0, payload: bytes = b"") -> bytes:
    """A GGUF file: header, metadata pairs (str, int, float, bool, list of str / of int) and payload."""
    out = [b"GGUF", struct.pack("<IQQ", version, tensor_count, len(metadata))]
    for key, value in metadata.items():
        out.append(_string(key))
        if isinstance(value, bool):
            out.append(struct.pack("<I?", 7, value))
        elif isinstance(value, int):
            out.append(struct.pack("<Ii", 5, value))
        elif isinstance(value, float):
            out.append(struct.pack("<If", 6, value))
        elif isinstance(value, str):
            out.append(struct.pack("<I", 8) + _string(value))
        elif value and isinstance(value[0], str):
            out.append(struct.pack("<IIQ", 9, 8, len(value)) + b"".join(_string(v) for v in value))
        else:
            out.append(struct.pack("<IIQ", 9, 5, len(value)) + b"".join(struct.pack("<i", v) for v in value))
    return b"".join(out) + payload


TINY_HEADER = {"general.name": "Tiny Test Model", "general.architecture": "llama", "general.file_type": 15}


def tiny_gguf() -> bytes:
    """A small GGUF file (about 40 KB) with a vocabulary array before the payload."""
    meta = {**TINY_HEADER, "tokenizer.ggml.tokens": [f"tok{i}" for i in range(500)], "llama.context_length": 2048}
    return gguf_bytes(meta, tensor_count=2, payload=bytes(range(256)) * 128)


def build_wheel(directory: Path, package: str, version: str, member: str, data: bytes) -> Path:
    """A minimal valid wheel holding ``member`` (and the metadata pip reads)."""
    directory.mkdir(parents=True, exist_ok=True)
    dist = package.replace("-", "_")
    path = directory / f"{dist}-{version}-py3-none-any.whl"
    info = f"{dist}-{version}.dist-info"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(member, data)
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return path


def split(data: bytes, n: int) -> list[bytes]:
    size = -(-len(data) // n)
    return [data[i:i + size] for i in range(0, len(data), size)]


class FakeModel:
    """A registry entry for a tiny GGUF split into chunk wheels under ``wheel_dir``."""

    def __init__(self, wheel_dir: Path, *, name: str = "tiny-test", n: int = 3, data: bytes | None = None,
                 header: dict | None = None) -> None:
        self.data = data if data is not None else tiny_gguf()
        self.parts = split(self.data, n)
        self.wheel_dir = wheel_dir
        wheel_dir.mkdir(parents=True, exist_ok=True)
        chunks, self.wheels = [], {}
        for i, part in enumerate(self.parts, 1):
            package, member = f"hdtest-{name}-part{i}", f"hdtest_{name.replace('-', '_')}_part{i}/data/part{i:02d}.bin"
            self.wheels[package] = build_wheel(wheel_dir, package, "1.0.0", member, part)
            chunks.append({"package": package, "version": "1.0.0", "member": member,
                           "sha256": hashlib.sha256(part).hexdigest(), "size": len(part)})
        self.model = LocalModel.model_validate({
            "name": name, "model_id": f"local/{name}", "sha256": hashlib.sha256(self.data).hexdigest(),
            "size": len(self.data), "license": "Apache-2.0", "instruct": True, "quantization": "Q4_K_M",
            "header": header or TINY_HEADER, "chunk": chunks,
        })


@pytest.fixture
def fake(tmp_path) -> FakeModel:
    return FakeModel(tmp_path / "index")


@pytest.fixture
def models_root(tmp_path, monkeypatch) -> Path:
    """An empty models directory, also set as $HELMDECK_DSPY_MODELS."""
    root = tmp_path / "models"
    monkeypatch.setenv("HELMDECK_DSPY_MODELS", str(root))
    return root


def fake_server_command(mode: str = "ok") -> list[str]:
    """The command of a stand-in for llama.cpp's server (same flags) behaving as ``mode``."""
    return [sys.executable, str(FAKE_SERVER), "--mode", mode]
