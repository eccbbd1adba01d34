"""The GGUF header reader, on small GGUF files written here."""

from __future__ import annotations

import io
import struct
import zipfile

import pytest

from helmdeck_dspy.errors import DataFileError
from helmdeck_dspy.local.gguf import GGUFArray, read_header, read_header_file
from tests.local.conftest import gguf_bytes, tiny_gguf


def test_reads_version_counts_and_metadata_in_order():
    h = read_header(io.BytesIO(tiny_gguf()))
    assert (h.version, h.tensor_count, h.kv_count) == (3, 2, 5)
    assert h.name == "Tiny Test Model"
    assert list(h.metadata) == ["general.name", "general.architecture", "general.file_type",
                                "tokenizer.ggml.tokens", "llama.context_length"]
    assert h.metadata["general.file_type"] == 15 and h.metadata["llama.context_length"] == 2048
    assert h.metadata["tokenizer.ggml.tokens"] == GGUFArray(item_type=8, length=500)


def test_every_scalar_type_and_numeric_arrays():
    data = gguf_bytes({"a.bool": True, "a.float": 0.5, "a.ints": [1, 2, 3], "a.str": "x"}, version=2)
    h = read_header(io.BytesIO(data))
    assert h.version == 2
    assert h.metadata == {"a.bool": True, "a.float": 0.5, "a.ints": GGUFArray(5, 3), "a.str": "x"}


def test_stops_once_the_wanted_keys_are_read():
    stream = io.BytesIO(tiny_gguf())
    h = read_header(stream, keys=["general.name"])
    assert list(h.metadata) == ["general.name"]
    assert stream.tell() < 100


def test_reads_from_a_stream_that_cannot_seek(tmp_path):
    path = tmp_path / "w.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("m.gguf", tiny_gguf())
    with zipfile.ZipFile(path) as z, z.open("m.gguf") as f:
        assert read_header(f).name == "Tiny Test Model"


def test_reads_a_file_on_disk(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(tiny_gguf())
    assert read_header_file(path).name == "Tiny Test Model"
    with pytest.raises(DataFileError, match="cannot read"):
        read_header_file(tmp_path / "absent.gguf")


@pytest.mark.parametrize("data, message", [
    (b"GGML" + bytes(20), "magic is b'GGML'"),
    (b"GGUF" + struct.pack("<IQQ", 1, 0, 0), "version 1"),
    (tiny_gguf()[:60], "file ends inside the header"),
    (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 40), "a string of 1099511627776 bytes"),
    (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"k" + struct.pack("<I", 99), "unknown value type 99"),
])
def test_a_bad_header_is_one_clear_error(data, message, tmp_path):
    with pytest.raises(DataFileError) as exc:
        read_header(io.BytesIO(data), path="bad.gguf")
    assert str(exc.value).startswith("bad.gguf: not a readable GGUF header: ")
    assert message in str(exc.value)
