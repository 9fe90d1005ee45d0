"""The calendar's ends in every date the board reads: the trends page, its CSVs and the
trends API (``from``, ``to``, and the old ``start`` and ``end``), the expiry of the
quarantine and renew forms, a frozen record's ``freeze_expires`` and an imported entry's
``expires``. Year 1, year 9999 and one past either are refused with a 4xx or clamped to a
sensible range, never a server error; a date that is taken is stored as written.
"""

from __future__ import annotations

import json
import re
from datetime import date, timedelta
from io import StringIO
from itertools import product

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from ledger.models import QuarantineEntry
from tests.helpers import body, field_errors, record

EDGE_DAYS = ["0001-01-01", "0001-01-02", "9999-12-30", "9999-12-31"]
PAST_THE_ENDS = ["0000-01-01", "0000-12-31", "9999-12-32", "10000-01-01", "-0001-01-01"]
DAYS = EDGE_DAYS + PAST_THE_ENDS
RANGES = (
    [{"from": day} for day in DAYS] + [{"to": day} for day in DAYS]
    + [{"from": first, "to": last} for first in EDGE_DAYS for last in EDGE_DAYS]
)
CSV_RANGES = [{"from": "0001-01-01"}, {"to": "9999-12-31"}, {"from": "10000-01-01"},
              {"to": "0000-12-31", "bucket": "week"}]
# Moments at the ends whose UTC date falls outside the calendar, or just inside it.
MOMENTS = [
    "0001-01-01T00:00:00Z", "0001-01-01T00:00:00+14:00", "0001-01-01T23:59:59-14:00",
    "9999-12-31T23:59:59Z", "9999-12-31T23:59:59-14:00", "9999-12-31T00:00:00+14:00",
    "9999-12-31T23:59:59.999999+00:00", "0001-01-01T00:00:00.000001-00:01",
]


def unexpected(statuses: dict, allowed: set[int]) -> dict:
    return {asked: status for asked, status in statuses.items() if status not in allowed}


def api(token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}", raise_request_exception=False)


@pytest.fixture
def lead_client(world, client_for):
    client = client_for(world.users["lead"])
    client.raise_request_exception = False
    return client


def _csv_urls(client, suite) -> list[str]:
    page = client.get(reverse("trends", args=[suite.slug])).content.decode()
    urls = sorted(set(re.findall(r'href="([^"?]+\.csv)\?', page)))
    assert urls, "the trends page links no CSV"
    return urls


@pytest.mark.wide
def test_the_trends_page_and_its_csvs_at_the_ends_of_the_calendar(world, lead_client):
    pages, csvs = {}, {}
    csv_urls = _csv_urls(lead_client, world.suite)
    for query, bucket in product(RANGES, ("day", "week")):
        query = {**query, "bucket": bucket}
        asked = json.dumps(query)
        pages[asked] = lead_client.get(reverse("trends", args=[world.suite.slug]), query)
    # The CSVs read the same form as the page: each end of the calendar, and past it.
    for query in CSV_RANGES:
        for url in csv_urls:
            csvs[f"{url} {json.dumps(query)}"] = lead_client.get(url, query).status_code
    statuses = {asked: response.status_code for asked, response in pages.items()}
    assert unexpected(statuses, {200, 400}) == {}
    assert unexpected(csvs, {200, 400}) == {}
    # A range refused is said beside its field; one taken shows its own days.
    for asked, response in pages.items():
        if response.status_code == 200:
            period = response.context["period"]
            assert period.start <= period.end <= date.today(), asked


@pytest.mark.wide
def test_the_trends_page_old_parameter_names_at_the_ends_of_the_calendar(world, lead_client):
    statuses = {}
    for day in DAYS:
        for name in ("start", "end"):
            response = lead_client.get(reverse("trends", args=[world.suite.slug]),
                                       {name: day}, follow=True)
            statuses[f"{name}={day}"] = response.status_code
    assert unexpected(statuses, {200, 400}) == {}


