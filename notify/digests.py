"""A suite's digests for a day: which entries need their owner (by the ledger's own state
definitions), which API tokens need a lead (expiring within 14 days), each item's links, and
who reads which items."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from flakeboard import rules
from ledger.models import ApiToken, QuarantineEntry, Suite
from ledger.tokens import tokens_expiring

from .models import Delivery
from .recipients import lead_addresses, owner_addresses

Kind = Delivery.Kind
# A digest's sections, in this order: what fails the gate now comes first.
SECTIONS = [Kind.EXPIRED, Kind.EXPIRING, Kind.TIER_VIOLATION, Kind.READY_TO_CLEAR]
# What an owner can do about each kind: a tier violation can only leave the ledger.
ACTIONS = {
    Kind.EXPIRED: ("renew", "clear"),
    Kind.EXPIRING: ("renew", "clear"),
    Kind.TIER_VIOLATION: ("clear",),
    Kind.READY_TO_CLEAR: ("clear",),
}


@dataclass(frozen=True)
class Item:
    kind: Kind
    entry: QuarantineEntry

    @property
    def key(self) -> str:
        return f"entry:{self.entry.pk}"

    @property
    def links(self) -> list[tuple[str, str]]:
        """(action, absolute URL) for each thing the owner can do about the item."""
        return [
            (action, settings.BASE_URL + reverse(f"entry_{action}",
                                                 args=[self.entry.suite.slug, self.entry.pk]))
            for action in ACTIONS[self.kind]
        ]


@dataclass(frozen=True)
class TokenItem:
    """An API token of the suite that expires within 14 days: told to the suite's leads.
    Its deliveries are of the kind ``expiring`` with the key ``token:<pk>``, apart from
    the entries' ``entry:<pk>``."""

    token: ApiToken
    kind = Kind.EXPIRING
    entry = None

    @property
    def key(self) -> str:
        return f"token:{self.token.pk}"

    @property
    def links(self) -> list[tuple[str, str]]:
        """Where a lead replaces the token: the settings page's API tokens section."""
        url = reverse("settings", args=[self.token.suite.slug]) + "#tokens"
        return [("settings", settings.BASE_URL + url)]


@dataclass
class Digest:
    """One recipient's digest of one suite: their own items, the items of owners the board
    cannot reach, and the suite's expiring tokens (both for a lead)."""

    suite: Suite
    recipient: str
    today: date
    own: list[Item] = field(default_factory=list)
    unreachable: list[Item] = field(default_factory=list)
    tokens: list[TokenItem] = field(default_factory=list)

    @property
    def entry_items(self) -> list[Item]:
        return [*self.own, *self.unreachable]

    @property
    def items(self) -> list[Item | TokenItem]:
        return [*self.entry_items, *self.tokens]

    def keeping(self, wanted) -> Digest:
        """The same digest with only the items ``wanted(item)`` accepts."""
        return Digest(self.suite, self.recipient, self.today,
                      [i for i in self.own if wanted(i)],
                      [i for i in self.unreachable if wanted(i)],
                      [i for i in self.tokens if wanted(i)])


def _entries_by_kind(suite: Suite, today: date) -> Iterator[tuple[Kind, object]]:
    entries = QuarantineEntry.objects.filter(suite=suite).select_related("node", "suite")
    for kind in (Kind.EXPIRED, Kind.EXPIRING, Kind.TIER_VIOLATION):
        yield kind, entries.in_state(rules.EntryState(kind.value), today)
    # "Ready to clear" is a flag beside the state, set by the ledger at ingest.
    ready = QuarantineEntry.objects.ready_to_clear().filter(suite=suite).open()
    yield Kind.READY_TO_CLEAR, ready.select_related("node", "suite")


def suite_items(suite: Suite, today: date, skip=frozenset()) -> list[Item]:
    """The suite's entry items today, but for the entries ``skip`` names (the ones an
    auto-clear is about to close, in a dry run)."""
    return [
        Item(kind, entry)
        for kind, entries in _entries_by_kind(suite, today)
        for entry in entries.exclude(pk__in=skip).order_by("expires", "pk")
    ]


def suite_digests(
    suite: Suite, today: date, *, now: datetime | None = None, skip=frozenset()
) -> tuple[list[Digest], list[Item | TokenItem]]:
    """Every recipient's digest of the suite today, by address; and the items nobody can be
    told about (their owner unreachable, or a token expiring, and the suite without a lead
    or staff to tell). ``skip``: as suite_items."""
    items = suite_items(suite, today, skip)
    tokens = [TokenItem(token) for token in tokens_expiring([suite], now or timezone.now())]
    addresses = owner_addresses(suite, {item.entry.owner for item in items})
    leads = lead_addresses(suite) if tokens or None in addresses.values() else []
    digests: dict[str, Digest] = {}

    def digest(address: str) -> Digest:
        return digests.setdefault(address, Digest(suite, address, today))

    unheard = []
    for item in items:
        if address := addresses[item.entry.owner]:
            digest(address).own.append(item)
        elif leads:
            for lead in leads:
                digest(lead).unreachable.append(item)
        else:
            unheard.append(item)
    for lead in leads:
        digest(lead).tokens.extend(tokens)
    if not leads:
        unheard.extend(tokens)
    return [digests[address] for address in sorted(digests)], unheard
