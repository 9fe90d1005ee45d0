"""Staff read a JUnit file in the admin with its results, in the file's order: a result is
keyed by its place in its file, and has no admin page of its own."""

from __future__ import annotations

import pytest
from django.urls import NoReverseMatch, reverse

from junit import admin as junit_admin
from junit.ingest import junit_ingest
from tests.junit_files import junit_xml

pytestmark = pytest.mark.django_db
CASES = [("tests.test_b", "test_second", "failed", "AssertionError: 1 != 2"),
         ("tests.test_a", "test_first", "passed"), ("tests.test_c", "test_third", "skipped")]


@pytest.fixture
def file(suite):
    return junit_ingest(suite=suite, body=junit_xml(*CASES), actor="ci",
                        query={"commit": "c0ffee"}).file


def page(client, staff, file) -> str:
    staff.is_staff = staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    answer = client.get(reverse("admin:junit_junitfile_change", args=[file.pk]))
    assert answer.status_code == 200
    return answer.content.decode()


def test_a_files_page_lists_its_results_in_the_files_order(client, staff, file):
    html = page(client, staff, file)
    rows = [html.index(f"tests/test_{letter}.py::test_{name}")
            for letter, name in (("b", "second"), ("a", "first"), ("c", "third"))]
    assert rows == sorted(rows)
    assert "<td>failed</td>" in html and "<td>skipped</td>" in html
    assert "AssertionError" in html  # the failure's signature
    assert "more, not shown" not in html


def test_a_large_files_page_counts_the_results_it_does_not_show(client, staff, file,
                                                                 monkeypatch):
    monkeypatch.setattr(junit_admin, "RESULTS_SHOWN", 1)
    html = page(client, staff, file)
    assert "tests/test_b.py::test_second" in html
    assert "tests/test_a.py::test_first" not in html
    assert "and 2 more, not shown." in html


def test_a_result_has_no_admin_page_of_its_own():
    with pytest.raises(NoReverseMatch):
        reverse("admin:junit_caseresult_changelist")
