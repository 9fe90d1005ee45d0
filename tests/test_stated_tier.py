"""A tier an upload states for a node (a report row's or a signal record's ``tier``) is the
client's word: stored and, where it differs from the tier the suite's tier rules give the
node, flagged ``tier_disagrees``. It changes nothing: not the node's tier, nor an entry's
state, nor the served ledger (SPEC 2.2, 2.5). Tiers are the lead's rules, and an expired
entry fails the gate whatever an upload says of its node."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.models import Node, QuarantineEntry
from ledger.quarantine import quarantine_create
from ledger.selectors import ledger_for_gate
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest, signals_ingest
from runs.models import Measurement, NodeVerdict
from tests.helpers import body, make_known, measurement, record
from tests.properties import db_property, rolled_back

EXPIRED = "tests/test_pay.py::test_refund"
LIVE = "tests/test_pay.py::test_retry"
PROPS = "tests/test_props.py::test_sum"


def entry(suite, today, nodeid, days):
    return quarantine_create(suite=suite, nodeid=nodeid, owner="@finley", evidence="ci/run-1",
                             actor="@finley", expires=today + timedelta(days=days),
                             today=today, imported=days < 0)


@pytest.fixture
def expired(suite, today):
    """A board that knows 40 steady nodes and imported an entry that expired three days
    ago, and one that is live."""
    make_known(suite)
    entry(suite, today, EXPIRED, -3)
    entry(suite, today, LIVE, 20)
    return suite


def outcome(answer) -> tuple:
    json = answer.json
    return (json["status"], json["reason"], json["exit_code"],
            answer.headers["Flakeboard-Exit-Code"])


def test_a_stated_tier_does_not_turn_an_expired_entry_into_a_pass(board, expired, token):
    row = {"nodeid": EXPIRED, "n": 200, "fails": 0}
    failing = ("FAIL", "quarantine_expired", 1, "1")
    first = board.report(expired.slug, token, body([row]), query={"commit": "c1"})
    assert outcome(first) == failing
    stated = board.report(expired.slug, token, body([{**row, "tier": 0}]),
                          query={"commit": "c2"})
    assert outcome(stated) == failing
    said = stated.json["measurements"][0]
    assert (said["reason"], said["flags"], said["entry"]["state"]) == (
        "quarantine_expired", ["tier_disagrees"], "expired")
    # Nothing stuck: the next report without a tier fails as the first did.
    after = board.report(expired.slug, token, body([row]), query={"commit": "c3"})
    assert outcome(after) == failing
    assert after.json["measurements"][0]["flags"] == []
    served = board.ledger(expired.slug, token).json
    assert sorted(served) == [EXPIRED, LIVE]
    node = Node.objects.get(nodeid=EXPIRED)
    assert (node.tier, node.stated_tier) == (2, 0)
    assert Measurement.objects.get(report__commit="c2").stated_tier == 0


def test_a_record_stating_tier_1_changes_nothing(board, expired, token):
    records = [record(EXPIRED, tier=1), record(LIVE, tier=1, status="frozen")]
    answer = board.verdicts(expired.slug, token, body(
        {"patch": "p", "commit": "c1", "records": records}))
    assert answer.status == 201
    said = {row["node"]: row for row in answer.json["records"]}
    assert said[EXPIRED]["entry"]["state"] == "expired"
    assert "tier_disagrees" in said[EXPIRED]["flags"]
    # The live entry still freezes its node: the stated tier did not void it.
    assert (said[LIVE]["verdict"], said[LIVE]["reason"], said[LIVE]["entry"]["state"]) == (
        "hold", "frozen_node", "active")
    assert "tier_disagrees" in said[LIVE]["flags"]
    assert sorted(board.ledger(expired.slug, token).json) == [EXPIRED, LIVE]
    assert list(Node.objects.filter(nodeid__in=[EXPIRED, LIVE]).values_list("tier", flat=True)) \
        == [2, 2]
    assert set(NodeVerdict.objects.values_list("stated_tier", flat=True)) == {1}
    report = board.report(expired.slug, token, body([measurement(EXPIRED)]),
                          query={"commit": "c2"})
    assert outcome(report) == ("FAIL", "quarantine_expired", 1, "1")


def test_a_stated_tier_the_rules_agree_with_is_not_flagged(expired):
    tier_rule_add(suite=expired, glob="tests/test_props.py::*", tier=0, actor="@lea")
    rows = [measurement(PROPS, tier=0), measurement("tests/test_props.py::test_max", tier=2),
            measurement("tests/test_io.py::test_a", tier=2),
            measurement("tests/test_io.py::test_b", tier=1),
            measurement("tests/test_io.py::test_c")]
    outcome = report_ingest(suite=expired, body=body(rows), actor="ci")
    said = outcome.rows
    assert [row["flags"] for row in said] == [[], ["tier_disagrees"], [], ["tier_disagrees"], []]
    # Judged by the rules' tier, and stored with the flag.
    assert Node.objects.get(nodeid="tests/test_io.py::test_b").tier == 2
    assert Node.objects.get(nodeid="tests/test_props.py::test_max").tier == 0
    stored = outcome.upload.measurements.order_by("position").values_list("stated_tier", "flags")
    assert list(stored) == [(0, []), (2, ["tier_disagrees"]), (2, []), (1, ["tier_disagrees"]),
                            (None, [])]


@pytest.fixture
def ruled(expired, today):
    """The expired and the live entry, and an entry a tier rule made a violation since."""
    entry(expired, today, PROPS, 10)
    tier_rule_add(suite=expired, glob="tests/test_props.py::*", tier=1, actor="@lea")
    return expired


UPLOAD = st.tuples(
    st.sampled_from(["report", "signals"]),
    st.lists(st.tuples(st.sampled_from([EXPIRED, LIVE, PROPS]),
                       st.sampled_from([None, 0, 1, 2]),  # the stated tier
                       st.integers(0, 10)),  # failures in 200 runs
             min_size=1, max_size=3, unique_by=lambda row: row[0]),
)


@given(uploads=st.lists(UPLOAD, min_size=1, max_size=4))
@db_property(25)
def test_no_stated_tier_passes_an_expired_entry_or_moves_the_ledger(ruled, uploads):
    served = ledger_for_gate(ruled)
    assert sorted(served) == [EXPIRED, LIVE]
    tiers = dict(Node.objects.filter(suite=ruled).values_list("nodeid", "tier"))
    states = dict(QuarantineEntry.objects.values_list("pk", "expires"))
    with rolled_back():
        for at, (kind, rows) in enumerate(uploads):
            if kind == "report":
                sent = [measurement(node, fails=fails, **({} if tier is None else {"tier": tier}))
                        for node, tier, fails in rows]
                report = report_ingest(suite=ruled, body=body(sent), actor="ci",
                                       query={"commit": f"c{at}"}).upload
                if any(node == EXPIRED for node, _, _ in rows):
                    assert (report.status, report.exit_code) == ("FAIL", 1)
            else:
                sent = [record(node, prop="fail" if fails else "pass",
                               **({} if tier is None else {"tier": tier}))
                        for node, tier, fails in rows]
                signals_ingest(suite=ruled, body=body(sent), actor="ci",
                               query={"commit": f"c{at}", "patch": "p"})
            assert ledger_for_gate(ruled) == served
            assert dict(Node.objects.filter(suite=ruled, nodeid__in=tiers)
                        .values_list("nodeid", "tier")) == tiers
            assert dict(QuarantineEntry.objects.values_list("pk", "expires")) == states
        last = report_ingest(suite=ruled, body=body([measurement(EXPIRED)]), actor="ci",
                             query={"commit": "after"}).upload
        assert (last.reason, last.exit_code) == ("quarantine_expired", 1)
