"""Fuzzing in CI: each target of tests/strategies.py on 60-300 Hypothesis inputs.

The long run is ``measure/fuzz.py`` (over 100k inputs); these keep the same contracts under
test on every run: ``parse_completion`` never raises and returns a consistent, printable result;
catalog and trace loading raise only our typed errors; a catalog that loads also renders and
selects; the evaluator's chunk replay raises only ``DataFileError``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from tests.strategies import TARGETS

# Examples per target, sized so the whole file runs in about 15 s: a trace-file example costs
# some 600 Hypothesis draws (and four reads), a completion far fewer.
EXAMPLES = {"parse_completion": 300, "parse_catalog": 300, "load_catalog": 150, "load_traces": 60, "eval_replay": 60}


def _fuzz_test(name: str):
    strategy, check = TARGETS[name]

    @settings(
        max_examples=EXAMPLES.get(name, 100),
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(case) -> None:
        check(case)

    return run


@pytest.mark.parametrize("name", list(TARGETS))
def test_fuzz_target(name: str) -> None:
    _fuzz_test(name)()
