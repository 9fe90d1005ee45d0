"""A suite's tracker: set, replaced or removed by a lead (audited, the token never in the
event, the log or a page), and the connection tested with one harmless read."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ledger.audit import record_event
from ledger.locks import lock_suite
from ledger.models import AuditEvent, Suite
from ledger.settings_services import connection_remove
from web.outbound import Refused, check_url

from .clients import SITES, client_for
from .crypto import Unreadable, encrypt
from .models import Tracker
from .triggers import SWITCHES as TEST_SWITCHES

SWITCHES = ("on_new_entry", *(switch for switch, _ in TEST_SWITCHES.values()))


@dataclass(frozen=True)
class TrackerFields:
    kind: str
    project: str
    site: str = ""
    issue_type: str = ""
    email: str = ""
    labels: str = "flaky-test"
    on_new_entry: bool = True
    on_ci_flaky: bool = False
    on_born_flaky: bool = False


def _checked(fields: TrackerFields, token: str, replacing: bool) -> dict:
    """The fields to store, or ValidationError naming each refused one."""
    errors: dict[str, str] = {}
    kind = fields.kind
    if kind not in Tracker.Kind.values:
        errors["kind"] = f"The kind is one of {', '.join(Tracker.Kind.values)}."
    site = (fields.site.strip() or SITES.get(kind, "")).rstrip("/")
    if not site:
        errors["site"] = "Jira Cloud needs its site: https://<name>.atlassian.net."
    else:
        try:
            check_url(site, unresolved_ok=True)
        except Refused as exc:
            errors["site"] = f"Not saved: {exc}."
    project = fields.project.strip()
    if not project or (kind == Tracker.Kind.GITHUB and project.count("/") != 1):
        errors["project"] = {Tracker.Kind.GITHUB: "The repository, as owner/name.",
                             Tracker.Kind.GITLAB: "The project's id or path (group/name).",
                             }.get(kind, "The Jira project's key (FLAKY).")
    if kind == Tracker.Kind.JIRA and "@" not in fields.email:
        errors["email"] = "Jira's API token goes with its account's e-mail address."
    if not token.strip() and not replacing:
        errors["token"] = "The token is required."  # noqa: S105 (a message, not a secret)
    if errors:
        raise ValidationError({name: ValidationError(text, code="invalid")
                               for name, text in errors.items()})
    return {"kind": kind, "site": site, "project": project,
            "issue_type": fields.issue_type.strip() if kind == Tracker.Kind.JIRA else "",
            "email": fields.email.strip() if kind == Tracker.Kind.JIRA else "",
            "labels": ",".join(label.strip() for label in fields.labels.split(",")
                               if label.strip()),
            **{switch: getattr(fields, switch) for switch in SWITCHES}}


def shown(tracker: Tracker | None) -> dict:
    """The tracker as the audit trail holds it: never its token."""
    if tracker is None:
        return {}
    return {"tracker": f"{tracker.get_kind_display()} {tracker.project} at {tracker.site}",
            "labels": tracker.labels,
            **{switch: getattr(tracker, switch) for switch in SWITCHES}}


def tracker_set(*, suite: Suite, fields: TrackerFields, token: str, actor: str) -> Tracker:
    """Set the suite's tracker, or replace its fields; a token given replaces the stored
    one (rotated), none keeps it. A new tracker starts from the suite's latest audit
    event: only entries made from now on get issues."""
    with transaction.atomic():
        suite = lock_suite(suite.pk)
        tracker = Tracker.objects.filter(suite=suite).first()
        values = _checked(fields, token, replacing=tracker is not None)
        before = shown(tracker)
        if tracker is None:
            latest = AuditEvent.objects.filter(suite=suite).order_by("-pk").first()
            tracker = Tracker(suite=suite, created_at=timezone.now(), created_by=actor,
                              cursor=latest.pk if latest else 0)
        for switch, since in TEST_SWITCHES.values():
            # Turned on today: a test whose first such evidence comes from today opens one.
            was_on = getattr(tracker, switch) and getattr(tracker, since) is not None
            setattr(tracker, since, (getattr(tracker, since) if was_on else
                                     timezone.now().date()) if values[switch] else None)
        for name, value in values.items():
            setattr(tracker, name, value)
        if token.strip():
            tracker.token_encrypted = encrypt(token.strip())
            tracker.last_error = ""
        tracker.save()
        note = "tracker set" if not before else (
            "tracker replaced, token rotated" if token.strip() else "tracker replaced")
        record_event(suite=suite, action=AuditEvent.Action.SETTINGS, actor=actor,
                     before=before, after=shown(tracker), note=note)
    return tracker


def tracker_remove(*, suite: Suite, actor: str) -> bool:
    return connection_remove(suite=suite, model=Tracker, actor=actor, shown=shown,
                             note="tracker removed")


def tracker_test(tracker: Tracker, *, actor: str, sleep=time.sleep) -> tuple[bool, str]:
    """One harmless read (the repository, the project, the account): whether it worked,
    and what it found or why not. Audited: a lead made the board call out."""
    try:
        answer, found = client_for(tracker, sleep=sleep).check()
    except Unreadable as exc:
        ok, said = False, str(exc)
    else:
        ok, said = answer.ok, found if answer.ok else answer.error
    record_event(suite=tracker.suite, action=AuditEvent.Action.SETTINGS, actor=actor,
                 note=f"tracker connection tested ({'found ' + said if ok else said})"[:500])
    return ok, said
