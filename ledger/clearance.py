"""Release when fixed (issue 20): the ready-to-clear flag, kept up to date at ingest.

The ledger never reads ``runs`` or ``junit``: a report hands the measurements of the nodes
that hold an open entry to ``measurements_seen``, and a gate batch or a JUnit file the
nodes it saw failing to ``ci_failures_seen``, each inside its own transaction. Each entry
keeps a short trail of its node's measurements since it was created (report, n, fails,
classification, clean) and of the failures CI saw since, which is all the ready rule reads,
the entry page's "what it takes to clear" starts from, and a one-click clearance cites as
evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime

from django.core.exceptions import ValidationError
from django.db import transaction

from flakeboard import rules

from .audit import BOARD_ACTOR, bump_ledger_revision
from .models import QuarantineEntry, Suite
from .quarantine import quarantine_clear

CHUNK = 5000  # ids per IN list: far under SQLite's variable limit
FLAG_FIELDS = ["ready_to_clear", "ready_since"]


def _flag(entry: QuarantineEntry, k: int, now: datetime) -> bool:
    """Set the entry's flag from its trail; True when it flipped."""
    ready = rules.ready_to_clear(entry.trail_clean, k)
    flipped = ready != entry.ready_to_clear
    entry.ready_to_clear = ready
    entry.ready_since = (entry.ready_since or now) if ready else None
    return flipped


def _saved(suite: Suite, entries: list[QuarantineEntry], fields: list[str], flipped: bool):
    if len(entries) == 1:
        # The usual upload's one entry: a plain UPDATE, which costs a quarter of the
        # building of bulk_update's CASE per field (no signal listens to either).
        entries[0].save(update_fields=fields)
    else:
        QuarantineEntry.objects.bulk_update(entries, fields, batch_size=500)
    if flipped:
        # The full ledger view shows the flag: a new revision, so no stale copy is served.
        bump_ledger_revision(suite)


def trail_instant(now: datetime) -> str:
    """An instant as the trail keeps it: ISO 8601 in UTC, to the microsecond, one format
    so that instants sort as text."""
    return now.astimezone(UTC).isoformat(timespec="microseconds")


def _open_entries(field: str, keys) -> list[QuarantineEntry]:
    keys = sorted(keys)
    return [
        entry
        for start in range(0, len(keys), CHUNK)
        for entry in QuarantineEntry.objects.open()
        .filter(**{f"{field}__in": keys[start : start + CHUNK]})
        .only("pk", "node_id", "trail", *FLAG_FIELDS)
    ]


def _held(held: Iterable[QuarantineEntry] | None, field: str, keys) -> list[QuarantineEntry]:
    """The open entries whose ``field`` is among ``keys``: of ``held``, the open entries the
    upload read under the suite's lock (so still as stored), when it gives them; else read."""
    if held is None:
        return _open_entries(field, keys)
    return [entry for entry in held if getattr(entry, field) in keys]


def measurements_seen(
    *, suite: Suite, report: int,
    measured: Mapping[int, tuple[int, int, rules.Classification | None]], now: datetime,
    held: Iterable[QuarantineEntry] | None = None,
) -> int:
    """One report's measurements of nodes with an open entry, as ``{entry id: (n, fails,
    classification)}``: each joins its entry's trail, judged against the suite's policy
    (``suite`` as the upload read it), and the entry's flag follows. Answers how many flags
    flipped. ``held``: the open entries the upload read, which hold those of ``measured``.

    Called by the upload inside its transaction, under the suite's lock; two queries per
    report whatever its size (the entries, one bulk update), one when it gives ``held``,
    none without an entry.
    """
    if not measured:
        return 0
    policy, k = suite.policy, suite.clear_after_clean_measurements
    entries = _held(held, "pk", measured)
    flipped = 0
    for entry in entries:
        n, fails, classification = measured[entry.pk]
        seen = {"report": report, "n": n, "fails": fails,
                "classification": classification and classification.value,
                "clean": rules.clean_measurement(n, fails, classification, policy),
                "at": trail_instant(now)}
        entry.trail = rules.trail_after(entry.trail, seen)
        flipped += _flag(entry, k, now)
    _saved(suite, entries, ["trail", *FLAG_FIELDS], bool(flipped))
    return flipped


