"""`flakeboard_ci.py gate` against the live board, one case each of issue 18's acceptance
list: the tests run once, the pin checked, the freezes read from the ledger at run time, and
every node judged, here or by the board (--upload), with one exit code."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db.models import F

from ledger.models import Suite
from ledger.quarantine import quarantine_create
from ledger.settings_services import fixture_pin_set
from ledger.tiers import tier_rule_add
from runs.models import VerdictBatch
from tests.api_http import new_token
from tests.measure_projects import make_project

pytestmark = pytest.mark.slow  # each test starts a real process

SEED = 9137
PROPERTIES = """
def test_sum_is_commutative():
    assert 2 + 3 == 3 + 2


def test_sort_is_idempotent():
    assert sorted(sorted([3, 1, 2])) == sorted([3, 1, 2])
"""
PINNED = """
import json


def test_rates_match_the_fixture():
    with open("fixtures/rates.json") as handle:
        assert json.load(handle)["max"] == 0.02
"""
FLAKY = "test_io.py::test_retry"
GITHUB = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/pay",
          "GITHUB_RUN_ID": "88213"}


@pytest.fixture
def project(tmp_path, suite):
    """A project with tier-0 properties, a tier-1 test on its fixture file and a tier-2
    test; the suite's tier rules say which is which."""
    make_project(tmp_path, {"test_props.py": PROPERTIES, "test_pinned.py": PINNED,
                            "test_io.py": "def test_retry():\n    pass\n"})
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "rates.json").write_text('{"max": 0.02}\n')
    Suite.objects.filter(pk=suite.pk).update(max_quarantined_share=1.0)
    tier_rule_add(suite=suite, glob="test_props.py::*", tier=0, actor="@lea")
    tier_rule_add(suite=suite, glob="test_pinned.py::*", tier=1, actor="@lea")
    return tmp_path


@pytest.fixture
def gate(run):
    """gate(*args, **env) runs the client's gate in the project against the live board."""

    def run_gate(*args, **env):
        return run("gate", *args, "-p", "no:cacheprovider", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
                   PATCH_SEED=str(SEED), **env)

    return run_gate


@pytest.fixture
def pinned(run, project, suite):
    """The suite pinned to the project's fixtures as `pin` prints them."""
    done = run("pin", "--fixtures", "fixtures", "--seed", str(SEED))
    assert done.returncode == 0, done.stderr
    digest = done.stdout.splitlines()[0].removeprefix("fixture_manifest: ")
    fixture_pin_set(suite=suite, actor="@lea", manifest=digest, seed=SEED)
    return digest


def verdicts(stdout: str) -> dict[str, str]:
    """Each node's verdict and reason as the text output prints them."""
    rows = {}
    for line in stdout.splitlines():
        head, _, rest = line.partition(" ")
        if head in ("ACCEPT", "REJECT", "HOLD") and ": " in rest:
            node, _, reason = rest.strip().partition(": ")
            rows[node] = f"{head} {reason.split(';')[0]}"
    return rows


def test_all_clean_is_accepted_with_the_ci_runs_url(gate, project, pinned):
    done = gate("--fixtures", "fixtures", "--patch", "p-1", "--commit", "abc123", "--upload",
                **GITHUB)
    assert done.returncode == 0, done.stderr
    assert "batch ACCEPT (clean): 4 records" in done.stdout
    batch = VerdictBatch.objects.get()
    assert (batch.patch, batch.commit, batch.verdict) == ("p-1", "abc123", "accept")
    assert batch.evidence == "https://github.com/acme/pay/actions/runs/88213"
    stored = {v.node.nodeid: v for v in batch.verdicts.select_related("node")}
    assert {(v.fixture_manifest, v.seed) for v in stored.values()} == {(pinned, SEED)}
    assert stored["test_props.py::test_sum_is_commutative"].node.tier == 0
    assert f"/suites/acme/verdicts/{batch.pk}/" in done.stdout


def test_a_failing_tier_0_property_rejects(gate, project):
    source = (project / "test_props.py").read_text().replace("2 + 3 == 3 + 2", "2 - 3 == 3 - 2")
    (project / "test_props.py").write_text(source)
    done = gate("--upload", "--all")
    assert done.returncode == 1, done.stderr
    assert verdicts(done.stdout)["test_props.py::test_sum_is_commutative"] == \
        "REJECT property_fail"
    assert VerdictBatch.objects.get().verdict == "reject"


@pytest.mark.parametrize("upload", [False, True])
def test_a_fixture_edited_after_the_pin_holds_every_node(gate, project, pinned, upload):
    (project / "fixtures" / "rates.json").write_text('{"max": 0.02} \n')
    done = gate("--fixtures", "fixtures", "--all", *(["--upload"] if upload else []))
    assert done.returncode == 2, done.stderr
    assert set(verdicts(done.stdout).values()) == {"HOLD fixture_drifted"}
    assert len(verdicts(done.stdout)) == 4
    if not upload:
        assert f"is not the pin's {pinned}: every node holds" in done.stdout
        assert "PATCH_SEED" not in done.stdout  # the seed matches: only the manifest is named


