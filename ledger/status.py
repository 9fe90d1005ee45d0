"""A suite's gate status now (``rules.GateStatusNow``) as the status endpoint answers it,
the overview heads with it and the badge draws it: one read, one set of links."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

from django.urls import reverse

from flakeboard import rules

from .models import Suite
from .selectors import entry_counts, gate_status_now

# The ledger's rows behind each cause: the ledger filtered on that state. The share's
# rows are every open entry.
CAUSE_STATE = {
    rules.StatusCause.EXPIRED: rules.EntryState.EXPIRED,
    rules.StatusCause.TIER_VIOLATION: rules.EntryState.TIER_VIOLATION,
    rules.StatusCause.OVER_CAP: None,
}


def cause_rows_path(suite: Suite, cause: rules.StatusCause) -> str:
    path = reverse("ledger", args=[suite.slug])
    state = CAUSE_STATE[cause]
    return f"{path}?state={state.value}" if state else path


def status_causes(suite: Suite, now: rules.GateStatusNow,
                  absolute: Callable[[str], str] = str) -> list[dict]:
    """Each cause with its count, its words ("1 expired entry") and its rows' address."""
    return [
        {"cause": cause.value, "count": count, "text": rules.cause_text(cause, count),
         "url": absolute(cause_rows_path(suite, cause))}
        for cause, count in now.causes.items()
    ]


def status_answer(suite: Suite, today: date, absolute: Callable[[str], str] = str) -> dict:
    """What ``GET /api/v1/suites/{suite}/status`` answers; ``absolute`` makes a path a full
    address."""
    counts = entry_counts(suite, today)
    now = gate_status_now(suite, today, counts)
    share = now.share
    return {
        "suite": suite.slug,
        "today": today.isoformat(),
        "passing": now.passing,
        "summary": rules.status_summary(now),
        "causes": status_causes(suite, now, absolute),
        "entries": counts,
        "share": {**share.answer(), **share.source_answer(), "headroom": share.headroom},
        "ledger_revision": suite.ledger_revision,
        "url": absolute(reverse("overview", args=[suite.slug])),
    }
