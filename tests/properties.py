"""How hard the hypothesis properties try, written once: every property of the suite takes
its settings from here (the API fuzz counts its own cases, FUZZ_EXAMPLES).

The full run (``make test``) gives each property the count it asks for. The fast lane
(``make test-fast``) sets HYPOTHESIS_PROFILE=fast, and the profile of that name caps every
count: each property still runs, on fewer examples.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from django.db import transaction
from hypothesis import HealthCheck, settings

FAST = "fast"
settings.register_profile(FAST, max_examples=5)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def examples(full: int) -> int:
    """``full`` examples, or no more than the fast profile's when it is loaded."""
    if settings.get_current_profile_name() == FAST:
        return min(full, settings.default.max_examples)
    return full


# Pure functions, no I/O: no deadline, so a slow CI machine cannot make these flaky.
PROPERTY = settings(deadline=None, max_examples=examples(300))


def db_property(full: int) -> settings:
    """A property whose examples write to the database, each in a transaction it rolls back:
    no deadline, and no health check for the function-scoped fixtures its examples share or
    for examples the database slows down."""
    return settings(
        deadline=None,
        max_examples=examples(full),
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


@contextmanager
def rolled_back():
    """One example's writes, undone when it ends: the examples of a property share the
    test's database, and each starts from what the test set up."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)