@pytest.mark.parametrize(("stored", "upload"), [
    ("typed", False), ("typed", True), ("stored-before", False), ("stored-before", True)])
def test_a_pin_set_as_the_bare_hex_matches_the_digest_gate_sends(gate, run, project, suite,
                                                                 stored, upload):
    """Issue 29: the lead pins the bare hex (here in capitals), gate sends sha256:<hex>."""
    done = run("pin", "--fixtures", "fixtures", "--seed", str(SEED))
    digest = done.stdout.splitlines()[0].removeprefix("fixture_manifest: ")
    bare = digest.removeprefix("sha256:").upper()
    if stored == "typed":
        fixture_pin_set(suite=suite, actor="@lea", manifest=bare, seed=SEED)
    else:  # a pin kept from before the board took digests in one form
        Suite.objects.filter(pk=suite.pk).update(fixture_manifest=bare, fixture_seed=SEED)
    done = gate("--fixtures", "fixtures", "--all", *(["--upload"] if upload else []))
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(verdicts(done.stdout).values()) == {"ACCEPT clean"}
    assert "FIXTURES DRIFTED" not in done.stdout


def test_a_missing_fixture_folder_holds_every_node(gate, project, pinned, suite):
    done = gate("--fixtures", "fixtures-gone", "--all", token=new_token(suite, "read"))
    assert done.returncode == 2, done.stderr
    assert set(verdicts(done.stdout).values()) == {"HOLD fixture_missing"}
    assert "FIXTURES MISSING: the fixture folder fixtures-gone does not exist" in done.stdout


@pytest.mark.parametrize("upload", [False, True])
def test_a_frozen_node_holds_even_when_it_fails_until_its_entry_expires(
        gate, project, suite, today, upload):
    (project / "test_io.py").write_text("def test_retry():\n    assert False\n")
    entry = quarantine_create(suite=suite, nodeid=FLAKY, owner="@finley", evidence="ci/run-1",
                              expires=today + timedelta(days=5), actor="@finley", today=today)
    flags = ["--upload"] if upload else []
    held = gate(*flags, "--commit", "c1")
    assert held.returncode == 2, held.stderr
    assert verdicts(held.stdout) == {FLAKY: "HOLD frozen_node"}
    assert f"quarantined until {entry.expires.isoformat()} by @finley" in held.stdout
    records = json.loads((project / "signals.json").read_text())["records"]
    (record,) = [r for r in records if r["node"] == FLAKY]
    assert (record["flake_status"], record["freeze_expires"]) == \
        ("frozen", entry.expires.isoformat())

    entry.expires = today - timedelta(days=1)
    entry.save()
    Suite.objects.filter(pk=suite.pk).update(ledger_revision=F("ledger_revision") + 1)
    counted = gate(*flags, "--commit", "c2")
    assert counted.returncode == 1, counted.stderr
    assert verdicts(counted.stdout) == {FLAKY: "REJECT property_fail"}


@pytest.mark.parametrize("upload", [False, True])
def test_a_selection_of_nothing_holds_no_evidence(gate, project, upload):
    done = gate("-k", "nomatch", *(["--upload"] if upload else []))
    assert done.returncode == 2, done.stderr
    assert "batch HOLD (no_evidence)" in done.stdout


def test_a_collection_error_is_its_files_node_not_run(gate, project):
    (project / "test_broken.py").write_text("import os\n\ndef test_half(:\n    pass\n")
    done = gate("--upload")
    assert done.returncode == 2, done.stderr
    assert "COLLECTION ERROR test_broken.py: SyntaxError: " in done.stdout
    assert verdicts(done.stdout)["test_broken.py"] == "HOLD property_not_run"
    batch = VerdictBatch.objects.get()
    assert batch.verdicts.get(node__nodeid="test_broken.py").property_check == "not_run"
    assert batch.record_count == 5


def test_the_frozen_nodes_left_out_are_shown_on_the_batch(gate, project, suite, today,
                                                          client_for, lead):
    quarantine_create(suite=suite, nodeid=FLAKY, owner="@finley", evidence="ci/run-1",
                      expires=today + timedelta(days=5), actor="@finley", today=today)
    done = gate("--deselect-frozen", "--upload")
    assert done.returncode == 0, done.stderr
    batch = VerdictBatch.objects.get()
    assert batch.deselected_frozen == [FLAKY]
    assert not batch.verdicts.filter(node__nodeid=FLAKY).exists()
    page = client_for(lead).get(f"/suites/acme/verdicts/{batch.pk}/")
    assert "Left out as frozen" in page.content.decode()
    assert FLAKY in page.content.decode()


def test_an_unreachable_board_fails_closed(run, project, dead_url):
    done = run("--retries", "0", "gate", "--upload", FLAKEBOARD_URL=dead_url)
    assert done.returncode == 3
    assert "cannot reach the board" in done.stderr
    assert not (project / "signals.json").exists()
