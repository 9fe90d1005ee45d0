"""manage.py set_tracker SUITE KIND PROJECT [...]: the suite's issue tracker; the token is
read from standard input, so that it is in no shell history and no process list."""

from __future__ import annotations

import sys

from ledger.commands import SuiteCommand
from trackers.models import Tracker
from trackers.services import TrackerFields, tracker_set


class Command(SuiteCommand):
    help = (
        "Set (or replace) a suite's issue tracker: GitHub Issues (PROJECT owner/name), GitLab "
        "issues (a project id or path) or Jira Cloud (a project key, with --site and --email). "
        "The token is read from standard input, stored encrypted and never shown again; "
        "with nothing on standard input a replaced tracker keeps its token. "
        "manage.py sync_trackers opens, comments on and closes the issues."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("kind", choices=Tracker.Kind.values)
        parser.add_argument("project")
        parser.add_argument("--site", default="", help="the API's root (GitHub and GitLab "
                            "have their own by default; Jira: https://<name>.atlassian.net)")
        parser.add_argument("--issue-type", default="Bug", help="Jira's issue type")
        parser.add_argument("--email", default="", help="Jira's account e-mail")
        parser.add_argument("--labels", default="flaky-test", help="comma-separated")
        parser.add_argument("--no-new-entry", action="store_true",
                            help="do not open an issue for each new entry")
        parser.add_argument("--ci-flaky", action="store_true", help="open an issue for a "
                            "test turning flaky in CI for the first time")
        parser.add_argument("--born-flaky", action="store_true",
                            help="open an issue for a new test flaky at birth")

    def handle(self, *args, suite, kind, project, **options):
        token = "" if sys.stdin.isatty() else sys.stdin.readline().strip()
        fields = TrackerFields(
            kind=kind, project=project, site=options["site"], issue_type=options["issue_type"],
            email=options["email"], labels=options["labels"],
            on_new_entry=not options["no_new_entry"], on_ci_flaky=options["ci_flaky"],
            on_born_flaky=options["born_flaky"])
        tracker = tracker_set(suite=suite, fields=fields, token=token, actor="manage.py")
        self.stdout.write(f"{tracker.suite.slug}: {tracker.get_kind_display()} {tracker.project} "
                          f"at {tracker.site}; the token is " +
                          ("stored, encrypted." if token else "unchanged."))
