"""A digest in words: its subject and its plain-text body."""

from __future__ import annotations

from itertools import groupby

from flakeboard import rules
from flakeboard.rules.text import plural

from .digests import SECTIONS, Digest, Item, Kind, TokenItem

# How the subject counts each kind: "2 expiring, 1 expired, 1 tier violation".
_COUNTED = {
    Kind.EXPIRING: lambda n: f"{n} expiring",
    Kind.EXPIRED: lambda n: f"{n} expired",
    Kind.TIER_VIOLATION: lambda n: plural(n, "tier violation"),
    Kind.READY_TO_CLEAR: lambda n: f"{n} ready to clear",
}
_HEADINGS = {
    Kind.EXPIRED: "Expired: the gate fails on these until they are renewed or cleared",
    Kind.EXPIRING: f"Expiring within {rules.EXPIRING_WITHIN_DAYS} days",
    Kind.TIER_VIOLATION: "Tier violations: a tier rule now forbids these quarantines",
    Kind.READY_TO_CLEAR: "Ready to clear: measured within budget since quarantined",
}


def subject(digest: Digest) -> str:
    kinds = [item.kind for item in digest.entry_items]
    counts = [_COUNTED[kind](kinds.count(kind)) for kind in _COUNTED if kind in kinds]
    if digest.tokens:
        counts.append(f"{plural(len(digest.tokens), 'token')} expiring")
    return f"Flakeboard: {', '.join(counts)} in {digest.suite.slug}"


def _when(item: Item, today) -> str:
    days = (item.entry.expires - today).days
    if days < 0:
        return f"expired {item.entry.expires.isoformat()} ({plural(-days, 'day')} ago)"
    if days == 0:
        return f"expires today, {item.entry.expires.isoformat()}"
    return f"expires {item.entry.expires.isoformat()} (in {plural(days, 'day')})"


def _item_lines(item: Item, today) -> list[str]:
    entry = item.entry
    facts = [f"owner {entry.owner}", _when(item, today)]
    if entry.renewals:
        facts.append(f"renewed {plural(entry.renewals, 'time')}")
    lines = [f"- {entry.node.nodeid}", f"  {' · '.join(facts)}"]
    lines += [f"  {action}: {url}" for action, url in item.links]
    return lines


def _sections(items: list[Item], today) -> list[str]:
    lines = []
    for kind in SECTIONS:
        of_kind = [item for item in items if item.kind == kind]
        if of_kind:
            lines += ["", f"{_HEADINGS[kind]} ({len(of_kind)})", ""]
            for item in of_kind:
                lines += _item_lines(item, today)
    return lines


def _token_lines(item: TokenItem, today) -> list[str]:
    token = item.token
    days = (token.expires_at.date() - today).days
    named = f"{token.name} ({token.prefix}…)" if token.name else f"{token.prefix}…"
    when = f"in {plural(days, 'day')}" if days > 0 else "today"
    lines = [f"- {named}, {token.scope} scope",
             f"  expires {token.expires_at:%Y-%m-%d %H:%M} UTC ({when})"]
    return lines + [f"  {action}: {url}" for action, url in item.links]


def _token_section(tokens: list[TokenItem], today) -> list[str]:
    if not tokens:
        return []
    lines = ["", f"API tokens expiring within 14 days ({len(tokens)})",
             "CI jobs using them get 401 once they expire: create a replacement and update",
             "the CI secret before then.", ""]
    for item in tokens:
        lines += _token_lines(item, today)
    return lines


def body(digest: Digest) -> str:
    suite = digest.suite
    lines = [f"Flakeboard: the quarantine ledger of {suite.title} ({suite.slug}), "
             f"{digest.today.isoformat()}."]
    lines += _sections(digest.own, digest.today)
    lines += _token_section(digest.tokens, digest.today)
    if digest.unreachable:
        lines += ["", "Unreachable owners",
                  "The board has no e-mail address for these owners, so you, a lead of the",
                  "suite, are told instead. Pass them on, or give the entries a reachable owner."]
        by_owner = sorted(digest.unreachable, key=lambda item: item.entry.owner)
        for owner, items in groupby(by_owner, key=lambda item: item.entry.owner):
            lines += ["", f"== {owner} =="]
            lines += _sections(list(items), digest.today)
    lines += ["", "--", "Sent by `manage.py notify`; each item is told at most once a day."]
    return "\n".join(lines) + "\n"
