from junit.prune import prune_junit
from ledger.commands import PruneCommand


class Command(PruneCommand):
    help = (
        "Delete JUnit testcase results older than "
        "JUNIT_RETENTION_DAYS days; the files' counts and the per-day rollups are kept."
    )
    setting = "JUNIT_RETENTION_DAYS"
    prune = staticmethod(prune_junit)
    said = "{pruned.results} testcase results older than {span}."
