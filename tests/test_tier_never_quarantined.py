"""A tier-0 or tier-1 node never gets a quarantine entry, by any path: the form, the API,
the admin, the import command and the service itself. And a rule added afterwards turns
an existing entry into a tier violation that leaves the served ledger and fails the gate,
and that can be cleared but not renewed. Only the lead's rules make a node tier 0 or 1: a
tier an upload states changes nothing (tests/test_stated_tier.py).
"""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from flakeboard import rules
from flakeboard.api import api
from ledger.models import QuarantineEntry
from ledger.quarantine import quarantine_clear, quarantine_create, quarantine_renew
from ledger.selectors import ledger_for_gate
from ledger.tiers import tier_rule_add
from ledger.tokens import token_create
from runs.ingest import report_ingest
from tests.helpers import body, field_errors, measurement
from tests.properties import db_property, rolled_back

PROPERTY = "tests/test_properties.py::test_roundtrip"
PINNED = "tests/test_pinned.py::test_golden_file"
FLAKY = "tests/test_flaky.py::test_once"

# How a node comes to be tier 0 or 1: a lead's rule, and nothing else.
HOW = ["rule"]


@pytest.fixture
def sized(suite):
    """Forty known tier-2 nodes, so that the share cap never stands in the way."""
    rows = [measurement(f"tests/test_{i}.py::test_ok") for i in range(40)]
    report_ingest(suite=suite, body=body(rows), actor="ci")
    return suite


def make_tier(suite, nodeid: str, tier: int, how: str) -> None:
    assert how == "rule"
    tier_rule_add(suite=suite, glob=nodeid.split("::")[0] + "::*", tier=tier, actor="@lea")


def form_data(nodeid: str, today) -> dict:
    return {"node": nodeid, "owner": "@finley", "expires": (today + timedelta(days=7)).isoformat(),
            "evidence": "ci/run-42", "n": "200", "fails": "3"}


# Why the service says a node is not tier 2, by how it came to be tier 0 or 1.
WHY = {"rule": "the tier rule “tests/test_properties.py::*” makes it tier {tier}"}
CASES = [(tier, how) for tier in (0, 1) for how in HOW]
IDS = [f"tier{tier}-{how}" for tier, how in CASES]


@pytest.mark.parametrize(("tier", "how"), CASES, ids=IDS)
def test_the_service_refuses(sized, today, tier, how):
    make_tier(sized, PROPERTY, tier, how)
    with pytest.raises(ValidationError) as refused:
        quarantine_create(suite=sized, nodeid=PROPERTY, owner="@finley",
                          expires=today + timedelta(days=7), evidence="ci/run-42",
                          actor="@finley", today=today)
    assert [e.code for e in refused.value.error_dict["node"]] == ["tier_refused"]
    assert refused.value.message_dict["node"] == [
        f"{PROPERTY} cannot be quarantined: {WHY[how].format(tier=tier)}, and only tier-2 "
        "(repeat-budget) nodes may be quarantined."
    ]
    assert not QuarantineEntry.objects.exists()


@pytest.mark.parametrize(("tier", "how"), CASES, ids=IDS)
def test_the_form_refuses_next_to_the_node(sized, client_for, owner, today, tier, how):
    make_tier(sized, PROPERTY, tier, how)
    response = client_for(owner).post(reverse("entry_new", args=[sized.slug]),
                                      form_data(PROPERTY, today))
    assert response.status_code == 200
    assert "cannot be quarantined" in field_errors(response, "node")
    assert not QuarantineEntry.objects.exists()


@pytest.mark.parametrize(("tier", "how"), CASES, ids=IDS)
def test_the_admin_refuses(sized, client_for, staff, today, tier, how):
    make_tier(sized, PROPERTY, tier, how)
    data = {**form_data(PROPERTY, today), "nodeid": PROPERTY, "suite": str(sized.pk),
            "note": ""}
    response = client_for(staff).post(reverse("admin:ledger_quarantineentry_add"), data)
    assert response.status_code == 200
    assert "cannot be quarantined" in response.content.decode()
    assert not QuarantineEntry.objects.exists()


@pytest.mark.parametrize(("tier", "how"), CASES, ids=IDS)
def test_the_import_command_refuses(sized, tmp_path, today, tier, how):
    make_tier(sized, PROPERTY, tier, how)
    path = tmp_path / "flake_ledger.json"
    path.write_text(json.dumps({PROPERTY: {
        "class": "flake", "n": 200, "fails": 3, "owner": "@finley",
        "expires": (today + timedelta(days=7)).isoformat(), "evidence": "ci/run-42",
    }}))
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_ledger", sized.slug, str(path), stdout=StringIO(), stderr=err)
    assert f"Refused {PROPERTY}: node: " in err.getvalue()
    assert not QuarantineEntry.objects.exists()


