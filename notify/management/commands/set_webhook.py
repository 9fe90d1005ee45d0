"""manage.py set_webhook SUITE URL [--format slack|json]: the suite's webhook."""

from __future__ import annotations

from ledger.commands import SuiteCommand
from notify.models import Webhook
from notify.webhooks import webhook_set


class Command(SuiteCommand):
    help = (
        "Set (or replace) a suite's webhook: manage.py notify posts the suite's items to it "
        "each day, signed with a per-suite secret. A new webhook's signing secret is printed "
        "once, alone on the last line; replacing the URL or format keeps it."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("url", help="an http:// or https:// URL")
        parser.add_argument("--format", choices=Webhook.Format.values,
                            default=Webhook.Format.SLACK)

    def handle(self, *args, suite, url, format, **options):
        webhook, secret = webhook_set(suite=suite, url=url, webhook_format=format,
                                      actor="manage.py")
        self.stdout.write(f"{webhook.suite.slug}: webhook {webhook.url} ({webhook.format}).")
        if secret is None:
            self.stdout.write("The signing secret is unchanged (it is shown only when a "
                              "webhook is first set; remove the webhook and set it again "
                              "for a new one).")
            return
        self.stdout.write("The signing secret, shown once; the receiver checks each body's "
                          "X-Flakeboard-Signature with it:")
        self.stdout.write(secret)
