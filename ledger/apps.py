from django.apps import AppConfig
from django.db.backends.signals import connection_created


class LedgerConfig(AppConfig):
    name = "ledger"
    verbose_name = "Quarantine ledger"

    def ready(self):
        from .changes import watch

        connection_created.connect(watch, dispatch_uid="ledger.changes.watch")