@pytest.mark.wide
def test_the_trends_api_at_the_ends_of_the_calendar(world):
    client = api(world.tokens["read"])
    statuses = {}
    queries = [*RANGES, {"start": EDGE_DAYS[0]}, {"end": EDGE_DAYS[-1]}]
    for query, bucket, source in product(queries, ("day", "week"), ("verdicts", "reports")):
        query = {**query, "bucket": bucket, "source": source}
        response = client.get(f"/api/v1/suites/{world.suite.slug}/trends", query)
        statuses[json.dumps(query)] = response.status_code
        if response.status_code == 422:
            assert response.json()["details"][0]["field"] in {"from", "to", "start", "end"}
    assert unexpected(statuses, {200, 422}) == {}


def _digits_from(zero: int) -> dict[int, str]:
    """str.translate's table from the ASCII digits to the ten that start at ``zero``."""
    return str.maketrans("0123456789", "".join(chr(zero + d) for d in range(10)))


def _written_otherwise(day: date) -> dict[str, str]:
    """A day in other digits than ASCII's, as a browser without a date picker may send."""
    ascii_day = day.isoformat()
    return {
        "arabic-indic": ascii_day.translate(_digits_from(0x660)),
        "fullwidth": ascii_day.translate(_digits_from(0xFF10)),
        "spaced": f" {ascii_day} ",
        "with a time": f"{ascii_day}T00:00:00",
    }


def test_the_expiry_of_the_quarantine_form_at_the_ends_of_the_calendar(world, client_for,
                                                                      today):
    client = client_for(world.users["owner"])
    client.raise_request_exception = False
    url = reverse("entry_new", args=[world.suite.slug])
    for day in DAYS:
        assert client.get(url, {"expires": day, "node": "t.py::t"}).status_code == 200, day
    statuses = {}
    for index, written in enumerate([*DAYS, *_written_otherwise(today).values()]):
        nodeid = f"tests/test_calendar.py::test_end[{index}]"
        response = client.post(url, {"node": nodeid, "owner": "@finley", "expires": written,
                                     "evidence": "ci/run-1", "n": "200", "fails": "5"})
        statuses[written] = response.status_code
        if response.status_code == 200:
            assert field_errors(response, "expires") or field_errors(response, "node"), written
    assert unexpected(statuses, {200}) == {}, "no expiry here is within the bounds"


def test_the_expiry_of_the_renew_form_at_the_ends_of_the_calendar(world, client_for, today):
    client = client_for(world.users["owner"])
    client.raise_request_exception = False
    url = reverse("entry_renew", args=[world.suite.slug, world.entry.pk])
    statuses = {}
    later = today + timedelta(days=20)
    for index, written in enumerate([*DAYS, *_written_otherwise(later).values()]):
        response = client.post(url, {"expires": written, "evidence": f"ci/run-{index + 2}"})
        statuses[written] = response.status_code
        if response.status_code == 302:
            world.entry.refresh_from_db()
            assert world.entry.expires == later, written
        else:
            assert field_errors(response, f"renew{world.entry.pk}_expires"), written
    assert unexpected(statuses, {200, 302}) == {}
    assert {statuses[day] for day in DAYS} == {200}, "each is past the expiry bounds"


def test_a_freeze_until_the_ends_of_the_calendar(world, client_for):
    client = api(world.tokens["write"])
    viewer = client_for(world.users["viewer"])
    statuses = {}
    for index, moment in enumerate([*DAYS, *MOMENTS]):
        records = [record(f"tests/test_freeze.py::test_until[{index}]", status="frozen",
                          freeze_expires=moment)]
        response = client.post(f"/api/v1/suites/{world.suite.slug}/verdicts",
                               data=body({"records": records, "patch": f"p{index}"}),
                               content_type="application/json")
        statuses[moment] = response.status_code
        if response.status_code == 422:
            assert response.json()["details"][0]["field"] == "freeze_expires", moment
        elif response.status_code == 201:
            answer = response.json()
            assert viewer.get(answer["url"]).status_code == 200, moment
    assert unexpected(statuses, {201, 422}) == {}
    for moment in ("9999-12-31", "9999-12-31T23:59:59Z", "0001-01-01"):
        assert statuses[moment] == 201, moment


