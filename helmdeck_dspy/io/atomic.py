"""Writing files atomically: a temporary file in the target's directory, renamed into place,
with the permissions a plain ``open()`` would have given (``mkstemp`` makes files 0600).

Temporary names are ``.<name>.<pid>.tmp-<random>`` (staging directories of
:mod:`helmdeck_dspy.io.outputs`: ``.<name>.<pid>.staging-<random>``), so a writer killed before
its rename leaves something :func:`stale_siblings` can tell apart from a live writer's work.
:func:`locked` serialises read-modify-write cycles on one file between processes.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from helmdeck_dspy.errors import OutputLockedError, OutputRefusedError

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


LOCK_KEY = "helmdeck_lock_of"
"""The key of the one JSON line a lock file holds (``{"helmdeck_lock_of": NAME, "pid": N}``)."""


def lock_header(name: str, pid: int) -> str:
    """The line a run writes into the lock of the output called ``name``: how a lock the recorder
    made is told apart from a file of the user's at that path."""
    return json.dumps({LOCK_KEY: name, "pid": pid})


def _is_own_lock(fd: int, name: str) -> bool | None:
    """Whether the file open as ``fd`` holds the lock line of ``name`` (None: it is empty)."""
    first = os.pread(fd, 4096, 0).split(b"\n", 1)[0].strip()
    if not first:
        return None
    try:
        value = json.loads(first)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get(LOCK_KEY) == name


@contextmanager
def exclusive_output(target: str | Path) -> Iterator[Path]:
    """Hold ``TARGET.lock`` (beside ``target``) while the block writes ``target``: a second writer
    is refused at once, never queued, so two runs never interleave their records. The target's
    folder is made when missing. Where ``fcntl`` does not exist (Windows) the block runs unlocked.

    The lock file is the recorder's own, as ``OUT.partial.jsonl`` is: it holds one line naming the
    output (:func:`lock_header`). A lock a killed run left (its line, nobody holding it) is taken
    over; anything else at that path (a file of the user's, a symlink, a folder) is neither used nor
    deleted, and the run is refused. The lock file is removed when the block ends.

    Raises:
        OutputLockedError: Another process holds the lock (exit 2, naming the lock file).
        OutputRefusedError: Something that is not the recorder's lock is at the lock's path (exit 2).
    """
    name = Path(target).name
    lock = Path(target).with_name(f"{name}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield lock
        return
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    not_ours = OutputRefusedError(f"{lock}: not written by a recording of {name} (it is not the recorder's lock); "
                                  "move it away or choose another --out", argument="--out")
    for attempt in range(3):
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL | nofollow, 0o644)
            created = True
        except FileExistsError:
            try:
                fd = os.open(lock, os.O_RDWR | nofollow)
            except FileNotFoundError:
                continue  # its run has just removed it: try again
            except OSError:  # a symlink, a folder, a file this user cannot open
                raise not_ours from None
            created = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise OutputLockedError(f"{target} is being written by another run (it holds {lock}); wait for it to "
                                    "finish, or write to another file", argument="--out") from None
        own = True if created else _is_own_lock(fd, name)
        if own is None and attempt < 2:  # a run that created it a moment ago writes its line next
            os.close(fd)
            time.sleep(0.2)
            continue
        if not own:
            os.close(fd)
            raise not_ours
        break
    else:  # pragma: no cover - the lock came and went three times over
        raise OutputLockedError(f"{target} is being written by another run ({lock} keeps changing)", argument="--out")
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, (lock_header(name, os.getpid()) + "\n").encode(), 0)
        try:
            yield lock
        finally:
            with suppress(OSError):
                if os.fstat(fd).st_ino == os.stat(lock, follow_symlinks=False).st_ino:  # still ours
                    lock.unlink()
    finally:
        os.close(fd)
