"""On SQLite, the commit that leaves ``SQLITE_WAL_CHECKPOINT_PAGES`` or more pages in the WAL
copies them into the database, on that request's path. A 10,000-test JUnit upload writes
5,000 to 7,000 pages: at SQLite's default of 1,000 each upload checkpointed alone; now the
pages of several uploads wait for one checkpoint."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection
from django.db.backends.sqlite3.base import DatabaseWrapper

pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif("connection.vendor != 'sqlite'", reason="SQLite's WAL")]
PAGES = 2_000  # a commit's pages, past SQLite's default
FILL = """WITH RECURSIVE row(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM row WHERE i < %s)
INSERT INTO filler SELECT zeroblob(3500) FROM row"""  # a row fills a 4 KiB page


def test_two_commits_of_pages_wait_for_one_checkpoint(tmp_path):
    assert settings.SQLITE_WAL_CHECKPOINT_PAGES > 2 * PAGES
    board = DatabaseWrapper({**connection.settings_dict, "NAME": str(tmp_path / "wal.sqlite3")},
                            alias="checkpoint")
    try:
        with board.cursor() as cursor:
            assert cursor.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            cursor.execute("CREATE TABLE filler (data BLOB)")
            cursor.execute(FILL, [PAGES])
            cursor.execute(FILL, [PAGES])
            # Busy or not, the frames in the WAL, the frames copied: a checkpoint after the
            # first commit would have started the WAL again with the second's pages.
            _, frames, _ = cursor.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        board.close()
    assert frames > 2 * PAGES
