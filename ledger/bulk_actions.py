"""Renew or clear many entries at once, with one reason: each entry goes through the
single-entry service of ledger.quarantine (its rules, its audit event, its own savepoint
of the action's transaction), so a refused entry changes nothing of its own and stops no
other. The one exception is the share cap: renewals that bring expired entries back into
the share are judged together, and when they would put it over the cap the whole action
is refused and nothing is renewed (SPEC 4), rather than renewing whichever came first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum

from django.core.exceptions import ValidationError
from django.db import transaction

from flakeboard import rules
from web.pages import PAGE_SIZES

from .locks import lock_suite
from .models import QuarantineEntry, Suite
from .quarantine import CAP_EXCEEDED, over_cap_message, quarantine_clear, quarantine_renew
from .selectors import share_figures

# The most entries one request acts on: the largest page a list offers.
BULK_MAX = max(int(size) for size in PAGE_SIZES)


class BulkAction(StrEnum):
    RENEW = "renew"
    CLEAR = "clear"


@dataclass(frozen=True)
class BulkOutcome:
    """What became of one selected id: done, or refused with the service's reasons
    (message, code). ``nodeid`` is None for an id that names no entry of the suite."""

    entry_id: int
    nodeid: str | None
    refusals: tuple[tuple[str, str], ...] = ()

    @property
    def done(self) -> bool:
        return not self.refusals


def _refusals(exc: ValidationError) -> tuple[tuple[str, str], ...]:
    errors = ([e for field in exc.error_dict.values() for e in field]
              if hasattr(exc, "error_dict") else exc.error_list)
    return tuple((message, error.code) for error in errors for message in error.messages)


def bulk_apply(
    *,
    suite: Suite,
    entry_ids: list[int],
    action: BulkAction,
    note: str,
    actor: str,
    today: date,
    expires: date | None = None,
    evidence: str = "",
    owner: str | None = None,
    now: datetime | None = None,
) -> list[BulkOutcome]:
    """Renew (to ``expires`` on ``evidence``, optionally to a new ``owner``) or clear each
    entry of ``entry_ids``, every one with ``note`` as its reason; the outcomes in the ids'
    order, once each. The request as a whole is refused, before any entry is touched, when
    it selects nothing or more than BULK_MAX, or gives no reason."""
    ids = list(dict.fromkeys(entry_ids))
    if not ids:
        raise ValidationError("Select at least one entry.", code="none_selected")
    if len(ids) > BULK_MAX:
        raise ValidationError(
            f"At most {BULK_MAX} entries can be changed at once; {len(ids)} were selected.",
            code="too_many",
        )
    if not note or not note.strip():
        raise ValidationError("Give the reason: it goes on each entry's history.",
                              code="note_required")
    action = BulkAction(action)
    with transaction.atomic():
        # One writer for the whole action, so that the share read first is the one the
        # renewals change, and a refusal over the cap can undo every one of them.
        suite = lock_suite(suite.pk)
        entries = QuarantineEntry.objects.filter(suite=suite).select_related("node").in_bulk(ids)
        share = share_figures(suite, today) if action is BulkAction.RENEW else None
        outcomes = []
        for pk in ids:
            entry = entries.get(pk)
            if entry is None:
                outcomes.append(BulkOutcome(pk, None, (
                    (f"No entry #{pk} in this suite.", "not_found"),)))
                continue
            try:  # each service call is a savepoint: a refusal undoes only its entry
                if action is BulkAction.RENEW:
                    quarantine_renew(entry=entry, expires=expires, evidence=evidence,
                                     owner=owner or None, note=note, actor=actor,
                                     today=today, now=now)
                else:
                    quarantine_clear(entry=entry, note=note, actor=actor, now=now)
            except ValidationError as exc:
                outcomes.append(BulkOutcome(pk, entry.node.nodeid, _refusals(exc)))
            else:
                outcomes.append(BulkOutcome(pk, entry.node.nodeid))
        if share is not None:
            _refuse_revivals_over_cap(share, entries, outcomes, today)
    return outcomes


def _refuse_revivals_over_cap(share: rules.ShareFigures, entries: dict,
                              outcomes: list[BulkOutcome], today: date) -> None:
    """Refuse the whole renewal, undoing every entry's, when the expired entries it brings
    back would together put the share (``share``, read before the first renewal) over the
    cap; the refusal names that figure. An entry refused for a reason of its own stays out
    of the count, as it stays out of the share; one refused over the cap alone is counted,
    so any such refusal refuses the whole action."""
    revived = sum(
        1 for outcome in outcomes
        if outcome.nodeid is not None
        and entries[outcome.entry_id].cleared_at is None
        and rules.renewal_revives(entries[outcome.entry_id].facts, today)
        and all(code == CAP_EXCEEDED for _, code in outcome.refusals)
    )
    doing = (f"Renewing the {rules.plural(revived, 'expired entry', 'expired entries')} "
             "selected")
    if message := over_cap_message(share.with_more(revived), doing):
        raise ValidationError(f"{message} Nothing was renewed.", code=CAP_EXCEEDED)
