"""import_ledger and export_ledger, with the seed article's example ledger."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from ledger.models import QuarantineEntry
from ledger.quarantine import ledger_import
from ledger.tiers import tier_rule_add

SEED_LEDGER = {
    "tests/test_ingest.py::test_stream_backpressure": {
        "class": "flake", "seed_base": 9137, "n": 200, "fails": 5, "upper95": 0.0537,
        "owner": "@finley", "expires": "2026-11-14", "evidence": "ci/run-88213",
    }
}


@pytest.fixture
def ledger_file(tmp_path):
    def write(data):
        path = tmp_path / "flake_ledger.json"
        path.write_text(json.dumps(data))
        return str(path)

    return write


def test_seed_example_keeps_server_bound_and_flags_mismatch(suite, ledger_file, today):
    err = StringIO()
    call_command("import_ledger", "acme", ledger_file(SEED_LEDGER), stdout=StringIO(), stderr=err)
    entry = QuarantineEntry.objects.get()
    assert round(entry.upper95, 4) == 0.0572
    assert entry.reported_upper95 == 0.0537 and entry.upper95_mismatch
    assert "upper95_mismatch" in err.getvalue()
    if entry.expires < today:  # the example's date has passed: kept, as expired
        assert entry.state(today) == "expired"


def test_tier_zero_row_is_refused_by_name_and_stores_nothing(suite, ledger_file, today):
    tier_rule_add(suite=suite, glob="tests/test_properties.py::*", tier=0, actor="@lea")
    data = dict(SEED_LEDGER)
    data["tests/test_properties.py::test_idempotent"] = {
        **SEED_LEDGER["tests/test_ingest.py::test_stream_backpressure"]}
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_ledger", "acme", ledger_file(data), stdout=StringIO(), stderr=err)
    assert "Refused tests/test_properties.py::test_idempotent" in err.getvalue()
    assert list(QuarantineEntry.objects.values_list("node__nodeid", flat=True)) == [
        "tests/test_ingest.py::test_stream_backpressure"]
    # the same refusal from the service called directly
    result = ledger_import(suite=suite, ledger={"tests/test_properties.py::test_idempotent":
                                                data["tests/test_properties.py::test_idempotent"]},
                           actor="t", today=today)
    assert [nodeid for nodeid, _ in result.refused] == ["tests/test_properties.py::test_idempotent"]
    assert "tier" in result.refused[0][1]


@pytest.mark.parametrize(
    ("row", "why"),
    [
        ({"owner": ""}, "owner"),
        ({"expires": "soon"}, "expires"),
        ({"expires": "2099-01-01"}, "at most"),
        ({"evidence": ""}, "Evidence"),
        ({"n": True}, "n must be"),
    ],
)
def test_bad_rows_are_refused(suite, today, row, why):
    base = {"n": 200, "fails": 5, "owner": "@f", "evidence": "ci/run-1",
            "expires": (today + timedelta(days=5)).isoformat()}
    result = ledger_import(suite=suite, ledger={"a::b": {**base, **row}}, actor="t", today=today)
    assert result.refused and why in result.refused[0][1]
    assert not QuarantineEntry.objects.exists()


def test_export_round_trips(suite, ledger_file, tmp_path):
    call_command("import_ledger", "acme", ledger_file(SEED_LEDGER), stdout=StringIO(),
                 stderr=StringIO())
    out = tmp_path / "out.json"
    call_command("export_ledger", "acme", "-o", str(out), stderr=StringIO())
    exported = json.loads(out.read_text())
    expected = dict(SEED_LEDGER["tests/test_ingest.py::test_stream_backpressure"], upper95=0.0572)
    assert exported == {"tests/test_ingest.py::test_stream_backpressure": expected}


def test_unknown_suite_is_a_clear_error(db, ledger_file):
    with pytest.raises(CommandError, match="No suite “nope”"):
        call_command("import_ledger", "nope", ledger_file({}))
