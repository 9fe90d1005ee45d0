"""The default and the range of each policy number, written once. A suite's own numbers
are checked against the range (the model's validators, which the settings form, the admin
and the services share), and so are the deployment's defaults for new suites, at start-up."""

from __future__ import annotations

from dataclasses import dataclass

from .clearance import CLEAR_AFTER_DEFAULT, CLEAR_AFTER_MAX
from .gate_plan import (
    MEASURE_BUDGET_MAX_SECONDS,
    MEASURE_BUDGET_MIN_SECONDS,
    MEASURE_BUDGET_SECONDS,
)
from .new_tests import NEW_TEST_MAX_RUNS, NEW_TEST_MIN_RUNS, NEW_TEST_RUNS, NEW_TEST_SHARE


@dataclass(frozen=True)
class PolicyBound:
    """Both ends included."""

    low: int | float
    high: int | float

    def __contains__(self, value: int | float) -> bool:
        return self.low <= value <= self.high  # NaN is in no range

    def __iter__(self):
        return iter((self.low, self.high))


POLICY_BOUNDS = {
    "max_upper_rate": PolicyBound(0.0001, 1.0),
    "min_runs": PolicyBound(1, 1_000_000),
    "max_quarantined_share": PolicyBound(0.0, 1.0),
    "max_quarantine_days": PolicyBound(1, 365),
    "clear_after_clean_measurements": PolicyBound(1, CLEAR_AFTER_MAX),
    "new_test_runs": PolicyBound(NEW_TEST_MIN_RUNS, NEW_TEST_MAX_RUNS),
    "new_test_share": PolicyBound(0.01, 1.0),
    "measure_budget": PolicyBound(MEASURE_BUDGET_MIN_SECONDS, MEASURE_BUDGET_MAX_SECONDS),
}

# A new suite's numbers, unless the deployment sets its own (DEFAULT_MIN_RUNS and the like).
POLICY_DEFAULTS = {
    "max_upper_rate": 0.02,
    "min_runs": 200,
    "max_quarantined_share": 0.05,
    "max_quarantine_days": 30,
    "clear_after_clean_measurements": CLEAR_AFTER_DEFAULT,
    "new_test_runs": NEW_TEST_RUNS,
    "new_test_share": NEW_TEST_SHARE,
    "measure_budget": MEASURE_BUDGET_SECONDS,
}
