"""The range each policy number may take, written once: a suite's own numbers are checked
against it (the model's validators, which the settings form, the admin and the services
share), and so are the deployment's defaults for new suites, at start-up."""

from __future__ import annotations

from dataclasses import dataclass

from .clearance import CLEAR_AFTER_MAX
from .gate_plan import MEASURE_BUDGET_MAX_SECONDS, MEASURE_BUDGET_MIN_SECONDS
from .new_tests import NEW_TEST_MAX_RUNS, NEW_TEST_MIN_RUNS


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
