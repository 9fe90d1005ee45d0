"""The owners view's figures (issue 20): for each entry owner, and each team CODEOWNERS
names, the open entries and their debt. Read in one query: each open entry with its
states decided by the ledger's own predicates (``predicates.entry_state_q``,
``READY_TO_CLEAR``) in SQL, then summed per owner and per team."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from django.db.models import BooleanField, Case, F, Value, When

from flakeboard import rules

from . import predicates
from .models import QuarantineEntry, Suite


@dataclass
class OwnerDebt:
    name: str
    team: bool  # a CODEOWNERS team (the ledger filters it by code owner), else an entry owner
    open: int = 0
    expiring: int = 0
    expired: int = 0
    ready: int = 0
    renewals: int = 0
    oldest: datetime | None = None

    def add(self, expiring: bool, expired: bool, ready: bool, renewals: int,
            created: datetime) -> None:
        self.open += 1
        self.expiring += expiring
        self.expired += expired
        self.ready += ready
        self.renewals += renewals
        self.oldest = created if self.oldest is None else min(self.oldest, created)

    @property
    def renewals_per_entry(self) -> float:
        return self.renewals / self.open if self.open else 0.0

    def oldest_age_days(self, today: date) -> int:
        return rules.entry_age_days(self.oldest.date(), today) if self.oldest else 0

    @property
    def debt(self) -> tuple:
        """Expired entries first (each fails the gate), then expiring, then open ones."""
        return (-self.expired, -self.expiring, -self.open, self.name.casefold())


def _flag(q) -> Case:
    return Case(When(q, then=Value(True)), default=Value(False), output_field=BooleanField())


def owner_debts(suite: Suite, today: date, codeowners: rules.Codeowners) -> list[OwnerDebt]:
    """Each entry owner's and each CODEOWNERS team's open entries, by debt."""
    rows = (
        QuarantineEntry.objects.filter(suite=suite).open()
        .annotate(
            is_expiring=_flag(predicates.entry_state_q(rules.EntryState.EXPIRING, today)),
            is_expired=_flag(predicates.entry_state_q(rules.EntryState.EXPIRED, today)),
            is_ready=_flag(predicates.READY_TO_CLEAR),
        )
        .values_list("owner", "node__nodeid", "is_expiring", "is_expired", "is_ready",
                     "renewals", "created_at")
    )
    debts: dict[tuple[bool, str], OwnerDebt] = {}
    for owner, nodeid, *figures in rows:
        teams = [name for name in codeowners.owners_of_node(nodeid) if rules.is_team(name)]
        for team, name in [(False, owner), *((True, name) for name in teams)]:
            debt = debts.setdefault((team, name), OwnerDebt(name, team))
            debt.add(*figures)
    return sorted(debts.values(), key=lambda debt: debt.debt)


def open_tickets(suite: Suite) -> list[QuarantineEntry]:
    """The open entries with a ticket: those whose issue the tracker shows closed first
    (their owner has work to do in the ledger), then by expiry."""
    return list(QuarantineEntry.objects.filter(suite=suite).open().exclude(ticket="")
                .select_related("node").order_by(F("ticket_closed_at").desc(nulls_last=True),
                                                  "expires", "pk"))
