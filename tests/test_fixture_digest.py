"""Issue 29, item 6 (SPEC 2.3): the fixture manifest's digest in one form on every path that
takes one. A lead may type the pin as the bare hex (the seed's spelling) or as `sha256:<hex>`
(the client's), in any case; the board stores `sha256:` and the lower-case hex, compares
digests in that form (a pin stored before in another spelling too), and refuses anything
else where it is typed, naming the field (and the row, in an upload). The rule itself:
test_rules_digests.py; the client's copy: test_ci_pin.py; the gate end to end: test_ci_gate.py.
"""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from ledger.models import AuditEvent, Suite
from ledger.settings_services import fixture_pin_set
from ledger.tokens import token_create
from runs.ingest import signals_ingest
from runs.models import NodeVerdict, VerdictBatch
from tests.helpers import body, field_errors, record

HEX = "9f2c" * 16
BARE_UPPER = HEX.upper()
GATE_SENDS = f"sha256:{HEX}"  # as `flakeboard_ci.py gate` sends it
SEED = 9137


def api(suite) -> Client:
    raw = token_create(suite=suite, scope="write", actor="@lea")[1]
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def post_verdicts(suite, records):
    return api(suite).post(f"/api/v1/suites/{suite.slug}/verdicts", data=body(records),
                           content_type="application/json")


def pin_events(suite):
    return AuditEvent.objects.filter(suite=suite, action=AuditEvent.Action.SETTINGS)


# --- the pin: settings page and service ----------------------------------------------------


@pytest.fixture
def pin_typed(client_for, suite, lead):
    """pin_typed(manifest) posts the settings page's pin form as the lead types it."""

    def post(manifest: str):
        response = client_for(lead).post(reverse("settings_fixture_pin", args=[suite.slug]),
                                         {"fixture_manifest": manifest, "fixture_seed": str(SEED)})
        suite.refresh_from_db()
        return response

    return post


@pytest.mark.parametrize("typed", [HEX, BARE_UPPER, GATE_SENDS, f"SHA256:{BARE_UPPER}",
                                   f"  {HEX}  "])
def test_the_pin_is_stored_in_the_canonical_form_whichever_spelling_is_typed(
        pin_typed, suite, typed):
    assert pin_typed(typed).status_code == 302
    assert (suite.fixture_manifest, suite.fixture_seed) == (GATE_SENDS, SEED)
    assert pin_events(suite).get().after == {"fixture_manifest": GATE_SENDS,
                                             "fixture_seed": SEED}


NOT_A_PIN = ["not-a-digest", "md5:9f2c", "sha256:", f"sha256: {HEX}", f"{HEX}g",
             # hex, but not the 64 digits of the sha256 that `flakeboard_ci.py pin` prints:
             # no fixture set's digest could ever match such a pin
             "sha256:4be1c0de", f"sha256:{HEX[:-1]}", f"{HEX}0", "0"]


@pytest.mark.parametrize("typed", NOT_A_PIN)
def test_the_settings_form_refuses_what_is_no_pin_naming_the_field(pin_typed, suite, typed):
    response = pin_typed(typed)
    assert response.status_code == 200
    assert "must be a SHA-256: 64 hex digits, with or without sha256: before them" in \
        field_errors(response, "fixture_manifest")
    assert (suite.fixture_manifest, suite.fixture_seed) == ("", None)
    assert not pin_events(suite).exists()


@pytest.mark.parametrize("typed", NOT_A_PIN)
def test_the_service_refuses_what_is_no_pin_naming_the_field(suite, typed):
    with pytest.raises(ValidationError) as refused:
        fixture_pin_set(suite=suite, actor="@lea", manifest=typed, seed=SEED)
    assert list(refused.value.message_dict) == ["fixture_manifest"]
    assert not pin_events(suite).exists()


def test_a_pin_stored_before_in_another_spelling_is_shown_and_served_canonical(
        client_for, suite, lead):
    Suite.objects.filter(pk=suite.pk).update(fixture_manifest=BARE_UPPER, fixture_seed=SEED)
    suite.refresh_from_db()
    assert suite.fixture_pin.manifest == GATE_SENDS
    page = client_for(lead).get(reverse("settings", args=[suite.slug])).content.decode()
    assert f"Pinned now: <code>{GATE_SENDS}</code>" in page
    assert f'value="{GATE_SENDS}"' in page and BARE_UPPER not in page
    served = api(suite).get(f"/api/v1/suites/{suite.slug}/ledger?view=full")
    assert served.json()["fixture_pin"] == {"manifest": GATE_SENDS, "seed": SEED}


