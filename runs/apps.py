from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = "Uploads and verdicts"

    def ready(self):
        from . import checks  # noqa: F401 (registers the system checks)
