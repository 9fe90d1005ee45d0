"""The flush after a transactional test, without making the content types and permissions
again each time.

Django empties every table after a transactional test (``flush``) and then sends
``post_migrate``, whose receivers (contenttypes' and auth's) write the content types and
permissions back, under new ids: some 40 ms a test, twenty times the flush itself. Here
those two tables are kept when their rows are the ones the last whole flush wrote, so there
is nothing to write back and ``post_migrate`` is not sent; every other table is emptied as
before. When a test changed either table (a row added, removed or altered), the flush is
Django's own, signal and all, and its rows are the ones kept from then on. So each test
finds the same content types and permissions, under the same ids, as the cache of
``ContentType`` holds them.
"""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connections
from django.test import TransactionTestCase

KEPT = ("django_content_type", "auth_permission")
ROWS = {
    "django_content_type": "SELECT id, app_label, model FROM django_content_type ORDER BY id",
    "auth_permission": "SELECT id, content_type_id, codename, name FROM auth_permission "
                       "ORDER BY id",
}

_written: dict[str, list] = {}  # by database alias: the rows the last whole flush wrote


def _kept_rows(connection) -> list:
    with connection.cursor() as cursor:
        rows = []
        for sql in ROWS.values():
            cursor.execute(sql)
            rows.append(cursor.fetchall())
    return rows


def _empty_all_but_kept(connection) -> None:
    """Every table of the project's apps emptied but the two kept ones (as ``flush``
    without ``reset_sequences`` does, in one transaction)."""
    tables = [table for table in connection.introspection.django_table_names(
        only_existing=True, include_views=False) if table not in KEPT]
    connection.ops.execute_sql_flush(
        connection.ops.sql_flush(no_style(), tables, reset_sequences=False))


def flush(aliases) -> None:
    """Empty the databases of ``aliases`` after a test: the flush above where the kept rows
    are as the last whole flush wrote them, else Django's, whose rows are kept from then on."""
    for alias in aliases:
        connection = connections[alias]
        if alias in _written and _kept_rows(connection) == _written[alias]:
            _empty_all_but_kept(connection)
            continue
        call_command("flush", verbosity=0, interactive=False, database=alias,
                     reset_sequences=False, allow_cascade=False, inhibit_post_migrate=False)
        _written[alias] = _kept_rows(connection)


@pytest.fixture(autouse=True, scope="session")
def _flush_keeps_content_types():
    """Transactional tests end with the flush above (pytest-django's test cases are
    Django's ``TransactionTestCase``)."""
    django_teardown = TransactionTestCase._fixture_teardown

    def teardown(self):
        if self.available_apps is not None or self.serialized_rollback:
            return django_teardown(self)  # a subset of the apps, or rows to load again
        return flush(self._databases_names(include_mirrors=False))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TransactionTestCase, "_fixture_teardown", teardown)
        yield
