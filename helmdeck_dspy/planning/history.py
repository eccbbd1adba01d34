"""plan_history: an audit row per successful plan, in a local SQLite store.

Rows follow helmdeck's shape — ``intent_sha`` (8 bytes of a hash of the lower-cased, trimmed
intent, as 16 hex characters), per step the tool and an ``args_sha`` — keyed
``plan_history/<intent_sha>/<unix nanoseconds, 20 digits>`` and kept 30 days. Additions: args
are hashed canonically (sorted keys, no whitespace), so formatting does not change the hash;
each row keeps hashed intent *terms* (4 bytes each), so history can serve as a ranking prior for
similar (not only identical) intents; and every hash is keyed with this install's secret
(:mod:`helmdeck_dspy.planning.history_keys`), so no row can be turned back into the request's
words by a dictionary. A row holds no text of the request, its context or its arguments: the
hashes, the tool names, pipeline ids, the complexity, the model id, the caller id, the time and
the duration.

The store lives under the user data directory (``$HELMDECK_DSPY_HOME`` overrides it): the
database ``history.sqlite`` and its secret ``history.key``, both 0600, in a 0700 folder. The
secret can live elsewhere (``$HELMDECK_DSPY_HISTORY_KEY_FILE``, or ``key_path``), so that a copy
of the data folder holds only hashes no dictionary reverses.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from platformdirs import user_data_dir
from pydantic import BaseModel, Field

from helmdeck_dspy.catalog.text import tokenize
from helmdeck_dspy.domain import PIPELINE_RUN_TOOL, UNKNOWN_TOOL
from helmdeck_dspy.errors import HistoryStoreError
from helmdeck_dspy.planning.history_keys import Keyed, load_secret, migrate, prepare_files, secret_path

AUDIT_TTL_SECONDS = 30 * 24 * 3600
MY_PLANS_LIMIT = 25
NOTE_EMPTY = "no plan history for this caller yet: plans are recorded here after each successful call"


def data_dir() -> Path:
    """Where helmdeck-dspy keeps user data (history, caches): ``$HELMDECK_DSPY_HOME`` or the platform's."""
    env = os.environ.get("HELMDECK_DSPY_HOME")
    if env:
        return Path(env)
    return Path(user_data_dir("helmdeck-dspy", appauthor=False))


def intent_sha(intent: str, keyed: Keyed | None = None) -> str:
    """The intent's hash (16 hex characters): keyed with an install's secret as the store writes
    it, or without ``keyed`` helmdeck's unkeyed definition (for comparing with helmdeck's rows)."""
    normal = intent.strip().lower()
    if keyed is not None:
        return keyed.digest("intent", normal)
    return hashlib.sha256(normal.encode("utf-8")).digest()[:8].hex()


def args_sha(args: Mapping[str, Any], keyed: Keyed | None = None) -> str:
    """A step's arguments' hash (16 hex characters) over their canonical JSON; keyed as :func:`intent_sha`."""
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if keyed is not None:
        return keyed.digest("args", canonical)
    return hashlib.sha256(canonical.encode("utf-8")).digest()[:8].hex()


def intent_terms(intent: str, keyed: Keyed) -> list[str]:
    """Keyed hashes of an intent's distinct tokens (8 hex characters each), sorted."""
    return sorted({keyed.digest("term", t, 4) for t in tokenize(intent)})


class AuditStep(BaseModel):
    order: int
    tool: str
    args_sha: str | None = None
    pipeline_id: str | None = None


class AuditRow(BaseModel):
    """One plan_history row."""

    key: str
    caller: str = "unknown"
    intent_sha: str
    intent_terms: list[str] = Field(default_factory=list)
    complexity: str
    steps: list[AuditStep]
    outcome: str = "ok"
    at_unix: int
    duration_ms: int = 0
    model: str = ""


class PlanGroup(BaseModel):
    """One intent's plans in the my_plans projection."""

    intent_sha: str
    count: int
    complexity: str
    top_tools: list[str]
    last_unix: int
    models: list[str]


class MyPlans(BaseModel):
    scope: str
    fetched_at: str
    groups: list[PlanGroup]
    note: str | None = None


_SCHEMA = """
CREATE TABLE IF NOT EXISTS plan_history (
    key TEXT PRIMARY KEY,
    caller TEXT NOT NULL,
    intent_sha TEXT NOT NULL,
    body TEXT NOT NULL,
    at_unix INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS plan_history_caller ON plan_history (caller, at_unix);
"""


