"""``helmdeck-dspy calibrate``: propose budget-table changes from an eval report, and apply them."""

from __future__ import annotations

from typing import Any

import click

from helmdeck_dspy.cli.options import (
    budgets_option,
    emit_json,
    json_option,
    print_table,
)


@click.command("calibrate")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, exists=True),
              help="report.json written by `eval --out`.")
@click.option("--decisions", multiple=True, metavar="SPEC:ROW",
              help="Instead of --report: fit a decline threshold on the first-answer decline probabilities a lever "
                   "study's row recorded (probe_decision); repeat for more dev sets of the same model.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False),
              help="With --decisions: draw the reliability plot to this PNG.")
@click.option("--min-n", type=click.IntRange(1), default=None, help="Records a model needs per variant (default: eval/calibration.toml).")
@click.option("--apply", "do_apply", is_flag=True,
              help="Rewrite the budget table with the proposals resting on measured records (live, imported, published).")
@click.option("--allow-simulated", is_flag=True,
              help="With --apply: also apply proposals resting only on simulated (sim:<profile>), replayed or "
                   "unknown-source records.")
@budgets_option
@json_option('Print {"proposals": [...], "insufficient": [...]}.')
def calibrate_cmd(report_path: str | None, decisions: tuple[str, ...], plot_path: str | None, min_n: int | None,
                  do_apply: bool, allow_simulated: bool, budgets_path: str | None, as_json: bool) -> None:
    """Propose budget-table changes from an evaluation report (and --apply them), or fit a decline
    threshold on recorded decline probabilities (--decisions)."""
    from helmdeck_dspy.budgets import load_budget_table
    from helmdeck_dspy.calibration.apply import apply_calibration, select_proposals
    from helmdeck_dspy.calibration.calibrate import calibrate, load_report
    from helmdeck_dspy.errors import InputError

    if (report_path is None) == (not decisions):
        raise click.UsageError("give --report, or --decisions (not both)")
    if decisions:
        _fit_decisions(decisions, plot_path, as_json, do_apply, budgets_path)
        return
    assert report_path is not None  # one of the two, checked above

    report = load_report(report_path)
    table = load_budget_table(budgets_path)
    if do_apply:  # a table that cannot be replaced is one line naming it, before anything is printed
        from helmdeck_dspy.io.outputs import probe_writable

        probe_writable(budgets_path or table.path, option="--budgets")
    cal = calibrate(report, table, min_n=min_n)
    if as_json:
        emit_json(cal.model_dump(mode="json"))
    else:
        if cal.proposals:
            print_table(
                ["model · kind", "field", "current", "proposed", "evidence"],
                [[p.label, p.field, p.current if p.current != "" else '""', p.proposed, _evidence_text(p.evidence)]
                 for p in cal.proposals],
            )
        else:
            click.echo("no changes proposed")
        for u in cal.unchanged:
            click.echo(f"unchanged: {u.model} · {u.kind} (enough data, nothing to change)")
        for i in cal.insufficient:
            what = f"{i.reason}; nothing written for it" if i.field else f"full_steps n={i.n_full_steps}, " \
                f"single_pick n={i.n_single_pick}; needs {cal.min_n}"
            click.echo(f"insufficient data: {i.model} · {i.kind} ({what})")
    if do_apply:
        chosen = select_proposals(cal, allow_simulated=allow_simulated)
        held = _held_back_line(chosen.held_back)
        if held and not chosen.written:
            raise InputError(f"--apply refused: {held}")
        if held:
            click.echo(f"not applied: {held}", err=True)
        if chosen.superseded:
            kinds = ", ".join(sorted({p.kind for p in chosen.superseded}))
            click.echo(f"not applied: {len(chosen.superseded)} proposal(s) from {kinds} for models whose records of "
                       "a better-ranked kind decide", err=True)
        target = budgets_path or table.path
        touched = apply_calibration(cal, target, allow_simulated=allow_simulated)
        changed = len({p.model for p in chosen.chosen})
        click.echo(f"updated {len(touched)} model row(s) in {target} ({changed} changed, {len(chosen.confirmed)} "
                   "confirmed unchanged; provenance stamped on each)", err=as_json)


def _held_back_line(held: list[Any]) -> str:
    """One line on proposals held back for resting only on simulated or unmeasured records ('' when none)."""
    if not held:
        return ""
    kinds = ", ".join(sorted({p.kind for p in held}))
    models = sorted({p.model for p in held})
    return (f"{len(held)} proposal(s) for {len(models)} model(s) rest only on simulated or unmeasured records "
            f"({kinds}); pass --allow-simulated to apply them")


