"""An entry as every page shows it: its state, its label, when it expires, whether it is
ready to clear and whether its owner is outside CODEOWNERS, for one ``today``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from flakeboard import rules

from .codeowners import owner_outside_codeowners
from .forms.entries import STATE_LABELS
from .models import QuarantineEntry


def expiry_phrase(expires: date, today: date) -> str:
    days = (expires - today).days
    if days == 0:
        return "today"
    if days == 1:
        return "tomorrow"
    if days > 1:
        return f"in {days} days"
    return "yesterday" if days == -1 else f"{-days} days ago"


@dataclass(frozen=True)
class EntryRow:
    """An entry with the facts every page shows beside it, computed for one ``today``."""

    entry: QuarantineEntry
    state: rules.EntryState
    today: date
    # Beside the state, never instead of it; False for an entry as it was at an upload.
    ready_to_clear: bool = False
    # The owner is not among the code owners CODEOWNERS gives the node's file.
    outside_codeowners: bool = False

    @property
    def state_label(self) -> str:
        return STATE_LABELS[self.state]

    @property
    def is_open(self) -> bool:
        return self.state is not rules.EntryState.CLEARED

    @property
    def expires_in(self) -> str:
        return expiry_phrase(self.entry.expires, self.today)

    @property
    def age_days(self) -> int:
        return self.entry.age_days(self.today)


def entry_row(entry: QuarantineEntry, today: date,
              codeowners: rules.Codeowners | None = None) -> EntryRow:
    """The entry as a row; with the suite's ``codeowners``, an open entry's owner is
    checked against its node's code owners."""
    state = entry.state(today)
    is_open = state is not rules.EntryState.CLEARED
    ready = entry.ready_to_clear and is_open
    outside = is_open and codeowners is not None and owner_outside_codeowners(codeowners, entry)
    return EntryRow(entry, state, today, ready, outside)
