"""A small reader for the header of a GGUF file: magic, version, tensor count and metadata.

Only what an installer needs to check a model file is read: the fixed header and the metadata
key/value pairs, in file order, stopping as soon as the wanted keys are found. Arrays (the
tokenizer's vocabulary runs to 150k strings) are skipped and kept only as their length, so a
header of any size is read in constant memory. Tensor descriptions and data are never read.

Layout (little-endian; GGUF versions 2 and 3): ``b"GGUF"``, ``uint32`` version, ``uint64`` tensor
count, ``uint64`` metadata count, then per pair a string key, a ``uint32`` value type and the
value. A string is a ``uint64`` byte length and UTF-8 bytes; an array is a ``uint32`` item type,
a ``uint64`` count and the items.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from helmdeck_dspy.errors import DataFileError

MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
MAX_STRING_BYTES = 1 << 24
"""Longest string accepted (16 MiB): a longer length means a corrupt or hostile file."""
MAX_KV_COUNT = 1 << 20

_SCALARS: dict[int, str] = {  # value type -> struct format
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d",
}
_STRING, _ARRAY = 8, 9


@dataclass
class GGUFArray:
    """An array value that was skipped: its item type and length only."""

    item_type: int
    length: int


@dataclass
class GGUFHeader:
    """What the header says.

    Attributes:
        version: The GGUF format version.
        tensor_count: How many tensors the file describes.
        kv_count: How many metadata pairs the file declares.
        metadata: The pairs read, in file order (all of them unless the read stopped early);
            arrays appear as :class:`GGUFArray`.
    """

    version: int
    tensor_count: int
    kv_count: int
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str | None:
        """``general.name``: the model's name as its publisher wrote it."""
        value = self.metadata.get("general.name")
        return value if isinstance(value, str) else None


class _Reader:
    """Reads little-endian values from a binary stream; a short read is a truncated file."""

    def __init__(self, stream: IO[bytes], path: str) -> None:
        self.stream = stream
        self.path = path

    def fail(self, detail: str) -> DataFileError:
        return DataFileError(self.path, f"not a readable GGUF header: {detail}")

    def take(self, n: int) -> bytes:
        data = self.stream.read(n)
        if len(data) != n:
            raise self.fail("file ends inside the header")
        return data

    def skip(self, n: int) -> None:
        while n > 0:  # read in pieces: the stream may not be seekable (a zip member)
            step = min(n, 1 << 20)
            self.take(step)
            n -= step

    def scalar(self, value_type: int) -> Any:
        fmt = _SCALARS[value_type]
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self, *, keep: bool = True) -> str | None:
        length = self.scalar(10)
        if length > MAX_STRING_BYTES:
            raise self.fail(f"a string of {length} bytes")
        if not keep:
            self.skip(length)
            return None
        try:
            return self.take(length).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("a string that is not UTF-8") from None

    def value(self, value_type: int) -> Any:
        if value_type in _SCALARS:
            return self.scalar(value_type)
        if value_type == _STRING:
            return self.string()
        if value_type == _ARRAY:
            item_type, length = self.scalar(4), self.scalar(10)
            self.skip_items(item_type, length)
            return GGUFArray(item_type, length)
        raise self.fail(f"unknown value type {value_type}")

    def skip_items(self, item_type: int, length: int) -> None:
        if item_type in _SCALARS:
            self.skip(struct.calcsize(_SCALARS[item_type]) * length)
        elif item_type == _STRING:
            for _ in range(length):
                self.string(keep=False)
        elif item_type == _ARRAY:
            for _ in range(length):
                self.skip_items(self.scalar(4), self.scalar(10))
        else:
            raise self.fail(f"unknown array item type {item_type}")


def read_header(stream: IO[bytes], *, path: str = "<stream>", keys: Iterable[str] | None = None) -> GGUFHeader:
    """Read a GGUF header from a binary stream positioned at the start of the file.

    Args:
        stream: The file (or any object with ``read``); it is left just after the last pair read.
        path: The file's name, for error messages.
        keys: Stop once every one of these keys has been read (None: read every pair).

    Returns:
        The header.

    Raises:
        DataFileError: Not a GGUF file, an unsupported version, or a truncated or corrupt header.
    """
    r = _Reader(stream, path)
    magic = stream.read(4)
    if magic != MAGIC:
        raise r.fail(f"magic is {magic!r}, expected {MAGIC!r}")
    version = r.scalar(4)
    if version not in SUPPORTED_VERSIONS:
        raise r.fail(f"version {version} (this reader knows {', '.join(map(str, SUPPORTED_VERSIONS))})")
    tensor_count, kv_count = r.scalar(10), r.scalar(10)
    if kv_count > MAX_KV_COUNT:
        raise r.fail(f"{kv_count} metadata pairs")
    header = GGUFHeader(version, tensor_count, kv_count)
    wanted = set(keys) if keys is not None else None
    for _ in range(kv_count):
        if wanted is not None and wanted <= header.metadata.keys():
            break
        key = r.string()
        header.metadata[key] = r.value(r.scalar(4))  # type: ignore[index]
    return header


def read_header_file(path: str | Path, *, keys: Iterable[str] | None = None) -> GGUFHeader:
    """:func:`read_header` on a file on disk."""
    try:
        with open(path, "rb") as stream:
            return read_header(stream, path=str(path), keys=keys)
    except OSError as exc:
        raise DataFileError(str(path), f"cannot read: {exc.strerror}") from None
