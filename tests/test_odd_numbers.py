"""Odd numbers in every number the board reads: digits of other scripts (a superscript
two, an Arabic-Indic three, a circled one, a fullwidth one, a double-struck zero), NaN, the
infinities, 1e999, minus zero and integers past 64 bits, in each numeric query parameter
of the pages and the API, each numeric field of the forms (the admin's included), each
numeric field of an upload, and each id in a URL. Each is taken as the number it writes
(and then within its bounds) or refused with a 4xx or a form error, never a server error.

Each test tries a quick few of the odd numbers, and the rest in its slow twin.
"""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse

from flakeboard import rules
from ledger.models import Node, QuarantineEntry, Suite, TierRule
from runs.models import Report

# Every lane sends three kinds (a digit of another script, NaN, an integer past 64 bits);
# the slow twin of each case sends the rest.
QUICK = {
    "superscript two": "\N{SUPERSCRIPT TWO}", "nan": "NaN", "30 nines": "9" * 30,
}
REST = {
    "fullwidth one": "\N{FULLWIDTH DIGIT ONE}", "1e999": "1e999", "minus zero": "-0",
    "arabic-indic three": "\N{ARABIC-INDIC DIGIT THREE}",
    "circled one": "\N{CIRCLED DIGIT ONE}",
    "double-struck zero": "\N{MATHEMATICAL DOUBLE-STRUCK DIGIT ZERO}",
    "mixed scripts": "1\N{ARABIC-INDIC DIGIT THREE}",
    "inf": "inf", "minus infinity": "-Infinity", "minus zero float": "-0.0",
    "2**63": str(2**63), "minus 30 nines": "-" + "9" * 30, "5000 digits": "9" * 5000,
}
ODD = {**QUICK, **REST}
odd_numbers = pytest.mark.parametrize("odd", [
    pytest.param(QUICK, id="quick"), pytest.param(REST, id="rest", marks=pytest.mark.slow),
])
# As JSON numbers: each a token the parser takes (NaN and the infinities as the budget
# script's json.dumps writes them), or a string of other digits.
JSON_ODD = ["NaN", "Infinity", "-Infinity", "1e999", "-0", "-0.0", "1" + "0" * 30,
            str(2**63), str(-(2**63) - 1), "2.5", '"\N{SUPERSCRIPT TWO}"',
            '"\N{FULLWIDTH DIGIT ONE}"', '"NaN"']


def unexpected(statuses: dict, allowed: set[int]) -> dict:
    return {asked: status for asked, status in statuses.items() if status not in allowed}


def signed_in(client_for, user) -> Client:
    client = client_for(user)
    client.raise_request_exception = False
    return client


@odd_numbers
def test_the_list_pages_take_any_page_number(world, client_for, odd):
    client = signed_in(client_for, world.users["viewer"])
    slug = world.suite.slug
    urls = [reverse("reports", args=[slug]), reverse("verdicts", args=[slug]),
            reverse("ledger", args=[slug]), reverse("report", args=[slug, world.report.pk]),
            reverse("batch", args=[slug, world.batch.pk])]
    statuses = {(url, name): client.get(url, {"page": value}).status_code
                for url in urls for name, value in odd.items()}
    assert unexpected(statuses, {200}) == {}


@odd_numbers
def test_the_query_numbers_of_the_pages(world, client_for, odd):
    """The quarantine form's prefill, the runs-needed helper, the tier rule preview and the
    trends page's range: shown back or refused, never a server error."""
    slug = world.suite.slug
    owner = signed_in(client_for, world.users["owner"])
    statuses = {}
    for name, value in odd.items():
        for field in ("n", "fails", "upper95", "seed_base"):
            response = owner.get(reverse("entry_new", args=[slug]), {"node": "t.py::t",
                                                                     field: value})
            statuses[("prefill", field, name)] = response.status_code
    lead = signed_in(client_for, world.users["lead"])
    for name, value in odd.items():
        for query in ({"max_upper_rate": value}, {"min_runs": value},
                      {"max_upper_rate": value, "min_runs": value}):
            response = lead.get(reverse("settings_runs_needed", args=[slug]), query,
                                HTTP_HX_REQUEST="true")
            statuses[("runs needed", *query, name)] = response.status_code
        response = lead.get(reverse("settings_tier_rule_preview", args=[slug]),
                            {"glob": "tests/*", "tier": value})
        statuses[("tier preview", name)] = response.status_code
    assert unexpected(statuses, {200}) == {}
    ranges = {name: lead.get(reverse("trends", args=[slug]), {"range": value}).status_code
              for name, value in odd.items()}
    assert unexpected(ranges, {400}) == {}


