"""Fitting a decline threshold on dev answers (issue 38, item 2): accuracy of call-or-not with each
dev set weighted equally, a threshold only when it gains a point over the model's own choice."""

from __future__ import annotations

import pytest

from helmdeck_dspy.calibration.threshold import DecisionPoint, fit_threshold, reliability, write_reliability_plot


def _points(rows, dev_set="a"):
    return [DecisionPoint(dev_set=dev_set, task_id=f"{dev_set}{i}", p_decline=p, declined=d, unserved=u)
            for i, (p, d, u) in enumerate(rows)]


def test_a_threshold_that_separates_better_than_the_answers_is_proposed():
    # the model declined the 0.4 request (wrong: a tool serves it) and called on the 0.3 one (wrong: none does)
    points = _points([(0.05, False, False), (0.4, True, False), (0.3, False, True), (0.9, True, True)])
    fit = fit_threshold(points)
    assert fit.own_accuracy == 0.5
    # cutting between 0.05 and 0.3 or between 0.4 and 0.9 gets 3 of 4 right; the tie goes to the cut nearer 0.5
    assert fit.best_accuracy == 0.75 and fit.threshold == pytest.approx(0.65)
    assert (fit.served_declined, fit.unserved_declined) == (0, 1)


def test_no_threshold_when_the_models_own_choice_is_as_good():
    points = _points([(0.1, False, False), (0.2, False, False), (0.7, True, True), (0.95, True, True)])
    fit = fit_threshold(points)
    assert fit.own_accuracy == 1.0 and fit.threshold is None
    assert (fit.served_declined, fit.unserved_declined) == (0, 2)  # as answered


def test_each_dev_set_weighs_the_same_whatever_its_size():
    big = _points([(0.1, False, False)] * 9 + [(0.6, False, True)], "big")  # one unserved request missed
    small = _points([(0.6, False, True), (0.2, False, False)], "small")
    fit = fit_threshold(big + small)
    assert fit.own_accuracy == pytest.approx((0.9 + 0.5) / 2)
    assert fit.best_accuracy == 1.0 and 0.1 < fit.threshold <= 0.6
    assert fit.dev_sets == {"big": 10, "small": 2}


def test_reliability_bins_hold_near_equal_counts_and_how_often_declining_was_right():
    points = _points([(0.0, False, False), (0.05, False, True), (0.95, True, True), (1.0, True, True), (0.5, False, False)])
    bins = reliability(points, bins=2)
    assert [(b.low, b.high, b.n, b.unserved) for b in bins] == [(0.0, 0.5, 3, 1), (0.95, 1.0, 2, 2)]
    assert bins[0].interval[0] < 1 / 3 < bins[0].interval[1] and bins[0].mean_p == pytest.approx(0.55 / 3, abs=1e-4)


def test_the_reliability_plot_is_a_png(tmp_path):
    fit = fit_threshold(_points([(0.1, False, False), (0.8, True, True), (0.3, True, False)]))
    out = tmp_path / "reliability.png"
    write_reliability_plot(fit, out, "test model")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_points_is_an_error():
    with pytest.raises(ValueError, match="no decision points"):
        fit_threshold([])


def test_applying_a_threshold_writes_it_with_its_evidence_into_the_models_row(tmp_path):
    import shutil

    from helmdeck_dspy.budgets import load_budget_table
    from helmdeck_dspy.calibration.threshold import apply_threshold
    from helmdeck_dspy.errors import BudgetTableError
    from helmdeck_dspy.io.resources import default_budgets_path

    table = tmp_path / "budgets.toml"
    shutil.copy(default_budgets_path(), table)
    model = "local/qwen2.5-coder-0.5b-instruct"
    fit = fit_threshold(_points([(0.05, False, False), (0.4, True, False), (0.3, False, True), (0.9, True, True)]))
    assert apply_threshold(model, "schema", fit, ["experiments/bfcl/qwen2.5-coder-0.5b"], table) == [model]
    budget = load_budget_table(table).lookup(model)
    assert budget.decline_thresholds == {"schema": fit.threshold}
    assert budget.decided_by["decline_thresholds"] == ("experiments/bfcl/qwen2.5-coder-0.5b",)
    assert budget.decided_by["max_catalog_entries"]  # what the row named before stays
    assert "call-or-not 50.0% as answered, 75.0% at 0.65" in table.read_text()
    with pytest.raises(BudgetTableError, match="no row matches"):
        apply_threshold("local/no-such-model", "schema", fit, ["x"], table)
    with pytest.raises(ValueError, match="no threshold"):
        apply_threshold(model, "schema", fit_threshold(_points([(0.1, False, False), (0.9, True, True)])), ["x"], table)