def ci_failures_seen(*, suite: Suite, nodes, source: str, commit: str, now: datetime,
                     held: Iterable[QuarantineEntry] | None = None) -> int:
    """CI saw these nodes (pks) fail, in a gate batch or a JUnit file (``source``) at
    ``commit``: the open entry of each joins the sighting to its trail, and is not ready
    to clear until measurements after it are clean again. Answers how many flags flipped.
    ``held``: the open entries the upload read, which hold those of ``nodes``.

    Called by the upload inside its transaction; two queries whatever the upload's size
    (the entries of the failing nodes, one bulk update), one when it gives ``held``, none
    when nothing failed.
    """
    if not nodes:
        return 0
    k = suite.clear_after_clean_measurements
    entries = _held(held, "node_id", set(nodes))
    flipped = 0
    for entry in entries:
        entry.trail = rules.trail_after_ci_failure(entry.trail, source, commit,
                                                   trail_instant(now))
        flipped += _flag(entry, k, now)
    _saved(suite, entries, ["trail", *FLAG_FIELDS], bool(flipped))
    return flipped


def ready_flags_refresh(*, suite: Suite, now: datetime) -> int:
    """Every open entry's flag again, after the suite's clear_after_clean_measurements
    changed (the trails stay: they hold enough for any count the policy allows)."""
    with transaction.atomic():
        entries = list(QuarantineEntry.objects.filter(suite=suite).open()
                       .only("pk", "trail", *FLAG_FIELDS))
        k = suite.clear_after_clean_measurements
        changed = [entry for entry in entries if _flag(entry, k, now)]
        _saved(suite, changed, FLAG_FIELDS, bool(changed))
    return len(changed)


def clearing_note(entry: QuarantineEntry, k: int, report_url: Callable[[int], str]) -> str:
    """The note of a one-click clearance: the measurements that made the entry ready, each
    with a link to its report, as the evidence the audit keeps."""
    # A ready entry's last k steps are its clean measurements; one that is not ready any
    # more (CI saw its node fail since the page was read) is refused by the clear, and
    # its sighting, which cites no report, is no evidence here.
    cited = [(seen, report) for seen in entry.trail[-k:]
             if (report := rules.step_report(seen)) is not None]
    lines = [f"Ready to clear: the last {rules.plural(len(cited), 'measurement')} since the "
             "entry was made were each within budget."]
    lines += [f"- {seen['fails']} of {seen['n']} runs failed: {report_url(report)}"
              for seen, report in cited]
    return "\n".join(lines)


def auto_clear(
    *, suite: Suite, report_url: Callable[[int], str], dry_run: bool = False
) -> list[QuarantineEntry]:
    """Clear every ready entry of a suite that turned auto-clear on, as the one-click
    clearance does: through the clear service, with the clean measurements as the note's
    evidence, the board as the actor (one audit event each). Answers the entries cleared,
    or in a dry run those it would clear; an entry found not ready (or cleared) by the time
    it is locked is left as it is. A suite with auto-clear off: none."""
    if not suite.auto_clear:
        return []
    ready = list(QuarantineEntry.objects.filter(suite=suite).ready_to_clear()
                 .select_related("node").order_by("pk"))
    if dry_run:
        return ready
    k = suite.clear_after_clean_measurements
    cleared = []
    for entry in ready:
        try:
            cleared.append(quarantine_clear(entry=entry, actor=BOARD_ACTOR, if_ready=True,
                                            note=clearing_note(entry, k, report_url)))
        except ValidationError:
            continue  # another run, or an upload, changed it since it was read
    return cleared
