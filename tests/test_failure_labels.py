"""Every failure of a patch's gate explained to its author: one label and one line per failed
node, from the board's evidence, the gate's own measurement confirming or correcting it (the CI
client applies this module itself: test_client_build.py holds the build to it)."""

from __future__ import annotations

import pytest

from flakeboard.rules import FAILURE_LABELS, FailureEvidence, failure_label
from tests.ci_client_view import load_client

client = load_client()

ENTRY = ("@finley", "2026-11-01")
FLAKY = (0.04, 0.081, "2026-09-12", "order_dependent")

CASES = [
    (FailureEvidence(entry=ENTRY, flaky=FLAKY, default_failures=("abc123",)),
     "quarantined", "quarantined: until 2026-11-01 by @finley"),
    (FailureEvidence(entry=ENTRY, measured="broken"),
     "quarantined", "quarantined: until 2026-11-01 by @finley; measured broken here"),
    (FailureEvidence(flaky=FLAKY, passed_on_default=True),
     "known_flaky",
     "known flaky: rate 4.0% (≤ 8.1% at 95%) since 2026-09-12, order_dependent"),
    (FailureEvidence(flaky=(0.1, 0.2, "2026-10-01", ""), measured="flaky"),
     "known_flaky",
     "known flaky: rate 10.0% (≤ 20.0% at 95%) since 2026-10-01; measured flaky here"),
    # Broken in the measurement beats known flaky: then the default branch decides.
    (FailureEvidence(flaky=FLAKY, default_failures=("d4", "d3"), measured="broken"),
     "failing_on_default",
     "also failing on the default branch: last failed at d4, d3; measured broken here"),
    (FailureEvidence(flaky=FLAKY, passed_on_default=True, measured="broken"),
     "new_failure",
     "new failure: it passes on the default branch; its flaky past does not explain failing "
     "every run, so probably caused by this change; measured broken here"),
    (FailureEvidence(default_failures=("c5", "c4", "c3", "c2", "c1")),
     "failing_on_default",
     "also failing on the default branch: last failed at c5, c4, c3 and 2 more"),
    # It failed there once, but its last result there passed: not failing on the default.
    (FailureEvidence(default_failures=("c1",), passed_on_default=True),
     "new_failure",
     "new failure: it passes on the default branch and no flaky evidence, so probably caused "
     "by this change"),
    (FailureEvidence(passed_on_default=True, measured="broken"),
     "new_failure",
     "new failure: it passes on the default branch and no flaky evidence, so probably caused "
     "by this change; measured broken here"),
    (FailureEvidence(),
     "new_failure",
     "new failure: no result of it on the default branch and no flaky evidence, so probably "
     "caused by this change"),
]


@pytest.mark.parametrize(("evidence", "label", "line"), CASES)
def test_each_failed_node_gets_one_label_and_its_line(evidence, label, line):
    assert failure_label(evidence) == (label, line)


def test_the_table_covers_every_label():
    assert {label for _, label, _ in CASES} == set(FAILURE_LABELS)


@pytest.mark.parametrize(("evidence", "label", "line"), CASES)
def test_the_clients_copy_is_held_equal_to_the_rule(evidence, label, line):
    """The built client labels as the board: its build takes this rule's module as it is."""
    copy = client.FailureEvidence(*evidence)
    assert tuple(client.failure_label(copy)) == (label, line)
    assert client.FAILURE_LABELS == FAILURE_LABELS
