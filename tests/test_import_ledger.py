"""import_ledger and export_ledger, with the seed article's example ledger."""

import json
import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from flakeboard.rules import COUNT_MAX as MAX_COUNT
from ledger.models import AuditEvent, QuarantineEntry
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
        path.write_text(data if isinstance(data, str) else json.dumps(data))
        return str(path)

    return write


@pytest.fixture
def row(today):
    """A valid row expiring in five days; override fields with keywords."""

    def make(**fields):
        base = {"class": "flake", "seed_base": 1, "n": 200, "fails": 5, "owner": "@finley",
                "expires": (today + timedelta(days=5)).isoformat(), "evidence": "ci/run-1"}
        return {**base, **fields}

    return make


def run_import(path, *args):
    """(stdout, stderr) of a successful import."""
    out, err = StringIO(), StringIO()
    call_command("import_ledger", "acme", path, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def refused_import(path, *args):
    """(stdout, stderr + the CommandError) of an import that must fail with exit code 1.

    A CommandError is what manage.py turns into "CommandError: …" and exit code 1, without a
    traceback; any other exception escapes pytest.raises and fails the test.
    """
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("import_ledger", "acme", path, *args, stdout=out, stderr=err)
    assert raised.value.returncode == 1
    return out.getvalue(), f"{err.getvalue()}\n{raised.value}"


def refusal(said, nodeid):
    """The refusal line printed for nodeid: "Refused <nodeid>: <field>: <why>; …"."""
    assert f"Refused {nodeid}: " in said, said
    return said.split(f"Refused {nodeid}: ", 1)[1].splitlines()[0]


def names(said, nodeid, field):
    """Whether the refusal of nodeid names field (each refusal starts with its field)."""
    return re.search(rf"(^|; ){re.escape(field)}[: ]", refusal(said, nodeid)) is not None


def stored_nodeids():
    return sorted(QuarantineEntry.objects.values_list("node__nodeid", flat=True))


def test_seed_example_keeps_server_bound_and_flags_mismatch(suite, ledger_file, today):
    _, err = run_import(ledger_file(SEED_LEDGER))
    entry = QuarantineEntry.objects.get()
    assert round(entry.upper95, 4) == 0.0572
    assert entry.reported_upper95 == 0.0537 and entry.upper95_mismatch
    assert "upper95_mismatch" in err
    if entry.expires < today:  # the example's date has passed: kept, as expired
        assert entry.state(today) == "expired"


def test_an_already_expired_row_is_kept_as_expired(suite, ledger_file, row, today):
    _, err = run_import(ledger_file({"tests/test_old.py::test_stale": row(expires="2020-01-01")}))
    assert "expired on 2020-01-01; kept as expired" in err
    assert QuarantineEntry.objects.get().state(today) == "expired"


def test_a_row_expiring_today_is_kept(suite, ledger_file, row, today):
    """Needs quarantine_create(imported=True) to accept expires == today."""
    run_import(ledger_file({"tests/test_a.py::test_today": row(expires=today.isoformat())}))
    entry = QuarantineEntry.objects.get()
    assert entry.expires == today
    assert entry.state(today) != "expired"


def test_one_bad_row_stores_nothing_then_the_corrected_file_imports_whole(
    suite, ledger_file, row
):
    data = {"tests/test_a.py::test_one": row(), "tests/test_b.py::test_bad": row(n=0),
            "tests/test_c.py::test_three": row()}
    _, said = refused_import(ledger_file(data))
    assert names(said, "tests/test_b.py::test_bad", "n")
    assert "nothing was imported" in said
    assert not QuarantineEntry.objects.exists()
    assert not AuditEvent.objects.exists()

    data["tests/test_b.py::test_bad"] = row()
    out, _ = run_import(ledger_file(data))
    assert "Imported 3 entries" in out
    assert stored_nodeids() == sorted(data)


def test_keep_valid_stores_the_good_rows_and_lists_the_bad(suite, ledger_file, row):
    data = {"tests/test_a.py::test_one": row(), "tests/test_b.py::test_bad": row(fails=201),
            "tests/test_c.py::test_three": row(), "tests/test_d.py::test_bad": row(owner="")}
    out, said = refused_import(ledger_file(data), "--keep-valid")
    assert names(said, "tests/test_b.py::test_bad", "fails")
    assert names(said, "tests/test_d.py::test_bad", "owner")
    assert "Imported 2 entries" in out
    assert stored_nodeids() == ["tests/test_a.py::test_one", "tests/test_c.py::test_three"]


def test_every_bad_row_is_listed_with_its_field(suite, ledger_file, row):
    tier_rule_add(suite=suite, glob="tests/test_properties.py::*", tier=0, actor="@lea")
    data = {
        "tests/test_a.py::test_ok": row(),
        "tests/test_b.py::test_n": row(n=0),
        "tests/test_c.py::test_expires": row(expires=20261213),
        "tests/test_d.py::test_evidence": row(evidence=88213),
        "tests/test_properties.py::test_idempotent": row(),  # refused by the service: tier 0
        "tests/test_e.py::test_two_fields": row(owner=7, seed_base=2**63),
    }
    _, said = refused_import(ledger_file(data))
    assert names(said, "tests/test_b.py::test_n", "n")
    assert names(said, "tests/test_c.py::test_expires", "expires")
    assert names(said, "tests/test_d.py::test_evidence", "evidence")
    assert names(said, "tests/test_properties.py::test_idempotent", "node")
    assert "tier" in refusal(said, "tests/test_properties.py::test_idempotent")
    assert names(said, "tests/test_e.py::test_two_fields", "owner")
    assert names(said, "tests/test_e.py::test_two_fields", "seed_base")
    assert "Refused tests/test_a.py::test_ok" not in said
    assert "5 of 6" in said
    assert not QuarantineEntry.objects.exists()


BAD_FIELDS = [
    ({"n": 0, "fails": 0}, "n"),
    ({"n": -3}, "n"),
    ({"n": MAX_COUNT + 1}, "n"),
    ({"n": True}, "n"),
    ({"n": "200"}, "n"),
    ({"fails": -1}, "fails"),
    ({"fails": 201}, "fails"),
    ({"fails": 2.5}, "fails"),
    ({"expires": 20261213}, "expires"),
    ({"expires": "20261213"}, "expires"),
    ({"expires": "soon"}, "expires"),
    ({"expires": None}, "expires"),
    ({"expires": "2099-01-01"}, "expires"),
    ({"evidence": 88213}, "evidence"),
    ({"evidence": ""}, "evidence"),
    ({"owner": 42}, "owner"),
    ({"owner": ""}, "owner"),
    ({"class": 1}, "class"),
    ({"class": "deterministic"}, "class"),
    ({"seed_base": 2**63}, "seed_base"),
    ({"seed_base": -(2**63) - 1}, "seed_base"),
    ({"seed_base": True}, "seed_base"),
    ({"seed_base": "9137"}, "seed_base"),
    ({"upper95": "0.05"}, "upper95"),
    ({"upper95": 1.5}, "upper95"),
    ({"upper95": float("nan")}, "upper95"),
    ({"upper95": float("inf")}, "upper95"),
    ({"upper95": 10**400}, "upper95"),
]


@pytest.mark.parametrize(
    ("fields", "field"), BAD_FIELDS,
    ids=[",".join(f"{k}={v!r:.24}" for k, v in fields.items()) for fields, _ in BAD_FIELDS],
)
def test_a_bad_field_is_refused_by_name(suite, ledger_file, row, fields, field):
    _, said = refused_import(ledger_file({"tests/test_a.py::test_x": row(**fields)}))
    assert names(said, "tests/test_a.py::test_x", field)
    assert not QuarantineEntry.objects.exists()


@pytest.mark.parametrize("seed_base", [-(2**63), 2**63 - 1, None])
def test_seed_base_takes_the_whole_signed_64_bit_range(suite, ledger_file, row, seed_base):
    run_import(ledger_file({"tests/test_a.py::test_x": row(seed_base=seed_base)}))
    assert QuarantineEntry.objects.get().seed_base == seed_base


def test_n_takes_the_upload_bound(suite, ledger_file, row):
    run_import(ledger_file({"tests/test_a.py::test_x": row(n=MAX_COUNT, fails=MAX_COUNT)}))
    assert QuarantineEntry.objects.get().n == MAX_COUNT


def test_a_node_id_twice_in_the_file_is_refused(suite, ledger_file, row):
    one = json.dumps(row())
    text = (f'{{"tests/test_a.py::test_twice": {one}, "tests/test_b.py::test_ok": {one}, '
            f'"tests/test_a.py::test_twice": {one}}}')
    _, said = refused_import(ledger_file(text), "--keep-valid")
    assert names(said, "tests/test_a.py::test_twice", "node")
    assert said.count("Refused tests/test_a.py::test_twice") == 1
    assert stored_nodeids() == ["tests/test_b.py::test_ok"]


def test_a_row_that_is_not_an_object_is_refused(suite, ledger_file, row):
    _, said = refused_import(ledger_file({"tests/test_a.py::test_x": 5,
                                          "tests/test_b.py::test_ok": row()}))
    assert "Refused tests/test_a.py::test_x: " in said
    assert not QuarantineEntry.objects.exists()


def test_a_node_with_an_open_entry_is_refused_on_a_second_import(suite, ledger_file, row):
    path = ledger_file({"tests/test_a.py::test_x": row(), "tests/test_b.py::test_y": row()})
    run_import(path)
    _, said = refused_import(path)
    assert names(said, "tests/test_a.py::test_x", "node")
    assert "already has an open" in refusal(said, "tests/test_a.py::test_x")
    assert QuarantineEntry.objects.count() == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"tests/test_a.py::test_x": {"owner": "@fin', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ("null", "must be a JSON object"),
        (b"\xff\xfe{}", "not valid JSON"),
    ],
)
def test_a_file_that_is_not_a_ledger_is_a_clear_error(suite, tmp_path, text, message):
    path = tmp_path / "flake_ledger.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    _, said = refused_import(str(path))
    assert message in said
    assert not QuarantineEntry.objects.exists()


def test_an_empty_ledger_imports_nothing(suite, ledger_file):
    out, _ = run_import(ledger_file({}))
    assert "Imported 0 entries" in out


def test_export_round_trips(suite, ledger_file, tmp_path):
    run_import(ledger_file(SEED_LEDGER))
    out = tmp_path / "out.json"
    call_command("export_ledger", "acme", "-o", str(out), stderr=StringIO())
    exported = json.loads(out.read_text())
    expected = dict(SEED_LEDGER["tests/test_ingest.py::test_stream_backpressure"], upper95=0.0572)
    assert exported == {"tests/test_ingest.py::test_stream_backpressure": expected}


def test_unknown_suite_is_a_clear_error(db, ledger_file):
    with pytest.raises(CommandError, match="No suite “nope”"):
        call_command("import_ledger", "nope", ledger_file({}))
