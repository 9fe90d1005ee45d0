"""A broken runner's gate attempt (SPEC 2.4a, issue 55 point 3): an attempt in which more
than the suite's infrastructure share of the nodes it ran failed, as a JUnit file's rule
says (``flakeboard.rules.infrastructure``, one rule for both), is an infrastructure failure.
Its failures count for the verdict, and a retry never launders them; it is never flaky
evidence: no node flips on it, so neither the flaky-tests page, the targets file, the
patch page nor the trends count one, and its batch page says what it is."""

from __future__ import annotations

import pytest
from django.urls import reverse

from board.targets import measure_targets
from flakeboard import rules
from flakeboard.rules import FixtureLock as Lock
from flakeboard.rules import PropertyCheck as Check
from flakeboard.rules.trends import first_flip
from runs.models import NodeVerdict
from runs.trend_counts import retry_counts
from tests.ci_client_view import load_client
from tests.helpers import body, record
from tests.test_flaky_flips import attempt, flaky_page  # noqa: F401 (a fixture)
from tests.test_flaky_page import shown

NODES = [f"tests/test_b.py::test_{i:02}" for i in range(12)]
P, F, N = Check.PASS, Check.FAIL, Check.NOT_RUN

# --- the rule ---------------------------------------------------------------------------

ATTEMPTS = [
    # each record's check                share  infrastructure
    ([F] * 10,                            0.8,   True),   # every node failed
    ([F] * 9 + [P],                       0.8,   True),   # 90% over 80%
    ([F] * 8 + [P] * 2,                   0.8,   False),  # exactly the share is not over it
    ([F] * 9,                             0.8,   False),  # under 10 ran: a few failing tests
    ([F] * 10 + [N] * 30,                 0.8,   True),   # of the nodes that ran
    ([F] * 6 + [P] * 4,                   0.5,   True),   # the suite's own share
    ([N] * 20,                            0.8,   False),  # nothing ran
]  # fmt: skip


@pytest.mark.parametrize(("checks", "share", "infrastructure"), ATTEMPTS)
def test_an_attempt_is_judged_by_the_junit_files_rule(checks, share, infrastructure):
    reason = rules.attempt_infrastructure(checks, share=share)
    assert (reason is rules.InfrastructureReason.FAILING_SHARE) is infrastructure
    failing = rules.failing_records(checks)
    # The very rule a JUnit file is judged by, from the same counts.
    assert reason is rules.infrastructure_reason(failing, errors_outside_tests=0, share=share)


def test_an_infrastructure_attempt_counts_for_the_verdict_and_makes_no_flip():
    broken = rules.add_attempt(None, 1, F, Lock.MATCH, infrastructure=True)
    retry = rules.add_attempt(broken, 2, P, Lock.MATCH)
    assert retry.property_check is F  # the retry does not launder it
    assert not retry.flipped and first_flip(*retry.flaky_evidence) is None
    assert rules.NodeAttempts.from_answer(retry.answer()) == retry
    # A flip between two attempts of the tests is one, at the attempt that made it.
    third = rules.add_attempt(retry, 3, F, Lock.MATCH)
    assert third.flipped and first_flip(*third.flaky_evidence) == 3
    # Nor does a broken attempt's pass make a flip of a failure elsewhere.
    passed_broken = rules.add_attempt(
        rules.add_attempt(None, 1, F, Lock.MATCH), 2, P, Lock.MATCH, infrastructure=True)
    assert not passed_broken.flipped


# --- the gate ---------------------------------------------------------------------------


def broken_then_green(suite):
    broken = attempt(suite, [record(nodeid, "fail") for nodeid in NODES])
    retry = attempt(suite, [record(nodeid) for nodeid in NODES])
    return broken, retry


def test_a_broken_runners_attempt_is_marked_and_its_retry_still_rejects(suite):
    broken, retry = broken_then_green(suite)
    assert (broken.infrastructure, broken.failing_share) == (True, 1.0)
    assert (retry.infrastructure, retry.failing_share) == (False, 0.0)
    assert (broken.verdict, retry.verdict) == ("reject", "reject")
    assert retry.reason == "property_fail"
    latest = NodeVerdict.objects.filter(batch=retry)
    assert {row.verdict for row in latest} == {"reject"}
    assert not NodeVerdict.objects.filter(flipped=True).exists()


def test_no_node_of_it_is_flaky_evidence_anywhere(suite, flaky_page, today):  # noqa: F811
    broken_then_green(suite)
    assert shown(flaky_page()) == []
    assert measure_targets(suite, today) == []
    counts = retry_counts(suite, start=today, end=today)
    assert (counts["flips"], counts["after_reject"]) == ([0], [1])


def test_a_flip_between_the_tests_own_attempts_still_counts(suite, flaky_page, today):  # noqa: F811
    broken_then_green(suite)
    third = attempt(suite, [record(NODES[0], "fail")] + [record(n) for n in NODES[1:]])
    assert not third.infrastructure
    assert shown(flaky_page()) == [NODES[0]]
    assert measure_targets(suite, today) == [NODES[0]]
    assert retry_counts(suite, start=today, end=today)["flips"] == [1]


def test_its_batch_page_says_it_is_an_infrastructure_failure(suite, client_for, viewer):
    broken, retry = broken_then_green(suite)
    client = client_for(viewer)
    page = client.get(reverse("batch", args=[suite.slug, broken.pk])).content.decode()
    assert "An infrastructure failure: not flaky evidence" in page
    assert "100% of the nodes this attempt ran failed" in page
    later = client.get(reverse("batch", args=[suite.slug, retry.pk])).content.decode()
    assert "An infrastructure failure" not in later
    assert "flipped between attempts" not in later
    patch = client.get(reverse("patch", args=[suite.slug, broken.patch])).content.decode()
    assert patch.count(">infrastructure</span>") == 1
    assert "No node flipped between these attempts." in patch


def test_the_answer_says_it(suite, board, token):
    answers = [board.verdicts(suite.slug, token, body({
        "patch": "p-2", "commit": "c9", "evidence": f"ci/run-{i}",
        "records": [record(nodeid, check) for nodeid in NODES]})).json
        for i, check in enumerate(("fail", "pass"))]
    assert [a["infrastructure"] for a in answers] == [True, False]
    assert answers[1]["verdict"] == "reject"
    assert answers[1]["records"][0]["attempts"] == {
        "runs": 2, "failed_in": [1], "passed_in": [2], "infrastructure_in": [1]}
    # The CI client says the earlier failure decides, and that it is not flaky evidence.
    (line, *_) = load_client().earlier_evidence(answers[1], "signals")
    assert line.startswith(f"{NODES[0]}: failed in attempt 1 (")
    assert "an infrastructure failure (its runner broke; not flaky evidence)" in line
    assert "passed in another (flaky evidence)" not in line
