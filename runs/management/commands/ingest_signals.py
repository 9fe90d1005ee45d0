from runs.ingest import signals_ingest
from runs.management import IngestCommand


class Command(IngestCommand):
    help = "Ingest a file of signal records and arbitrate it; exits 0 accept, 1 reject, 2 hold."
    ingest = staticmethod(signals_ingest)
    query_options = ("patch", "commit", "evidence")
    actor = "manage.py ingest_signals"
