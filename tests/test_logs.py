"""The board's logging (flakeboard/logs.py): a request refused with a 4xx is logged as its
line alone, without the traceback Django attaches; a server error keeps its traceback."""

from __future__ import annotations

import io
import logging
import sys

import pytest
from django.urls import reverse

from flakeboard.logs import RefusalsWithoutTraceback


def _record(status: int | None) -> logging.LogRecord:
    try:
        raise ValueError("refused")
    except ValueError:
        record = logging.LogRecord("django.request", logging.WARNING, __file__, 1, "%s",
                                   ("refused",), sys.exc_info())
    if status is not None:
        record.status_code = status
    return record


@pytest.mark.parametrize(("status", "keeps"), [(400, False), (403, False), (499, False),
                                               (500, True), (503, True), (None, True)])
def test_only_a_4xx_loses_its_traceback(status, keeps):
    record = _record(status)
    assert RefusalsWithoutTraceback().filter(record) is True  # the line is always logged
    assert (record.exc_info is not None) is keeps


@pytest.mark.django_db
def test_a_denied_page_is_logged_as_one_line(client, suite, viewer, caplog):
    client.force_login(viewer)
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.get(reverse("settings", args=[suite.slug]))
    assert response.status_code == 403
    [record] = [r for r in caplog.records if r.name == "django.request"]
    assert record.status_code == 403 and record.exc_info is None
    assert record.getMessage() == f"Forbidden (Permission denied): /suites/{suite.slug}/settings/"
    assert "Traceback" not in caplog.text


@pytest.mark.django_db
def test_a_bad_host_is_logged_to_the_console_as_one_line(client):
    """Django's security loggers log a refused Host with its exception; the console gets
    the line alone."""
    [console] = [h for h in logging.getLogger().handlers
                 if type(h) is logging.StreamHandler]  # the settings' (pytest adds its own)
    written = io.StringIO()
    before = console.setStream(written)
    try:
        response = client.get("/", headers={"host": "evil.example"})
    finally:
        console.setStream(before)
    assert response.status_code == 400
    assert "Invalid HTTP_HOST header: 'evil.example'" in written.getvalue()
    assert "Traceback" not in written.getvalue()
