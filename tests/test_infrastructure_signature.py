"""A broken runner that says so in one voice (SPEC 2.4a, issue 55 point 3): a gate attempt
or a JUnit file whose every failure, at least ONE_SIGNATURE_MIN_FAILURES of them, carries
one and the same failure signature ("OSError: [Errno <n>] No space left on device") is an
infrastructure failure, however small its failing share. The client's gate sends each
failed record's signature, signed by the board's own rule (the client's build takes it as
it is). Such an attempt's failures count for the verdict, and are never flaky
evidence."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils.html import escape
from hypothesis import assume, given
from hypothesis import strategies as st

from board.targets import measure_targets
from flakeboard import rules
from flakeboard.rules import InfrastructureReason as Why
from flakeboard.rules import PropertyCheck as Check
from flakeboard.rules.signatures import SIGNATURE_MAX_LENGTH, signature
from junit.answers import summary as junit_summary
from runs.models import NodeVerdict, VerdictBatch
from tests.ci_client_view import load_client
from tests.helpers import body, record
from tests.measure_projects import make_project
from tests.properties import PROPERTY
from tests.test_flaky_flips import attempt, flaky_page  # noqa: F401 (a fixture)
from tests.test_flaky_page import shown
from tests.test_junit_detect import case, upload

client = load_client()
DISK = "OSError: [Errno 28] No space left on device"
DISK_SIGNED = "OSError: [Errno <n>] No space left on device"
DB = "psycopg.OperationalError: connection to server at 127.0.0.1, port 5432 failed"
NODES = [f"tests/test_c.py::test_{i:03}" for i in range(200)]

# --- the rule ---------------------------------------------------------------------------

SIGNATURES = [
    # the failing tests' signatures           their one signature
    ([DISK_SIGNED] * 3,                       DISK_SIGNED),  # the floor
    ([DISK_SIGNED] * 2,                       None),         # two alike may be one bug
    ([DISK_SIGNED] * 5 + ["KeyError: 'x'"],   None),         # not every failure
    ([DISK_SIGNED] * 4 + [""],                None),         # one without a signature
    (["", "", ""],                            None),         # none has one
    (["assert <n> == <n>"] * 5,               None),         # a test's own judgement
    (["AssertionError: boom"] * 5,            None),
    (["unittest.case.AssertionError"] * 4,    None),
    (["ConnectionRefusedError: [Errno <n>]"] * 3, "ConnectionRefusedError: [Errno <n>]"),
    ([],                                      None),
]  # fmt: skip


@pytest.mark.parametrize(("signatures", "one"), SIGNATURES)
def test_every_failure_with_one_signature(signatures, one):
    assert rules.one_signature(signatures) == one
    checks = [Check.FAIL] * len(signatures) + [Check.PASS] * 200
    reason = rules.attempt_infrastructure(checks, share=0.8, signatures=signatures)
    assert reason is (Why.ONE_SIGNATURE if one else None)
    # The same rule judges a JUnit file, from the same counts.
    failing = rules.FailingTests(len(checks), len(signatures))
    assert rules.infrastructure_reason(failing, errors_outside_tests=0, share=0.8,
                                       signatures=signatures) is reason


def test_the_other_clauses_are_said_first():
    failing, alike = rules.FailingTests(10, 10), [DISK_SIGNED] * 10
    assert rules.infrastructure_reason(failing, errors_outside_tests=0, share=0.8,
                                       signatures=alike) is Why.FAILING_SHARE
    assert rules.infrastructure_reason(failing, errors_outside_tests=1, share=0.8,
                                       signatures=alike) is Why.ERROR_OUTSIDE_TESTS


runner_words = st.text(st.characters(codec="ascii", categories=("L", "N", "P", "Zs")),
                       min_size=1, max_size=40).filter(
    lambda text: text.strip() and not rules.infrastructure.ASSERTION.match(text))


@PROPERTY
@given(runner_words, st.integers(0, 40), st.lists(runner_words, min_size=1, max_size=5),
       st.randoms())
def test_one_signature_holds_exactly_when_every_failure_shares_it(text, more, others, rng):
    expected = text if more >= rules.ONE_SIGNATURE_MIN_FAILURES else None
    assert rules.one_signature([text] * more) == expected
    others = [other for other in others if other != text]
    assume(others)
    mixed = [text] * (more + 1) + others
    rng.shuffle(mixed)  # whatever the order, one failure apart is enough
    assert rules.one_signature(mixed) is None


# --- the client's gate -----------------------------------------------------------------


# --- the client, as its build assembles the rule ------------------------------------------

MESSAGES = [DISK, DB, "", "  spaced\tout  ", "timeout after 30.5s at 2026-12-06T14:20:01Z",
            "tmp /tmp/pytest-of-ci/pytest-9/x.db locked", "object at 0x7f3a9c0d1e20",
            "id 3f2a9c0d1e2b4a5f9e8d7c6b5a4f3e2d missing", "x" * 400,
            "uuid 123e4567-e89b-12d3-a456-426614174000", r"C:\Users\ci\AppData\Local\Temp\x"]


@pytest.mark.parametrize("message", MESSAGES)
def test_the_clients_copy_is_held_equal_to_the_boards(message):
    """The built client signs as the board: its build takes the rule's module as it is,
    and the module must work where the build puts it."""
    assert client.signature(message) == signature(message)
    assert client.SIGNATURE_MAX_LENGTH == SIGNATURE_MAX_LENGTH


@PROPERTY
@given(st.text(max_size=300))
def test_the_clients_copy_signs_any_message_as_the_board(message):
    assert client.signature(message) == signature(message)


def test_the_gate_sends_each_failed_records_signature():
    run = {"outcomes": [["a", "fail"], ["b", "pass"], ["c", "fail"]], "collection_errors": [],
           "messages": {"a": DISK, "c": ""}}
    records = client.signal_records(run, None, "match", None, {})
    assert [r.get("failure_signature") for r in records] == [DISK_SIGNED, None, None]


# --- the gate ---------------------------------------------------------------------------


def disk_full_then_green(suite, message=DISK):
    """5 of 200 nodes failed, each with ``message``; then a green retry."""
    broken = attempt(suite, [record(n, "fail", failure_signature=message) for n in NODES[:5]]
                     + [record(n) for n in NODES[5:]])
    return broken, attempt(suite, [record(n) for n in NODES])


def test_a_full_disk_is_an_infrastructure_failure_never_flaky_evidence(
        suite, flaky_page, today, client_for, viewer):  # noqa: F811
    broken, retry = disk_full_then_green(suite)
    assert (broken.infrastructure, broken.infrastructure_signature) == (True, DISK_SIGNED)
    assert broken.failing_share == 5 / 200  # far under the share
    stored = NodeVerdict.objects.filter(batch=broken, failure_signature=DISK_SIGNED)
    assert stored.count() == 5
    # Its failures still count: the retry does not launder them.
    assert (broken.verdict, retry.verdict, retry.reason) == ("reject", "reject", "property_fail")
    assert not retry.infrastructure
    assert not NodeVerdict.objects.filter(flipped=True).exists()
    assert shown(flaky_page()) == []
    assert measure_targets(suite, today) == []
    page = client_for(viewer).get(reverse("batch", args=[suite.slug, broken.pk])).content
    said = f"Every failure of this attempt carried one signature, \u201c{DISK_SIGNED}\u201d"
    assert escape(said) in page.decode()


def test_failures_of_several_signatures_are_the_tests_and_flip(suite, flaky_page):  # noqa: F811
    failed = [record(n, "fail", failure_signature=f"KeyError: '{key}'")
              for key, n in zip("abcde", NODES[:5], strict=True)]
    broken = attempt(suite, failed + [record(n) for n in NODES[5:]])
    attempt(suite, [record(n) for n in NODES])
    assert not broken.infrastructure and broken.infrastructure_signature == ""
    assert sorted(shown(flaky_page())) == NODES[:5]


def test_a_raw_message_is_signed_and_a_signature_goes_with_a_failure_only(suite, board, token):
    sent = [record(n, "fail", failure_signature=DISK) for n in NODES[:3]]
    answer = board.verdicts(suite.slug, token, body({"patch": "p", "records": sent})).json
    assert answer["infrastructure_signature"] == DISK_SIGNED
    refused = board.verdicts(suite.slug, token, body(
        [record(NODES[0], "pass", failure_signature=DISK)]))
    assert refused.status == 422
    details = refused.json["details"]
    assert [(d["row"], d["field"]) for d in details] == [(0, "failure_signature")]
    assert "fail only" in details[0]["message"]


# --- a JUnit file -----------------------------------------------------------------------


def test_a_junit_file_failing_in_one_voice_is_left_out_of_detection(suite):
    cases = [case(f"t::test_{i}", "failed" if i < 5 else "passed", DISK) for i in range(200)]
    file = upload(suite, *cases)
    assert (file.infrastructure_reason, file.newly_flaky) == ("one_signature", [])
    assert "every test that never passed failed with one and the same message" in \
        junit_summary(file)
    several = upload(suite, *[case(f"t::test_{i}", "failed" if i < 5 else "passed",
                                   f"KeyError: '{'abcdef'[min(i, 5)]}'") for i in range(200)],
                     commit="c2")
    assert several.infrastructure_reason == ""


# --- the client's gate, end to end --------------------------------------------------------

FULL_DISK = """
import pytest


@pytest.mark.parametrize("i", range(12))
def test_writes(i):
    if i < 3:
        raise OSError(28, "No space left on device")
"""


@pytest.mark.slow  # a real client process and its pytest run
def test_the_clients_gate_sends_the_signatures_of_a_full_disk(run, tmp_path, suite):
    make_project(tmp_path, {"test_disk.py": FULL_DISK})
    done = run("gate", "--all", "--upload", "--patch", "p-9", "--commit", "c9",
               "-p", "no:cacheprovider", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    assert done.returncode == 1, done.stderr
    batch = VerdictBatch.objects.get()
    assert (batch.infrastructure, batch.infrastructure_signature) == (True, DISK_SIGNED)
    stored = dict(batch.verdicts.values_list("node__nodeid", "failure_signature"))
    assert sorted(node for node, text in stored.items() if text) == [
        f"test_disk.py::test_writes[{i}]" for i in range(3)]
