"""GET /api/v1/suites/{suite}/ledger: the gate ledger CI saves as flake_ledger.json."""

import json
import re
from datetime import timedelta

import pytest

from ledger.models import QuarantineEntry
from ledger.quarantine import quarantine_clear, quarantine_create, quarantine_renew
from ledger.tiers import tier_rule_add
from tests.api_http import new_token
from tests.helpers import body, measurement

FLAKY = "tests/test_ingest.py::test_stream_backpressure"
GATE_KEYS = {"class", "seed_base", "n", "fails", "upper95", "owner", "expires", "evidence"}
ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@pytest.fixture
def roomy_suite(suite):
    """A suite whose share cap lets a handful of entries in without a test set."""
    suite.max_quarantined_share = 1.0
    suite.save()
    return suite


def quarantine(suite, nodeid, today, days=20, **extra):
    fields = {"owner": "@finley", "evidence": "ci/run-88213", "n": 200, "fails": 5,
              "seed_base": 9137, **extra}
    return quarantine_create(suite=suite, nodeid=nodeid, expires=today + timedelta(days=days),
                             actor="@finley", today=today, imported=days < 0, **fields)


def budget_script_gate(ledger: dict, result: dict, today: str) -> str:
    """How the budget script reads flake_ledger.json (SPEC 2.2, with only the keys it
    uses): the entry by node id, its expiry compared as a YYYY-MM-DD string."""
    entry = ledger.get(result["nodeid"])
    if entry is not None and entry["expires"] < today:
        return f"FAIL expired {entry['expires']}"
    if result["upper95"] <= 0.02 and result["n"] >= 200:
        return "OK"
    if entry is None:
        return "FAIL"
    return f"WARN until {entry['expires']} ({entry['owner']})"


def test_the_ledger_is_exactly_the_flake_ledger_shape(board, roomy_suite, today):
    active = quarantine(roomy_suite, FLAKY, today)
    quarantine(roomy_suite, "tests/a.py::test_expired", today, days=-3, seed_base=None)
    cleared = quarantine(roomy_suite, "tests/a.py::test_cleared", today)
    quarantine_clear(entry=cleared, note="fixed", actor="@finley")
    quarantine(roomy_suite, "tests/props.py::test_violating", today)
    tier_rule_add(suite=roomy_suite, glob="tests/props.py::*", tier=0, actor="@lea")

    answer = board.ledger(roomy_suite.slug, new_token(roomy_suite, "read"))

    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith("application/json")
    ledger = answer.json
    assert list(ledger) == ["tests/a.py::test_expired", FLAKY]
    assert ledger[FLAKY] == {
        "class": "flake", "seed_base": 9137, "n": 200, "fails": 5,
        "upper95": round(active.upper95, 4), "owner": "@finley",
        "expires": (today + timedelta(days=20)).isoformat(), "evidence": "ci/run-88213",
    }
    assert ledger["tests/a.py::test_expired"]["expires"] == (today - timedelta(3)).isoformat()
    assert ledger["tests/a.py::test_expired"]["seed_base"] is None


def test_the_budget_script_reads_it_as_a_hand_written_file(board, roomy_suite, today, tmp_path):
    expires = (today + timedelta(days=20)).isoformat()
    expired = (today - timedelta(days=2)).isoformat()
    hand_written = tmp_path / "hand" / "flake_ledger.json"
    hand_written.parent.mkdir()
    hand_written.write_text(f"""{{
  "{FLAKY}": {{
    "class": "flake",
    "seed_base": 9137,
    "n": 200,
    "fails": 5,
    "upper95": 0.0572,
    "owner": "@finley",
    "expires": "{expires}",
    "evidence": "ci/run-88213"
  }},
  "tests/a.py::test_old": {{
    "class": "flake", "seed_base": 7, "n": 300, "fails": 9, "upper95": 0.056,
    "owner": "ops@example.com", "expires": "{expired}", "evidence": "ci/run-1"
  }}
}}
""")
    quarantine(roomy_suite, FLAKY, today)
    quarantine(roomy_suite, "tests/a.py::test_old", today, days=-2, seed_base=7, n=300,
               fails=9, owner="ops@example.com", evidence="ci/run-1")
    served = tmp_path / "flake_ledger.json"
    served.write_bytes(board.ledger(roomy_suite.slug, new_token(roomy_suite, "read")).raw)

    with open(served) as handle:  # as the script reads it
        from_board = json.loads(handle.read())
    by_hand = json.loads(hand_written.read_text())
    assert from_board == by_hand
    for node, entry in from_board.items():
        assert set(entry) == GATE_KEYS
        assert [type(entry[k]) for k in sorted(GATE_KEYS)] == [
            type(by_hand[node][k]) for k in sorted(GATE_KEYS)]
        assert ISO_DAY.match(entry["expires"])
    results = [measurement(FLAKY, fails=5, upper95=0.0572),
               measurement("tests/a.py::test_old", n=500, fails=0, upper95=0.0076),
               measurement("tests/b.py::test_new", fails=4, upper95=0.0504)]
    gated = [budget_script_gate(from_board, r, today.isoformat()) for r in results]
    assert gated == [budget_script_gate(by_hand, r, today.isoformat()) for r in results]
    assert gated == [f"WARN until {expires} (@finley)", f"FAIL expired {expired}", "FAIL"]


