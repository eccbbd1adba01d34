"""What keeps plan_history private: the per-install secret, keyed hashes, file modes, migration.

Every hash the history stores (the intent's, each intent term's, each step's arguments') is an
HMAC-SHA256 under a secret of 32 random bytes kept beside the database (``history.key``, mode
0600), or where ``$HELMDECK_DSPY_HISTORY_KEY_FILE`` says. Rows of one install still match each other (the same intent gives the same hash, similar
intents share term hashes), but without the secret no dictionary turns a hash back into a word,
and two installs' hashes of the same request differ. The database is 0600 and, when this package
creates or owns it, its folder 0700.

A database written before keyed hashes (``PRAGMA user_version`` 0) is migrated once when opened:
each row's intent and argument hashes are re-keyed (an HMAC of the old hash, so old rows of one
intent still group together), its intent terms are dropped (they cannot be re-keyed without the
words, and they were the reversible part), and the file is vacuumed so the old values do not
linger in free pages. A warning says how many rows were migrated.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import warnings
from pathlib import Path

from helmdeck_dspy.errors import HistoryStoreError

SCHEMA_VERSION = 1
"""``PRAGMA user_version`` of a database whose hashes are keyed."""
SECRET_BYTES = 32
FILE_MODE = 0o600
FOLDER_MODE = 0o700


class Keyed:
    """Keyed hashes under one install's secret (see the module docstring)."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def __repr__(self) -> str:
        return "Keyed(<secret>)"

    def digest(self, kind: str, text: str, size: int = 8) -> str:
        """The first ``size`` bytes of HMAC-SHA256(secret, kind NUL text), as hex."""
        mac = hmac.new(self._secret, f"{kind}\0{text}".encode("utf-8", "surrogatepass"), hashlib.sha256)
        return mac.digest()[:size].hex()


KEY_FILE_ENV = "HELMDECK_DSPY_HISTORY_KEY_FILE"
"""Where the secret lives instead of beside the database (a path; created 0600 when absent)."""


def secret_path(db: Path, key_path: str | Path | None = None) -> Path:
    """The secret's file: ``key_path``, else ``$HELMDECK_DSPY_HISTORY_KEY_FILE``, else beside the
    database (``history.key``). A folder it needs is created 0700.

    Raises:
        HistoryStoreError: That folder cannot be created.
    """
    chosen = key_path if key_path is not None else os.environ.get(KEY_FILE_ENV) or None
    if chosen is None:
        return db.with_suffix(".key")
    path = Path(chosen).expanduser()
    if not path.parent.exists():
        try:
            path.parent.mkdir(mode=FOLDER_MODE, parents=True)
        except OSError as exc:
            raise HistoryStoreError(f"{path.parent}: cannot hold the plan-history secret ({exc.strerror or exc}); "
                                    f"check {KEY_FILE_ENV}") from None
    return path


def load_secret(path: Path) -> bytes:
    """The install's secret at ``path``, created (0600, never replaced) when absent.

    Raises:
        HistoryStoreError: The file exists but cannot be read or holds no usable secret.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        pass
    except OSError as exc:
        raise HistoryStoreError(f"{path}: cannot create the plan-history secret ({exc.strerror or exc})") from None
    else:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(SECRET_BYTES) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
    try:
        os.chmod(path, FILE_MODE)
        text = path.read_text(encoding="ascii").strip()
        secret = bytes.fromhex(text)
    except (OSError, ValueError) as exc:
        raise HistoryStoreError(f"{path}: not a readable plan-history secret ({exc}); move it aside to start a new "
                                "one (older rows then stop matching new ones)") from None
    if len(secret) < 16:
        raise HistoryStoreError(f"{path}: the plan-history secret is too short; move it aside to start a new one")
    return secret


def prepare_files(db: Path) -> None:
    """Create the database's folder (0700, only when created here: an existing one, the data
    directory included, keeps its mode, since it may be shared as /tmp is) and file (0600, also
    when it exists).

    Args:
        db: The database file.

    Raises:
        HistoryStoreError: The folder or file cannot be created (e.g. a file where the folder goes).
    """
    folder = db.parent
    if folder.exists() and not folder.is_dir():
        raise HistoryStoreError(f"{folder}: not a directory, so it cannot hold the plan history; set "
                                "HELMDECK_DSPY_HOME to a directory, or plan with --no-history")
    try:
        created = not folder.exists()
        folder.mkdir(parents=True, exist_ok=True)
        if created:  # a folder someone else made keeps its mode
            os.chmod(folder, FOLDER_MODE)
        os.close(os.open(db, os.O_RDWR | os.O_CREAT, FILE_MODE))
        os.chmod(db, FILE_MODE)
    except OSError as exc:
        target = exc.filename or folder
        raise HistoryStoreError(f"{target}: cannot hold the plan history ({exc.strerror or exc}); set "
                                "HELMDECK_DSPY_HOME to a directory, or plan with --no-history") from None


def migrate(db: sqlite3.Connection, keyed: Keyed, where: Path) -> int:
    """Bring a database to :data:`SCHEMA_VERSION`: re-key an older one's rows (see the module
    docstring). Returns the rows migrated (0 for a new or current database)."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version >= SCHEMA_VERSION:
        return 0
    rows = db.execute("SELECT key, caller, body, at_unix FROM plan_history").fetchall()
    moved = 0
    for key, caller, body, at_unix in rows:
        db.execute("DELETE FROM plan_history WHERE key = ?", (key,))
        try:
            data = json.loads(body)
        except ValueError:
            continue  # an undecodable row was never readable: dropped
        sha = keyed.digest("legacy-intent", str(data.get("intent_sha", "")))
        stamp = key.rsplit("/", 1)[-1]
        data.update(intent_sha=sha, intent_terms=[], key=f"plan_history/{sha}/{stamp}")
        for step in data.get("steps") or []:
            if isinstance(step, dict) and step.get("args_sha"):
                step["args_sha"] = keyed.digest("legacy-args", str(step["args_sha"]))
        db.execute("INSERT OR REPLACE INTO plan_history (key, caller, intent_sha, body, at_unix) VALUES (?, ?, ?, ?, ?)",
                   (data["key"], caller, sha, json.dumps(data, ensure_ascii=False), at_unix))
        moved += 1
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    if moved:
        warnings.warn(f"plan_history {where}: {moved} row(s) from before keyed hashing were migrated: their hashes "
                      "re-keyed with this install's secret and their intent terms dropped (they no longer feed "
                      "--history-prior)", stacklevel=3)
    return moved