# --- the pin: the admin's new suite --------------------------------------------------------


def new_suite_form(manifest: str) -> dict:
    return {"slug": "fresh", "name": "Fresh", "max_upper_rate": "0.02", "min_runs": "200",
            "max_quarantined_share": "0.05", "max_quarantine_days": "30",
            "fixture_manifest": manifest, "fixture_seed": str(SEED),
            "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0",
            "memberships-MIN_NUM_FORMS": "0", "memberships-MAX_NUM_FORMS": "1000"}


def test_the_admin_stores_a_new_suites_pin_canonical(client_for, staff):
    response = client_for(staff).post(reverse("admin:ledger_suite_add"),
                                      new_suite_form(BARE_UPPER))
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Suite.objects.get(slug="fresh").fixture_manifest == GATE_SENDS


@pytest.mark.parametrize("typed", ["not-a-digest", "sha256:4be1c0de"])
def test_the_admin_refuses_a_new_suites_pin_that_is_no_pin(client_for, staff, typed):
    response = client_for(staff).post(reverse("admin:ledger_suite_add"),
                                      new_suite_form(typed))
    assert response.status_code == 200
    assert "The manifest digest must be a SHA-256: 64 hex digits" in response.content.decode()
    assert response.context["adminform"].form.errors.keys() == {"fixture_manifest"}
    assert not Suite.objects.filter(slug="fresh").exists()


# --- an upload -----------------------------------------------------------------------------


def test_an_upload_refuses_a_manifest_that_is_no_digest_naming_the_row_and_field(suite):
    response = post_verdicts(suite, [record("a::one", fixture_manifest=GATE_SENDS),
                                     record("a::two", fixture_manifest="not-a-digest")])
    assert response.status_code == 422
    (problem,) = response.json()["details"]
    assert (problem["row"], problem["field"], problem["code"]) == (
        1, "fixture_manifest", "invalid_value")
    assert problem["message"].startswith("must be a digest: hex digits, with or without")
    assert "'not-a-digest'" in problem["message"]
    assert not VerdictBatch.objects.exists()


def test_an_upload_stores_each_manifest_canonical(suite):
    response = post_verdicts(suite, [record("a::one", fixture_manifest=BARE_UPPER),
                                     record("a::two", fixture_manifest=""),
                                     record("a::three")])
    assert response.status_code == 201, response.content
    stored = dict(NodeVerdict.objects.values_list("node__nodeid", "fixture_manifest"))
    assert stored == {"a::one": GATE_SENDS, "a::two": "", "a::three": None}


# --- the arbiter: the scenario -----------------------------------------------------


@pytest.mark.parametrize("pin_stored", ["typed-bare", "stored-before-bare-upper"])
def test_a_bare_hex_pin_and_the_gates_sha256_record_match(suite, pin_stored):
    """A lead pins the bare hex; the gate sends sha256:<hex>: not one node drifts."""
    if pin_stored == "typed-bare":
        fixture_pin_set(suite=suite, actor="@lea", manifest=HEX, seed=SEED)
    else:  # a pin kept from before the board took digests in one form
        Suite.objects.filter(pk=suite.pk).update(fixture_manifest=BARE_UPPER, fixture_seed=SEED)
    suite.refresh_from_db()
    records = [record("a::same", fixture_manifest=GATE_SENDS, seed=SEED),
               record("a::other", fixture_manifest=f"sha256:{HEX[:-1]}0", seed=SEED)]
    answer = post_verdicts(suite, records).json()
    assert [(r["node"], r["verdict"], r["reason"], r["fixture_lock"])
            for r in answer["records"]] == [
        ("a::same", "accept", "clean", "match"),
        ("a::other", "hold", "fixture_drifted", "drifted"),
    ]
    assert answer["fixture_pin"] == {"manifest": GATE_SENDS, "seed": SEED}


def test_the_ingest_command_path_takes_the_same_digest(suite):
    """ingest_signals (a signal file) goes through the same parse."""
    fixture_pin_set(suite=suite, actor="@lea", manifest=f"sha256:{BARE_UPPER}", seed=SEED)
    result = signals_ingest(suite=suite, actor="ci", body=json.dumps(
        [record("a::same", fixture_manifest=HEX, seed=SEED)]).encode())
    assert [(v.reason, v.effective_lock) for v in result.upload.verdicts.all()] == [
        ("clean", "match")]
