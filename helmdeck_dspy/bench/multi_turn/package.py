"""Finding and importing the pinned BFCL package, installed outside the project's environment.

``make bench-deps`` installs ``bfcl-eval`` (and ``mpmath``, which its math API imports) with
``pip install --no-deps --require-hashes --target .bench-deps/bfcl-eval`` from ``bench-deps.txt``;
``HELMDECK_BFCL_EVAL`` names another such folder. The folder is put at the end of ``sys.path`` the
first time the package is asked for, so nothing in it shadows the project's own dependencies. A
``bfcl_eval`` already importable (installed into the environment some other way) is used when it
is the pinned version.

Of the package, these modules are imported, and nothing else: the API classes of
``eval_checker/multi_turn_eval/func_source_code/`` the questions name, the class -> module and
class -> function-document mappings of ``constants/executable_backend_config.py``, and the checker
``eval_checker/multi_turn_eval/multi_turn_checker.py`` with the ``multi_turn_utils.py`` it executes
calls with. Each imports only the standard library and ``mpmath`` (the package's ``eval_runner``,
its model handlers and its ``utils`` import far more, and are not used).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import os
import sys
from pathlib import Path
from types import ModuleType

from pydantic import BaseModel, ConfigDict

from helmdeck_dspy.bench.multi_turn import PACKAGE, VERSION
from helmdeck_dspy.errors import BenchDependencyError

ENV_DIR = "HELMDECK_BFCL_EVAL"
"""An environment variable naming the folder the package was installed into (``pip --target``)."""
DEFAULT_DIR = Path(__file__).resolve().parents[3] / ".bench-deps" / "bfcl-eval"
"""Where ``make bench-deps`` installs it: ``.bench-deps/bfcl-eval`` in the checkout."""
CONFIG_MODULE = "bfcl_eval.constants.executable_backend_config"
CHECKER_MODULE = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker"
UTILS_MODULE = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils"
INSTALL = "make bench-deps (pip install --no-deps --require-hashes --target .bench-deps/bfcl-eval -r bench-deps.txt)"


class BfclPackage(BaseModel):
    """The installed package: its version and its data folder."""

    model_config = ConfigDict(frozen=True)

    version: str
    data_dir: Path

    @property
    def pin(self) -> str:
        return f"{PACKAGE}=={self.version}"


def install_dir() -> Path:
    """The folder the package is looked for in (``HELMDECK_BFCL_EVAL``, else ``.bench-deps/bfcl-eval``)."""
    given = os.environ.get(ENV_DIR)
    return Path(given).expanduser() if given else DEFAULT_DIR


def _installed_version(folder: Path) -> str | None:
    """The version of ``bfcl-eval`` installed in ``folder``, else in the environment, else None."""
    for dist in importlib.metadata.distributions(path=[str(folder)]):
        if (dist.metadata["Name"] or "").replace("_", "-").lower() == PACKAGE:
            return dist.version
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def bfcl_package() -> BfclPackage:
    """The pinned package, importable from here on.

    Raises:
        BenchDependencyError: it is not installed, or not the pinned version.
    """
    folder = install_dir()
    version = _installed_version(folder)
    if version is None:
        raise BenchDependencyError(f"{PACKAGE}=={VERSION} is not installed (looked in {folder} and the environment); "
                                   f"install it with {INSTALL}")
    if version != VERSION:
        raise BenchDependencyError(f"{PACKAGE} {version} is installed, but this benchmark is pinned to {VERSION}; "
                                   f"install the pinned one with {INSTALL}")
    if folder.is_dir() and str(folder) not in sys.path:
        sys.path.append(str(folder))
    try:
        config = importlib.import_module(CONFIG_MODULE)
    except ImportError as exc:
        raise BenchDependencyError(f"{PACKAGE}=={VERSION} does not import ({exc}); install it with {INSTALL}") from None
    return BfclPackage(version=version, data_dir=Path(str(config.__file__)).parents[1] / "data")


def bfcl_module(name: str) -> ModuleType:
    """A module of the package (after :func:`bfcl_package`).

    Raises:
        BenchDependencyError: the package, or what the module imports, is missing.
    """
    bfcl_package()
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise BenchDependencyError(f"{name} does not import ({exc}); install {PACKAGE} and mpmath with {INSTALL}") from None


def api_class(class_name: str) -> type:
    """The package's API class ``class_name`` (``GorillaFileSystem``, ``MathAPI`` ...)."""
    modules = bfcl_module(CONFIG_MODULE).CLASS_FILE_PATH_MAPPING
    found: type = getattr(bfcl_module(modules[class_name]), class_name)
    return found


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
