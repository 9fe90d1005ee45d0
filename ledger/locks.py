"""The suite's write lock: the one lock order of every write.

Every transaction that writes a suite's ledger, nodes, settings, tier rules, members or
uploads takes its suite's lock first, and only then touches other rows. Writers of one
suite therefore queue in one order and cannot deadlock; writers of different suites do not
wait for each other.

The lock is ``FOR NO KEY UPDATE``: it does not conflict with the ``FOR KEY SHARE`` that
PostgreSQL's foreign-key checks take on the suite row, so rows that merely reference the
suite are never blocked by it. SQLite has one writer at a time and needs no row lock.
"""

from __future__ import annotations

from django.db import transaction

from .models import Suite


def lock_suite(suite_id: int) -> Suite:
    """Lock the suite's row for this transaction and return it as it is now."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("lock_suite holds only inside transaction.atomic().")
    return Suite.objects.select_for_update(no_key=True).get(pk=suite_id)


def delete_in_chunks(rows, size: int, delete, total=0):
    """Run ``delete(suite_id, pks)`` on ``rows`` (a QuerySet of rows with a suite), ``size``
    at a time in primary-key order, each suite's share of a chunk in its own transaction
    under the suite's lock; ``total`` plus what each call answered. The walk goes by key,
    so a row ``delete`` decides to keep is not asked about again."""
    last = None  # a key, a tuple for a composite one
    while chunk := list((rows if last is None else rows.filter(pk__gt=last)).order_by("pk")
                        .values_list("suite_id", "pk")[:size]):
        last = chunk[-1][1]
        for suite_id in sorted({suite for suite, _ in chunk}):
            with transaction.atomic():
                lock_suite(suite_id)
                total += delete(suite_id, [pk for suite, pk in chunk if suite == suite_id])
    return total
