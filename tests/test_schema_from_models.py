"""The fast lane makes its SQLite test database from the models (``--nomigrations``,
tests/conftest.py), not by running the migrations: that holds only while, on SQLite, the
migrations make exactly the tables, columns, indexes and keys the models say. Each is
built here in a database file of its own and the two are compared. (On PostgreSQL the
migrations add triggers and storage options, and every run migrates.)"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.apps import apps
from django.db import connections
from django.db.backends.sqlite3.base import DatabaseWrapper
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.slow  # runs every migration: about 2 s


@contextmanager
def _connection(path) -> Iterator[DatabaseWrapper]:
    """A connection to a database file of its own, known to Django while it is open."""
    alias = f"schema_{path.stem}"
    settings = {**connections["default"].settings_dict, "ENGINE": "django.db.backends.sqlite3",
                "NAME": str(path), "OPTIONS": {}}
    connections[alias] = connection = DatabaseWrapper(settings, alias=alias)
    try:
        yield connection
    finally:
        connection.close()
        del connections[alias]


def migrated(path) -> None:
    with _connection(path) as connection:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def made_from_models(path) -> None:
    """As ``migrate --run-syncdb`` with no migrations does: each model's table, its
    many-to-many tables with it."""
    with _connection(path) as connection, connection.schema_editor() as editor:
        for model in apps.get_models():
            if model._meta.managed and not model._meta.proxy:
                editor.create_model(model)


def schema(path) -> dict[str, dict]:
    """Each table's columns, indexes and foreign keys, in no order: a column added by a
    later migration comes last in its table, which no query depends on."""
    with sqlite3.connect(path) as db:
        tables = [name for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        found = {}
        for table in tables:
            indexes = {}
            for _, name, unique, _, partial in db.execute(f'PRAGMA index_list("{table}")'):
                columns = tuple(row[2] for row in db.execute(f'PRAGMA index_info("{name}")'))
                # An automatic index is named by its place; a declared one by its name.
                key = columns if name.startswith("sqlite_autoindex") else name
                indexes[key] = (columns, unique, partial)
            found[table] = {
                "columns": {row[1:] for row in db.execute(f'PRAGMA table_info("{table}")')},
                "indexes": indexes,
                "keys": {row[2:] for row in db.execute(f'PRAGMA foreign_key_list("{table}")')},
                "checks": sorted(_checks(db, table)),
            }
    return found


def _checks(db, table) -> list[str]:
    (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    return [part.strip() for part in sql.split(", ") if part.lstrip().startswith("CONSTRAINT")]


def test_on_sqlite_the_migrations_make_what_the_models_say(tmp_path, django_db_blocker):
    with django_db_blocker.unblock():  # two databases of the test's own, not the test one
        migrated(tmp_path / "migrated.sqlite3")
        made_from_models(tmp_path / "models.sqlite3")
    by_migrations = schema(tmp_path / "migrated.sqlite3")
    by_models = schema(tmp_path / "models.sqlite3")
    del by_migrations["django_migrations"]  # the migrations' own record
    assert by_migrations.keys() == by_models.keys()
    for table, made in by_models.items():
        assert by_migrations[table] == made, table
