"""Writing files atomically: a temporary file in the target's directory, renamed into place,
with the permissions a plain ``open()`` would have given (``mkstemp`` makes files 0600)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_writer(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Yield a handle to a temporary file that replaces ``path`` only if the block succeeds.

    The data is flushed and fsync'ed before the rename, so after a crash ``path`` holds either
    the old content or the complete new content, never a prefix; on any exception (a failed
    write, a full disk, Ctrl-C) the temporary file is removed and ``path`` is left untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(directory: Path) -> None:
    """Persist a rename (best effort: not every platform or filesystem allows it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically, as :func:`atomic_writer` does."""
    with atomic_writer(path) as handle:
        handle.write(text)