def test_etag_is_strong_and_304_answers_an_unchanged_ledger(board, roomy_suite, today):
    token = new_token(roomy_suite, "read")
    quarantine(roomy_suite, FLAKY, today)
    first = board.ledger(roomy_suite.slug, token)
    etag = first.headers["ETag"]
    assert re.match(r'^"[0-9a-f]+"$', etag)
    assert first.headers["Cache-Control"] == "private, no-cache"

    again = board.ledger(roomy_suite.slug, token, headers={"If-None-Match": etag})
    assert again.status == 304 and again.raw == b""
    assert again.headers["ETag"] == etag
    for header in ("*", f"W/{etag}", f'"other", {etag}'):
        assert board.ledger(roomy_suite.slug, token, headers={"If-None-Match": header}).status \
            == 304
    assert board.ledger(roomy_suite.slug, token, headers={"If-None-Match": '"old"'}).status \
        == 200


def test_every_change_to_the_ledger_changes_the_etag(board, roomy_suite, today):
    token = new_token(roomy_suite, "read")
    write = new_token(roomy_suite, "write")
    seen = [board.ledger(roomy_suite.slug, token).headers["ETag"]]

    def changed():
        answer = board.ledger(roomy_suite.slug, token, headers={"If-None-Match": seen[-1]})
        seen.append(answer.headers["ETag"])
        return answer.status == 200 and seen[-1] != seen[-2]

    entry = quarantine(roomy_suite, FLAKY, today)
    assert changed()
    quarantine_renew(entry=entry, expires=today + timedelta(days=25), evidence="ci/run-2",
                     actor="@finley", today=today)
    assert changed()
    board.report(roomy_suite.slug, write, body([measurement("tests/c.py::test_ok")]))
    assert not changed()  # an upload that changes no entry leaves the ledger as it was
    tier_rule_add(suite=roomy_suite, glob="tests/test_ingest.py::*", tier=1, actor="@lea")
    assert changed()
    assert board.ledger(roomy_suite.slug, token).json == {}
    quarantine_clear(entry=entry, note="tier 1 now", actor="@lea")
    assert changed()
    assert len(set(seen)) == len(seen) - 1


def test_the_304_path_does_not_build_the_ledger(board, roomy_suite, today, monkeypatch):
    token = new_token(roomy_suite, "read")
    quarantine(roomy_suite, FLAKY, today)
    etags = {view: board.ledger(roomy_suite.slug, token, query={"view": view}).headers["ETag"]
             for view in ("compact", "full")}

    def refuse(*args, **kwargs):
        raise AssertionError("the ledger was built for a 304")

    monkeypatch.setattr("ledger.api.ledger.ledger_for_gate", refuse)
    monkeypatch.setattr("ledger.api.ledger.ledger_full", refuse)
    for view, etag in etags.items():
        answer = board.ledger(roomy_suite.slug, token, query={"view": view},
                              headers={"If-None-Match": etag})
        assert answer.status == 304


def test_full_view_shows_states_renewals_ages_and_violations(board, roomy_suite, today):
    entry = quarantine(roomy_suite, FLAKY, today, days=30)
    quarantine_renew(entry=entry, expires=today + timedelta(days=5), evidence="ci/run-2",
                     actor="@finley", today=today)
    quarantine(roomy_suite, "tests/a.py::test_expired", today, days=-1)
    quarantine(roomy_suite, "tests/a.py::test_active", today, days=20)
    quarantine(roomy_suite, "tests/props.py::test_law", today)
    tier_rule_add(suite=roomy_suite, glob="tests/props.py::*", tier=0, actor="@lea")
    token = new_token(roomy_suite, "read")

    full = board.ledger(roomy_suite.slug, token, query={"view": "full"}).json

    assert full["suite"] == {"slug": "acme", "name": "Acme payments"}
    assert full["today"] == today.isoformat()
    assert full["ledger_revision"] == roomy_suite.__class__.objects.get().ledger_revision
    assert full["policy"]["max_quarantined_share"] == 1.0
    assert full["policy_and_pin_hash"].startswith("sha256:")
    states = {e["node"]: (e["state"], e["renewals"], e["age_days"]) for e in full["entries"]}
    assert states == {
        FLAKY: ("expiring", 1, 0),
        "tests/a.py::test_expired": ("expired", 0, 0),
        "tests/a.py::test_active": ("active", 0, 0),
    }
    assert [(v["node"], v["state"], v["tier"], v["tier_rule"]) for v in full["violations"]] == [
        ("tests/props.py::test_law", "tier_violation", 0, "tests/props.py::*")]
    assert full["counts"] == {"active": 1, "expiring": 1, "expired": 1, "tier_violation": 1}
    compact = board.ledger(roomy_suite.slug, token).json
    assert sorted(compact) == sorted(states)
    for served in full["entries"]:
        assert {k: served[k] for k in GATE_KEYS} == compact[served["node"]]