def _evidence_text(e: dict[str, Any]) -> str:
    """One proposal's evidence as a short ``;``-separated phrase for the table."""
    parts = []
    if "n" in e:
        parts.append(f"n={e['n']}")
    if "strict_rate" in e:
        lo, hi = e["strict_ci"]
        parts.append(f"strict {100 * e['strict_rate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]")
    if e.get("plan_score") is not None:
        parts.append(f"plan score {e['plan_score']:.2f}")
    if "length_rate" in e:
        lo, hi = e["length_ci"]
        parts.append(f"cut at {e['cap_seen']}: {100 * e['length_rate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]")
    if e.get("clean_p95") is not None:
        parts.append(f"clean p95 {e['clean_p95']:.0f} tok")
    if "method" in e:
        parts.append(e["method"])
    if "diff_single_minus_full" in e:
        lo, hi = e["diff_ci"]
        parts.append(f"single-full {100 * e['diff_single_minus_full']:+.1f} pts [{100 * lo:.1f}, {100 * hi:.1f}]")
    if "share" in e:
        parts.append(f"reasoning in {100 * e['share']:.0f}%")
    if "diff" in e:
        parts.append(f"cut-offs rise with prompt size: {100 * e['diff']:+.1f} pts")
    return "; ".join(parts)


def _fit_decisions(decisions: tuple[str, ...], plot_path: str | None, as_json: bool, do_apply: bool,
                   budgets_path: str | None) -> None:
    """Fit and print a decline threshold over the rows named ``SPEC:ROW`` (and --apply it)."""
    import os

    from helmdeck_dspy.bench.study.decisions import decision_points
    from helmdeck_dspy.calibration.threshold import apply_threshold, fit_threshold, write_reliability_plot
    from helmdeck_dspy.program.strategies import STRATEGIES

    models: set[str] = set()
    strategies: set[str] = set()
    folders: list[str] = []
    points: list[Any] = []
    for item in decisions:
        spec, _, row = item.rpartition(":")
        if not spec or not row:
            raise click.UsageError(f"--decisions {item!r} is not SPEC:ROW")
        found = decision_points(spec, row)
        if not found.points:
            raise click.UsageError(f"--decisions {item}: no request of that row recorded a decline probability")
        models.add(found.model)
        strategies |= found.strategies
        folders.append(os.path.relpath(os.path.dirname(os.path.abspath(spec))))
        points += found.points
    if len(models) > 1:
        raise click.UsageError(f"--decisions: the rows are of different models: {sorted(models)}")
    if do_apply and (len(strategies) != 1 or next(iter(strategies)) not in STRATEGIES):
        raise click.UsageError(f"--apply needs rows of one answer strategy the planner has; these: {sorted(strategies)}")
    model = models.pop()
    fit = fit_threshold(points)
    if plot_path:
        write_reliability_plot(fit, plot_path, f"{model}: decline probability")
    if do_apply and fit.threshold is not None:
        touched = apply_threshold(model, strategies.pop(), fit, sorted(set(folders)), budgets_path)
        click.echo(f"updated {', '.join(touched)}: decline_thresholds", err=True)
    if as_json:
        emit_json(fit.model_dump(mode="json"))
        return
    rows = [[f"{b.low:.3g}-{b.high:.3g}", b.n, f"{b.mean_p:.3f}", b.unserved,
             f"{100 * b.unserved / b.n:.0f}% [{100 * b.interval[0]:.0f}, {100 * b.interval[1]:.0f}]"] for b in fit.bins]
    print_table(["p_decline", "requests", "mean p", "unserved", "share unserved"], rows)
    click.echo(f"{fit.n} requests ({fit.served} served, {fit.unserved} unserved) over {len(fit.dev_sets)} dev set(s), "
               "each weighted equally")
    click.echo(f"call-or-not accuracy: {100 * fit.own_accuracy:.1f}% as answered; {100 * fit.best_accuracy:.1f}% "
               f"declining at p >= {fit.best:.4g}")
    verdict = (f"proposed threshold {fit.threshold:.4g}" if fit.threshold is not None
               else "no threshold proposed (the best cut gains under 1 point): the model's own choice stands")
    click.echo(f"{verdict}; served declined {fit.served_declined}, unserved declined {fit.unserved_declined}")
