"""A job's counts are read from its files' results (``junit.detect``): ``JobOutcome`` and its
``JobRun`` are dropped. A result gains the flaky failures its file added to its job's: for
the results already stored, a job's flaky failures (the failures of a count that held a
pass and a failure) go to its test's result in the job's last file of the count's last day
that held it, so that they sum to the job's as before. Backwards, both are made again from the results kept: a run for each
suite, commit and job with a counted file (not an infrastructure failure) holding a test
that ran, its last day its last such file's; a count for each test that ran in it, its
passes and failures summed over the run's files, flaky when they hold a pass and a failure
(``junit.rules.is_flaky``), its last day the last day a file of the run held it."""

from django.db import migrations, models

COUNTED = "f.infrastructure_reason = ''"
RAN = "(r.passes > 0 OR r.failures > 0)"

RUNS = f"""
INSERT INTO junit_jobrun (suite_id, "commit", job, last_day)
SELECT f.suite_id, f."commit", f.job, MAX(f.day)
FROM junit_junitfile f
WHERE {COUNTED} AND EXISTS (
    SELECT 1 FROM junit_caseresult r WHERE r.file_id = f.id AND r.day = f.day AND {RAN})
GROUP BY f.suite_id, f."commit", f.job
"""

COUNTS = f"""
INSERT INTO junit_joboutcome (run_id, node_id, passes, failures, flaky, last_day)
SELECT j.id, r.node_id, SUM(r.passes), SUM(r.failures),
       SUM(r.passes) > 0 AND SUM(r.failures) > 0, MAX(r.day)
FROM junit_caseresult r
JOIN junit_junitfile f ON f.id = r.file_id AND f.day = r.day
JOIN junit_jobrun j ON j.suite_id = f.suite_id AND j."commit" = f."commit" AND j.job = f.job
WHERE {COUNTED} AND {RAN}
GROUP BY j.id, r.node_id
"""


# One result a flaky count, by its run's counted files holding its test on its last day,
# the newest file first.
FLAKY_KEPT = f"""
UPDATE junit_caseresult SET flaky_failures = chosen.failures
FROM (
    SELECT r.file_id, r.position, r.day, o.failures, ROW_NUMBER() OVER (
        PARTITION BY o.run_id, o.node_id ORDER BY r.file_id DESC) AS nth
    FROM junit_joboutcome o
    JOIN junit_jobrun j ON j.id = o.run_id
    JOIN junit_junitfile f ON f.suite_id = j.suite_id AND f."commit" = j."commit"
        AND f.job = j.job AND f.day = o.last_day
    JOIN junit_caseresult r ON r.file_id = f.id AND r.day = f.day AND r.node_id = o.node_id
    WHERE {COUNTED} AND o.flaky
) chosen
WHERE chosen.nth = 1 AND junit_caseresult.file_id = chosen.file_id
    AND junit_caseresult.position = chosen.position AND junit_caseresult.day = chosen.day
"""


def flaky_failures_kept(apps, schema_editor):
    schema_editor.execute(FLAKY_KEPT)


def counts_made_again(apps, schema_editor):
    schema_editor.execute(RUNS)
    schema_editor.execute(COUNTS)


class Migration(migrations.Migration):

    dependencies = [
        ('junit', '0012_node_day_fillfactor'),
    ]

    operations = [
        migrations.AddField(
            model_name='caseresult',
            name='flaky_failures',
            field=models.PositiveIntegerField(
                default=0, help_text="The flaky failures this file added to its job's "
                                     "(junit.detect)."),
        ),
        # Backwards, the counts are made again once their tables are.
        migrations.RunPython(flaky_failures_kept, counts_made_again, elidable=False),
        migrations.DeleteModel(name='JobOutcome'),
        migrations.DeleteModel(name='JobRun'),
    ]
