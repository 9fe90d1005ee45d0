"""JUnit files are evidence: staff may read them here, never edit or delete them (a
deleted file would leave the rollups disagreeing with the rows, unaudited). A file's page
lists its results in the file's order; a result, keyed by its place in its file, has no
page of its own."""

from django.contrib import admin
from django.utils.html import format_html, format_html_join

from ledger.admin import ReadOnlyAdmin

from .models import CaseResult, JUnitFile

RESULTS_SHOWN = 500  # a file's first results on its page; the rest are counted


@admin.register(JUnitFile)
class JUnitFileAdmin(ReadOnlyAdmin):
    list_display = ["id", "suite", "created_at", "commit", "job", "attempt", "producer",
                    "testcases", "failed", "reruns", "infrastructure_reason"]
    list_filter = ["suite", "producer", "infrastructure_reason"]
    search_fields = ["commit", "branch", "job"]
    readonly_fields = ["results"]

    @admin.display(description="Results, in the file's order")
    def results(self, file: JUnitFile):
        rows = list(CaseResult.objects.filter(file=file).order_by("position").values_list(
            "position", "node__nodeid", "outcome", "attempts", "failures", "duration",
            "signature")[:RESULTS_SHOWN + 1])
        if not rows:
            return "No results: the file held no testcase."
        more = len(rows) - RESULTS_SHOWN
        body = format_html_join("", (
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td></tr>"), (
            (position, nodeid, outcome, attempts, failures,
             "" if duration is None else f"{duration:.3f}", signature)
            for position, nodeid, outcome, attempts, failures, duration, signature
            in rows[:RESULTS_SHOWN]))
        return format_html(
            "<table><thead><tr><th scope='col'>Position</th><th scope='col'>Test</th>"
            "<th scope='col'>Outcome</th><th scope='col'>Attempts</th>"
            "<th scope='col'>Failures</th><th scope='col'>Seconds</th>"
            "<th scope='col'>Signature</th></tr></thead><tbody>{}</tbody></table>{}",
            body, format_html("<p>and {} more, not shown.</p>", file.testcases - RESULTS_SHOWN)
            if more > 0 else "")
