"""Assembling a model's GGUF file from its downloaded chunk wheels, and checking it.

The data members are streamed in registry order into one file through
:func:`helmdeck_dspy.io.atomic.atomic_writer` (a temporary file beside the target, renamed into
place only when every check passed), hashing as they go: each chunk's SHA-256, the whole file's
SHA-256, then the GGUF header values the registry names. Any failure — a missing or unreadable
wheel, a checksum mismatch, a wrong header, a full disk — raises :class:`LocalModelError` and
leaves nothing half-assembled behind.
"""

from __future__ import annotations

import errno
import hashlib
import shutil
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

from helmdeck_dspy.errors import DataFileError, LocalModelError
from helmdeck_dspy.io.atomic import atomic_writer
from helmdeck_dspy.local.gguf import GGUFHeader, read_header
from helmdeck_dspy.local.registry import Chunk, LocalModel

BLOCK_BYTES = 1 << 20
SPACE_MARGIN_BYTES = 64 << 20
"""Free space required beyond the file itself before assembly starts."""
MB = 1_000_000

_DISK_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}

Notify = Callable[[str], None]


def quiet(_: str) -> None:
    """The default ``notify`` callback: say nothing."""


def check_wheels(model: LocalModel, wheels: Mapping[str, Path]) -> None:
    """Fail fast, before writing anything, when a chunk's wheel or data member is missing.

    Args:
        model: The model whose chunks are checked.
        wheels: The downloaded wheel of each chunk, by package name.

    Raises:
        LocalModelError: Names the first chunk package that is missing or unreadable.
    """
    for chunk in model.chunks:
        wheel = wheels.get(chunk.package)
        if wheel is None or not Path(wheel).is_file():
            raise LocalModelError(f"chunk {chunk.requirement} of {model.name} is missing: no wheel was downloaded for it")
        try:
            with zipfile.ZipFile(wheel) as archive:
                info = archive.getinfo(chunk.member)
        except KeyError:
            raise LocalModelError(f"chunk {chunk.requirement} of {model.name} is missing its data member "
                                  f"{chunk.member} ({Path(wheel).name})") from None
        except (OSError, zipfile.BadZipFile) as exc:
            raise LocalModelError(f"chunk {chunk.requirement} of {model.name}: {Path(wheel).name} is not a "
                                  f"readable wheel ({exc})") from None
        if info.file_size != chunk.size:
            raise LocalModelError(f"chunk {chunk.requirement} of {model.name}: {chunk.member} is {info.file_size} "
                                  f"bytes, expected {chunk.size}")


def check_space(directory: Path, needed: int) -> None:
    """Raise :class:`LocalModelError` unless ``directory`` has room for ``needed`` bytes and a margin."""
    free = shutil.disk_usage(directory).free
    if free < needed + SPACE_MARGIN_BYTES:
        raise LocalModelError(f"not enough disk space in {directory}: the model needs {needed / MB:.0f} MB "
                              f"(+{SPACE_MARGIN_BYTES / MB:.0f} MB margin), {free / MB:.0f} MB free")


def remove_stale(target: Path) -> list[Path]:
    """Delete temporary files an interrupted assembly of ``target`` left (atomic_writer's
    ``.NAME.*`` siblings); the caller holds the install lock. Returns what was deleted."""
    stale = [p for p in target.parent.glob(f".{target.name}.*") if p.is_file()]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def _stream_chunk(chunk: Chunk, wheel: Path, out, whole) -> str:
    """Copy one chunk's member into ``out``, updating ``whole``; returns the chunk's SHA-256."""
    digest = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(chunk.member) as src:
            while block := src.read(BLOCK_BYTES):
                out.write(block)
                digest.update(block)
                whole.update(block)
    except zipfile.BadZipFile as exc:  # a CRC error shows up at the end of the member
        raise LocalModelError(f"chunk {chunk.requirement}: {wheel.name} is corrupt ({exc})") from None
    return digest.hexdigest()


def check_header(model: LocalModel, header: GGUFHeader, where: str) -> None:
    """Raise :class:`LocalModelError` unless ``header`` has every value the registry names."""
    for key, want in model.header.items():
        got = header.metadata.get(key)
        if got != want:
            raise LocalModelError(f"{where}: GGUF header {key} is {got!r}, expected {want!r} for {model.name}")


def assemble(model: LocalModel, wheels: Mapping[str, Path], target: Path, *, notify: Notify = quiet) -> GGUFHeader:
    """Stream the chunks into ``target``, verify it, and rename it into place.

    Args:
        model: The model to assemble.
        wheels: The downloaded wheel of each chunk, by package name.
        target: The GGUF file to create (replaced only when every check passes).
        notify: Receives one progress line per chunk.

    Returns:
        The header of the file written.

    Raises:
        LocalModelError: A missing chunk, a checksum mismatch (with both hashes), a header that
            does not match, or a full disk. Nothing is left at ``target`` or beside it.
    """
    check_wheels(model, wheels)
    target.parent.mkdir(parents=True, exist_ok=True)
    check_space(target.parent, model.size)
    whole = hashlib.sha256()
    done = 0
    try:
        with atomic_writer(target, "w+b") as out:
            for i, chunk in enumerate(model.chunks, 1):
                got = _stream_chunk(chunk, Path(wheels[chunk.package]), out, whole)
                if got != chunk.sha256:
                    raise LocalModelError(f"chunk {chunk.requirement} of {model.name}: {chunk.member} has SHA-256 "
                                          f"{got}, expected {chunk.sha256}; nothing was installed")
                done += chunk.size
                notify(f"  {i}/{len(model.chunks)} {chunk.requirement} ok ({done / MB:.0f}/{model.size / MB:.0f} MB)")
            got = whole.hexdigest()
            if got != model.sha256:
                raise LocalModelError(f"{model.file_name}: assembled file has SHA-256 {got}, expected {model.sha256}; "
                                      "nothing was installed")
            out.flush()
            out.seek(0)
            header = read_header(out, path=str(target), keys=model.header)
            check_header(model, header, model.file_name)
    except OSError as exc:
        if exc.errno in _DISK_FULL:
            raise LocalModelError(f"disk full while assembling {target} ({model.size / MB:.0f} MB needed); "
                                  "the partial file was removed") from None
        raise LocalModelError(f"cannot write {target}: {exc.strerror or exc}") from None
    except DataFileError as exc:
        raise LocalModelError(f"{model.file_name}: {exc.detail}") from None
    return header


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file on disk, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(BLOCK_BYTES):
            digest.update(block)
    return digest.hexdigest()