@pytest.fixture
def roomy(world):
    """The world's suite with room under the share cap for every entry a test opens."""
    Suite.objects.filter(pk=world.suite.pk).update(max_quarantined_share=1.0)
    return world


def _entries_are_sane() -> None:
    for entry in QuarantineEntry.objects.all():
        assert 0 <= entry.fails <= entry.n <= rules.COUNT_MAX, entry.pk
        assert math.isfinite(entry.upper95) and 0 <= entry.upper95 <= 1, entry.pk
        if entry.reported_upper95 is not None:
            assert math.isfinite(entry.reported_upper95), entry.pk
        if entry.seed_base is not None:
            assert rules.SEED_MIN <= entry.seed_base <= rules.SEED_MAX, entry.pk


@odd_numbers
def test_the_numbers_of_the_quarantine_form(roomy, client_for, today, odd):
    client = signed_in(client_for, roomy.users["owner"])
    url = reverse("entry_new", args=[roomy.suite.slug])
    statuses = {}
    for field in ("n", "fails", "upper95", "seed_base"):
        for index, (name, value) in enumerate(odd.items()):
            data = {"node": f"tests/test_odd.py::test_{field}[{index}]", "owner": "@finley",
                    "expires": (today + timedelta(days=10)).isoformat(),
                    "evidence": "ci/run-1", "n": "200", "fails": "5", field: value}
            statuses[(field, name)] = client.post(url, data).status_code
    assert unexpected(statuses, {200, 302}) == {}
    _entries_are_sane()
    # A fullwidth one is the number one: taken where one is a fine value.
    if "fullwidth one" in odd:
        assert statuses[("fails", "fullwidth one")] == 302
        index = list(odd).index("fullwidth one")
        entry = QuarantineEntry.objects.get(node__nodeid=f"tests/test_odd.py::test_fails[{index}]")
        assert entry.fails == 1


@odd_numbers
def test_the_numbers_of_the_policy_form(world, client_for, odd):
    client = signed_in(client_for, world.users["lead"])
    url = reverse("settings_policy", args=[world.suite.slug])
    valid = {"max_upper_rate": "5", "min_runs": "100", "max_quarantined_share": "5",
             "max_quarantine_days": "30"}  # the budget and the cap in percent
    statuses = {}
    for field in valid:
        for name, value in odd.items():
            statuses[(field, name)] = client.post(url, {**valid, field: value}).status_code
    assert unexpected(statuses, {200, 302}) == {}
    suite = Suite.objects.get(pk=world.suite.pk)
    for field in valid:
        value = getattr(suite, field)
        assert math.isfinite(value), field
        Suite._meta.get_field(field).clean(value, suite)  # still within the field's bounds


@odd_numbers
def test_the_fixture_seed_and_the_tier_rule_numbers(world, client_for, odd):
    client = signed_in(client_for, world.users["lead"])
    slug = world.suite.slug
    statuses = {}
    for name, value in odd.items():
        response = client.post(reverse("settings_fixture_pin", args=[slug]),
                               {"fixture_manifest": "sha256:" + "abc0" * 16, "fixture_seed": value})
        statuses[("seed", name)] = response.status_code
        response = client.post(reverse("settings_tier_rule_add", args=[slug]),
                               {"glob": f"tests/test_odd_{len(statuses)}.py::*", "tier": value})
        statuses[("tier", name)] = response.status_code
        # The entry the world quarantined would become a violation: the lead confirms.
        response = client.post(reverse("settings_tier_rule_add", args=[slug]),
                               {"glob": world.node, "tier": "0", "confirm": value})
        statuses[("confirm", name)] = response.status_code
    assert unexpected(statuses, {200, 302}) == {}
    suite = Suite.objects.get(pk=world.suite.pk)
    if suite.fixture_seed is not None:
        assert rules.SEED_MIN <= suite.fixture_seed <= rules.SEED_MAX
    assert set(TierRule.objects.values_list("tier", flat=True)) <= set(rules.Tier.ALL)
    assert not TierRule.objects.filter(glob=world.node).exists(), "confirmed by no entry id"


