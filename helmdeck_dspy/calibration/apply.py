"""Applying a calibration: which proposals ``--apply`` writes, and the rewrite of the budget table.

Per model, the deciding source kind is the best-ranked kind with enough data (live, then imported,
then published, then the rest); its proposals are written only when that kind is a measurement
(or ``allow_simulated``). The table is rewritten with tomlkit, keeping comments and untouched rows;
a model that only matched a prefix or the fallback gets an exact row; every row changed or
confirmed unchanged gets the provenance stamp (``source = "calibrated:<kind>"``, the trace set's
hash, and the tier rule's n, strict rate and interval when full_steps had enough records).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dc_field
from datetime import date
from pathlib import Path

from helmdeck_dspy.budgets import parse_budget_table
from helmdeck_dspy.calibration.calibrate import Calibration, Proposal, Unchanged
from helmdeck_dspy.evaluation.report import kind_rank
from helmdeck_dspy.errors import BudgetTableError
from helmdeck_dspy.io.atomic import atomic_write_text, locked
from helmdeck_dspy.io.datafiles import read_text
from helmdeck_dspy.io.resources import default_budgets_path
from helmdeck_dspy.traces.record import is_measured


@dataclass
class Selection:
    """Which proposals ``--apply`` writes, and why the others are not written."""

    chosen: list[Proposal] = dc_field(default_factory=list)
    held_back: list[Proposal] = dc_field(default_factory=list)
    """Resting only on records that are not a measurement (sim:<profile>, replay, unknown)."""
    superseded: list[Proposal] = dc_field(default_factory=list)
    """For a model whose records of a better kind (live before imported before published before
    the rest) also had enough data: that kind decides."""
    confirmed: list[Unchanged] = dc_field(default_factory=list)
    """Models whose deciding kind has enough data and calls for no change: their rows keep their
    values and get the provenance stamp."""

    @property
    def written(self) -> bool:
        """Whether ``--apply`` has anything to write."""
        return bool(self.chosen or self.confirmed)


def select_proposals(cal: Calibration, *, allow_simulated: bool = False) -> Selection:
    """Per model, the proposals of the deciding kind (the best-ranked kind with enough data, whether
    it proposes changes or none), kept only when that kind is measured or ``allow_simulated``."""
    deciding: dict[str, str] = {}
    for kind, model in [(p.kind, p.model) for p in cal.proposals] + [(u.kind, u.model) for u in cal.unchanged]:
        if model not in deciding or kind_rank(kind) < kind_rank(deciding[model]):
            deciding[model] = kind
    out = Selection()
    for p in cal.proposals:
        if p.kind != deciding[p.model]:
            out.superseded.append(p)
        elif is_measured(p.kind) or allow_simulated:
            out.chosen.append(p)
        else:
            out.held_back.append(p)
    out.confirmed = [u for u in cal.unchanged
                     if u.kind == deciding[u.model] and (is_measured(u.kind) or allow_simulated)]
    return out


_PROVENANCE = ("source", "trace_set_sha", "n", "rate", "interval_low", "interval_high", "calibrated_at")


def apply_calibration(cal: Calibration, path: str | Path | None = None, *, allow_simulated: bool = False) -> list[str]:
    """Rewrite the budget table in place (atomically) with the proposals :func:`select_proposals`
    chooses, and stamp provenance on those rows and on the rows it confirms unchanged; returns the
    touched ``match`` keys (none: the file is not rewritten).

    The read, the change and the replacement happen under :func:`~helmdeck_dspy.io.atomic.locked`,
    so concurrent applies to one table are serialised and each one's rows survive; the file's
    line endings (LF or CRLF) are kept.

    Raises:
        BudgetTableError: The table cannot be read, or would not load after the change.
        OSError: The table cannot be locked or replaced.
    """
    selection = select_proposals(cal, allow_simulated=allow_simulated)
    if not selection.written:
        return []
    return rewrite_table(path, lambda text, where: _rewrite(selection, cal, text, where))


def rewrite_table(path: str | Path | None, change: Callable[[str, str], tuple[str, list[str]]]) -> list[str]:
    """Rewrite the budget table (``path``, default the bundled one) with ``change(text, where) ->
    (new text, touched match keys)``, under :func:`~helmdeck_dspy.io.atomic.locked` and atomically,
    keeping the file's line endings; returns the touched keys."""
    target = Path(path) if path is not None else default_budgets_path()
    with locked(target):
        raw = read_text(target, BudgetTableError)
        crlf = "\r\n" in raw
        new_text, touched = change(raw.replace("\r\n", "\n"), str(target))
        atomic_write_text(target, new_text.replace("\n", "\r\n") if crlf else new_text)
    return touched


def _rewrite(selection: Selection, cal: Calibration, text: str, where: str) -> tuple[str, list[str]]:
    """The table ``text`` with the selection applied, and the touched ``match`` keys."""
    import tomlkit

    table = parse_budget_table(text, where)
    doc = tomlkit.parse(text)
    rows = doc.setdefault("model", tomlkit.aot())
    by_model: dict[str, tuple[str, list[Proposal]]] = {u.model: (u.kind, []) for u in selection.confirmed}
    for p in selection.chosen:
        by_model.setdefault(p.model, (p.kind, []))[1].append(p)  # one deciding kind per model
    assessed = {(a.model, a.kind): a.evidence for a in cal.assessed}
    touched = []
    for model, (kind, props) in by_model.items():
        budget = table.lookup(model)
        row = next((r for r in rows if r.get("match") == model), None)
        if row is None:
            row = tomlkit.table()
            row.add(tomlkit.comment(f"Calibrated from {kind} traces; it matched {budget.matched!r} before."))
            row["match"] = model
            for key, value in budget.model_dump(exclude={"model", "matched", *_PROVENANCE}).items():
                if value is not None:
                    row[key] = value
            rows.append(row)
        for p in props:
            row[p.field] = p.proposed
        tier_evidence = assessed.get((model, kind), {})
        row["source"] = f"calibrated:{kind}"
        row["trace_set_sha"] = cal.report_trace_set_sha256[:16]
        for key in ("n", "rate", "interval_low", "interval_high"):
            if key in row:
                del row[key]  # an earlier stamp: what is not measured now must not look measured
        if "strict_rate" in tier_evidence:
            row["n"] = tier_evidence["n"]
            row["rate"] = tier_evidence["strict_rate"]
            row["interval_low"], row["interval_high"] = tier_evidence["strict_ci"]
        row["calibrated_at"] = date.today().isoformat()
        touched.append(model)
    new_text = tomlkit.dumps(doc)
    parse_budget_table(new_text, where)  # never write a table that would not load
    return new_text, touched
