"""What an issue says: its title names the test; its body gives the rate and its bound,
the owner, the expiry, what other apps know of the node, and links back to the board. An
issue opened for a test turning flaky gives its evidence instead (``trackers.triggers``).
Apps above this one (the board: failure signatures, the diagnosis and its reproduction
command) add their lines through ``FACTS`` when Django starts."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.urls import reverse

from flakeboard import rules
from ledger.models import Node, QuarantineEntry, Suite

# Each takes a suite and a node and answers lines for its issue's body (none when it knows
# nothing).
FACTS: list[Callable[[Suite, Node], list[str]]] = []


def _url(name: str, *args) -> str:
    return settings.BASE_URL.rstrip("/") + reverse(name, args=args)


def node_link(suite: Suite, node: Node) -> str:
    return f"Node: {_url('node', suite.slug, node.key)}"


def links(entry: QuarantineEntry) -> list[str]:
    return [f"Entry: {_url('entry', entry.suite.slug, entry.pk)}",
            node_link(entry.suite, entry.node)]


def assignee(entry: QuarantineEntry) -> str | None:
    """The owner's handle, for a tracker that assigns by handle; None for an e-mail."""
    return entry.owner[1:] if entry.owner.startswith("@") else None


def title(node: Node) -> str:
    return f"Flaky test: {node.nodeid}"


def body(entry: QuarantineEntry) -> str:
    suite = entry.suite
    lines = [
        f"{entry.node.nodeid} is quarantined in Flakeboard ({suite.title}).",
        "",
        f"Rate: {entry.fails} failures in {entry.n} runs; upper 95% bound "
        f"{entry.upper95:.2%} against the suite's budget of {suite.max_upper_rate:.2%}.",
        f"Owner: {entry.owner}",
        f"Expires: {entry.expires.isoformat()} (the gate fails the node from the day after)",
        f"Evidence: {entry.evidence}",
    ]
    for facts in FACTS:
        lines += facts(suite, entry.node)
    return "\n".join([*lines, "", *links(entry)])


def test_body(suite: Suite, node: Node, turned: str, evidence: list[str]) -> str:
    """An issue opened for a test that turned flaky (``turned``: how), before any entry."""
    lines = [f"{node.nodeid} turned flaky {turned} (Flakeboard, {suite.title}).", "",
             *evidence]
    for facts in FACTS:
        lines += facts(suite, node)
    return "\n".join([*lines, "", node_link(suite, node)])


def linked(entry: QuarantineEntry) -> str:
    """The comment on a test's issue when the test is quarantined: the entry links it."""
    return (f"Quarantined in Flakeboard until {entry.expires.isoformat()}, owner "
            f"{entry.owner}: {entry.fails} failures in {entry.n} runs, upper 95% bound "
            f"{entry.upper95:.2%}. Evidence: {entry.evidence}\n" + links(entry)[0])


def renewed(entry: QuarantineEntry) -> str:
    return (f"Renewed in Flakeboard until {entry.expires.isoformat()} (renewal "
            f"{entry.renewals}), owner {entry.owner}, on new evidence: {entry.evidence}\n"
            + links(entry)[0])


def expired(entry: QuarantineEntry) -> str:
    return (f"The quarantine expired on {entry.expires.isoformat()}: the gate fails "
            f"{entry.node.nodeid} until its owner ({entry.owner}) renews it on new evidence "
            "or clears it.\n" + links(entry)[0])


def cleared(entry: QuarantineEntry) -> str:
    clean = [seen for seen in entry.trail if rules.is_measurement(seen) and seen["clean"]]
    lines = [f"Cleared in Flakeboard: {entry.cleared_note}"]
    if clean:
        lines.append("Clean measurements since the entry was made: " + "; ".join(
            f"{seen['fails']} failures in {seen['n']} runs (report {seen.get('report', '?')})"
            for seen in clean))
    return "\n".join([*lines, links(entry)[0]])
