"""The settings page's Issue tracker section, for leads: the settings page includes it
(templates/trackers/_tracker_section.html) and loads it from here, so the ledger app never
imports trackers. Without JavaScript the section links to the same view, a page of its
own. Its forms post with htmx and get the section back, with what happened in a notice;
without JavaScript they go back to the settings page with a message. The token is a
password field that is never filled in again: once saved it is never shown."""

from __future__ import annotations

from django import forms

from ledger.access import actor_label
from ledger.views.connections import (
    connection_removal,
    connection_save,
    connection_test,
    section_page,
)
from web.pages import SettingsSection

from .models import Tracker, TrackerJob
from .services import TrackerFields, tracker_remove, tracker_set, tracker_test

LOG_LIMIT = 20


class TrackerForm(forms.Form):
    kind = forms.ChoiceField(label="Tracker", choices=Tracker.Kind.choices)
    project = forms.CharField(label="Repository or project", max_length=200, help_text=(
        "GitHub: owner/name. GitLab: the project's id or path. Jira: the project key."))
    site = forms.CharField(label="Site", max_length=500, required=False, help_text=(
        "The API's root; empty for api.github.com or gitlab.com. Jira: "
        "https://<name>.atlassian.net."))
    issue_type = forms.CharField(label="Issue type (Jira)", max_length=60, required=False,
                                 initial="Bug")
    email = forms.CharField(label="Account e-mail (Jira)", max_length=254, required=False)
    token = forms.CharField(
        label="Token", required=False, strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Stored encrypted and never shown again; leave empty to keep the saved one.")
    labels = forms.CharField(label="Labels", max_length=500, required=False,
                             initial="flaky-test", help_text="Comma-separated.")
    on_new_entry = forms.BooleanField(label="Open an issue for each new quarantine entry",
                                      required=False, initial=True)
    on_ci_flaky = forms.BooleanField(
        label="Open an issue for a test turning flaky in CI for the first time",
        required=False, help_text="A JUnit flip or a flip between gate attempts.")
    on_born_flaky = forms.BooleanField(label="Open an issue for a new test flaky at birth",
                                       required=False)

    def __init__(self, *args, **kwargs):
        # Ids of their own: the settings page's other forms have a "kind" field too.
        super().__init__(*args, auto_id="tracker_%s", **kwargs)

    @classmethod
    def for_tracker(cls, tracker: Tracker | None) -> TrackerForm:
        if tracker is None:
            return cls()
        return cls(initial={name: getattr(tracker, name) for name in cls.base_fields
                            if name != "token"})


def _context(suite, form) -> dict:
    tracker = Tracker.objects.filter(suite=suite).first()
    return {"tracker": tracker, "tracker_form": form or TrackerForm.for_tracker(tracker),
            "jobs": list(TrackerJob.objects.filter(suite=suite)
                         .select_related("entry__node", "node")[:LOG_LIMIT])}


SECTION = SettingsSection("trackers/tracker.html", "tracker", _context)


tracker = section_page(SECTION)


@connection_save(SECTION, TrackerForm)
def tracker_save(request, suite, data):
    data = dict(data)
    token = data.pop("token")
    saved = tracker_set(suite=suite, fields=TrackerFields(**data), token=token,
                        actor=actor_label(request.user))
    return f"Tracker saved: {saved.get_kind_display()} {saved.project}."


tracker_delete = connection_removal(SECTION, tracker_remove, what="tracker")


@connection_test(SECTION, Tracker, what="tracker")
def tracker_check(request, tracker) -> tuple[bool, str]:
    ok, said = tracker_test(tracker, actor=actor_label(request.user))
    return ok, (f"Connected: found {said}." if ok else f"The connection failed: {said}.")
