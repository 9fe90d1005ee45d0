"""POST /api/v1/suites/{suite}/tiers: each node id's tier by the suite's tier rules and the
rule that decided it, for gate --measure; a lookup that stores nothing. (Who may call it:
tests/test_access_api.py's table.)"""

from __future__ import annotations

import pytest
from django.test import override_settings

from ledger.models import Node
from ledger.settings_services import measure_budget_set, new_tests_set
from ledger.tiers import tier_rule_add
from runs.ingest import signals_ingest
from tests.api_http import API, new_token
from tests.helpers import body, record


@pytest.fixture
def ask(board, suite):
    read = new_token(suite, "read")

    def tiers(data, raw=None, commit=None):
        return board.post(f"{API}/suites/{suite.slug}/tiers",
                          raw if raw is not None else body(data), token=read,
                          query={"commit": commit} if commit is not None else None)

    return tiers


@pytest.fixture
def rules(suite):
    tier_rule_add(suite=suite, glob="tests/test_props.py::*", tier=0, actor="@lea")
    tier_rule_add(suite=suite, glob="tests/test_*.py::test_pinned_*", tier=1, actor="@lea")
    tier_rule_add(suite=suite, glob="tests/test_props.py::test_pinned_*", tier=1, actor="@lea")


def test_each_id_gets_its_tier_and_the_rule_that_decided_it(ask, rules):
    answer = ask(["tests/test_io.py::test_retry", "tests/test_props.py::test_pinned_sum",
                  "tests/test_db.py::test_pinned_rates", "tests/test_props.py::test_sum"])
    assert answer.status == 200, answer.raw
    assert answer.json == {"suite": "acme", "tiers": [
        {"node": "tests/test_io.py::test_retry", "tier": 2, "rule": None, "stated": False,
         "new": None},
        # Tier 0 rules win over tier 1 ones.
        {"node": "tests/test_props.py::test_pinned_sum", "tier": 0,
         "rule": "tests/test_props.py::*", "stated": False, "new": None},
        {"node": "tests/test_db.py::test_pinned_rates", "tier": 1,
         "rule": "tests/test_*.py::test_pinned_*", "stated": False, "new": None},
        {"node": "tests/test_props.py::test_sum", "tier": 0, "rule": "tests/test_props.py::*",
         "stated": False, "new": None},
    ], "new_tests": {"runs": 30, "share": 0.3}, "measure_budget": 300}


def test_the_answer_gives_the_suites_measure_budget(ask, suite):
    measure_budget_set(suite=suite, actor="@lea", seconds=90)
    assert ask(["tests/test_io.py::test_retry"]).json["measure_budget"] == 90


def test_the_answer_gives_the_suites_new_test_guard(ask, suite):
    new_tests_set(suite=suite, actor="@lea", runs=12, share=0.5)
    answer = ask(["tests/test_io.py::test_retry"], commit="c1")
    assert answer.json["new_tests"] == {"runs": 12, "share": 0.5}
    assert answer.json["tiers"][0]["new"] is True


def test_a_known_nodes_stated_tier_does_not_count(ask, suite, rules):
    stated = [record("tests/test_io.py::test_parse", tier=1),
              record("tests/test_props.py::test_sum", tier=1)]
    signals_ingest(suite=suite, body=body(stated), actor="ci")
    answer = ask(["tests/test_io.py::test_parse", "tests/test_props.py::test_sum"])
    assert answer.json["tiers"] == [
        {"node": "tests/test_io.py::test_parse", "tier": 2, "rule": None, "stated": False,
         "new": None},
        # The rules alone decide.
        {"node": "tests/test_props.py::test_sum", "tier": 0,
         "rule": "tests/test_props.py::*", "stated": False, "new": None},
    ]


def test_a_lookup_stores_nothing_and_repeats_answer_in_order(ask, suite):
    answer = ask(["tests/a.py::test_x", "tests/b.py::test_y", "tests/a.py::test_x"])
    assert [row["node"] for row in answer.json["tiers"]] == \
        ["tests/a.py::test_x", "tests/b.py::test_y", "tests/a.py::test_x"]
    assert not Node.objects.filter(suite=suite).exists()
    assert ask([]).json == {"suite": "acme", "tiers": [], "new_tests": {"runs": 30, "share": 0.3},
                            "measure_budget": 300}


@pytest.mark.parametrize(("data", "row", "code"), [
    (["tests/a.py::test_x", ""], 1, "invalid_nodeid"),
    (["tests/a.py::test_x", "tests/a.py::test_y", 7], 2, "wrong_type"),
    (["tests/a.py::test_\x07bell"], 0, "invalid_nodeid"),
    (["x" * 1001], 0, "invalid_nodeid"),
])
def test_a_bad_id_is_422_naming_its_row(ask, data, row, code):
    answer = ask(data)
    assert (answer.status, answer.error) == (422, "validation_failed"), answer.raw
    (detail,) = answer.json["details"]
    assert (detail["row"], detail["field"], detail["code"]) == (row, "node", code)
    assert answer.json["message"].startswith(f"row {row}, field 'node': ")


@pytest.mark.parametrize(("raw", "status", "code"), [
    (b'{"nodes": []}', 422, "validation_failed"),
    (b"[not json", 400, "invalid_json"),
])
def test_a_body_that_is_not_a_list_of_ids_is_refused(ask, raw, status, code):
    answer = ask(None, raw=raw)
    assert (answer.status, answer.error) == (status, code), answer.raw


def test_more_ids_than_an_upload_may_hold_is_413(ask):
    with override_settings(UPLOAD_MAX_RECORDS=3):
        answer = ask([f"tests/a.py::test_{i}" for i in range(4)])
    assert (answer.status, answer.error) == (413, "too_many_records"), answer.raw
    assert "4 node ids, over the limit of 3" in answer.json["message"]


def test_a_body_over_the_byte_limit_is_413(ask):
    with override_settings(UPLOAD_MAX_BYTES=100):
        answer = ask([f"tests/a.py::test_{i}" for i in range(20)])
    assert (answer.status, answer.error) == (413, "too_large"), answer.raw


def test_a_commit_that_is_no_label_is_refused_naming_it(ask):
    answer = ask(["tests/test_io.py::test_retry"], commit="c1\x03")
    assert answer.status == 422, answer.raw
    assert answer.json["details"][0]["field"] == "commit"
