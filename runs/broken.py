"""Broken, not flaky: a node whose latest measurement failed every one of its runs
(``rules.always_failing``, on the counts pooled at its commit when there are some). A new
test failing 30 of 30 runs of the guard is one. Quarantine is for flaky tests (SPEC 2): the
quarantine service refuses such a node (runs registers ``refusal`` with it at start, since
the ledger reads no measurement), and no page offers it the form."""

from __future__ import annotations

from dataclasses import dataclass

from flakeboard import rules
from ledger.models import Node, Suite

from .models import Measurement


@dataclass(frozen=True)
class Broken:
    """The measurement that shows a node broken: its report, and its runs (all failed)."""

    report: int
    runs: int


def counts(m: Measurement) -> tuple[int, int]:
    """A measurement's runs and failures, pooled at its commit when they were."""
    return (m.pooled["n"], m.pooled["fails"]) if m.pooled else (m.n, m.fails)


def broken(m: Measurement) -> Broken | None:
    """``m``'s evidence that its node is broken, or None when some run passed."""
    runs, failures = counts(m)
    always = rules.always_failing(runs, failures, m.classification or None)
    return Broken(m.report_id, runs) if always else None


def latest_broken(suite: Suite, node: Node) -> Broken | None:
    """Whether ``node``'s latest measurement shows it broken."""
    latest = (
        Measurement.objects.filter(suite=suite, node=node).order_by("-created_at", "-pk").first()
    )
    return None if latest is None else broken(latest)


def refusal(suite: Suite, node: Node) -> str:
    """The quarantine service's refusal of a broken node, or ""."""
    if (found := latest_broken(suite, node)) is None:
        return ""
    return (
        f"{node.nodeid} cannot be quarantined: it failed all {found.runs} runs of its latest "
        f"measurement (report {found.report}), so it is broken, not flaky. Quarantine is for "
        "flaky tests: fix it or remove it."
    )
