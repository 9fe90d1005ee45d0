"""An upload stored once per suite, whatever the timing: the frame every upload service
(flake reports, verdict batches, JUnit files) stores in."""

from __future__ import annotations

from collections.abc import Callable

from django.db import IntegrityError, transaction

from ledger.locks import lock_suite
from ledger.models import Suite


def stored_once[Outcome](suite: Suite, stored: Callable[[], Outcome | None],
                         store: Callable[[Suite], Outcome]) -> Outcome:
    """``store(locked suite)`` in one transaction under the suite's write lock, unless the
    same upload is stored already: then ``stored()``, its outcome, answers. Written once
    because each of its three looks matters: before the lock (the cheap, usual retry),
    under it (an equal upload committed while this one waited) and after an
    IntegrityError (an equal upload committed first, on a database that did not make
    this one wait)."""
    if (outcome := stored()) is not None:
        return outcome
    try:
        with transaction.atomic():
            locked = lock_suite(suite.pk)
            # An identical upload may have committed while this one waited for the lock.
            if (outcome := stored()) is not None:
                return outcome
            return store(locked)
    except IntegrityError:
        # An identical upload committed first: answer with what it stored.
        if (outcome := stored()) is not None:
            return outcome
        raise