class HistoryStore:
    """SQLite-backed plan_history (private: see the module docstring).

    Raises:
        HistoryStoreError: The folder cannot be created (a file stands there), the database is not
            an SQLite file, or the secret is unreadable.
    """

    def __init__(self, path: str | Path | None = None, *, key_path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else data_dir() / "history.sqlite"
        prepare_files(self.path)
        self.keyed = Keyed(load_secret(secret_path(self.path, key_path)))
        try:
            with closing(self._connect()) as db:
                db.executescript(_SCHEMA)
                db.execute("BEGIN IMMEDIATE")  # one process migrates; the others wait and find it done
                moved = migrate(db, self.keyed, self.path)
                db.commit()
                if moved:
                    db.execute("VACUUM")  # the old hashes must not linger in free pages
        except sqlite3.DatabaseError as exc:
            raise HistoryStoreError(f"{self.path}: not a plan-history database ({exc}); move it aside, or plan with "
                                    "--no-history") from None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=5)
        db.execute("PRAGMA secure_delete = ON")  # removed rows are overwritten, not left in free pages
        return db

    def record(
        self,
        *,
        intent: str,
        complexity: str,
        steps: Iterable[Any],
        model: str,
        caller: str | None = None,
        duration_ms: int = 0,
        at_unix: int | None = None,
    ) -> AuditRow:
        """Write one audit row for a successful plan. ``steps`` are guarded steps (order, tool, args)."""
        now_ns = time.time_ns()
        sha = intent_sha(intent, self.keyed)
        audit_steps = []
        for s in steps:
            args = getattr(s, "args", None) or {}
            pid = args.get("id") if s.tool == PIPELINE_RUN_TOOL and isinstance(args.get("id"), str) else None
            audit_steps.append(
                AuditStep(order=s.order, tool=s.tool, args_sha=args_sha(args, self.keyed) if args else None,
                          pipeline_id=pid)
            )
        row = AuditRow(
            key=f"plan_history/{sha}/{now_ns:020d}",
            caller=caller or "unknown",
            intent_sha=sha,
            intent_terms=intent_terms(intent, self.keyed),
            complexity=complexity,
            steps=audit_steps,
            at_unix=at_unix if at_unix else now_ns // 1_000_000_000,
            duration_ms=duration_ms,
            model=model,
        )
        with self._connect() as db:
            for bump in range(1000):  # two plans in one clock tick: move to the next free nanosecond
                key = f"plan_history/{sha}/{now_ns + bump:020d}"
                try:
                    db.execute(
                        "INSERT INTO plan_history (key, caller, intent_sha, body, at_unix) VALUES (?, ?, ?, ?, ?)",
                        (key, row.caller, row.intent_sha, row.model_copy(update={"key": key}).model_dump_json(), row.at_unix),
                    )
                except sqlite3.IntegrityError:
                    continue
                return row.model_copy(update={"key": key})
        raise sqlite3.IntegrityError(f"no free plan_history key for {sha} near {now_ns}")

    def rows(self, caller: str | None = None, *, now: int | None = None) -> list[AuditRow]:
        """Unexpired rows, newest first; all callers when ``caller`` is None."""
        cutoff = (now if now is not None else int(time.time())) - AUDIT_TTL_SECONDS
        query = "SELECT body FROM plan_history WHERE at_unix >= ?"
        params: list[Any] = [cutoff]
        if caller is not None:
            query += " AND caller = ?"
            params.append(caller)
        with self._connect() as db:
            bodies = [b for (b,) in db.execute(query + " ORDER BY at_unix DESC, key DESC", params)]
        out = []
        for body in bodies:
            try:
                out.append(AuditRow.model_validate_json(body))
            except ValueError:
                continue  # an undecodable row is skipped, as helmdeck does
        return out

    def my_plans(self, caller: str | None = None, *, now: int | None = None) -> MyPlans:
        """helmdeck's ``my-plans`` projection for one caller."""
        who = caller or "unknown"
        groups: dict[str, list[AuditRow]] = {}
        for row in self.rows(who, now=now):
            if row.intent_sha:
                groups.setdefault(row.intent_sha, []).append(row)
        out = []
        for sha, rows in groups.items():
            complexities = Counter(r.complexity for r in rows)
            complexity = sorted(complexities.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
            tools = Counter(s.tool for r in rows for s in r.steps if s.tool not in ("", UNKNOWN_TOOL))
            models = Counter(r.model for r in rows if r.model)
            out.append(
                PlanGroup(
                    intent_sha=sha,
                    count=len(rows),
                    complexity=complexity,
                    top_tools=[t for t, _ in sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))[:5]],
                    last_unix=max(r.at_unix for r in rows),
                    models=[m for m, _ in sorted(models.items(), key=lambda kv: (-kv[1], kv[0]))[:3]],
                )
            )
        out.sort(key=lambda g: (-g.count, -g.last_unix, g.intent_sha))
        return MyPlans(
            scope=f"caller={who}",
            fetched_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            groups=out[:MY_PLANS_LIMIT],
            note=None if out else NOTE_EMPTY,
        )

    def prior(self, intent: str, caller: str | None = None, *, weight: float = 3.0) -> dict[str, float]:
        """A ranking bonus per catalog id from plans for similar intents.

        Each past plan votes for the tools (and pipeline ids) it used, weighted by the Jaccard
        similarity of its hashed intent terms with ``intent``'s; the votes are scaled so the
        strongest id gets ``weight``. Empty when there is no similar history.
        """
        terms = set(intent_terms(intent, self.keyed))
        if not terms:
            return {}
        votes: defaultdict[str, float] = defaultdict(float)
        for row in self.rows(caller):
            other = set(row.intent_terms)
            sim = len(terms & other) / len(terms | other) if other else 0.0
            if sim <= 0:
                continue
            for step in row.steps:
                entry = step.pipeline_id if step.tool == PIPELINE_RUN_TOOL else step.tool
                if entry and entry != "unknown":
                    votes[entry] += sim
        if not votes:
            return {}
        top = max(votes.values())
        return {k: weight * v / top for k, v in votes.items()}


def record_quietly(store: HistoryStore | None, **kwargs: Any) -> AuditRow | None:
    """Write an audit row, turning a storage failure into a warning (the plan call never fails on it)."""
    if store is None:
        return None
    try:
        return store.record(**kwargs)
    except (sqlite3.Error, OSError, HistoryStoreError) as exc:
        warnings.warn(f"plan_history not written: {exc}", stacklevel=2)
        return None
