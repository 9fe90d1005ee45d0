"""The job counts (``JobOutcome``) are keyed by a job run (``JobRun``): the commit and the
job, which each count and its unique key held as text, are stored once a run, and a count
holds its run's key. A run is made for each (suite, commit, job) the counts hold, its last
day their latest; each count then takes its run's key, and loses its suite, commit and job,
its unique key over them and its index of days (the prune finds the runs by day).

Counts whose suite is gone (none, as Django's delete removes them with their suite) have no
run to go to, and are deleted. Backwards, each count takes its suite, commit and job back
from its run."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Max, OuterRef, Subquery


def make_runs(apps, schema_editor):
    db = schema_editor.connection.alias
    outcomes = apps.get_model('junit', 'JobOutcome').objects.using(db)
    JobRun = apps.get_model('junit', 'JobRun')
    suites = apps.get_model('ledger', 'Suite').objects.using(db)
    kept = outcomes.filter(suite_id__in=suites.values('pk'))
    JobRun.objects.using(db).bulk_create(
        (JobRun(suite_id=suite, commit=commit, job=job, last_day=last_day)
         for suite, commit, job, last_day in kept.order_by().values_list(
             'suite_id', 'commit', 'job').annotate(Max('last_day')).iterator()),
        batch_size=1000)
    runs = JobRun.objects.using(db).filter(
        suite_id=OuterRef('suite_id'), commit=OuterRef('commit'), job=OuterRef('job'))
    outcomes.update(run_id=Subquery(runs.values('pk')[:1]))
    outcomes.filter(run_id__isnull=True).delete()


def restore_columns(apps, schema_editor):
    db = schema_editor.connection.alias
    run = apps.get_model('junit', 'JobRun').objects.using(db).filter(pk=OuterRef('run_id'))
    apps.get_model('junit', 'JobOutcome').objects.using(db).update(
        **{name: Subquery(run.values(name)[:1]) for name in ('suite_id', 'commit', 'job')})


class Migration(migrations.Migration):

    dependencies = [
        ('junit', '0009_case_results_partitioned_by_day'),
        ('ledger', '0001_squashed_0023_node_written_key'),
    ]

    operations = [
        migrations.CreateModel(
            name='JobRun',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True,
                                           serialize=False, verbose_name='ID')),
                ('suite', models.ForeignKey(db_index=False,
                                            on_delete=django.db.models.deletion.CASCADE,
                                            related_name='job_runs', to='ledger.suite')),
                ('commit', models.CharField(max_length=200)),
                ('job', models.CharField(blank=True, max_length=200)),
                ('last_day', models.DateField(
                    help_text='The day of the last file of this run that detection counted.')),
            ],
            options={
                'indexes': [models.Index(fields=['last_day'], name='jobrun_last_day')],
                'constraints': [models.UniqueConstraint(fields=('suite', 'commit', 'job'),
                                                        name='one_job_run')],
            },
        ),
        migrations.AddField(
            model_name='joboutcome',
            name='run',
            field=models.ForeignKey(db_constraint=False, db_index=False, null=True,
                                    on_delete=django.db.models.deletion.CASCADE,
                                    related_name='outcomes', to='junit.jobrun'),
        ),
        # Nullable while the runs are made, so that backwards the columns can come back
        # empty and be filled from the runs before they are required again.
        migrations.AlterField(model_name='joboutcome', name='suite', field=models.ForeignKey(
            db_constraint=False, db_index=False, null=True,
            on_delete=django.db.models.deletion.CASCADE, related_name='+', to='ledger.suite')),
        migrations.AlterField(model_name='joboutcome', name='commit',
                              field=models.CharField(max_length=200, null=True)),
        migrations.AlterField(model_name='joboutcome', name='job',
                              field=models.CharField(blank=True, max_length=200, null=True)),
        migrations.RunPython(make_runs, restore_columns),
        migrations.RemoveConstraint(model_name='joboutcome', name='one_job_outcome_per_node'),
        migrations.RemoveIndex(model_name='joboutcome', name='joboutcome_last_day'),
        migrations.RemoveField(model_name='joboutcome', name='commit'),
        migrations.RemoveField(model_name='joboutcome', name='job'),
        migrations.RemoveField(model_name='joboutcome', name='suite'),
        migrations.AlterField(
            model_name='joboutcome',
            name='run',
            field=models.ForeignKey(db_constraint=False, db_index=False,
                                    on_delete=django.db.models.deletion.CASCADE,
                                    related_name='outcomes', to='junit.jobrun'),
        ),
        migrations.AlterField(
            model_name='joboutcome',
            name='last_day',
            field=models.DateField(help_text='The last day a file of the run held this node.'),
        ),
        migrations.AddConstraint(
            model_name='joboutcome',
            constraint=models.UniqueConstraint(fields=('run', 'node'),
                                               name='one_job_outcome_per_run_node'),
        ),
    ]
