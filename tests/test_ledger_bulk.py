"""Bulk renew and clear (ledger.bulk_actions): each selected entry goes through its own
service call, with its own audit event; a refused entry is listed with the service's
reasons and left as it was, and the others are done. The page's side is in
test_ledger_bulk_page.py."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError

from ledger.bulk_actions import BULK_MAX, BulkAction, bulk_apply
from ledger.models import AuditEvent, QuarantineEntry
from ledger.quarantine import quarantine_clear
from ledger.tiers import tier_rule_add
from tests.helpers import quarantined
from tests.world import module_world

NODES = {
    "tests/test_pay.py::test_refund": 5,
    "tests/test_cart.py::test_total": 9,
    "tests/test_feed.py::test_order": 12,
}
REASON = "Still flaky under load; the fix is in review 812."


def add_entries(suite, today):
    return list(quarantined(suite, today, NODES).values())


# entries: three open entries, on the evidence ci/run-100, ci/run-101 and ci/run-102.
build_world, entries = module_world("entries", add_entries)


def renew(suite, today, ids, **overrides):
    kwargs = {"suite": suite, "entry_ids": ids, "action": BulkAction.RENEW, "note": REASON,
              "actor": "@finley", "today": today, "expires": today + timedelta(days=25),
              "evidence": "ci/run-900"}
    return bulk_apply(**{**kwargs, **overrides})


def clear(suite, today, ids, note="Fixed the shared clock.", **overrides):
    return bulk_apply(suite=suite, entry_ids=ids, action=BulkAction.CLEAR, note=note,
                      actor="@finley", today=today, **overrides)


def events(entry, action):
    return list(AuditEvent.objects.filter(entry=entry, action=action))


def snapshot(entry):
    entry = QuarantineEntry.objects.get(pk=entry.pk)
    return (entry.expires, entry.evidence, entry.owner, entry.renewals, entry.cleared_at,
            entry.cleared_note, entry.updated_at)


def test_every_selected_entry_is_renewed_with_its_own_event(suite, today, entries):
    outcomes = renew(suite, today, [e.pk for e in entries], owner="@lea")
    assert [(o.entry_id, o.nodeid, o.done) for o in outcomes] == [
        (e.pk, e.node.nodeid, True) for e in entries]
    for entry in entries:
        entry.refresh_from_db()
        assert (entry.expires, entry.evidence, entry.owner, entry.renewals) == (
            today + timedelta(days=25), "ci/run-900", "@lea", 1)
        [event] = events(entry, "renew")
        assert (event.actor, event.note) == ("@finley", REASON)
        assert event.before["evidence"] != event.after["evidence"] == "ci/run-900"
    suite.refresh_from_db()
    assert suite.ledger_revision == 2 * len(entries)  # created, then renewed: one bump each


def test_every_selected_entry_is_cleared_with_the_reason_as_its_note(suite, today, entries):
    outcomes = clear(suite, today, [e.pk for e in entries[:2]])
    assert [o.done for o in outcomes] == [True, True]
    for entry in entries[:2]:
        entry.refresh_from_db()
        assert entry.cleared_note == "Fixed the shared clock."
        assert [e.note for e in events(entry, "clear")] == ["Fixed the shared clock."]
    assert QuarantineEntry.objects.get(pk=entries[2].pk).cleared_at is None  # not selected


def test_a_cleared_entry_is_refused_and_the_others_are_renewed(suite, today, entries):
    quarantine_clear(entry=entries[1], note="Fixed.", actor="@finley")
    before = snapshot(entries[1])
    outcomes = renew(suite, today, [e.pk for e in entries])
    assert [o.done for o in outcomes] == [True, False, True]
    assert outcomes[1].refusals == (("This entry has already been cleared.", "already_cleared"),)
    assert outcomes[1].nodeid == entries[1].node.nodeid
    assert snapshot(entries[1]) == before and events(entries[1], "renew") == []
    assert all(len(events(e, "renew")) == 1 for e in (entries[0], entries[2]))


def test_unchanged_evidence_refuses_that_entry_alone(suite, today, entries):
    # ci/run-101 is the second entry's evidence now: a renewal needs new evidence.
    before = snapshot(entries[1])
    outcomes = renew(suite, today, [e.pk for e in entries], evidence="ci/run-101")
    assert [o.done for o in outcomes] == [True, False, True]
    assert [code for _, code in outcomes[1].refusals] == ["evidence_unchanged"]
    assert "new evidence" in outcomes[1].refusals[0][0]
    assert snapshot(entries[1]) == before and events(entries[1], "renew") == []


def test_a_tier_violation_is_not_renewed_but_can_be_cleared(suite, today, entries):
    tier_rule_add(suite=suite, glob="tests/test_cart.py::*", tier=0, actor="@lea")
    before = snapshot(entries[1])
    outcomes = renew(suite, today, [e.pk for e in entries])
    assert [o.done for o in outcomes] == [True, False, True]
    assert [code for _, code in outcomes[1].refusals] == ["tier_refused"]
    assert snapshot(entries[1]) == before
    assert clear(suite, today, [entries[1].pk])[0].done


def test_each_refusal_of_a_row_is_listed(suite, today, entries):
    outcomes = renew(suite, today, [entries[0].pk], evidence="", owner="finley",
                     expires=today + timedelta(days=400))
    assert sorted(code for _, code in outcomes[0].refusals) == [
        "evidence_required", "expiry_out_of_bounds", "owner_invalid"]
    assert snapshot(entries[0])[3] == 0


def test_ids_of_another_suite_or_of_no_entry_are_refused_untouched(
        suite, other_suite, today, entries):
    [theirs] = quarantined(other_suite, today, {"tests/test_pay.py::test_refund": 5}).values()
    before = snapshot(theirs)
    missing = max(e.pk for e in (*entries, theirs)) + 1
    outcomes = clear(suite, today, [theirs.pk, entries[0].pk, missing])
    assert [(o.entry_id, o.nodeid, o.done) for o in outcomes] == [
        (theirs.pk, None, False), (entries[0].pk, entries[0].node.nodeid, True),
        (missing, None, False)]
    assert outcomes[0].refusals == ((f"No entry #{theirs.pk} in this suite.", "not_found"),)
    assert snapshot(theirs) == before and events(theirs, "clear") == []


def test_an_id_given_twice_is_acted_on_once(suite, today, entries):
    outcomes = renew(suite, today, [entries[0].pk, entries[0].pk])
    assert [o.entry_id for o in outcomes] == [entries[0].pk]
    assert len(events(entries[0], "renew")) == 1


@pytest.mark.parametrize(("ids", "note", "code"), [
    pytest.param([], REASON, "none_selected", id="nothing-selected"),
    pytest.param(list(range(1, BULK_MAX + 2)), REASON, "too_many", id="over-the-cap"),
    pytest.param(None, "  ", "note_required", id="no-reason"),
])
def test_a_request_refused_as_a_whole_touches_nothing(suite, today, entries, ids, note, code):
    ids = [e.pk for e in entries] if ids is None else ids
    with pytest.raises(ValidationError) as refused:
        renew(suite, today, ids, note=note)
    assert [e.code for e in refused.value.error_list] == [code]
    assert AuditEvent.objects.filter(action="renew").count() == 0


def test_the_cap_is_the_largest_page(suite, today, entries):
    assert BULK_MAX == 500
    padded = [e.pk for e in entries] + [-n for n in range(1, BULK_MAX - len(entries) + 1)]
    outcomes = renew(suite, today, padded)
    assert len(outcomes) == BULK_MAX and sum(o.done for o in outcomes) == len(entries)
