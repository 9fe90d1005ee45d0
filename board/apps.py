from django.apps import AppConfig


class BoardConfig(AppConfig):
    name = "board"
    verbose_name = "Board pages"

    def ready(self):
        # A batch's failed rows are explained from the evidence of every app, which only
        # the board composes.
        from runs.diagnosed import rows_diagnosed_by
        from runs.results import failures_explained_by

        from .diagnosis import measured_diagnoses
        from .failures import failures_explained
        failures_explained_by(failures_explained)
        # And a report's rows their diagnosis, from CI's JUnit facts too.
        rows_diagnosed_by(measured_diagnoses)
        # A tracker's issue says what the board knows of its node.
        from trackers.text import FACTS

        from .issue_facts import issue_facts
        if issue_facts not in FACTS:
            FACTS.append(issue_facts)
        # And opens an issue for a test turning flaky: the board sees that evidence.
        from trackers.triggers import TRIGGERS, Trigger

        from .first_flaky import birth_evidence, birth_firsts, ci_evidence, ci_firsts
        TRIGGERS.setdefault("ci_flaky", Trigger(ci_firsts, ci_evidence))
        TRIGGERS.setdefault("born_flaky", Trigger(birth_firsts, birth_evidence))
