"""The bad-input corpus: malformed uploads kept as files under tests/corpus/, one case each.

Every case is refused with its exact error code, a message naming the row and the field,
and not one row of any table changes. manifest.json says what each file must get.

The cases one character past a length limit (``one_over``), written in 1-, 2-, 3- and 4-byte
UTF-8 characters (tests/wide_text.py), come with their twin: the same upload one character
shorter, at the limit, is accepted and read back exactly.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from flakeboard import rules
from ledger.ledger_file import LedgerFileError, import_ledger, read_ledger
from ledger.refusals import Code
from ledger.tiers import tier_rule_add
from ledger.tokens import token_create
from ledger.wire import read_row
from runs.models import NodeVerdict, Report, VerdictBatch
from tests.helpers import table_sizes
from tests.wide_text import wide, without_last

CORPUS = Path(__file__).parent / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
CASES = MANIFEST["cases"]
API_CASES = [case for case in CASES if case["endpoint"] != "import_ledger"]
IMPORT_CASES = [case for case in CASES if case["endpoint"] == "import_ledger"]
ONE_OVER_CASES = [case for case in CASES if "one_over" in case]
# The real node ids under nodeids/, the real JUnit files under junit/ and the diffs under
# diffs/ are no bad input: tests/test_nodeid_corpus.py, the tests/test_junit_*.py modules
# and tests/test_ci_gate_diff.py read them.
NOT_CASES = {"manifest.json"}
NOT_CASE_DIRS = {"nodeids", "junit", "diffs"}


def case_id(case: dict) -> str:
    return case["file"]


def _place(case: dict) -> tuple:
    """Where a one-over case's edge is: its endpoint, its field, and whether in the query."""
    return case["endpoint"], case["field"], case["field"] in case.get("query", {})


def _widths(cases: list[dict]) -> dict[tuple, set[int]]:
    """The UTF-8 widths each edge is written in, by its place."""
    widths: dict[tuple, set[int]] = {}
    for case in cases:
        widths.setdefault(_place(case), set()).add(case["one_over"]["width"])
    return widths


WIDEST = {place: max(found) for place, found in _widths(ONE_OVER_CASES).items()}


def params(cases: list[dict]) -> list:
    """The cases as test parameters. Of a limit's edge written in each UTF-8 width, the
    widest runs in every lane; the narrower ones carry ``wide``, as in
    tests/test_byte_length_edges.py: ``make test`` and CI ask every width."""
    return [pytest.param(case, id=case_id(case), marks=pytest.mark.wide if "one_over" in case
                         and case["one_over"]["width"] < WIDEST[_place(case)] else ())
            for case in cases]


def written(value):
    """A manifest value; {prefix, width, times, suffix} writes a long one."""
    if isinstance(value, dict) and "width" in value:
        return value["prefix"] + wide(value["width"], value["times"]) + value["suffix"]
    return value


def row_of(case: dict):
    return written(case["row"])


@pytest.fixture
def stocked(world):
    """A suite that already holds a report, a verdict batch, an entry and its audit trail,
    so that 'unchanged' means something: the shared world's (tests/world.py), built once
    for a run of these tests."""
    return world.suite


def test_the_corpus_is_complete():
    files = {
        path.relative_to(CORPUS).as_posix()
        for path in CORPUS.rglob("*")
        if path.is_file() and path.name not in NOT_CASES
        and path.relative_to(CORPUS).parts[0] not in NOT_CASE_DIRS
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


def _client(suite, scope: str = "write") -> Client:
    raw = token_create(suite=suite, scope=scope, actor="@lea")[1]
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def _api_post(client, suite, case, data: bytes, query: dict):
    url = f"/api/v1/suites/{suite.slug}/{case['endpoint']}"
    if query:
        url += "?" + urlencode(query)
    headers = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in case.get("headers", {}).items()}
    return client.post(url, data=data, content_type=case["content_type"], **headers)


def _query(case: dict) -> dict:
    return {name: written(value) for name, value in case.get("query", {}).items()}


@pytest.mark.parametrize("case", params(API_CASES))
def test_api_refuses_the_upload_whole(stocked, case, settings):
    for name, value in case.get("settings", {}).items():
        setattr(settings, name, value)
    client = _client(stocked)
    before = table_sizes()
    response = _api_post(client, stocked, case, _api_body(case), _query(case))

    assert response.status_code == case["status"], response.content[:500]
    assert 400 <= response.status_code < 500
    answer = response.json()
    assert answer["error"] == case["error"]
    message = answer["message"]
    if case["row"] is not None:
        assert f"row {row_of(case)}" in message
    if case["field"] is not None:
        assert f"field '{case['field']}'" in message
    for text in case.get("mentions", []):
        assert text in message
    if answer["details"]:
        assert {detail["code"] for detail in answer["details"]} <= set(Code)
        first = answer["details"][0]
        assert (first["code"], first["row"], first["field"]) == (
            case["code"], row_of(case), case["field"]
        )
    else:
        assert case["code"] == case["error"]
    assert table_sizes() == before


# --- one character past a limit, and at it ---------------------------------------------

ROWS = {"reports": "measurements", "verdicts": "records"}


