"""Creating a quarantine from the form: defaults, prefill from a failing report row, and the
refusals of SPEC 4 shown in plain words next to the field they are about, or above the form
when they are about no one field."""

import re
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.urls import reverse

from ledger.models import AuditEvent, QuarantineEntry
from ledger.quarantine import quarantine_create
from runs.ingest import report_ingest
from tests.helpers import body, field_errors, measurement
from tests.test_bounds import add_wide
from tests.world import module_world

NODE = "tests/test_pay.py::test_refund_retry"

# wide: 40 known nodes, so that one entry is 2.5% of the test set, under the 5% cap.
build_world, wide = module_world("wide", add_wide)


def new_url(suite, **params):
    url = reverse("entry_new", args=[suite.slug])
    return f"{url}?{urlencode(params)}" if params else url


def post(client, suite, today, **overrides):
    data = {"node": NODE, "owner": "@finley", "expires": (today + timedelta(days=14)).isoformat(),
            "evidence": "ci/run-88213", "note": "", "n": "200", "fails": "5",
            "upper95": "0.0572", "seed_base": "9137"}
    data.update(overrides)
    return client.post(new_url(suite), data)


def form_alert(response) -> str:
    found = re.search(r'<div class="alert" role="alert">(.*?)</div>', response.content.decode(),
                      re.S)
    return found.group(1) if found else ""


def test_defaults_are_the_users_handle_and_the_longest_expiry(client_for, owner, wide, today):
    html = client_for(owner).get(new_url(wide)).content.decode()
    latest = (today + timedelta(days=wide.max_quarantine_days)).isoformat()
    assert 'name="owner" value="@finley"' in html
    assert f'name="expires" value="{latest}"' in html
    assert f'max="{latest}"' in html and f'min="{(today + timedelta(days=1)).isoformat()}"' in html
    for field in ("node", "owner", "expires", "evidence", "note", "n", "fails", "upper95",
                  "seed_base"):
        assert f'<label for="id_{field}">' in html


def test_prefill_from_a_report_row(client_for, owner, wide):
    evidence = "https://board.example.com/suites/acme/reports/7/#m3"
    html = client_for(owner).get(new_url(
        wide, node=NODE, n=200, fails=5, upper95=0.0537, seed_base=9137, evidence=evidence,
    )).content.decode()
    assert f'value="{NODE}"' in html
    assert 'name="n" value="200"' in html and 'name="fails" value="5"' in html
    assert 'name="upper95" value="0.0537"' in html and 'name="seed_base" value="9137"' in html
    assert f'name="evidence" value="{evidence}"' in html
    assert "Prefilled from a failing row of a report" in html


def test_create_stores_the_entry_and_its_audit_event(client_for, owner, wide, today):
    response = post(client_for(owner), wide, today, upper95="0.0537")
    entry = QuarantineEntry.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("entry", args=[wide.slug, entry.pk])
    assert (entry.node.nodeid, entry.owner, entry.n, entry.fails, entry.seed_base) == (
        NODE, "@finley", 200, 5, 9137)
    assert entry.reported_upper95 == pytest.approx(0.0537) and entry.upper95_mismatch
    event = AuditEvent.objects.get(entry=entry)
    assert (event.action, event.actor) == ("create", "@finley")


# One refusal for each field: the service's refusals (every one of them is in
# test_quarantine_services.py) land next to the field they name; "next week" is the form's own.
REFUSALS = [
    pytest.param({"evidence": ""}, "evidence", "Evidence is required", id="missing-evidence"),
    pytest.param({"owner": "finley"}, "owner", "must be a @handle", id="bare-owner"),
    pytest.param({"expires_days": 31}, "expires", "at most 30 days ahead", id="too-far"),
    pytest.param({"expires": "next week"}, "expires", "Enter a valid date", id="not-a-date"),
    pytest.param({"node": ""}, "node", "must not be empty", id="no-node"),
    pytest.param({"fails": "300"}, "fails", "between 0 and n", id="fails-over-n"),
]


@pytest.mark.parametrize(("overrides", "field", "words"), REFUSALS)
def test_each_field_refusal_is_shown_next_to_its_field(
    client_for, owner, wide, today, overrides, field, words
):
    if "expires_days" in overrides:
        overrides["expires"] = (today + timedelta(days=overrides.pop("expires_days"))).isoformat()
    response = post(client_for(owner), wide, today, **overrides)
    assert response.status_code == 200
    assert words in field_errors(response, field)
    assert re.search(rf'name="{field}"[^>]*aria-invalid="true"', response.content.decode())
    assert not QuarantineEntry.objects.exists()


def test_a_node_with_an_open_entry_is_refused(client_for, owner, wide, today):
    quarantine_create(suite=wide, nodeid=NODE, owner="@sam", expires=today + timedelta(days=5),
                      evidence="ci/run-1", actor="@sam", today=today)
    errors = field_errors(post(client_for(owner), wide, today), "node")
    assert "already has an open quarantine entry" in errors
    assert QuarantineEntry.objects.count() == 1


def test_a_share_over_the_cap_is_refused_above_the_form(client_for, owner, suite, today):
    report_ingest(suite=suite, body=body([measurement(f"t.py::t{i}") for i in range(20)]),
                  actor="ci")
    quarantine_create(suite=suite, nodeid="t.py::t0", owner="@sam", evidence="ci/run-1",
                      expires=today + timedelta(days=5), actor="@sam", today=today)
    response = post(client_for(owner), suite, today, node="t.py::t1")
    alert = form_alert(response)
    assert "would put 2 of 20 known nodes in quarantine (10.0%)" in alert
    assert "over the suite&#x27;s cap of 5.0%" in alert
    assert QuarantineEntry.objects.count() == 1


def test_refused_input_is_kept_in_the_form(client_for, owner, wide, today):
    response = post(client_for(owner), wide, today, evidence="", note="flaky under load")
    html = response.content.decode()
    assert f'value="{NODE}"' in html and "flaky under load</textarea>" in html
