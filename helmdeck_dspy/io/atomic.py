"""Writing files atomically: a temporary file in the target's directory, renamed into place,
with the permissions a plain ``open()`` would have given (``mkstemp`` makes files 0600).

Temporary names are ``.<name>.<pid>.tmp-<random>`` (staging directories of
:mod:`helmdeck_dspy.io.outputs`: ``.<name>.<pid>.staging-<random>``), so a writer killed before
its rename leaves something :func:`stale_siblings` can tell apart from a live writer's work.
:func:`locked` serialises read-modify-write cycles on one file between processes.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from helmdeck_dspy.errors import OutputLockedError

TEMP_MARK = ".tmp-"
STAGING_MARK = ".staging-"
LOCK_WAIT_S = 60.0


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_writer(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Yield a handle to a temporary file that replaces ``path`` only if the block succeeds.

    The data is flushed and fsync'ed before the rename, so after a crash ``path`` holds either
    the old content or the complete new content, never a prefix; on any exception (a failed
    write, a full disk, Ctrl-C) the temporary file is removed and ``path`` is left untouched. A
    ``path`` that is a symlink is written through: the file it points to is replaced, the link stays.
    """
    target = Path(os.path.realpath(path)) if Path(path).is_symlink() else Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}{TEMP_MARK}", dir=target.parent)
    except OSError as exc:  # name the file being written, not the temporary one
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename in (None, tmp) and exc.errno is not None:  # name the file being written, not the temporary one
            raise OSError(exc.errno, exc.strerror, str(target)) from None
        raise
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


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, owned by someone else
    return True


def stale_siblings(target: Path) -> list[Path]:
    """Temporary files and staging directories beside ``target`` left by writers that no longer run."""
    prefix = f".{target.name}."
    out = []
    try:
        entries = list(target.parent.iterdir()) if target.parent.is_dir() else []
    except OSError:
        return []
    for entry in entries:
        rest = entry.name[len(prefix):] if entry.name.startswith(prefix) else ""
        pid, _, mark = rest.partition(".")
        if pid.isdigit() and ("." + mark).startswith((TEMP_MARK, STAGING_MARK)) and not _pid_alive(int(pid)):
            out.append(entry)
    return out


@contextmanager
def locked(path: str | Path, *, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """Hold an exclusive lock on the existing file ``path`` while the block runs.

    The lock is taken on the file itself; as an atomic rewrite replaces the file, a lock taken on
    a file that was replaced meanwhile is dropped and taken again on the new one, so two
    processes doing read-modify-write under this lock never lose each other's change. Where
    ``fcntl`` does not exist (Windows) the block runs unlocked.

    Raises:
        OSError: ``path`` cannot be opened.
        TimeoutError: Another process held the lock for ``wait_s`` seconds.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    import time

    deadline = time.monotonic() + wait_s
    while True:
        fd = os.open(path, os.O_RDONLY)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{path}: locked by another process for {wait_s:g} s") from None
                    time.sleep(0.05)
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                yield
                return
        finally:
            os.close(fd)  # closing the descriptor releases the lock


@contextmanager
def exclusive_output(target: str | Path) -> Iterator[Path]:
    """Hold ``TARGET.lock`` (beside ``target``) while the block writes ``target``: a second writer
    is refused at once, never queued, so two runs never interleave their records. The lock file is
    removed when the block ends. The target's folder is made when missing. Where ``fcntl`` does
    not exist (Windows) the block runs unlocked.

    Raises:
        OutputLockedError: Another process holds the lock (exit 2, naming the lock file).
    """
    lock = Path(target).with_name(f"{Path(target).name}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield lock
        return
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputLockedError(f"{target} is being written by another run (it holds {lock}); wait for it to "
                                    "finish, or write to another file", argument="--out") from None
        try:
            yield lock
        finally:
            with suppress(OSError):
                lock.unlink()
    finally:
        os.close(fd)