def _edge(case: dict) -> tuple[object, dict, str]:
    """A one_over case's body (parsed), its query, and its value past the limit."""
    data = json.loads((CORPUS / case["file"]).read_text(encoding="utf-8"))
    query, field = _query(case), case["field"]
    if field in query:
        return data, query, query[field]
    if case["endpoint"] == "import_ledger":
        ((nodeid, entry),) = data.items()
        return data, query, nodeid if field == "node" else entry[field]
    holder = data
    if case["row"] is not None:
        holder = (data if isinstance(data, list) else data[ROWS[case["endpoint"]]])[case["row"]]
    return data, query, holder[field]


def _at_the_limit(case: dict) -> tuple[bytes, dict, str]:
    """The case one character shorter: its body, its query, and the value at the limit."""
    data, query, over = _edge(case)
    value = without_last(over, case["one_over"]["width"])
    if case["field"] in query:
        return json.dumps(data).encode(), {**query, case["field"]: value}, value
    text = json.dumps(data, ensure_ascii=False)
    long, short = (json.dumps(v, ensure_ascii=False) for v in (over, value))
    assert text.count(long) == 1
    return text.replace(long, short).encode(), query, value


def test_the_edges_are_written_in_every_width_of_utf8():
    widths = _widths(ONE_OVER_CASES)
    # A fixture manifest is a digest, hex digits: its edge is written in 1-byte characters.
    ascii_only = {("verdicts", "fixture_manifest", False)}
    assert widths and all(found == ({1} if place in ascii_only else {1, 2, 3, 4})
                          for place, found in widths.items()), widths
    limits = {case["one_over"]["limit"] for case in ONE_OVER_CASES}
    assert limits == {"NODEID_MAX_LENGTH", "OWNER_MAX_LENGTH", "EVIDENCE_MAX_LENGTH",
                      "META_MAX_LENGTH"}


@pytest.mark.parametrize("case", params(ONE_OVER_CASES))
def test_a_one_over_case_is_one_character_past_its_limit(case):
    _, _, value = _edge(case)
    assert len(value) == getattr(rules, case["one_over"]["limit"]) + 1
    assert max(len(char.encode()) for char in value) == case["one_over"]["width"]


def _stored(case: dict, answer: dict) -> str:
    field, row = case["field"], case["row"]
    if field in ("nodeid", "node"):
        return answer[ROWS[case["endpoint"]]][row][field]
    if case["endpoint"] == "reports":
        return getattr(Report.objects.get(pk=answer["id"]), field)
    if field == "fixture_manifest":
        return NodeVerdict.objects.get(batch_id=answer["id"], position=row).fixture_manifest
    return getattr(VerdictBatch.objects.get(pk=answer["id"]), field)


@pytest.mark.parametrize("case", params([c for c in ONE_OVER_CASES if c in API_CASES]))
def test_api_takes_the_upload_at_the_limit(world, case):
    suite = world.suite
    data, query, value = _at_the_limit(case)
    response = _api_post(_client(suite), suite, case, data, query)
    assert response.status_code == 201, response.content[:500]
    assert _stored(case, response.json()) == value
    if case["field"] in ("nodeid", "node"):
        assert suite.nodes.get(nodeid=value).nodeid == value


@pytest.mark.parametrize("case", params([c for c in ONE_OVER_CASES if c in IMPORT_CASES]))
def test_import_ledger_takes_the_row_at_the_limit(suite, case, tmp_path):
    data, _, value = _at_the_limit(case)
    path = tmp_path / "flake_ledger.json"
    path.write_bytes(data)
    call_command("import_ledger", suite.slug, str(path), stdout=StringIO(), stderr=StringIO())
    response = _client(suite, "read").get(f"/api/v1/suites/{suite.slug}/ledger")
    served = json.loads(response.content.decode("utf-8"))
    if case["field"] == "node":
        assert list(served) == [value]
    else:
        assert served[row_of(case)][case["field"]] == value


def _import(suite, case) -> tuple[str, dict]:
    if setup := case.get("setup"):
        glob, tier = setup["tier_rule"]
        if not suite.tier_rules.filter(glob=glob, tier=tier).exists():  # the world's may be
            tier_rule_add(suite=suite, glob=glob, tier=tier, actor="@lea")
        assert suite.tier_rules.get(glob=glob).tier == tier
    before = table_sizes()
    err = StringIO()
    with pytest.raises(CommandError) as refused:
        call_command("import_ledger", suite.slug, str(CORPUS / case["file"]),
                     stdout=StringIO(), stderr=err)
    assert table_sizes() == before
    return f"{err.getvalue()}\n{refused.value}", before


@pytest.mark.parametrize("case", params(IMPORT_CASES))
def test_import_ledger_refuses_the_row(stocked, case, today):
    said, before = _import(stocked, case)
    assert case["status"] == 1  # a CommandError: manage.py exits with 1
    if case["row"] is not None:
        assert f"Refused {row_of(case)}: " in said
    if case["field"] is not None:
        refusal = said.split(f"Refused {row_of(case)}: ", 1)[1].splitlines()[0]
        assert refusal.startswith(case["field"]) or f"{case['field']} " in refusal
    for text in case.get("mentions", []):
        assert text in said
    if case["code"] is None:
        return  # refused before any row was read
    raw = (CORPUS / case["file"]).read_bytes()
    if case["error"] == "refused":
        pairs = read_ledger(raw)
        outcome = import_ledger(suite=stocked, pairs=pairs, actor="corpus", today=today)
        assert [nodeid for nodeid, _ in outcome.refused] == [row_of(case)]
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
