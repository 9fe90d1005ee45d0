"""SPEC 4: create, renew and clear, each rule enforced by the service."""

from datetime import timedelta

import pytest
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from ledger.models import AuditEvent, QuarantineEntry
from ledger.quarantine import quarantine_clear, quarantine_create, quarantine_renew
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest
from tests.helpers import body, measurement

NODE = "tests/test_ingest.py::test_stream_backpressure"


def create(suite, today, **overrides):
    kwargs = {
        "suite": suite, "nodeid": NODE, "owner": "@finley",
        "expires": today + timedelta(days=14), "evidence": "ci/run-88213",
        "actor": "@finley", "today": today, "n": 200, "fails": 5,
    }
    kwargs.update(overrides)
    return quarantine_create(**kwargs)


def codes(exc: ValidationError) -> dict[str, list[str]]:
    return {field: [e.code for e in errors] for field, errors in exc.error_dict.items()}


@pytest.fixture
def wide_suite(suite, today):
    """A suite with a large test set, so the share cap is not in the way."""
    nodes = [measurement(f"tests/test_many.py::test_{i}") for i in range(100)]
    report_ingest(suite=suite, body=body(nodes), actor="ci")
    return suite


def test_create_stores_server_bound_and_audit_event(wide_suite, today):
    entry = create(wide_suite, today, reported_upper95=0.0537)
    assert entry.upper95 == pytest.approx(0.0572, abs=5e-5)
    assert entry.upper95_mismatch is True
    event = AuditEvent.objects.get(entry=entry)
    assert event.action == "create" and event.actor == "@finley"
    assert event.after["expires"] == entry.expires.isoformat()
    wide_suite.refresh_from_db()
    assert wide_suite.ledger_revision == 1


@pytest.mark.parametrize(
    ("overrides", "field", "code"),
    [
        ({"owner": ""}, "owner", "owner_invalid"),
        ({"owner": "finley"}, "owner", "owner_invalid"),
        ({"evidence": "  "}, "evidence", "evidence_required"),
        ({"expires_days": 0}, "expires", "expiry_out_of_bounds"),
        ({"expires_days": -3}, "expires", "expiry_out_of_bounds"),
        ({"expires_days": 31}, "expires", "expiry_out_of_bounds"),
        ({"nodeid": ""}, "node", "nodeid_invalid"),
    ],
    ids=["no-owner", "bare-owner", "no-evidence", "expires-today", "expires-past", "too-far",
         "empty-node"],
)
def test_create_refusals(wide_suite, today, overrides, field, code):
    if "expires_days" in overrides:
        overrides["expires"] = today + timedelta(days=overrides.pop("expires_days"))
    with pytest.raises(ValidationError) as caught:
        create(wide_suite, today, **overrides)
    assert code in codes(caught.value)[field]
    assert not QuarantineEntry.objects.exists()
    assert not AuditEvent.objects.filter(entry__isnull=False).exists()


def test_expiry_at_the_maximum_is_accepted(wide_suite, today):
    entry = create(wide_suite, today, expires=today + timedelta(days=30))
    assert entry.expires == today + timedelta(days=30)


def test_tier_zero_node_is_refused_naming_the_rule(wide_suite, today):
    tier_rule_add(suite=wide_suite, glob="tests/test_properties.py::*", tier=0, actor="@lea")
    with pytest.raises(ValidationError) as caught:
        create(wide_suite, today, nodeid="tests/test_properties.py::test_idempotent")
    assert codes(caught.value)["node"] == ["tier_refused"]
    assert "tests/test_properties.py::*" in caught.value.message_dict["node"][0]
    assert not QuarantineEntry.objects.exists()


def test_stated_tier_one_is_refused(wide_suite, today):
    report_ingest(suite=wide_suite, body=body([measurement(NODE, tier=1)]), actor="ci")
    with pytest.raises(ValidationError) as caught:
        create(wide_suite, today)
    assert "stated" in caught.value.message_dict["node"][0]


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
        quarantine_renew(entry=entry, expires=today + timedelta(days=20), evidence="ci/run-88213",
                         actor="@finley", today=today)
    assert codes(caught.value)["evidence"] == ["evidence_unchanged"]
    renewed = quarantine_renew(entry=entry, expires=today + timedelta(days=20),
                               evidence="ci/run-90000", owner="@sam", actor="@finley",
                               today=today, note="still flaky")
    assert renewed.renewals == 1 and renewed.owner == "@sam"
    event = AuditEvent.objects.get(entry=entry, action="renew")
    assert event.before["evidence"] == "ci/run-88213"
    assert event.after["evidence"] == "ci/run-90000"
    assert event.note == "still flaky"


def test_renew_respects_expiry_bounds(wide_suite, today):
    entry = create(wide_suite, today)
    with pytest.raises(ValidationError) as caught:
        quarantine_renew(entry=entry, expires=today + timedelta(days=45), evidence="ci/run-2",
                         actor="@finley", today=today)
    assert codes(caught.value)["expires"] == ["expiry_out_of_bounds"]


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