def test_an_import_at_the_ends_of_the_calendar(world, client_for, tmp_path):
    """An entry that expired in year 1 is kept as expired; one expiring in 9999 is past
    the expiry bounds. Every page and answer that shows the kept one still works."""
    nodes = {day: f"tests/test_import.py::test_expires[{day}]" for day in DAYS}
    path = tmp_path / "flake_ledger.json"
    path.write_text(json.dumps({node: {"class": "flake", "n": 200, "fails": 5, "owner": "@finley",
                                       "expires": day, "evidence": "ci/run-1"}
                                for day, node in nodes.items()}))
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_ledger", world.suite.slug, str(path), "--keep-valid",
                     stdout=StringIO(), stderr=err)
    kept = dict(QuarantineEntry.objects.filter(node__nodeid__in=nodes.values())
                .values_list("node__nodeid", "expires"))
    assert kept == {nodes["0001-01-01"]: date(1, 1, 1), nodes["0001-01-02"]: date(1, 1, 2)}
    for day in ("9999-12-30", "9999-12-31"):
        assert f"Refused {nodes[day]}: expires" in err.getvalue()
    for day in PAST_THE_ENDS:
        assert f"Refused {nodes[day]}: expires" in err.getvalue()

    client = client_for(world.users["owner"])
    client.raise_request_exception = False
    slug = world.suite.slug
    entry = QuarantineEntry.objects.get(node__nodeid=nodes["0001-01-01"])
    urls = [reverse("overview", args=[slug]), reverse("ledger", args=[slug]),
            reverse("entry", args=[slug, entry.pk]), reverse("entry_renew", args=[slug, entry.pk]),
            reverse("trends", args=[slug]), *_csv_urls(client, world.suite)]
    urls += [f"{reverse('ledger', args=[slug])}?state={state}"
             for state in ("active", "expiring", "expired", "cleared", "tier_violation")]
    statuses = {url: client.get(url).status_code for url in urls}
    reader = api(world.tokens["read"])
    for view in ("compact", "full"):
        statuses[f"ledger API {view}"] = reader.get(
            f"/api/v1/suites/{slug}/ledger", {"view": view}).status_code
    assert unexpected(statuses, {200}) == {}
    served = reader.get(f"/api/v1/suites/{slug}/ledger").json()
    assert served[nodes["0001-01-01"]]["expires"] == "0001-01-01"


# Django's SQLite backend turns a filter's moment into UTC before it binds it, and a moment
# early on 1 January of year 1 east of UTC is in year 0 (late on 31 December 9999 west of
# UTC, in year 10000): OverflowError, a server error. The admin's own filter links never
# write one; a staff member can, by hand.
PAST_THE_CALENDAR_IN_UTC = ["0001-01-01 00:00:00+14:00", "9999-12-31 23:59:59-14:00"]


def _admin_date_filter(client, moment: str) -> dict:
    url = reverse("admin:ledger_quarantineentry_changelist")
    return {(name, moment): client.get(url, {name: moment}).status_code
            for name in ("cleared_at__gte", "cleared_at__lt")}


@pytest.mark.wide
def test_the_admin_date_filters_at_the_ends_of_the_calendar(world, client_for):
    client = client_for(world.users["staff"])
    client.raise_request_exception = False
    statuses = {}
    # Written as the admin's own filter links write a moment: with its offset.
    moments = [f"{day} 00:00:00{offset}" for day, offset in product(DAYS, ("+00:00", "+14:00"))]
    moments += [f"{day} 23:59:59-14:00" for day in DAYS]
    for moment in moments:
        if moment not in PAST_THE_CALENDAR_IN_UTC:
            statuses.update(_admin_date_filter(client, moment))
    assert unexpected(statuses, {200, 302}) == {}


@pytest.mark.wide
@pytest.mark.parametrize("moment", PAST_THE_CALENDAR_IN_UTC)
def test_the_admin_date_filters_past_the_calendar_in_utc(world, client_for, moment):
    """Django's SQLite backend overflows turning such a moment into UTC: the list answers
    as it does any invalid filter (a redirect to ?e=1); PostgreSQL lists what matches."""
    client = client_for(world.users["staff"])
    client.raise_request_exception = False
    statuses = _admin_date_filter(client, moment)
    assert unexpected(statuses, {200, 302}) == {}