def test_the_policy_and_pin_hash_follows_the_policy_and_the_pin(board, roomy_suite, today):
    token = new_token(roomy_suite, "read")

    def full():
        answer = board.ledger(roomy_suite.slug, token, query={"view": "full"})
        return answer.json["policy_and_pin_hash"], answer.headers["ETag"]

    first = full()
    assert full() == first
    roomy_suite.min_runs = 300
    roomy_suite.save()
    second = full()
    assert second[0] != first[0] and second[1] != first[1]
    roomy_suite.fixture_manifest = "sha256:pin"
    roomy_suite.save()
    assert full()[0] != second[0]


def test_an_answer_is_compared_with_the_full_ledger_by_the_same_names(board, roomy_suite,
                                                                      today):
    """What an upload was judged against reads beside the full ledger under one name for
    each idea: the revision, the policy's numbers' hash; the hash that also covers the
    fixture pin has a name of its own."""
    quarantine(roomy_suite, FLAKY, today)
    token = new_token(roomy_suite, "write")
    judged = board.report(roomy_suite.slug, token, body([measurement(FLAKY)]),
                          query={"commit": "c1"}).json["judged_against"]
    full = board.ledger(roomy_suite.slug, token, query={"view": "full"}).json
    assert judged["ledger_revision"] == full["ledger_revision"]
    assert judged["policy_hash"] == full["policy_hash"]
    assert re.fullmatch(r"[0-9a-f]{16}", full["policy_hash"])
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", full["policy_and_pin_hash"])
    roomy_suite.fixture_manifest = "sha256:" + "9f2c" * 16
    roomy_suite.save()
    pinned = board.ledger(roomy_suite.slug, token, query={"view": "full"}).json
    assert pinned["policy_hash"] == full["policy_hash"]
    assert pinned["policy_and_pin_hash"] != full["policy_and_pin_hash"]


def test_the_full_view_gives_each_entry_its_id_for_its_events(board, roomy_suite, today):
    active = quarantine(roomy_suite, FLAKY, today)
    violating = quarantine(roomy_suite, "tests/props.py::test_law", today)
    tier_rule_add(suite=roomy_suite, glob="tests/props.py::*", tier=0, actor="@lea")
    token = new_token(roomy_suite, "read")
    full = board.ledger(roomy_suite.slug, token, query={"view": "full"}).json
    assert [(e["node"], e["id"]) for e in full["entries"]] == [(FLAKY, active.pk)]
    assert [v["id"] for v in full["violations"]] == [violating.pk]
    events = board.get(f"/api/v1/suites/{roomy_suite.slug}/entries/{full['entries'][0]['id']}"
                       "/events", token=token)
    assert (events.status, events.json["node"]) == (200, FLAKY)
    assert [e["action"] for e in events.json["events"]] == ["create"]


def test_full_and_compact_views_have_their_own_etags(board, suite):
    token = new_token(suite, "read")
    compact = board.ledger(suite.slug, token).headers["ETag"]
    full = board.ledger(suite.slug, token, query={"view": "full"}).headers["ETag"]
    assert compact != full
    assert board.ledger(suite.slug, token, query={"view": "full"},
                        headers={"If-None-Match": compact}).status == 200


def test_an_empty_ledger_is_an_empty_object(board, suite):
    answer = board.ledger(suite.slug, new_token(suite, "read"))
    assert (answer.status, answer.json) == (200, {})
    assert not QuarantineEntry.objects.exists()


def test_an_unknown_view_is_422_naming_the_parameter(board, suite):
    answer = board.ledger(suite.slug, new_token(suite, "read"), query={"view": "everything"})
    assert (answer.status, answer.error) == (422, "invalid_request")
    assert answer.json["details"][0]["field"] == "view"