@odd_numbers
def test_the_numbers_of_the_admin(roomy, client_for, today, odd):
    """The admin's quarantine form and the filters and pages of its change lists."""
    client = signed_in(client_for, roomy.users["staff"])
    add = reverse("admin:ledger_quarantineentry_add")
    statuses = {}
    past = {"one past the count bound": str(rules.COUNT_MAX + 1)}
    for field in ("n", "fails", "seed_base"):
        for index, (name, value) in enumerate({**odd, **past}.items()):
            data = {"suite": str(roomy.suite.pk), "nodeid": f"tests/test_admin.py::t{index}",
                    "owner": "@finley", "evidence": "ci/run-1", "note": "",
                    "expires": (today + timedelta(days=10)).isoformat(),
                    "n": "200", "fails": "5", "seed_base": "", field: value}
            statuses[("add", field, name)] = client.post(add, data).status_code
    # Every change list reads p and o, and filters on a suite id or a tier, the same way.
    lists = {
        reverse("admin:ledger_node_changelist"): ("p", "o", "tier__exact", "suite__id__exact"),
        reverse("admin:ledger_quarantineentry_changelist"): ("suite__id__exact",),
    }
    for url, parameters in lists.items():
        for parameter in parameters:
            for name, value in odd.items():
                statuses[(url, parameter, name)] = client.get(url, {parameter: value}).status_code
    assert unexpected(statuses, {200, 302}) == {}
    _entries_are_sane()


def test_ids_in_urls_past_any_column(world, client_for):
    """A URL's id is digits only, but not every run of digits fits an id column."""
    slug = world.suite.slug
    viewer = signed_in(client_for, world.users["viewer"])
    lead = signed_in(client_for, world.users["lead"])
    statuses = {}
    for huge in (2**31, 2**63, 10**30, int("9" * 4000)):
        for name in ("report", "batch", "entry", "entry_renew", "entry_clear"):
            client = lead if name.startswith("entry_") else viewer
            statuses[(name, len(str(huge)))] = client.get(
                reverse(name, args=[slug, huge])).status_code
        for name in ("settings_tier_rule_remove", "settings_member_remove",
                     "settings_token_revoke"):
            statuses[(name, len(str(huge)))] = lead.post(
                reverse(name, args=[slug, huge])).status_code
        statuses[("admin", len(str(huge)))] = signed_in(client_for, world.users["staff"]).get(
            reverse("admin:ledger_quarantineentry_change", args=[huge])).status_code
    assert unexpected(statuses, {404, 302}) == {}


@odd_numbers
def test_the_numbers_of_the_api(world, odd):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {world.tokens['write']}",
                    raise_request_exception=False)
    slug = world.suite.slug
    statuses = {}
    for name, value in odd.items():
        response = client.post(f"/api/v1/suites/{slug}/reports?dry_run={value}",
                               data=b"[]", content_type="application/json")
        statuses[("dry_run", name)] = response.status_code
    assert unexpected(statuses, {200, 201, 422}) == {}

    reports = Report.objects.count()
    fields = {
        "reports": {"nodeid": '"t.py::t"', "n": "200", "fails": "0", "upper95": "0.0188",
                    "seed_base": "1", "tier": "2"},
        "verdicts": {"node": '"t.py::t"', "property_check": '"pass"',
                     "fixture_lock": '"match"', "flake_status": '"stable"', "seed": "1",
                     "tier": "2"},
    }
    envelope = {"reports": ("measurements", "selected_total"), "verdicts": ("records", None)}
    statuses = {}
    for endpoint, row in fields.items():
        rows_key, whole_field = envelope[endpoint]
        numbers = [f for f, value in row.items() if not value.startswith('"')]
        for field in [*numbers, whole_field]:
            if field is None:
                continue
            for token in JSON_ODD:
                values = {**row, **({field: token} if field in row else {})}
                text = "{" + ", ".join(f'"{k}": {v}' for k, v in values.items()) + "}"
                whole = f', "{field}": {token}' if field not in row else ""
                data = f'{{"{rows_key}": [{text}]{whole}}}'
                response = client.post(f"/api/v1/suites/{slug}/{endpoint}?dry_run=1",
                                       data=data.encode(), content_type="application/json")
                statuses[(endpoint, field, token)] = response.status_code
                if response.status_code == 422:
                    assert response.json()["details"][0]["field"] == field, (field, token)
    assert unexpected(statuses, {200, 422}) == {}
    assert Report.objects.count() == reports, "a dry run stores nothing"
    assert not Node.objects.filter(nodeid="t.py::t").exists()
