"""An upload's answer explains a tier violation: the node's entry is void because a tier
rule now makes it tier 0 or 1, and the CI client's line says so, naming the rule. A tier an
upload states voids nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ledger.quarantine import quarantine_create
from ledger.tiers import tier_rule_add, tier_rule_remove
from runs.ingest import report_ingest, signals_ingest
from runs.models import Report
from runs.outcomes import stored_outcome
from runs.results import answer
from tests.helpers import body, measurement, record, write_upload

FLAKY = "tests/test_cache.py::test_eviction[lru-8]"
CALM = "tests/test_cache.py::test_hit"
GLOB = "tests/test_cache.py::test_evict*"


@pytest.fixture
def quarantined(suite, today):
    """Forty known nodes, FLAKY and CALM quarantined; room under the cap for both."""
    rows = [measurement(f"tests/test_{i}.py::test_ok") for i in range(40)]
    report_ingest(suite=suite, body=body(rows), actor="ci")
    for nodeid in (FLAKY, CALM):
        quarantine_create(suite=suite, nodeid=nodeid, owner="@finley",
                          expires=today + timedelta(days=9), evidence="ci/run-5",
                          actor="@finley", today=today, n=200, fails=5)
    return suite


def report_entries(suite, rows) -> dict:
    answered = answer(report_ingest(suite=suite, body=body(rows), actor="ci"))
    return {m["nodeid"]: m["entry"] for m in answered["measurements"]}


def test_a_rules_violation_names_the_rule_and_the_tier(quarantined):
    rule = tier_rule_add(suite=quarantined, glob=GLOB, tier=0, actor="@lea")
    rows = [measurement(FLAKY, fails=9), measurement(CALM, fails=9)]
    entries = report_entries(quarantined, rows)
    assert (entries[FLAKY]["state"], entries[FLAKY]["tier"], entries[FLAKY]["tier_rule"]) == (
        "tier_violation", 0, GLOB)
    # A live entry explains nothing.
    assert (entries[CALM]["state"], entries[CALM]["tier"], entries[CALM]["tier_rule"]) == (
        "active", None, None)
    # The same body again, judged now, answers the same while nothing changed.
    stored = Report.objects.filter(suite=quarantined).latest("pk")
    assert report_entries(quarantined, rows) == entries
    # Once the rule is gone, the stored answer still says the entry was void, but no rule
    # makes the node tier 0 or 1 any more; a replay is judged as the ledger stands now.
    tier_rule_remove(rule=rule, actor="@lea")
    kept = {m["nodeid"]: m["entry"] for m in answer(stored_outcome(stored))["measurements"]}
    assert (kept[FLAKY]["state"], kept[FLAKY]["tier"], kept[FLAKY]["tier_rule"]) == (
        "tier_violation", None, None)
    replayed = report_entries(quarantined, rows)[FLAKY]
    assert (replayed["state"], replayed["tier"], replayed["tier_rule"]) == (
        "active", None, None)


def test_a_stated_tier_voids_nothing(quarantined):
    report_ingest(suite=quarantined, body=body([measurement(FLAKY, tier=1)]), actor="ci")
    entries = report_entries(quarantined, [measurement(FLAKY, fails=9)])
    assert (entries[FLAKY]["state"], entries[FLAKY]["tier"], entries[FLAKY]["tier_rule"]) == (
        "active", None, None)


def test_a_batch_record_explains_it_too(quarantined):
    tier_rule_add(suite=quarantined, glob=GLOB, tier=1, actor="@lea")
    answered = answer(signals_ingest(suite=quarantined, body=body([record(FLAKY)]), actor="ci"))
    entry = answered["records"][0]["entry"]
    assert (entry["state"], entry["tier"], entry["tier_rule"]) == ("tier_violation", 1, GLOB)


@pytest.mark.slow
def test_the_client_line_says_why_the_entry_is_void(run, quarantined, tmp_path):
    tier_rule_add(suite=quarantined, glob=GLOB, tier=0, actor="@lea")
    report_ingest(suite=quarantined, body=body([measurement(CALM, tier=1)]), actor="ci")
    path = write_upload(tmp_path, "flake-report.json",
                        [measurement(FLAKY, fails=9), measurement(CALM, fails=9)])
    done = run("report", path, "--format", "text")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    flaky = next(line for line in lines if FLAKY in line)
    assert flaky.startswith(f"FAIL {FLAKY}: tier_violation")
    assert (f"is void: the tier rule \u201c{GLOB}\u201d now makes the node tier 0, and a "
            "tier 0 node may not be quarantined, so it counts as unquarantined") in flaky
    # A tier the upload stated voids nothing: the entry still holds.
    calm = next(line for line in lines if CALM in line)
    assert calm.startswith(f"WARN {CALM}: quarantined")