def test_the_api_has_no_route_that_creates_an_entry():
    """The API writes uploads only (the gate's, and JUnit files, which never touch the
    ledger), the suite's CODEOWNERS (owners, never an entry) and its impact map (which
    tests execute which files); quarantines are made by people, on the pages. The tiers,
    JUnit order, failures, diagnoses and impact lookups are POSTs for their long bodies only,
    and store nothing (tests/test_access_api.py checks)."""
    document = api.get_openapi_schema(path_prefix="/api/v1/")
    lookups = {"/api/v1/suites/{suite}/tiers", "/api/v1/suites/{suite}/junit/order",
               "/api/v1/suites/{suite}/failures", "/api/v1/suites/{suite}/impact/nodes",
               "/api/v1/suites/{suite}/diagnoses"}
    writes = sorted(
        path for path, operations in document["paths"].items()
        for method in operations if method in ("post", "put", "patch", "delete")
        and path not in lookups
    )
    assert writes == ["/api/v1/suites/{suite}/codeowners", "/api/v1/suites/{suite}/impact",
                      "/api/v1/suites/{suite}/junit", "/api/v1/suites/{suite}/reports",
                      "/api/v1/suites/{suite}/verdicts"]


@given(
    stem=st.sampled_from(["tests/test_properties.py", "tests/test_pinned.py", "tests/test_io.py"]),
    name=st.text(alphabet="abcxyz_", min_size=1, max_size=12),
    rule_tier=st.sampled_from([None, 0, 1, 2]),
    stated=st.sampled_from([None, 0, 1, 2]),
)
@db_property(40)
def test_an_entry_exists_only_for_a_tier_two_node(sized, today, stem, name, rule_tier, stated):
    nodeid = f"{stem}::test_{name}"
    with rolled_back():
        if rule_tier is not None:
            tier_rule_add(suite=sized, glob=f"{stem}::*", tier=rule_tier, actor="@lea")
        if stated is not None:
            report_ingest(suite=sized, body=body([measurement(nodeid, tier=stated)]),
                          actor="ci")
        # A stated tier is the client's word: the rule alone decides.
        tier = min(t for t in (rule_tier, 2) if t is not None)
        try:
            quarantine_create(suite=sized, nodeid=nodeid, owner="@finley",
                              expires=today + timedelta(days=7), evidence="ci/run-42",
                              actor="@finley", today=today)
        except ValidationError as exc:
            assert tier < 2 and "tier_refused" in [e.code for e in exc.error_dict["node"]]
        else:
            assert tier == 2
        assert nodeid not in ledger_for_gate(sized) or tier == 2


# --- a rule added later ---------------------------------------------------------------


@pytest.fixture
def quarantined(sized, today):
    return quarantine_create(suite=sized, nodeid=FLAKY, owner="@finley",
                             expires=today + timedelta(days=20), evidence="ci/run-7",
                             actor="@finley", today=today)


@pytest.mark.parametrize(("tier", "how"), CASES, ids=IDS)
def test_a_later_tier_turns_the_entry_into_a_violation(sized, quarantined, today, tier, how):
    raw = token_create(suite=sized, scope="write", actor="@lea")[1]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    ledger_url = f"/api/v1/suites/{sized.slug}/ledger"
    assert FLAKY in client.get(ledger_url).json()

    make_tier(sized, FLAKY, tier, how)

    quarantined.refresh_from_db()
    assert quarantined.state(today) is rules.EntryState.TIER_VIOLATION
    assert FLAKY not in ledger_for_gate(sized)
    assert FLAKY not in client.get(ledger_url).json()
    full = client.get(ledger_url, {"view": "full"}).json()
    assert [v["node"] for v in full["violations"]] == [FLAKY]
    assert FLAKY not in [e["node"] for e in full["entries"]]
    # Its measurement now fails the gate as a tier violation, where it was quarantined.
    answer = client.post(f"/api/v1/suites/{sized.slug}/reports?dry_run=1",
                         body([measurement(FLAKY, fails=9)]), content_type="application/json")
    gated = answer.json()["measurements"][0]
    assert (gated["status"], gated["reason"]) == ("FAIL", "tier_violation")
    assert answer.json()["exit_code"] == 1


@pytest.mark.parametrize(("tier", "how"), CASES, ids=IDS)
def test_a_violation_cannot_be_renewed_but_can_be_cleared(sized, quarantined, today, tier,
                                                          how):
    make_tier(sized, FLAKY, tier, how)
    with pytest.raises(ValidationError) as refused:
        quarantine_renew(entry=quarantined, expires=today + timedelta(days=25),
                         evidence="ci/run-8", actor="@finley", today=today)
    assert [e.code for e in refused.value.error_dict["node"]] == ["tier_refused"]
    quarantine_clear(entry=quarantined, note="the node is tier 0 now", actor="@finley")
    quarantined.refresh_from_db()
    assert (quarantined.renewals, quarantined.state(today)) == (0, rules.EntryState.CLEARED)


def test_a_violation_is_shown_red_on_the_ledger_page(sized, quarantined, client_for, lead):
    tier_rule_add(suite=sized, glob="tests/test_flaky.py::*", tier=0, actor="@lea")
    page = client_for(lead).get(reverse("ledger", args=[sized.slug]), {"state": "tier_violation"})
    assert page.status_code == 200
    assert FLAKY in page.content.decode()
    assert [row.state for row in page.context["rows"]] == [rules.EntryState.TIER_VIOLATION]
