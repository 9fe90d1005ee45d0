from django.apps import AppConfig


class BoardConfig(AppConfig):
    name = "board"
    verbose_name = "Board pages"

    def ready(self):
        # A batch's failed rows are explained from the evidence of every app, which only
        # the board composes.
        from runs.results import failures_explained_by

        from .failures import failures_explained
        failures_explained_by(failures_explained)
