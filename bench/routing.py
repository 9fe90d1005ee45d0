"""Send every read and write to one chosen database alias, so the same selector can be
timed against two databases in alternation."""

from __future__ import annotations

import contextlib
from contextvars import ContextVar

_selected: ContextVar[str | None] = ContextVar("bench_database", default=None)


class SelectedDatabase:
    def db_for_read(self, model, **hints):
        return _selected.get()

    def db_for_write(self, model, **hints):
        return _selected.get()

    def allow_relation(self, obj1, obj2, **hints):
        return True


@contextlib.contextmanager
def use(alias: str):
    token = _selected.set(alias)
    try:
        yield alias
    finally:
        _selected.reset(token)
