"""The notification tables as their migrations 0001 and 0002 left them."""

import django.db.models.deletion
from django.db import migrations, models


def create_model(name, *fields, **options):
    """The model ``name``: the ``id`` Django adds to a model without a key, ``fields``, and its Meta ``options``."""
    fields = [('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')), *fields]
    return migrations.CreateModel(name=name, fields=fields, options=options)


class Migration(migrations.Migration):

    replaces = [('notify', '0001_initial'), ('notify', '0002_webhooks')]

    initial = True

    dependencies = [
        ('ledger', '0001_squashed_0023_node_written_key'),
    ]

    operations = [
        create_model(
            'Webhook',
            ('url', models.URLField(max_length=2000)),
            ('format', models.CharField(choices=[('slack', 'Slack-compatible'), ('json', 'Generic JSON')], default='slack', max_length=10)),
            ('secret', models.CharField(editable=False, max_length=100)),
            ('created_at', models.DateTimeField()),
            ('created_by', models.CharField(blank=True, max_length=200)),
            ('suite', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='webhook', to='ledger.suite')),
        ),
        create_model(
            'Delivery',
            ('channel', models.CharField(choices=[('email', 'E-mail'), ('webhook', 'Webhook')], default='email', max_length=10)),
            ('recipient', models.CharField(max_length=254)),
            ('day', models.DateField()),
            ('kind', models.CharField(choices=[('expiring', 'Expiring within 7 days'), ('expired', 'Expired: the gate is failing'), ('tier_violation', 'Tier violation'), ('ready_to_clear', 'Ready to clear')], max_length=20)),
            ('key', models.CharField(max_length=64)),
            ('status', models.CharField(choices=[('sending', 'Sending'), ('sent', 'Sent'), ('failed', 'Failed')], default='sending', max_length=10)),
            ('attempts', models.PositiveIntegerField(default=0)),
            ('sent_at', models.DateTimeField(blank=True, null=True)),
            ('error', models.TextField(blank=True)),
            ('updated_at', models.DateTimeField()),
            ('entry', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='deliveries', to='ledger.quarantineentry')),
            ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='ledger.suite')),
            verbose_name_plural='deliveries',
            ordering=['-day', 'suite', 'recipient', 'kind', 'key'],
            constraints=[models.UniqueConstraint(fields=('channel', 'suite', 'recipient', 'day', 'kind', 'key'), name='one_delivery_per_event_recipient_day')],
        ),
        migrations.CreateModel(
            name='WebhookPost',
            fields=[
                ('id', models.UUIDField(primary_key=True, serialize=False)),
                ('url', models.URLField(max_length=2000)),
                ('at', models.DateTimeField()),
                ('test', models.BooleanField(default=False)),
                ('items', models.PositiveIntegerField(default=0)),
                ('status', models.CharField(choices=[('sent', 'Sent'), ('failed', 'Failed')], max_length=10)),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('response_code', models.PositiveSmallIntegerField(blank=True, null=True)),
                ('error', models.TextField(blank=True)),
                ('suite', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='webhook_posts', to='ledger.suite')),
            ],
            options={
                'ordering': ['-at'],
                'indexes': [models.Index(fields=['suite', '-at'], name='webhook_post_suite_at')],
            },
        ),
    ]
