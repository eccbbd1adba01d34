"""The one rule for what a command may write, and the two ways it writes.

Every output a user names (``--out``, ``--record``, a ``traces convert`` destination, a fitted
profile, an evaluation's folder) is checked by :func:`check_output` before any work starts:

- the format comes from the suffix (:data:`TRACE_FORMATS` for trace sets); an unknown suffix is a
  usage error (:class:`~helmdeck_dspy.errors.UsageValueError`, exit 2);
- an existing file, or a directory holding anything the command did not write itself, is never
  replaced or deleted unless ``force`` is given (``--force``); a directory is never taken for a
  file, and the current directory (or one holding it) is never replaced, even with ``force``;
- data bundled with the package (:func:`~helmdeck_dspy.io.resources.bundled_dir`) is never
  replaced, even with ``force``;
- a path that cannot be written (no permission, a read-only or virtual file system, a parent that
  is a file) is one :class:`~helmdeck_dspy.errors.OutputUnwritableError` line, found by creating
  and removing a probe file where the output will go.

Single files are then written with :mod:`helmdeck_dspy.io.atomic` (a temporary file renamed into
place); outputs of several files (an evaluation report, a saved dataset) are built in a staging
directory beside the target and swapped in whole by :func:`staged_directory`, so a reader sees the
old set or the new one, never a mix. Temporary names carry the writer's process id, so what a
killed writer left behind is swept by the next check of the same output.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from helmdeck_dspy.errors import OutputRefusedError, OutputUnwritableError, UsageValueError
from helmdeck_dspy.io.atomic import STAGING_MARK, TEMP_MARK, stale_siblings
from helmdeck_dspy.io.resources import bundled_dir

HF = "hf"
TRACE_FORMATS: Mapping[str, str] = {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl",
                                    ".parquet": "parquet", "": HF}
"""Trace-set outputs by suffix: JSON Lines, Parquet, or (no suffix) a saved HF dataset directory."""
JSONL_FORMATS: Mapping[str, str] = {".jsonl": "jsonl", ".ndjson": "jsonl"}
"""Outputs that are appended to one JSON line at a time (``plan --record``, ``bench bfcl --record``)."""
TOML_FORMATS: Mapping[str, str] = {".toml": "toml"}

DIRECTORY_FORMATS = frozenset({HF, "dir"})


@dataclass(frozen=True)
class Output:
    """A checked output: where it goes, its format, and whether something was there before."""

    path: Path
    format: str
    existed: bool


def output_format(path: str | Path, formats: Mapping[str, str], option: str = "--out") -> str:
    """The format ``path``'s suffix names among ``formats`` (``""`` is the key for no suffix).

    Raises:
        UsageValueError: The suffix names none of them.
    """
    suffix = Path(path).suffix.lower()
    if suffix in formats:
        return formats[suffix]
    expected = ", ".join(s or "a directory (no suffix)" for s in formats)
    raise UsageValueError(f"{option} {path}: unknown suffix {suffix or '(none)'!r}; expected {expected}", option)


def is_bundled(path: str | Path) -> bool:
    """Whether ``path`` lies in the data shipped with the package (never written by a command)."""
    try:
        return Path(path).resolve().is_relative_to(bundled_dir().resolve())
    except OSError:
        return False


def check_output(
    path: str | Path,
    *,
    formats: Mapping[str, str] | None = None,
    directory: bool = False,
    force: bool = False,
    append: bool = False,
    ours: Collection[str] = (),
    option: str = "--out",
) -> Output:
    """Check that ``path`` may be written under the rule above; nothing is written but a probe.

    Args:
        path: The output the user named.
        formats: Suffix → format; None when the suffix does not matter.
        directory: The output is a directory of several files (also implied by the format ``hf``).
        force: Replace an existing file or non-empty directory.
        append: An existing file is added to, not replaced (no ``force`` needed).
        ours: Names inside an existing output directory that the command itself writes and may
            replace without ``force`` (an evaluation's checkpoint); each must be a regular file.
        option: How the user named the output, for the messages.

    Raises:
        UsageValueError: An unknown suffix.
        OutputRefusedError: The output exists and may not be replaced (see the rule).
        OutputUnwritableError: The output cannot be written.
    """
    p = Path(path)
    fmt = output_format(p, formats, option) if formats is not None else ("dir" if directory else "file")
    as_dir = directory or fmt in DIRECTORY_FORMATS
    sweep_stale(p)
    existed = p.exists() or p.is_symlink()
    if existed:
        _check_existing(p, as_dir=as_dir, force=force, append=append, ours=ours, option=option)
    probe_writable(p, append=append and existed, option=option)
    return Output(p, fmt, existed)


def _check_existing(p: Path, *, as_dir: bool, force: bool, append: bool, ours: Collection[str], option: str) -> None:
    here = Path.cwd().resolve()
    resolved = p.resolve()
    if is_bundled(p):
        raise OutputRefusedError(f"{option} {p}: bundled data is never replaced; write somewhere else", option)
    if as_dir and (resolved == here or here.is_relative_to(resolved)):
        raise OutputRefusedError(f"{option} {p}: will not replace the current directory or one holding it", option)
    if not as_dir:
        if p.is_dir():
            raise OutputRefusedError(f"{option} {p}: is a directory; name a file", option)
        if not append and not force:
            raise OutputRefusedError(f"{option} {p}: exists; pass --force to replace it", option)
        return
    if not p.is_dir():
        if not force:
            raise OutputRefusedError(f"{option} {p}: is a file, not a directory; pass --force to replace it", option)
        return
    for name in ours:
        mine = p / name
        if (mine.exists() or mine.is_symlink()) and (mine.is_symlink() or not mine.is_file()):
            raise OutputRefusedError(f"{option} {p}: {mine} is not a regular file; remove it first", option)
    others = [c.name for c in p.iterdir() if c.name not in ours]
    if others and not force:
        raise OutputRefusedError(
            f"{option} {p}: a directory holding {len(others)} entr{'y' if len(others) == 1 else 'ies'} "
            f"({', '.join(sorted(others)[:3])}{', ...' if len(others) > 3 else ''}); pass --force to replace it", option)


def probe_writable(path: str | Path, *, append: bool = False, option: str = "--out") -> None:
    """Raise unless a file can be created where ``path`` will be written (or, with ``append``,
    unless the existing file can be opened for appending). Creates and removes a probe file.

    Raises:
        OutputUnwritableError: One line naming the path and the system's reason.
    """
    p = Path(path)
    base = p.parent
    while not base.exists() and base != base.parent:
        base = base.parent
    try:
        if append:
            with p.open("ab"):
                return
        if not base.is_dir():
            raise NotADirectoryError(20, "Not a directory")
        fd, probe = tempfile.mkstemp(prefix=f".{p.name}.{os.getpid()}{TEMP_MARK}", dir=base)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        where = "" if append else f" (at {base})"
        raise OutputUnwritableError(f"cannot write {option} {p}: {exc.strerror or exc}{where}") from None


def sweep_stale(path: str | Path) -> list[Path]:
    """Remove the temporary files and staging directories a killed writer of ``path`` left beside
    it (their names carry a process id that no longer runs); returns what was removed."""
    removed = []
    for leftover in stale_siblings(Path(path)):
        try:
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover)
            else:
                leftover.unlink()
            removed.append(leftover)
        except OSError:
            continue  # not ours to fight over; the next check tries again
    return removed


@contextmanager
def staged_directory(target: str | Path) -> Iterator[Path]:
    """Yield an empty directory beside ``target``; when the block succeeds it replaces ``target``
    whole (a file or directory already there is removed only after the new one is in place).

    On any exception the staged files are removed and ``target`` is left as it was.
    """
    dest = Path(target)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.{os.getpid()}{STAGING_MARK}", dir=dest.parent))
    try:
        build = staging / "new"
        build.mkdir()
        yield build
        if dest.exists() or dest.is_symlink():
            os.rename(dest, staging / "old")
        os.rename(build, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
