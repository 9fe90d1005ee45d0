"""The bad-input corpus: malformed uploads kept as files under tests/corpus/, one case each.

Every case is refused with its exact error code, a message naming the row and the field,
and not one row of any table changes. manifest.json says what each file must get.
"""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from ledger.ledger_file import LedgerFileError, import_ledger, read_ledger
from ledger.quarantine import quarantine_create
from ledger.tiers import tier_rule_add
from ledger.tokens import token_create
from ledger.wire import Code, read_row
from runs.ingest import report_ingest
from tests.helpers import body, measurement

CORPUS = Path(__file__).parent / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
CASES = MANIFEST["cases"]
API_CASES = [case for case in CASES if case["endpoint"] != "import_ledger"]
IMPORT_CASES = [case for case in CASES if case["endpoint"] == "import_ledger"]


def case_id(case: dict) -> str:
    return case["file"]


def table_sizes() -> dict[str, int]:
    """The row count of every table the board has."""
    return {model._meta.label: model.objects.count() for model in apps.get_models()}


@pytest.fixture
def stocked(suite, lead, today):
    """A suite that already holds a report, an entry and its audit trail, so that
    'unchanged' means something."""
    rows = [measurement(f"tests/test_{i}.py::test_ok") for i in range(40)]
    report_ingest(suite=suite, body=body(rows), actor="ci")
    quarantine_create(
        suite=suite, nodeid="tests/test_flaky.py::test_once", owner="@finley",
        expires=today + timedelta(days=10), evidence="ci/run-1", actor="@finley",
        today=today,
    )
    return suite


def test_the_corpus_is_complete():
    files = {
        path.relative_to(CORPUS).as_posix()
        for path in CORPUS.rglob("*") if path.is_file() and path.name != "manifest.json"
    }
    assert files == {case["file"] for case in CASES}, "one manifest case per file, no strays"
    assert len(CASES) >= 40
    assert {case["endpoint"] for case in CASES} == {"reports", "verdicts", "import_ledger"}


def test_every_refusal_code_has_a_case():
    """The codes are a closed vocabulary: a new one cannot slip past the corpus."""
    assert set(Code) <= {case["code"] for case in API_CASES}


def _api_body(case: dict) -> bytes:
    data = (CORPUS / case["file"]).read_bytes()
    if pad_to := case.get("pad_to"):
        data = data + b" " * (pad_to - len(data) - 1) + b"]"
    return data


@pytest.mark.parametrize("case", API_CASES, ids=case_id)
def test_api_refuses_the_upload_whole(stocked, case):
    raw = token_create(suite=stocked, scope="write", actor="@lea")[1]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    before = table_sizes()
    url = f"/api/v1/suites/{stocked.slug}/{case['endpoint']}"
    if query := case.get("query"):
        url += "?" + urlencode(query)
    headers = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in case.get("headers", {}).items()}
    response = client.post(url, data=_api_body(case), content_type=case["content_type"], **headers)

    assert response.status_code == case["status"], response.content[:500]
    assert 400 <= response.status_code < 500
    answer = response.json()
    assert answer["error"] == case["error"]
    message = answer["message"]
    if case["row"] is not None:
        assert f"row {case['row']}" in message
    if case["field"] is not None:
        assert f"field '{case['field']}'" in message
    for text in case.get("mentions", []):
        assert text in message
    if answer["details"]:
        assert {detail["code"] for detail in answer["details"]} <= set(Code)
        first = answer["details"][0]
        assert (first["code"], first["row"], first["field"]) == (
            case["code"], case["row"], case["field"]
        )
    else:
        assert case["code"] == case["error"]
    assert table_sizes() == before


def _import(suite, case) -> tuple[str, dict]:
    if setup := case.get("setup"):
        glob, tier = setup["tier_rule"]
        tier_rule_add(suite=suite, glob=glob, tier=tier, actor="@lea")
    before = table_sizes()
    err = StringIO()
    with pytest.raises(CommandError) as refused:
        call_command("import_ledger", suite.slug, str(CORPUS / case["file"]),
                     stdout=StringIO(), stderr=err)
    assert table_sizes() == before
    return f"{err.getvalue()}\n{refused.value}", before


@pytest.mark.parametrize("case", IMPORT_CASES, ids=case_id)
def test_import_ledger_refuses_the_row(stocked, case, today):
    said, before = _import(stocked, case)
    assert case["status"] == 1  # a CommandError: manage.py exits with 1
    if case["row"] is not None:
        assert f"Refused {case['row']}: " in said
    if case["field"] is not None:
        refusal = said.split(f"Refused {case['row']}: ", 1)[1].splitlines()[0]
        assert refusal.startswith(case["field"]) or f"{case['field']} " in refusal
    for text in case.get("mentions", []):
        assert text in said
    if case["code"] is None:
        return  # refused before any row was read
    raw = (CORPUS / case["file"]).read_bytes()
    if case["error"] == "refused":
        pairs = read_ledger(raw)
        outcome = import_ledger(suite=stocked, pairs=pairs, actor="corpus", today=today)
        assert [nodeid for nodeid, _ in outcome.refused] == [case["row"]]
        assert not outcome.stored
        wire = [problem.code for nodeid, row in pairs for problem in read_row(nodeid, row)[1]]
        # Refused by the wire's types, with an upload's codes; else by the service.
        assert wire in ([], case["code"])
    else:
        with pytest.raises(LedgerFileError):
            read_ledger(raw)
    assert table_sizes() == before


def test_an_import_row_past_its_expiry_is_kept_as_expired(stocked, today, tmp_path):
    """SPEC 7: the one row an import keeps although the form would refuse it, so that a
    migrated ledger still fails its gate."""
    path = tmp_path / "flake_ledger.json"
    path.write_text(json.dumps({"tests/test_old.py::test_stale": {
        "class": "flake", "n": 200, "fails": 5, "owner": "@finley", "expires": "2020-01-01",
        "evidence": "ci/run-1",
    }}))
    err = StringIO()
    call_command("import_ledger", stocked.slug, str(path), stdout=StringIO(), stderr=err)
    assert "expired on 2020-01-01; kept as expired" in err.getvalue()
    entry = stocked.entries.get(node__nodeid="tests/test_old.py::test_stale")
    assert entry.state(today) == "expired"


def test_pages_refuse_a_form_post_that_is_not_a_form(client_for, owner, stocked):
    """The quarantine form takes form fields; a JSON body there is an empty form, not a
    server error, and stores nothing."""
    client = client_for(owner)
    before = table_sizes()
    response = client.post(
        reverse("entry_new", args=[stocked.slug]), data=b'{"node": 1}',
        content_type="application/json",
    )
    assert response.status_code == 200
    assert response.context["form"].errors
    assert table_sizes() == before
