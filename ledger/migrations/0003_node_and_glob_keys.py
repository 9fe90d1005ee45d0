"""Node ids and tier-rule globs are unique through a fixed-length key (a digest of the
text), since a node id of 1,000 four-byte characters is too long for a PostgreSQL b-tree
entry. The node's key is also its page's address."""

import hashlib

from django.db import migrations, models

import ledger.models


def _key(text: str) -> str:
    # ledger.models.text_key as of this migration.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# (model, key field, the field it is the key of, old unique constraint, new one)
KEYS = [
    ("node", "key", "nodeid", "unique_node_per_suite", "unique_node_key_per_suite"),
    ("tierrule", "glob_key", "glob", "unique_glob_per_suite", "unique_glob_key_per_suite"),
]


def fill_keys(apps, schema_editor):
    for model, target, source, _, _ in KEYS:
        Model = apps.get_model("ledger", model)
        batch = []
        for row in Model.objects.only("pk", source).iterator(chunk_size=2000):
            setattr(row, target, _key(getattr(row, source)))
            batch.append(row)
            if len(batch) == 2000:
                Model.objects.bulk_update(batch, [target])
                batch = []
        Model.objects.bulk_update(batch, [target])


class Migration(migrations.Migration):
    dependencies = [("ledger", "0002_node_seen_only_in_uploads")]

    operations = [
        *(migrations.AddField(
            model_name=model, name=target, preserve_default=False,
            field=ledger.models.KeyField(default="", editable=False, max_length=32,
                                         source=source),
        ) for model, target, source, _, _ in KEYS),
        migrations.RunPython(fill_keys, migrations.RunPython.noop),
        *(migrations.RemoveConstraint(model_name=model, name=old)
          for model, _, _, old, _ in KEYS),
        *(migrations.AddConstraint(
            model_name=model,
            constraint=models.UniqueConstraint(fields=("suite", target), name=new),
        ) for model, target, _, _, new in KEYS),
    ]
