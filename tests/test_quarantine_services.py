"""SPEC 4: create, renew and clear, each rule enforced by the service."""

from datetime import timedelta

import pytest
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from ledger.models import AuditEvent, QuarantineEntry
from ledger.quarantine import quarantine_clear, quarantine_create, quarantine_renew
from runs.ingest import report_ingest
from tests.helpers import body, measurement
from tests.world import module_world

NODE = "tests/test_ingest.py::test_stream_backpressure"


def create(suite, today, **overrides):
    kwargs = {
        "suite": suite, "nodeid": NODE, "owner": "@finley",
        "expires": today + timedelta(days=14), "evidence": "ci/run-88213",
        "actor": "@finley", "today": today, "n": 200, "fails": 5,
    }
    kwargs.update(overrides)
    return quarantine_create(**kwargs)


def renew(entry, today, **overrides):
    kwargs = {"entry": entry, "expires": today + timedelta(days=20), "evidence": "ci/run-90000",
              "actor": "@finley", "today": today}
    kwargs.update(overrides)
    return quarantine_renew(**kwargs)


def codes(exc: ValidationError) -> dict[str, list[str]]:
    return {field: [e.code for e in errors] for field, errors in exc.error_dict.items()}


def add_wide_suite(suite, today):
    nodes = [measurement(f"tests/test_many.py::test_{i}") for i in range(100)]
    report_ingest(suite=suite, body=body(nodes), actor="ci")
    return suite


# wide_suite: a suite with a large test set (a hundred known nodes), so the share cap is not in the
# way.
build_world, wide_suite = module_world("wide_suite", add_wide_suite)


def test_create_stores_server_bound_and_audit_event(wide_suite, today):
    entry = create(wide_suite, today, reported_upper95=0.0537)
    assert entry.upper95 == pytest.approx(0.0572, abs=5e-5)
    assert entry.upper95_mismatch is True
    event = AuditEvent.objects.get(entry=entry)
    assert event.action == "create" and event.actor == "@finley"
    assert event.after["expires"] == entry.expires.isoformat()
    wide_suite.refresh_from_db()
    assert wide_suite.ledger_revision == 1


# Each refusal of a field: its code, and the words a person is shown (on the form, next to
# the field). The tier rule's refusals, by every path, are in test_tier_never_quarantined.py.
FIELD_REFUSALS = [
    pytest.param({"owner": ""}, "owner", "owner_invalid", "An owner is required",
                 id="no-owner"),
    pytest.param({"owner": "finley"}, "owner", "owner_invalid", "must be a @handle",
                 id="bare-owner"),
    pytest.param({"evidence": ""}, "evidence", "evidence_required", "Evidence is required",
                 id="no-evidence"),
    pytest.param({"evidence": "  "}, "evidence", "evidence_required", "Evidence is required",
                 id="blank-evidence"),
    pytest.param({"expires": None}, "expires", "expiry_required", "An expiry date is required",
                 id="no-expiry"),
    pytest.param({"expires_days": 0}, "expires", "expiry_out_of_bounds", "must be after today",
                 id="expires-today"),
    pytest.param({"expires_days": -3}, "expires", "expiry_out_of_bounds", "must be after today",
                 id="expires-past"),
    pytest.param({"expires_days": 31}, "expires", "expiry_out_of_bounds",
                 "at most 30 days ahead", id="too-far"),
    pytest.param({"nodeid": ""}, "node", "nodeid_invalid", "must not be empty", id="empty-node"),
    pytest.param({"fails": 300}, "fails", "counts_invalid", "between 0 and n",
                 id="fails-over-n"),
]


@pytest.mark.parametrize(("overrides", "field", "code", "words"), FIELD_REFUSALS)
def test_create_refusals(wide_suite, today, overrides, field, code, words):
    if "expires_days" in overrides:
        overrides["expires"] = today + timedelta(days=overrides.pop("expires_days"))
    with pytest.raises(ValidationError) as caught:
        create(wide_suite, today, **overrides)
    assert code in codes(caught.value)[field]
    assert any(words in message for message in caught.value.message_dict[field])
    assert not QuarantineEntry.objects.exists()
    assert not AuditEvent.objects.filter(entry__isnull=False).exists()


def test_expiry_at_the_maximum_is_accepted(wide_suite, today):
    entry = create(wide_suite, today, expires=today + timedelta(days=30))
    assert entry.expires == today + timedelta(days=30)


def test_one_open_entry_per_node(wide_suite, today):
    create(wide_suite, today)
    with pytest.raises(ValidationError) as caught:
        create(wide_suite, today, owner="@sam")
    assert codes(caught.value)["node"] == ["already_open"]
    assert QuarantineEntry.objects.count() == 1


def test_share_cap_refuses_the_entry_that_would_cross_it(suite, today):
    # 20 known nodes, cap 5%: one entry fits (5%), a second would be 10%.
    report_ingest(suite=suite, body=body([measurement(f"t.py::t{i}") for i in range(20)]),
                  actor="ci")
    create(suite, today, nodeid="t.py::t0")
    with pytest.raises(ValidationError) as caught:
        create(suite, today, nodeid="t.py::t1")
    assert codes(caught.value)[NON_FIELD_ERRORS] == ["cap_exceeded"]
    assert QuarantineEntry.objects.count() == 1


def test_renew_needs_new_evidence_and_counts(wide_suite, today):
    entry = create(wide_suite, today)
    with pytest.raises(ValidationError) as caught:
        renew(entry, today, evidence="ci/run-88213")
    assert codes(caught.value)["evidence"] == ["evidence_unchanged"]
    renewed = renew(entry, today, owner="@sam", note="still flaky")
    assert renewed.renewals == 1 and renewed.owner == "@sam"
    event = AuditEvent.objects.get(entry=entry, action="renew")
    assert event.before["evidence"] == "ci/run-88213"
    assert event.after["evidence"] == "ci/run-90000"
    assert event.note == "still flaky"


@pytest.mark.parametrize("days", [0, 31])
def test_renew_respects_expiry_bounds(wide_suite, today, days):
    entry = create(wide_suite, today)
    with pytest.raises(ValidationError) as caught:
        renew(entry, today, expires=today + timedelta(days=days))
    assert codes(caught.value)["expires"] == ["expiry_out_of_bounds"]
    entry.refresh_from_db()
    assert entry.renewals == 0


def test_clear_needs_a_note_and_keeps_history(wide_suite, today):
    entry = create(wide_suite, today)
    with pytest.raises(ValidationError):
        quarantine_clear(entry=entry, note=" ", actor="@finley")
    quarantine_clear(entry=entry, note="fixed the race", actor="@finley")
    entry.refresh_from_db()
    assert entry.cleared_at is not None and entry.cleared_note == "fixed the race"
    assert [e.action for e in entry.events.all()] == ["create", "clear"]
    with pytest.raises(ValidationError):
        quarantine_clear(entry=entry, note="again", actor="@finley")
    # a cleared node may be quarantined again
    assert create(wide_suite, today).pk != entry.pk


def test_audit_events_are_append_only(wide_suite, today):
    event = AuditEvent.objects.get(entry=create(wide_suite, today))
    event.note = "rewritten"
    with pytest.raises(PermissionError):
        event.save()
    with pytest.raises(PermissionError):
        event.delete()
