"""A node's tier is its suite's tier rules' alone (SPEC 2.5): a tier an upload stated used to
stick to the node, which could turn its entry into a tier violation, drop it from the served
ledger and let an expired quarantine pass. Each node's tier is resolved again from the
rules, its stated tier kept beside it, and a suite whose nodes changed gets a new ledger
revision, so that no cached copy of its ledger is served as current."""

from fnmatch import fnmatchcase

from django.db import migrations
from django.db.models import F

REPEAT_BUDGET = 2


def tiers_by_rules_alone(apps, schema_editor):
    Node = apps.get_model("ledger", "Node")
    Suite = apps.get_model("ledger", "Suite")
    TierRule = apps.get_model("ledger", "TierRule")
    restated = Node.objects.filter(stated_tier__isnull=False).exclude(tier=REPEAT_BUDGET)
    suites = set()
    for suite_id in restated.values_list("suite_id", flat=True).distinct():
        rules = list(TierRule.objects.filter(suite_id=suite_id).values_list("glob", "tier"))
        changed = []
        for node in Node.objects.filter(suite_id=suite_id).only("pk", "nodeid", "tier"):
            # The lowest tier among matching rules; no rule: tier 2 (rules.resolve_tier).
            tier = min((t for glob, t in rules if fnmatchcase(node.nodeid, glob)),
                       default=REPEAT_BUDGET)
            if tier != node.tier:
                node.tier = tier
                changed.append(node)
        Node.objects.bulk_update(changed, ["tier"], batch_size=500)
        if changed:
            suites.add(suite_id)
    Suite.objects.filter(pk__in=suites).update(ledger_revision=F("ledger_revision") + 1)


class Migration(migrations.Migration):

    dependencies = [
        ("ledger", "0016_row_change_triggers"),
    ]

    operations = [
        migrations.RunPython(tiers_by_rules_alone, migrations.RunPython.noop, elidable=True),
    ]
