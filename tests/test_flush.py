"""The flush after a transactional test (tests/flush.py) keeps the content types and
permissions that ``post_migrate`` wrote, ids and all, and empties every other table; when a
test changed them, it is Django's flush, which writes them anew."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType

from ledger.models import Suite
from tests.flush import flush
from tests.world import make_suite

pytestmark = pytest.mark.django_db(transaction=True)


def kept() -> tuple[list, list]:
    return (list(ContentType.objects.order_by("pk").values_list("pk", "app_label", "model")),
            list(Permission.objects.order_by("pk")
                 .values_list("pk", "content_type_id", "codename", "name")))


def without_ids(rows: tuple[list, list]) -> tuple[set, set]:
    types = {pk: (app, model) for pk, app, model in rows[0]}
    return set(types.values()), {(types[ct], code, name) for _, ct, code, name in rows[1]}


def test_the_content_types_and_permissions_are_kept_with_their_ids():
    flush(["default"])  # the rows as post_migrate wrote them, whatever ran before
    written = kept()
    suite_type = ContentType.objects.get_for_model(Suite)  # now in ContentType's cache
    make_suite("suite")

    flush(["default"])
    assert not Suite.objects.exists()
    assert kept() == written
    assert ContentType.objects.get_for_model(Suite) == suite_type
    assert ContentType.objects.get(app_label="ledger", model="suite").pk == suite_type.pk


@pytest.mark.parametrize("change", ["added", "removed", "renamed"])
def test_a_changed_table_is_flushed_whole_and_written_anew(change):
    flush(["default"])
    written = kept()
    suite_type = ContentType.objects.get_for_model(Suite)
    if change == "added":
        Permission.objects.create(codename="odd", name="Odd", content_type=suite_type)
    elif change == "removed":
        ContentType.objects.filter(pk=suite_type.pk).delete()
    else:
        Permission.objects.filter(codename="add_suite").update(name="Renamed")

    flush(["default"])
    anew = kept()
    assert anew != written and without_ids(anew) == without_ids(written)
    again = ContentType.objects.get_for_model(Suite)  # the cache holds the new row
    assert again.pk == ContentType.objects.get(app_label="ledger", model="suite").pk
    flush(["default"])  # the rows written anew are the ones kept from then on
    assert kept() == anew and ContentType.objects.get_for_model(Suite) == again
