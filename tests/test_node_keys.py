"""Node ids and tier-rule globs at the length limit, in 1- to 4-byte characters, on either
database: stored, found again and kept unique through their keys. A PostgreSQL b-tree entry
holds at most 2,704 bytes, and 1,000 four-byte characters are 4,000: uniqueness on the text
itself answered 500 there."""

import random
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from flakeboard import rules
from ledger.models import Node, QuarantineEntry, TierRule, text_key
from ledger.tiers import tier_rule_add
from runs.ingest import report_ingest
from runs.models import Measurement
from tests.helpers import body, measurement, node_page

# Code point ranges of 1-, 2-, 3- and 4-byte characters. The text is drawn at random:
# PostgreSQL compresses a repeated character, and then the index entry fits after all.
WIDTHS = {1: (0x61, 0x7A), 2: (0xE0, 0x24F), 3: (0x4E00, 0x9FFF), 4: (0x1F300, 0x1F64F)}


def long_id(width: int, tail: str = "", seed: int = 0) -> str:
    rng = random.Random(f"{width}-{tail}-{seed}")
    stem = "tests/test_x.py::test_"
    size = rules.NODEID_MAX_LENGTH - len(stem) - len(tail)
    return stem + "".join(chr(rng.randint(*WIDTHS[width])) for _ in range(size)) + tail


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_an_upload_of_ids_at_the_limit_is_stored_and_found_again(board, suite, token, width):
    ids = [long_id(width, tail) for tail in ("", "1", "2")]
    assert all(len(i) == rules.NODEID_MAX_LENGTH for i in ids)
    assert all(len(i.encode()) > 2704 for i in ids) or width < 3
    rows = [measurement(i) for i in ids] + [measurement(f"t.py::t{k}") for k in range(40)]

    first = board.report(suite.slug, token, body(rows))
    assert first.status == 201, first.json
    again = board.report(suite.slug, token, body(rows), query={"commit": "second"})
    assert again.status == 201, again.json

    # One node per id, found again by the second upload rather than created twice.
    assert Node.objects.filter(suite=suite).count() == len(rows)
    assert Measurement.objects.filter(suite=suite, node__nodeid__in=ids).count() == 2 * len(ids)
    stored = set(Node.objects.filter(suite=suite).named(*ids).values_list("nodeid", flat=True))
    assert stored == set(ids)
    assert [m["nodeid"] for m in again.json["measurements"][:3]] == ids


def test_the_create_form_takes_an_id_at_the_limit(client_for, owner, suite, today):
    nodeid = long_id(3)
    report_ingest(suite=suite, body=body([measurement(f"t.py::t{k}") for k in range(40)]),
                  actor="ci")
    response = client_for(owner).post(reverse("entry_new", args=[suite.slug]), {
        "node": nodeid, "owner": "@finley", "expires": (today + timedelta(days=7)).isoformat(),
        "evidence": "ci/run-1", "n": "200", "fails": "5", "seed_base": "1"})
    assert response.status_code == 302, response.content.decode()[:2000]
    entry = QuarantineEntry.objects.get(suite=suite)
    assert entry.node.nodeid == nodeid and entry.node.key == text_key(nodeid)
    assert client_for(owner).get(node_page(suite.slug, nodeid)).status_code == 200


def test_a_glob_at_the_limit_is_a_rule_once(suite):
    glob = long_id(4, "*")
    rule = tier_rule_add(suite=suite, glob=glob, tier=1, actor="@lea")
    assert TierRule.objects.get(pk=rule.pk).glob == glob
    with pytest.raises(ValidationError) as refused:
        tier_rule_add(suite=suite, glob=glob, tier=0, actor="@lea")
    assert "already exists" in str(refused.value)
    assert TierRule.objects.filter(suite=suite).count() == 1


def test_the_same_id_is_one_node_per_suite(suite, other_suite):
    nodeid = long_id(4)
    for s in (suite, other_suite):
        report_ingest(suite=s, body=body([measurement(nodeid)]), actor="ci")
    keys = set(Node.objects.filter(nodeid=nodeid).values_list("suite_id", "key"))
    assert keys == {(suite.pk, text_key(nodeid)), (other_suite.pk, text_key(nodeid))}


def test_keys_are_fixed_length_and_tell_ids_apart():
    ids = ["a", "a ", "A", "é", "e\u0301", "tests/x.py::t[/../]", long_id(4), long_id(4, seed=1)]
    keys = [text_key(i) for i in ids]
    assert len(set(keys)) == len(ids)
    assert all(len(k) == 32 and set(k) <= set("0123456789abcdef") for k in keys)
