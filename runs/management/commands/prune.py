from ledger.commands import PruneCommand
from runs.prune import prune_uploads


class Command(PruneCommand):
    help = (
        "Delete reports and verdict batches (with their measurements and verdicts) older "
        "than RETENTION_DAYS days, in chunks; rollups, entries, audit events and the "
        "uploads an entry cites are kept. Idempotent."
    )
    setting = "RETENTION_DAYS"
    prune = staticmethod(prune_uploads)
    said = ("{pruned.reports} reports ({pruned.measurements} measurements) and "
            "{pruned.batches} verdict batches ({pruned.verdicts} verdicts) older than {span}; "
            "kept {pruned.kept_cited} older uploads that entries cite.")
