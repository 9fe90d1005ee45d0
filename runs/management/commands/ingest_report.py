from runs.ingest import report_ingest
from runs.management import IngestCommand


class Command(IngestCommand):
    help = "Ingest a flake-report.json and gate it; exits with the report's exit code."
    ingest = staticmethod(report_ingest)
    query_options = ("commit", "branch", "evidence")
    actor = "manage.py ingest_report"
