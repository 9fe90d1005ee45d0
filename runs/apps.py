from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = "Uploads and verdicts"

    def ready(self):
        from ledger.quarantine import REFUSALS

        from . import checks  # noqa: F401 (registers the system checks)
        from .broken import refusal

        if refusal not in REFUSALS:
            REFUSALS.append(refusal)  # a broken node is refused quarantine
